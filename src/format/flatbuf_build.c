/* The flatbuffer builder. The buffer grows downwards: data occupies
 * buf[cap - used, cap), a reference is the value of `used` just after its
 * object was written, and an offset written later (at a larger `used`)
 * therefore always points forward, which is the only direction a uoffset
 * can point. Alignment is tracked as in FlatBuffers: before writing n bytes
 * that need alignment a, pad so that `used + n` is a multiple of a; the
 * finished buffer is a multiple of the largest such a (minalign), so every
 * position is aligned relative to the buffer's start as well. */
#include "format/flatbuf.h"

#include <tether/backend.h>

#include <stdlib.h>
#include <string.h>

/* FlatBuffers' own limit: offsets are signed 32-bit in places. */
#define FBB_MAX_SIZE 0x7fffffffu

/* What went wrong first, for fbb_finish's message. Static strings only. */
static _Thread_local const char *fbb_why;

static void fbb_fail(struct fbb *b, int code, const char *why)
{
	if (!b->failed) {
		b->failed = code;
		fbb_why = why;
	}
}

void fbb_init(struct fbb *b)
{
	memset(b, 0, sizeof *b);
	b->minalign = 1;
}

void fbb_free(struct fbb *b)
{
	free(b->buf);
	fbb_init(b);
}

/* Room for n more bytes in front of the data. */
static int fbb_reserve(struct fbb *b, size_t n)
{
	if (b->failed)
		return -1;
	if (n > FBB_MAX_SIZE || b->used > FBB_MAX_SIZE - n) {
		fbb_fail(b, TETHER_EUSAGE, "buffer over 2 GiB");
		return -1;
	}
	if (b->cap - b->used >= n)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->used < n)
		cap *= 2;
	uint8_t *nb = malloc(cap);
	if (!nb) {
		fbb_fail(b, TETHER_ERROR, "out of memory");
		return -1;
	}
	if (b->used)
		memcpy(nb + cap - b->used, b->buf + b->cap - b->used, b->used);
	free(b->buf);
	b->buf = nb;
	b->cap = cap;
	return 0;
}

void fbb_expect(struct fbb *b, size_t n)
{
	if (n > b->cap && n <= FBB_MAX_SIZE)
		fbb_reserve(b, n - b->used);
}

/* Writes n bytes in front of the data. */
static void fbb_push(struct fbb *b, const void *p, size_t n)
{
	/* The common case inline: room already there. */
	if ((b->cap - b->used < n || b->failed) && fbb_reserve(b, n))
		return;
	b->used += n;
	uint8_t *dst = b->buf + b->cap - b->used;
	/* Most pushes are a scalar or an offset: no library call for those. */
	if (n <= 8) {
		const uint8_t *src = p;
		for (size_t i = 0; i < n; i++)
			dst[i] = src[i];
	} else {
		memcpy(dst, p, n);
	}
}

static void fbb_pad(struct fbb *b, size_t n)
{
	static const uint8_t zeros[16];
	while (n > 0 && !b->failed) {
		size_t k = n < sizeof zeros ? n : sizeof zeros;
		fbb_push(b, zeros, k);
		n -= k;
	}
}

/* Pads so that `additional` bytes written next end `align`-aligned. */
static void fbb_prep(struct fbb *b, size_t align, size_t additional)
{
	if (align > b->minalign)
		b->minalign = align;
	/* align is a power of two (every caller checks): no division. */
	size_t pad = ((size_t)0 - (b->used + additional)) & (align - 1);
	if (pad)
		fbb_pad(b, pad);
}

static void fbb_push_u32(struct fbb *b, uint32_t v)
{
	uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	fbb_push(b, le, 4);
}

/* Writes a uoffset to r in front of the data (already aligned). */
static void fbb_push_uoffset(struct fbb *b, fb_ref r)
{
	if (r == 0 || r > b->used) {
		fbb_fail(b, TETHER_EUSAGE, "reference to nothing built yet");
		return;
	}
	fbb_push_u32(b, (uint32_t)(b->used + 4 - r));
}

static int fbb_outside_table(struct fbb *b)
{
	if (b->in_table) {
		fbb_fail(b, TETHER_EUSAGE, "strings and vectors are built before the table that holds them");
		return 0;
	}
	return !b->failed;
}

static int bad_align(size_t align)
{
	return align == 0 || align > 16 || (align & (align - 1)) != 0;
}

/* A vector's elements then its length: padded so the length is 4-aligned
 * and the elements `align`-aligned. */
static fb_ref fbb_raw_vector(struct fbb *b, const void *elems, size_t n, size_t elem_size, size_t align,
                             int nul)
{
	if (!fbb_outside_table(b))
		return 0;
	if (bad_align(align) || elem_size == 0) {
		fbb_fail(b, TETHER_EUSAGE, "vector of zero-sized or badly aligned elements");
		return 0;
	}
	if (n > UINT32_MAX || n > FBB_MAX_SIZE / elem_size) {
		fbb_fail(b, TETHER_EUSAGE, "vector over 2 GiB");
		return 0;
	}
	size_t bytes = n * elem_size + (nul ? 1 : 0);
	fbb_prep(b, 4, bytes);
	fbb_prep(b, align, bytes);
	if (nul)
		fbb_pad(b, 1);
	fbb_push(b, elems, n * elem_size);
	fbb_push_u32(b, (uint32_t)n);
	return b->failed ? 0 : (fb_ref)b->used;
}

fb_ref fbb_string(struct fbb *b, const char *s, size_t n)
{
	return fbb_raw_vector(b, s, n, 1, 1, 1);
}

fb_ref fbb_bytes(struct fbb *b, const void *p, size_t n)
{
	return fbb_raw_vector(b, p, n, 1, 1, 0);
}

fb_ref fbb_vector(struct fbb *b, const void *elems, size_t n, size_t elem_size, size_t align)
{
	return fbb_raw_vector(b, elems, n, elem_size, align, 0);
}

fb_ref fbb_vector_refs(struct fbb *b, const fb_ref *refs, size_t n)
{
	if (!fbb_outside_table(b))
		return 0;
	if (n > FBB_MAX_SIZE / 4) {
		fbb_fail(b, TETHER_EUSAGE, "vector over 2 GiB");
		return 0;
	}
	fbb_prep(b, 4, n * 4);
	for (size_t i = n; i-- > 0 && !b->failed;)
		fbb_push_uoffset(b, refs[i]);
	fbb_push_u32(b, (uint32_t)n);
	return b->failed ? 0 : (fb_ref)b->used;
}

void fbb_table_start(struct fbb *b)
{
	if (b->in_table) {
		fbb_fail(b, TETHER_EUSAGE, "tables do not nest: build the children first");
		return;
	}
	b->in_table = 1;
	b->table_end = b->used;
	/* slot_at is all zero here: fbb_init and every fbb_table_end clear it. */
	b->nslots = 0;
}

/* Checks a field may be added at slot; 0 when not (the builder failed). */
static int fbb_field_ok(struct fbb *b, unsigned slot)
{
	if (b->failed)
		return 0;
	if (!b->in_table) {
		fbb_fail(b, TETHER_EUSAGE, "field added outside a table");
		return 0;
	}
	if (slot >= FBB_MAX_SLOTS) {
		fbb_fail(b, TETHER_EUSAGE, "slot beyond FBB_MAX_SLOTS");
		return 0;
	}
	if (b->slot_at[slot]) {
		fbb_fail(b, TETHER_EUSAGE, "slot added twice");
		return 0;
	}
	return 1;
}

static void fbb_field_done(struct fbb *b, unsigned slot)
{
	if (b->failed)
		return;
	b->slot_at[slot] = (uint32_t)b->used;
	if (slot + 1 > b->nslots)
		b->nslots = slot + 1;
}

/* A little-endian scalar of size bytes, aligned to its size. */
static void fbb_add_scalar(struct fbb *b, unsigned slot, uint64_t v, size_t size)
{
	if (!fbb_field_ok(b, slot))
		return;
	uint8_t le[8];
	for (size_t i = 0; i < size; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	fbb_prep(b, size, size);
	fbb_push(b, le, size);
	fbb_field_done(b, slot);
}

void fbb_add_u8(struct fbb *b, unsigned slot, uint8_t v) { fbb_add_scalar(b, slot, v, 1); }
void fbb_add_u16(struct fbb *b, unsigned slot, uint16_t v) { fbb_add_scalar(b, slot, v, 2); }
void fbb_add_u32(struct fbb *b, unsigned slot, uint32_t v) { fbb_add_scalar(b, slot, v, 4); }
void fbb_add_i32(struct fbb *b, unsigned slot, int32_t v) { fbb_add_scalar(b, slot, (uint32_t)v, 4); }
void fbb_add_u64(struct fbb *b, unsigned slot, uint64_t v) { fbb_add_scalar(b, slot, v, 8); }

void fbb_add_ref(struct fbb *b, unsigned slot, fb_ref r)
{
	if (!fbb_field_ok(b, slot))
		return;
	if (r == 0 || r > b->table_end) {
		fbb_fail(b, TETHER_EUSAGE, "field refers to something not built before its table");
		return;
	}
	fbb_prep(b, 4, 4);
	fbb_push_uoffset(b, r);
	fbb_field_done(b, slot);
}

void fbb_add_struct(struct fbb *b, unsigned slot, const void *p, size_t size, size_t align)
{
	if (!fbb_field_ok(b, slot))
		return;
	if (bad_align(align) || size == 0) {
		fbb_fail(b, TETHER_EUSAGE, "struct of zero size or bad alignment");
		return;
	}
	fbb_prep(b, align, size);
	fbb_push(b, p, size);
	fbb_field_done(b, slot);
}

/* The soffset, then the vtable in front of it: the vtable sits before its
 * table, so the soffset (table minus vtable) is positive. */
fb_ref fbb_table_end(struct fbb *b)
{
	if (!b->in_table) {
		fbb_fail(b, TETHER_EUSAGE, "table ended without being started");
		return 0;
	}
	b->in_table = 0;
	if (b->failed) {
		memset(b->slot_at, 0, sizeof b->slot_at);
		return 0;
	}
	fbb_prep(b, 4, 4);
	fbb_push_u32(b, 0); /* the soffset, patched below */
	if (b->failed)
		return 0;
	size_t table = b->used;
	size_t size = table - b->table_end;
	size_t vt_len = 4 + 2 * (size_t)b->nslots;
	if (size > UINT16_MAX) {
		fbb_fail(b, TETHER_EUSAGE, "table's inline part over 64 KiB");
		return 0;
	}
	uint8_t vt[4 + 2 * FBB_MAX_SLOTS];
	vt[0] = (uint8_t)vt_len;
	vt[1] = (uint8_t)(vt_len >> 8);
	vt[2] = (uint8_t)size;
	vt[3] = (uint8_t)(size >> 8);
	for (unsigned s = 0; s < b->nslots; s++) {
		size_t off = b->slot_at[s] ? table - b->slot_at[s] : 0;
		vt[4 + 2 * s] = (uint8_t)off;
		vt[5 + 2 * s] = (uint8_t)(off >> 8);
		b->slot_at[s] = 0; /* clean for the next table */
	}
	/* used is 4-aligned here and vt_len even: the vtable is 2-aligned.
	 * Every table gets its own vtable: sharing one between tables of a
	 * shape (as FlatBuffers' builders can) makes an Icechunk repo file 12 %
	 * smaller before compression but 10 % larger after it, and slower to
	 * compress. */
	fbb_push(b, vt, vt_len);
	if (b->failed)
		return 0;
	size_t vtable = b->used;
	uint32_t soff = (uint32_t)((int64_t)vtable - (int64_t)table);
	uint8_t *at = b->buf + b->cap - table;
	at[0] = (uint8_t)soff;
	at[1] = (uint8_t)(soff >> 8);
	at[2] = (uint8_t)(soff >> 16);
	at[3] = (uint8_t)(soff >> 24);
	return (fb_ref)table;
}

int fbb_finish(struct fbb *b, fb_ref root, const char *ident, uint8_t **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (b->in_table)
		fbb_fail(b, TETHER_EUSAGE, "finished inside a table");
	if (!b->failed && (root == 0 || root > b->used))
		fbb_fail(b, TETHER_EUSAGE, "root is not a built table");
	size_t head = ident ? 8 : 4;
	fbb_prep(b, b->minalign > 4 ? b->minalign : 4, head);
	if (ident)
		fbb_push(b, ident, 4);
	fbb_push_uoffset(b, root);
	if (b->failed)
		return tether_error_set(b->failed, "flatbuffer builder: %s", fbb_why ? fbb_why : "failed");
	/* The data to the front of the builder's own memory, handed over. */
	memmove(b->buf, b->buf + b->cap - b->used, b->used);
	*out = b->buf;
	*len = b->used;
	b->buf = NULL;
	fbb_init(b);
	return 0;
}
