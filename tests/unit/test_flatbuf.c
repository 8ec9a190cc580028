/* Flatbuffers: builder -> reader round trips of every field kind, the
 * alignment the Rust verifier insists on, and hostile buffers. */
#include "check.h"

#include "format/flatbuf.h"

#include <tether.h>

#include <stdint.h>

/* ---- helpers ---------------------------------------------------- */

static void put16(uint8_t *b, size_t at, uint16_t v)
{
	b[at] = (uint8_t)v;
	b[at + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *b, size_t at, uint32_t v)
{
	put16(b, at, (uint16_t)v);
	put16(b, at + 2, (uint16_t)(v >> 16));
}

/* The message of the last failure mentions `word` and "at byte N". */
static int says(const char *word, long at)
{
	const char *msg = tether_error_last();
	char want[64];
	snprintf(want, sizeof want, "at byte %ld", at);
	if (strncmp(msg, "flatbuffer: ", 12) != 0 || !strstr(msg, word) || (at >= 0 && !strstr(msg, want))) {
		fprintf(stderr, "  message: %s (wanted '%s', %s)\n", msg, word, want);
		return 0;
	}
	return 1;
}

/* Position of the field at slot, from its vtable entry (0 when absent). */
static size_t field_at(const struct fb_table *t, unsigned slot)
{
	if (slot >= fb_slots(t))
		return 0;
	uint16_t off = fb_le16(t->buf + t->vt + 4 + 2 * slot);
	return off ? t->pos + off : 0;
}

/* A malloc'd exact-size copy, so ASan catches any read past its end. */
static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	if (n)
		memcpy(c, p, n);
	return c;
}

/* Reads every slot of t as every kind, following tables, for the hostile
 * sweeps. Returns how many reads succeeded (-1: no root). A read that
 * succeeds on a prefix of a buffer succeeds on the whole of it, so cutting
 * a buffer can only lower the count. */
static int walk(const struct fb_table *t, int depth)
{
	int successes = 0;
	if (depth > 6)
		return 0;
	for (unsigned s = 0; s <= fb_slots(t) && s < 16; s++) {
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		int32_t i32;
		uint64_t u64;
		const uint8_t *p;
		const char *str;
		uint32_t n;
		struct fb_table sub;
		struct fb_vec v;
		int present;
		successes += fb_u8(t, s, 0, &u8) == 0;
		successes += fb_u16(t, s, 0, &u16) == 0;
		successes += fb_u32(t, s, 0, &u32) == 0;
		successes += fb_i32(t, s, 0, &i32) == 0;
		successes += fb_u64(t, s, 0, &u64) == 0;
		successes += fb_struct(t, s, 12, 1, &p) == 0;
		successes += fb_string(t, s, &str, &n) == 0;
		if (fb_table(t, s, &sub, &present) == 0 && present)
			successes += 1 + walk(&sub, depth + 1);
		if (fb_vector(t, s, 4, 4, &v, &present) == 0 && present) {
			for (uint32_t i = 0; i < v.n && i < 8; i++) {
				if (fb_vec_table(&v, i, &sub) == 0)
					successes += 1 + walk(&sub, depth + 1);
				successes += fb_vec_string(&v, i, &str, &n) == 0;
			}
		}
		successes += fb_vector(t, s, 8, 8, &v, &present) == 0;
	}
	return successes;
}

static int walk_buffer(const uint8_t *b, size_t len)
{
	struct fb_table root;
	if (fb_root(b, len, &root) != 0)
		return -1;
	return walk(&root, 0);
}

/* ---- the round trip of every field kind ------------------------- */

struct id12 {
	uint8_t bytes[12];
};

static void test_round_trip(void)
{
	struct fbb b;
	fbb_init(&b);

	/* Children first: strings, vectors, sub-tables. */
	fb_ref name = fbb_string(&b, "main", 4);
	fb_ref empty = fbb_string(&b, "", 0);
	fb_ref blob = fbb_bytes(&b, "\x01\x02\x03", 3);
	uint8_t u64s[3 * 8];
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 8; k++)
			u64s[8 * i + k] = (uint8_t)(i == 2 ? 0xff : k + 16 * i);
	fb_ref longs = fbb_vector(&b, u64s, 3, 8, 8);
	uint8_t flags[4] = {3, 0, 4, 0};
	fb_ref shorts = fbb_vector(&b, flags, 2, 2, 2);
	struct id12 ids[2];
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 12; k++)
			ids[i].bytes[k] = (uint8_t)(100 * i + k);
	fb_ref idvec = fbb_vector(&b, ids, 2, sizeof ids[0], 1);
	fb_ref s1 = fbb_string(&b, "tag-a", 5);
	fb_ref s2 = fbb_string(&b, "tag-\xc3\xa9", 6);
	fb_ref strs[] = {s1, s2};
	fb_ref strvec = fbb_vector_refs(&b, strs, 2);

	fb_ref refs[3];
	for (int i = 0; i < 3; i++) {
		char nm[8];
		snprintf(nm, sizeof nm, "ref%d", i);
		fb_ref ns = fbb_string(&b, nm, strlen(nm));
		fbb_table_start(&b);
		fbb_add_ref(&b, 0, ns);
		fbb_add_u32(&b, 1, (uint32_t)i * 10);
		refs[i] = fbb_table_end(&b);
	}
	fb_ref refvec = fbb_vector_refs(&b, refs, 3);
	fb_ref emptyvec = fbb_vector_refs(&b, NULL, 0);

	/* A nested table holding a u64 after a u8, so it needs padding. */
	fbb_table_start(&b);
	fbb_add_u8(&b, 0, 1);
	fbb_add_u64(&b, 1, 0x1122334455667788ull);
	fb_ref status = fbb_table_end(&b);

	/* A union: the type in one slot, the member table in the next. */
	fbb_table_start(&b);
	fbb_add_ref(&b, 0, name);
	fb_ref member = fbb_table_end(&b);

	fbb_table_start(&b);
	fbb_add_u8(&b, 0, 2);
	fbb_add_u16(&b, 1, 0xbeef);
	fbb_add_u32(&b, 2, 0xdeadbeef);
	fbb_add_i32(&b, 3, -1);
	fbb_add_u64(&b, 4, 0xfedcba9876543210ull);
	fbb_add_struct(&b, 5, &ids[1], sizeof ids[1], 1);
	uint8_t st16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	fbb_add_struct(&b, 6, st16, 16, 8);
	fbb_add_ref(&b, 7, name);
	fbb_add_ref(&b, 8, empty);
	fbb_add_ref(&b, 9, blob);
	fbb_add_ref(&b, 10, longs);
	fbb_add_ref(&b, 11, shorts);
	fbb_add_ref(&b, 12, idvec);
	fbb_add_ref(&b, 13, strvec);
	fbb_add_ref(&b, 14, refvec);
	fbb_add_ref(&b, 15, status);
	fbb_add_u8(&b, 16, 5); /* union type */
	fbb_add_ref(&b, 17, member);
	fbb_add_u32(&b, 18, 0); /* zero, still written */
	fbb_add_ref(&b, 19, emptyvec);
	/* slot 20 left out; 21 present so 20 is a hole */
	fbb_add_i32(&b, 21, INT32_MIN);
	fb_ref root = fbb_table_end(&b);

	uint8_t *buf;
	size_t len;
	CHECK(fbb_finish(&b, root, "Ichk", &buf, &len) == 0);
	fbb_free(&b);
	CHECK(len % 8 == 0); /* padded to its largest alignment */
	CHECK(fb_has_identifier(buf, len, "Ichk"));
	CHECK(!fb_has_identifier(buf, len, "Ichj"));

	struct fb_table t;
	CHECK(fb_root(buf, len, &t) == 0);
	CHECK(fb_slots(&t) == 22);
	CHECK(fb_used_slots(&t) == 22);

	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	CHECK(fb_u8(&t, 0, 0, &u8) == 0 && u8 == 2);
	CHECK(fb_u16(&t, 1, 0, &u16) == 0 && u16 == 0xbeef);
	CHECK(fb_u32(&t, 2, 0, &u32) == 0 && u32 == 0xdeadbeef);
	CHECK(fb_i32(&t, 3, 0, &i32) == 0 && i32 == -1);
	CHECK(fb_u64(&t, 4, 0, &u64) == 0 && u64 == 0xfedcba9876543210ull);
	CHECK(field_at(&t, 4) % 8 == 0);
	CHECK(field_at(&t, 1) % 2 == 0 && field_at(&t, 2) % 4 == 0);
	CHECK(fb_i32(&t, 21, 0, &i32) == 0 && i32 == INT32_MIN);

	const uint8_t *p;
	CHECK(fb_struct(&t, 5, 12, 1, &p) == 0 && p && memcmp(p, ids[1].bytes, 12) == 0);
	CHECK(fb_struct(&t, 6, 16, 8, &p) == 0 && p && memcmp(p, st16, 16) == 0);
	CHECK((size_t)(p - buf) % 8 == 0);
	CHECK(fb_le64(p) == 0x0807060504030201ull);

	const char *s;
	uint32_t n;
	CHECK(fb_string(&t, 7, &s, &n) == 0 && n == 4 && memcmp(s, "main", 4) == 0);
	CHECK(s[4] == '\0'); /* the builder writes the NUL */
	CHECK(fb_string(&t, 8, &s, &n) == 0 && s != NULL && n == 0);

	struct fb_vec v;
	int present;
	CHECK(fb_vector(&t, 9, 1, 1, &v, &present) == 0 && present && v.n == 3);
	CHECK(memcmp(fb_vec_elem(&v, 0), "\x01\x02\x03", 3) == 0);
	CHECK(fb_vec_elem(&v, 3) == NULL);
	CHECK(fb_vector(&t, 10, 8, 8, &v, &present) == 0 && present && v.n == 3);
	CHECK(v.pos % 8 == 0);
	CHECK(fb_le64(fb_vec_elem(&v, 1)) == 0x1716151413121110ull);
	CHECK(fb_le64(fb_vec_elem(&v, 2)) == UINT64_MAX);
	CHECK(fb_vector(&t, 11, 2, 2, &v, &present) == 0 && v.n == 2);
	CHECK(fb_le16(fb_vec_elem(&v, 0)) == 3 && fb_le16(fb_vec_elem(&v, 1)) == 4);
	CHECK(fb_vector(&t, 12, 12, 1, &v, &present) == 0 && v.n == 2);
	CHECK(memcmp(fb_vec_elem(&v, 1), ids[1].bytes, 12) == 0);
	CHECK(fb_vector(&t, 13, 4, 4, &v, &present) == 0 && v.n == 2);
	CHECK(fb_vec_string(&v, 1, &s, &n) == 0 && n == 6 && memcmp(s, "tag-\xc3\xa9", 6) == 0);
	CHECK(fb_vec_string(&v, 2, &s, &n) == TETHER_EIO && s == NULL);

	CHECK(fb_vector(&t, 14, 4, 4, &v, &present) == 0 && v.n == 3);
	for (uint32_t i = 0; i < 3; i++) {
		struct fb_table r;
		char nm[8];
		snprintf(nm, sizeof nm, "ref%u", i);
		CHECK(fb_vec_table(&v, i, &r) == 0);
		CHECK(fb_string(&r, 0, &s, &n) == 0 && n == strlen(nm) && memcmp(s, nm, n) == 0);
		CHECK(fb_u32(&r, 1, 99, &u32) == 0 && u32 == i * 10);
	}
	struct fb_table sub;
	CHECK(fb_vec_table(&v, 3, &sub) == TETHER_EIO);
	/* A vector of tables read as bytes holds no offsets. */
	struct fb_vec vb;
	CHECK(fb_vector(&t, 14, 1, 1, &vb, &present) == 0);
	CHECK(fb_vec_table(&vb, 0, &sub) == TETHER_EUSAGE);

	CHECK(fb_table(&t, 15, &sub, &present) == 0 && present);
	CHECK(fb_u8(&sub, 0, 0, &u8) == 0 && u8 == 1);
	CHECK(fb_u64(&sub, 1, 0, &u64) == 0 && u64 == 0x1122334455667788ull);
	CHECK(field_at(&sub, 1) % 8 == 0);

	CHECK(fb_u8(&t, 16, 0, &u8) == 0 && u8 == 5);
	CHECK(fb_table(&t, 17, &sub, &present) == 0 && present);
	CHECK(fb_string(&sub, 0, &s, &n) == 0 && n == 4 && memcmp(s, "main", 4) == 0);

	CHECK(fb_has(&t, 18));
	CHECK(fb_u32(&t, 18, 7, &u32) == 0 && u32 == 0);
	CHECK(fb_vector(&t, 19, 4, 4, &v, &present) == 0 && present && v.n == 0);

	/* Absent fields read as their defaults, beyond the vtable too. */
	CHECK(!fb_has(&t, 20));
	CHECK(fb_u32(&t, 20, 77, &u32) == 0 && u32 == 77);
	CHECK(fb_u64(&t, 40, 5, &u64) == 0 && u64 == 5);
	CHECK(fb_u8(&t, 1000, 9, &u8) == 0 && u8 == 9);
	CHECK(fb_string(&t, 20, &s, &n) == 0 && s == NULL && n == 0);
	CHECK(fb_struct(&t, 20, 12, 1, &p) == 0 && p == NULL);
	CHECK(fb_table(&t, 20, &sub, &present) == 0 && !present);
	CHECK(fb_vector(&t, 30, 4, 4, &v, &present) == 0 && !present && v.n == 0);

	/* Reading a field as a wider kind than it is: it no longer fits the
	 * table, or is misaligned; either way an error, not a read. */
	CHECK(fb_u64(&t, 0, 0, &u64) != 0 || field_at(&t, 0) % 8 == 0);
	CHECK(walk_buffer(buf, len) > 30);

	/* Usage errors of the reader. */
	CHECK(fb_vector(&t, 9, 1, 3, &v, &present) == TETHER_EUSAGE);
	CHECK(fb_vector(&t, 9, 0, 1, &v, &present) == TETHER_EUSAGE);
	CHECK(fb_struct(&t, 5, 12, 0, &p) == TETHER_EUSAGE);
	free(buf);
}

/* u64 fields, 8-aligned vectors and 8-aligned structs stay aligned
 * whatever came before them and in whatever order the fields came. */
static void test_alignment_everywhere(void)
{
	int ok = 1;
	for (int pre = 0; pre < 16; pre++) {
		for (int order = 0; order < 4; order++) {
			struct fbb b;
			fbb_init(&b);
			char junk[16] = "0123456789abcdef";
			fb_ref str = fbb_string(&b, junk, (size_t)pre);
			uint64_t one = 0x0102030405060708ull;
			uint8_t le[8];
			for (int k = 0; k < 8; k++)
				le[k] = (uint8_t)(one >> (8 * k));
			fb_ref vec = fbb_vector(&b, le, 1, 8, 8);
			fbb_table_start(&b);
			if (order & 1)
				fbb_add_u8(&b, 0, 1);
			fbb_add_u64(&b, 1, one);
			if (order & 2)
				fbb_add_u16(&b, 2, 2);
			fbb_add_ref(&b, 3, str);
			fbb_add_ref(&b, 4, vec);
			if (!(order & 1))
				fbb_add_u8(&b, 0, 1);
			fbb_add_struct(&b, 5, le, 8, 8);
			fb_ref root = fbb_table_end(&b);
			uint8_t *buf;
			size_t len;
			if (fbb_finish(&b, root, pre % 2 ? "Ichk" : NULL, &buf, &len) != 0) {
				ok = 0;
				fbb_free(&b);
				continue;
			}
			fbb_free(&b);
			uint8_t *copy = dup_bytes(buf, len); /* exact size */
			struct fb_table t;
			uint64_t u64 = 0;
			struct fb_vec v;
			int present;
			const uint8_t *p;
			const char *s;
			uint32_t n;
			if (fb_root(copy, len, &t) != 0 || fb_u64(&t, 1, 0, &u64) != 0 || u64 != one ||
			    field_at(&t, 1) % 8 != 0 || fb_vector(&t, 4, 8, 8, &v, &present) != 0 || v.pos % 8 != 0 ||
			    fb_le64(fb_vec_elem(&v, 0)) != one || fb_struct(&t, 5, 8, 8, &p) != 0 ||
			    (size_t)(p - copy) % 8 != 0 || fb_string(&t, 3, &s, &n) != 0 || n != (uint32_t)pre ||
			    len % 8 != 0) {
				fprintf(stderr, "  alignment case pre=%d order=%d failed\n", pre, order);
				ok = 0;
			}
			free(copy);
			free(buf);
		}
	}
	CHECK(ok);
}

static void test_used_slots_and_empty(void)
{
	struct fbb b;
	fbb_init(&b);
	fbb_table_start(&b);
	fb_ref empty = fbb_table_end(&b);
	fbb_table_start(&b);
	fbb_add_ref(&b, 0, empty);
	fbb_add_u8(&b, 3, 0);
	fb_ref root = fbb_table_end(&b);
	uint8_t *buf;
	size_t len;
	CHECK(fbb_finish(&b, root, NULL, &buf, &len) == 0);
	fbb_free(&b);
	CHECK(!fb_has_identifier(buf, len, "Ichk"));
	struct fb_table t, e;
	int present;
	CHECK(fb_root(buf, len, &t) == 0);
	CHECK(fb_slots(&t) == 4 && fb_used_slots(&t) == 4);
	CHECK(fb_has(&t, 0) && !fb_has(&t, 1) && !fb_has(&t, 2) && fb_has(&t, 3));
	CHECK(fb_table(&t, 0, &e, &present) == 0 && present);
	CHECK(fb_slots(&e) == 0 && fb_used_slots(&e) == 0);
	free(buf);

	/* A vtable longer than its last used slot (trailing zero entries). */
	uint8_t hand[32] = {0};
	put32(hand, 0, 16);    /* root table at 16 */
	put16(hand, 4, 12);    /* vtable at 4: 12 bytes, 4 slots */
	put16(hand, 6, 8);     /* table size */
	put16(hand, 8, 0);     /* slot 0 absent */
	put16(hand, 10, 4);    /* slot 1 at +4 */
	put16(hand, 12, 0);    /* slots 2 and 3 absent */
	put16(hand, 14, 0);
	put32(hand, 16, 12);   /* soffset: vtable at 16 - 12 = 4 */
	put32(hand, 20, 42);
	uint8_t *h = dup_bytes(hand, 24);
	uint32_t u32;
	CHECK(fb_root(h, 24, &t) == 0);
	CHECK(fb_slots(&t) == 4 && fb_used_slots(&t) == 2);
	CHECK(fb_u32(&t, 1, 0, &u32) == 0 && u32 == 42);
	free(h);
}

static void test_builder_misuse(void)
{
	struct fbb b;
	uint8_t *buf = (uint8_t *)1;
	size_t len = 1;

	fbb_init(&b);
	fbb_table_start(&b);
	fbb_table_start(&b);
	CHECK(fbb_finish(&b, 4, NULL, &buf, &len) == TETHER_EUSAGE && buf == NULL && len == 0);
	CHECK(strstr(tether_error_last(), "nest") != NULL);
	fbb_free(&b);

	fbb_init(&b);
	fbb_add_u32(&b, 0, 1);
	CHECK(fbb_finish(&b, 4, NULL, &buf, &len) == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "outside a table") != NULL);
	fbb_free(&b);

	fbb_init(&b);
	fbb_table_start(&b);
	fbb_add_u32(&b, FBB_MAX_SLOTS, 1);
	fb_ref r = fbb_table_end(&b);
	CHECK(r == 0);
	CHECK(fbb_finish(&b, r, NULL, &buf, &len) == TETHER_EUSAGE);
	fbb_free(&b);

	fbb_init(&b);
	fbb_table_start(&b);
	fbb_add_u32(&b, 2, 1);
	fbb_add_u8(&b, 2, 1);
	r = fbb_table_end(&b);
	CHECK(fbb_finish(&b, r, NULL, &buf, &len) == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "twice") != NULL);
	fbb_free(&b);

	fbb_init(&b);
	fbb_table_start(&b);
	fbb_string(&b, "x", 1);
	r = fbb_table_end(&b);
	CHECK(fbb_finish(&b, r, NULL, &buf, &len) == TETHER_EUSAGE);
	fbb_free(&b);

	fbb_init(&b);
	fbb_table_start(&b);
	fbb_add_ref(&b, 0, 0);
	r = fbb_table_end(&b);
	CHECK(fbb_finish(&b, r, NULL, &buf, &len) == TETHER_EUSAGE);
	fbb_free(&b);

	fbb_init(&b);
	fb_ref refs[1] = {12345};
	fbb_vector_refs(&b, refs, 1);
	CHECK(fbb_finish(&b, 4, NULL, &buf, &len) == TETHER_EUSAGE);
	fbb_free(&b);

	fbb_init(&b);
	CHECK(fbb_finish(&b, 0, NULL, &buf, &len) == TETHER_EUSAGE);
	fbb_free(&b);

	fbb_init(&b);
	fbb_table_end(&b);
	CHECK(fbb_finish(&b, 4, NULL, &buf, &len) == TETHER_EUSAGE);
	fbb_free(&b);

	/* A big buffer grows correctly (many reallocations). */
	fbb_init(&b);
	fb_ref many[2000];
	for (int i = 0; i < 2000; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "name-%04d", i);
		many[i] = fbb_string(&b, nm, strlen(nm));
	}
	fb_ref vec = fbb_vector_refs(&b, many, 2000);
	fbb_table_start(&b);
	fbb_add_ref(&b, 0, vec);
	r = fbb_table_end(&b);
	CHECK(fbb_finish(&b, r, "Ichk", &buf, &len) == 0);
	fbb_free(&b);
	struct fb_table t;
	struct fb_vec v;
	int present, all = 1;
	CHECK(fb_root(buf, len, &t) == 0 && fb_vector(&t, 0, 4, 4, &v, &present) == 0 && v.n == 2000);
	for (uint32_t i = 0; i < v.n; i++) {
		const char *s;
		uint32_t n;
		char nm[16];
		snprintf(nm, sizeof nm, "name-%04u", i);
		if (fb_vec_string(&v, i, &s, &n) != 0 || n != strlen(nm) || memcmp(s, nm, n) != 0)
			all = 0;
	}
	CHECK(all);
	free(buf);
}

/* ---- hostile buffers -------------------------------------------- */

/* A hand-laid buffer: root table at 16 with a u32 (slot 0) and a string
 * (slot 1), vtable at 4.
 *   0 root uoffset 16 | 4 vtable [8, 12, 4, 8] | 12 pad | 16 soffset 12
 *   20 u32 | 24 uoffset 4 -> 28 | 28 len 3 "abc" NUL */
static size_t lay_out(uint8_t *b)
{
	memset(b, 0, 64);
	put32(b, 0, 16);
	put16(b, 4, 8);
	put16(b, 6, 12);
	put16(b, 8, 4);
	put16(b, 10, 8);
	put32(b, 16, 12);
	put32(b, 20, 7);
	put32(b, 24, 4);
	put32(b, 28, 3);
	memcpy(b + 32, "abc", 4);
	return 36;
}

/* a, and b only when a succeeded: the first error. */
#define THEN(a, b) ((rc = (a)) != 0 ? rc : (b))

/* Runs `read` on an exact-size copy of b. */
#define ON_COPY(b, len, stmt)                         \
	do {                                              \
		uint8_t *c_ = dup_bytes((b), (len));          \
		const uint8_t *cb = c_;                       \
		(void)cb;                                     \
		stmt;                                         \
		free(c_);                                     \
	} while (0)

static void test_hostile(void)
{
	uint8_t b[64];
	size_t len = lay_out(b);
	struct fb_table t;
	uint32_t u32;
	uint64_t u64;
	const char *s;
	uint32_t n;
	struct fb_vec v;
	int present;
	int rc = 0;

	/* The layout itself is valid. */
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), THEN(fb_u32(&t, 0, 0, &u32), fb_string(&t, 1, &s, &n))));
	CHECK(rc == 0);

	/* Too short for a root offset; root pointing out, at 0, misaligned. */
	ON_COPY(b, 3, rc = fb_root(cb, 3, &t));
	CHECK(rc == TETHER_EIO && says("outside the buffer", 0));
	ON_COPY(b, 0, rc = fb_root(cb, 0, &t));
	CHECK(rc == TETHER_EIO);
	put32(b, 0, 36);
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("outside the buffer", 0));
	put32(b, 0, 0xfffffffc); /* "backwards" as a signed number */
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("outside the buffer", 0));
	put32(b, 0, 0);
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("offset 0", 0));
	put32(b, 0, 18);
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("misaligned table", 18));

	/* Vtable: outside the buffer (either side), odd length, too short,
	 * longer than the buffer, misaligned. */
	len = lay_out(b);
	put32(b, 16, 20); /* 16 - 20 < 0 */
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("vtable outside the buffer", 16));
	put32(b, 16, (uint32_t)-100); /* 116 > len */
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("vtable outside the buffer", 16));
	put32(b, 16, (uint32_t)-18); /* vtable at 34: 2 bytes left */
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("vtable outside the buffer", 34));
	len = lay_out(b);
	put16(b, 4, 7);
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("vtable of bad length", 4));
	put16(b, 4, 2);
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("vtable of bad length", 4));
	put16(b, 4, 40);
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("vtable outside the buffer", 4));
	len = lay_out(b);
	put32(b, 16, 11); /* vtable at 5 */
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("misaligned vtable", 5));

	/* The table's inline size: below the soffset, beyond the buffer. */
	len = lay_out(b);
	put16(b, 6, 2);
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("table smaller", 16));
	put16(b, 6, 40);
	ON_COPY(b, len, rc = fb_root(cb, len, &t));
	CHECK(rc == TETHER_EIO && says("table outside the buffer", 16));

	/* Fields: beyond the inline size, inside the soffset, misaligned. */
	len = lay_out(b);
	put16(b, 8, 10); /* u32 at +10: 10 + 4 > 12 */
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_u32(&t, 0, 0, &u32)));
	CHECK(rc == TETHER_EIO && says("field outside its table", 26));
	put16(b, 8, 2);
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_u32(&t, 0, 0, &u32)));
	CHECK(rc == TETHER_EIO && says("field outside its table", 18));
	put16(b, 8, 6); /* u32 at 22 */
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_u32(&t, 0, 0, &u32)));
	CHECK(rc == TETHER_EIO && says("misaligned field", 22));
	len = lay_out(b);
	put16(b, 8, 4); /* u64 at 20 fits the table (4 + 8 <= 12) but is misaligned */
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_u64(&t, 0, 0, &u64)));
	CHECK(rc == TETHER_EIO && says("misaligned field", 20));
	uint16_t u16;
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_u16(&t, 0, 0, &u16))); /* 2-aligned: fine */
	CHECK(rc == 0);

	/* Strings: offset out, length past the end (huge, and by one), no
	 * NUL (tolerated), invalid UTF-8. */
	len = lay_out(b);
	put32(b, 24, 12);
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_string(&t, 1, &s, &n)));
	CHECK(rc == TETHER_EIO && says("offset pointing outside", 24));
	len = lay_out(b);
	put32(b, 28, 0xffffffff);
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_string(&t, 1, &s, &n)));
	CHECK(rc == TETHER_EIO && says("longer than the buffer", 28));
	put32(b, 28, 5);
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_string(&t, 1, &s, &n)));
	CHECK(rc == TETHER_EIO && says("longer than the buffer", 28));
	put32(b, 28, 4); /* "abc\0" is four bytes to the end: no terminator after it */
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_string(&t, 1, &s, &n)));
	CHECK(rc == 0 && n == 4);
	len = lay_out(b);
	ON_COPY(b, 35, rc = THEN(fb_root(cb, 35, &t), fb_string(&t, 1, &s, &n))); /* NUL cut off */
	CHECK(rc == 0 && n == 3);
	put32(b, 24, 6); /* a string at 30: misaligned length */
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_string(&t, 1, &s, &n)));
	CHECK(rc == TETHER_EIO && says("misaligned", 30));

	static const struct {
		const char *bytes;
		int valid;
	} utf8[] = {
	    {"ab\xc3\xa9", 1},         {"\xf0\x9f\xa7\x8a", 1}, {"\xf4\x8f\xbf\xbf", 1}, {"\xef\xbf\xbf", 1},
	    {"\xc0\x80", 0},           {"\xe0\x80\xaf", 0},     {"\xed\xa0\x80", 0},     {"\xf4\x90\x80\x80", 0},
	    {"\xf5\x80\x80\x80", 0},   {"\x80", 0},             {"a\xe2\x82", 0},        {"\xc3", 0},
	    {"\xe2\x28\xa1", 0},       {"\xff", 0},
	};
	for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++) {
		uint8_t sb[64];
		len = lay_out(sb);
		size_t sl = strlen(utf8[i].bytes);
		put32(sb, 28, (uint32_t)sl);
		memcpy(sb + 32, utf8[i].bytes, sl);
		len = 32 + sl;
		ON_COPY(sb, len, rc = THEN(fb_root(cb, len, &t), fb_string(&t, 1, &s, &n)));
		if (utf8[i].valid)
			CHECK(rc == 0 && n == sl);
		else
			CHECK(rc == TETHER_EIO && says("UTF-8", -1));
	}

	/* Vectors: huge length, misaligned elements, element offsets out. */
	len = lay_out(b);
	put32(b, 28, 0x40000000); /* x 4 bytes wraps 32 bits: must not fool the check */
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_vector(&t, 1, 4, 4, &v, &present)));
	CHECK(rc == TETHER_EIO && says("longer than the buffer", 28) && !present && v.n == 0);
	put32(b, 28, 0xffffffff);
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_vector(&t, 1, 12, 1, &v, &present)));
	CHECK(rc == TETHER_EIO);
	put32(b, 24, 8); /* a vector whose length is at 32: elements at 36, not 8-aligned */
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_vector(&t, 1, 8, 8, &v, &present)));
	CHECK(rc == TETHER_EIO && says("misaligned vector", 36));
	put32(b, 24, 4);
	put32(b, 28, 1);
	put32(b, 32, 0x100); /* one element: an offset far out */
	struct fb_table sub;
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), THEN(fb_vector(&t, 1, 4, 4, &v, &present), fb_vec_table(&v, 0, &sub))));
	CHECK(rc == TETHER_EIO && says("outside the buffer", 32));
	/* An element pointing back at the root table is still "forward" of
	 * nothing: offsets are unsigned, so it cannot. Pointing at 36 (the
	 * end) is out. */
	put32(b, 32, 4);
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), THEN(fb_vector(&t, 1, 4, 4, &v, &present), fb_vec_string(&v, 0, &s, &n))));
	CHECK(rc == TETHER_EIO);
	/* A sub-table whose own vtable is bad. */
	len = lay_out(b);
	ON_COPY(b, len, rc = THEN(fb_root(cb, len, &t), fb_table(&t, 1, &sub, &present)));
	CHECK(rc == TETHER_EIO && !present); /* "abc" is no table: soffset 3 -> misaligned vtable at 25 */

	/* Every prefix of a real buffer, and every byte flipped: errors, never
	 * a crash or a read outside (ASan watches the exact-size copies). */
	struct fbb bb;
	fbb_init(&bb);
	fb_ref nm = fbb_string(&bb, "main", 4);
	fbb_table_start(&bb);
	fbb_add_ref(&bb, 0, nm);
	fbb_add_u32(&bb, 1, 3);
	fb_ref r0 = fbb_table_end(&bb);
	fb_ref rv = fbb_vector_refs(&bb, &r0, 1);
	fbb_table_start(&bb);
	fbb_add_u8(&bb, 0, 2);
	fbb_add_ref(&bb, 1, rv);
	fbb_add_u64(&bb, 2, 1234567);
	fb_ref root = fbb_table_end(&bb);
	uint8_t *good;
	size_t glen;
	CHECK(fbb_finish(&bb, root, "Ichk", &good, &glen) == 0);
	fbb_free(&bb);
	int full = walk_buffer(good, glen);
	CHECK(full > 10);
	/* The buffer ends with "main", NUL and 3 bytes of padding (the first
	 * thing built): any cut into the bytes before the NUL loses a read. */
	int monotone = 1, noticed = 1;
	for (size_t cut = 0; cut < glen; cut++) {
		int got;
		ON_COPY(good, cut, got = walk_buffer(cb, cut));
		monotone &= got <= full;
		if (cut + 5 <= glen)
			noticed &= got < full;
	}
	CHECK(monotone);
	CHECK(noticed);
	int flips_noticed = 0;
	static const uint8_t xors[] = {0x01, 0x80, 0xff, 0x04};
	for (size_t i = 0; i < glen; i++)
		for (size_t k = 0; k < sizeof xors; k++) {
			uint8_t *c = dup_bytes(good, glen);
			c[i] ^= xors[k];
			flips_noticed += walk_buffer(c, glen) != full;
			free(c);
		}
	CHECK(flips_noticed > 0);
	free(good);
}

int main(void)
{
	test_round_trip();
	test_alignment_everywhere();
	test_used_slots_and_empty();
	test_builder_misuse();
	test_hostile();
	CHECK_DONE();
}
