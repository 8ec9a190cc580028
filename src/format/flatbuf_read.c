/* The checked flatbuffer reader. Every position is computed in 64 bits and
 * compared with the buffer's length before a byte is read, so no input can
 * make it read outside the buffer; the checks follow what Rust's verifier
 * enforces, because Icechunk refuses what that verifier refuses and we
 * would rather fail here, with a byte offset, than write such a file. */
#include "format/flatbuf.h"

#include <tether/backend.h>
#include <string.h>

static int fb_fail(const char *what, uint64_t at)
{
	return tether_error_set(TETHER_EIO, "flatbuffer: %s at byte %llu", what, (unsigned long long)at);
}

/* [pos, pos + n) lies inside a buffer of len bytes. */
static int in_bounds(size_t len, uint64_t pos, uint64_t n)
{
	return pos <= len && n <= len - pos;
}

/* Alignment relative to the buffer's start: the buffer itself is
 * malloc-aligned, so this is alignment in memory too. */
static int aligned(uint64_t pos, uint64_t align)
{
	return align <= 1 || pos % align == 0;
}

/* A scalar of `size` bytes at pos: in bounds and aligned to its size. */
static int check_scalar(size_t len, uint64_t pos, unsigned size, const char *what)
{
	if (!in_bounds(len, pos, size))
		return fb_fail(what, pos);
	if (!aligned(pos, size))
		return fb_fail(what, pos);
	return 0;
}

/* Follows the uoffset at pos: it must be aligned, inside the buffer, not 0,
 * and the place it names inside the buffer. */
static int follow_uoffset(const uint8_t *buf, size_t len, uint64_t pos, uint64_t *target)
{
	if (!in_bounds(len, pos, 4))
		return fb_fail("offset outside the buffer", pos);
	if (!aligned(pos, 4))
		return fb_fail("misaligned offset", pos);
	uint32_t off = fb_le32(buf + pos);
	if (off == 0)
		return fb_fail("offset 0", pos);
	if (pos + off >= len)
		return fb_fail("offset pointing outside the buffer", pos);
	*target = pos + off;
	return 0;
}

/* The table at pos and its vtable, checked as a whole before any field is
 * read: soffset aligned and inside, vtable aligned, even, at least the two
 * sizes, inside the buffer, and the table's inline bytes inside too. */
static int open_table(const uint8_t *buf, size_t len, uint64_t pos, struct fb_table *t)
{
	if (!in_bounds(len, pos, 4))
		return fb_fail("table outside the buffer", pos);
	if (!aligned(pos, 4))
		return fb_fail("misaligned table", pos);
	int32_t soff = (int32_t)fb_le32(buf + pos);
	int64_t vt = (int64_t)pos - (int64_t)soff;
	if (vt < 0 || (uint64_t)vt >= len)
		return fb_fail("vtable outside the buffer", pos);
	if (!aligned((uint64_t)vt, 2))
		return fb_fail("misaligned vtable", (uint64_t)vt);
	if (!in_bounds(len, (uint64_t)vt, 4))
		return fb_fail("vtable outside the buffer", (uint64_t)vt);
	uint16_t vt_len = fb_le16(buf + vt);
	uint16_t size = fb_le16(buf + vt + 2);
	if (vt_len < 4 || vt_len % 2)
		return fb_fail("vtable of bad length", (uint64_t)vt);
	if (!in_bounds(len, (uint64_t)vt, vt_len))
		return fb_fail("vtable outside the buffer", (uint64_t)vt);
	if (size < 4)
		return fb_fail("table smaller than its vtable offset", pos);
	if (!in_bounds(len, pos, size))
		return fb_fail("table outside the buffer", pos);
	t->buf = buf;
	t->len = len;
	t->pos = (uint32_t)pos;
	t->vt = (uint32_t)vt;
	t->vt_len = vt_len;
	t->size = size;
	return 0;
}

int fb_root(const void *data, size_t len, struct fb_table *root)
{
	if (len > UINT32_MAX)
		return fb_fail("buffer over 4 GiB", 0);
	uint64_t pos = 0;
	int rc = follow_uoffset(data, len, 0, &pos);
	if (rc)
		return rc;
	return open_table(data, len, pos, root);
}

int fb_has_identifier(const void *data, size_t len, const char ident[4])
{
	return len >= 8 && memcmp((const uint8_t *)data + 4, ident, 4) == 0;
}

unsigned fb_slots(const struct fb_table *t)
{
	return (unsigned)(t->vt_len - 4) / 2;
}

/* The vtable's entry for slot: the field's offset in the table, 0 when
 * absent (or beyond the vtable, which is how older writers say absent). */
static uint16_t slot_offset(const struct fb_table *t, unsigned slot)
{
	if (slot >= fb_slots(t))
		return 0;
	return fb_le16(t->buf + t->vt + 4 + 2 * (size_t)slot);
}

unsigned fb_used_slots(const struct fb_table *t)
{
	for (unsigned s = fb_slots(t); s > 0; s--)
		if (slot_offset(t, s - 1))
			return s;
	return 0;
}

int fb_has(const struct fb_table *t, unsigned slot)
{
	return slot_offset(t, slot) != 0;
}

/* Where the field at slot lives, after checking that its `size` bytes lie
 * inside the table's inline part and are aligned to `align`. *pos = 0 when
 * the field is absent (no field can be at byte 0: the root offset is). */
static int field_pos(const struct fb_table *t, unsigned slot, unsigned size, unsigned align, uint64_t *pos)
{
	uint16_t off = slot_offset(t, slot);
	*pos = 0;
	if (!off)
		return 0;
	uint64_t at = (uint64_t)t->pos + off;
	if (off < 4 || (uint64_t)off + size > t->size)
		return fb_fail("field outside its table", at);
	if (!in_bounds(t->len, at, size))
		return fb_fail("field outside the buffer", at);
	if (!aligned(at, align))
		return fb_fail("misaligned field", at);
	*pos = at;
	return 0;
}

#define FB_SCALAR_READER(name, type, size, load)                                          \
	int name(const struct fb_table *t, unsigned slot, type dflt, type *out)                \
	{                                                                                      \
		uint64_t pos = 0;                                                                      \
		int rc = field_pos(t, slot, size, size, &pos);                                     \
		if (rc)                                                                            \
			return rc;                                                                     \
		*out = pos ? (type)load(t->buf + pos) : dflt;                                      \
		return 0;                                                                          \
	}

static uint8_t fb_le8(const uint8_t *p) { return p[0]; }

FB_SCALAR_READER(fb_u8, uint8_t, 1, fb_le8)
FB_SCALAR_READER(fb_u16, uint16_t, 2, fb_le16)
FB_SCALAR_READER(fb_u32, uint32_t, 4, fb_le32)
FB_SCALAR_READER(fb_i32, int32_t, 4, fb_le32)
FB_SCALAR_READER(fb_u64, uint64_t, 8, fb_le64)

static int bad_align(size_t align)
{
	return align == 0 || align > 16 || (align & (align - 1)) != 0;
}

int fb_struct(const struct fb_table *t, unsigned slot, size_t size, size_t align, const uint8_t **out)
{
	*out = NULL;
	if (size == 0 || size > UINT16_MAX || bad_align(align))
		return tether_error_set(TETHER_EUSAGE, "flatbuffer: struct of size %zu, alignment %zu", size, align);
	uint64_t pos = 0;
	int rc = field_pos(t, slot, (unsigned)size, (unsigned)align, &pos);
	if (rc)
		return rc;
	if (pos)
		*out = t->buf + pos;
	return 0;
}

/* The uoffset field at slot, followed. *target = 0 when absent. */
static int offset_field(const struct fb_table *t, unsigned slot, uint64_t *target)
{
	uint64_t pos = 0;
	*target = 0;
	int rc = field_pos(t, slot, 4, 4, &pos);
	if (rc || !pos)
		return rc;
	return follow_uoffset(t->buf, t->len, pos, target);
}

int fb_table(const struct fb_table *t, unsigned slot, struct fb_table *out, int *present)
{
	uint64_t target = 0;
	*present = 0;
	int rc = offset_field(t, slot, &target);
	if (rc || !target)
		return rc;
	rc = open_table(t->buf, t->len, target, out);
	if (rc)
		return rc;
	*present = 1;
	return 0;
}

/* Strict UTF-8, as Rust's str::from_utf8: no overlong forms, no
 * surrogates, nothing above U+10FFFF. Returns the offset of the first bad
 * byte, or n. */
static size_t utf8_valid_prefix(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = s[i];
		size_t need;
		uint8_t lo = 0x80, hi = 0xbf;
		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			if (c == 0xe0)
				lo = 0xa0;
			else if (c == 0xed)
				hi = 0x9f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f;
		} else {
			return i;
		}
		if (n - i <= need)
			return i;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return i;
		for (size_t k = 2; k <= need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
		i += need + 1;
	}
	return n;
}

/* The vector whose length sits at pos: its elements aligned and inside the
 * buffer, the length multiplied in 64 bits so it cannot wrap. */
static int open_vector(const uint8_t *buf, size_t len, uint64_t pos, size_t elem_size, size_t elem_align,
                       struct fb_vec *v)
{
	int rc = check_scalar(len, pos, 4, "vector length outside the buffer or misaligned");
	if (rc)
		return rc;
	uint32_t n = fb_le32(buf + pos);
	uint64_t start = pos + 4;
	if (!aligned(start, elem_align))
		return fb_fail("misaligned vector", start);
	if ((uint64_t)n * elem_size > len || !in_bounds(len, start, (uint64_t)n * elem_size))
		return fb_fail("vector longer than the buffer", pos);
	v->buf = buf;
	v->len = len;
	v->pos = (uint32_t)start;
	v->n = n;
	v->elem_size = (uint32_t)elem_size;
	return 0;
}

/* The string whose length sits at pos: inside the buffer and valid UTF-8.
 * A missing NUL after it is tolerated, as Icechunk's verifier options do. */
static int open_string(const uint8_t *buf, size_t len, uint64_t pos, const char **s, uint32_t *n)
{
	struct fb_vec v = {0};
	int rc = open_vector(buf, len, pos, 1, 1, &v);
	if (rc)
		return rc;
	size_t ok = utf8_valid_prefix(buf + v.pos, v.n);
	if (ok != v.n)
		return fb_fail("string not valid UTF-8", (uint64_t)v.pos + ok);
	*s = (const char *)buf + v.pos;
	*n = v.n;
	return 0;
}

int fb_string(const struct fb_table *t, unsigned slot, const char **s, uint32_t *n)
{
	uint64_t target = 0;
	*s = NULL;
	*n = 0;
	int rc = offset_field(t, slot, &target);
	if (rc || !target)
		return rc;
	return open_string(t->buf, t->len, target, s, n);
}

int fb_vector(const struct fb_table *t, unsigned slot, size_t elem_size, size_t elem_align,
              struct fb_vec *out, int *present)
{
	*present = 0;
	*out = (struct fb_vec){.buf = t->buf, .len = t->len, .elem_size = (uint32_t)elem_size};
	if (elem_size == 0 || elem_size > UINT16_MAX || bad_align(elem_align))
		return tether_error_set(TETHER_EUSAGE, "flatbuffer: vector of %zu-byte elements, alignment %zu",
		                        elem_size, elem_align);
	uint64_t target = 0;
	int rc = offset_field(t, slot, &target);
	if (rc || !target)
		return rc;
	rc = open_vector(t->buf, t->len, target, elem_size, elem_align, out);
	if (rc) {
		*out = (struct fb_vec){.buf = t->buf, .len = t->len, .elem_size = (uint32_t)elem_size};
		return rc;
	}
	*present = 1;
	return 0;
}

const uint8_t *fb_vec_elem(const struct fb_vec *v, uint32_t i)
{
	if (i >= v->n)
		return NULL;
	return v->buf + v->pos + (size_t)i * v->elem_size;
}

/* The uoffset in element i of a vector of references, followed. */
static int vec_ref(const struct fb_vec *v, uint32_t i, uint64_t *target)
{
	if (v->elem_size != 4)
		return tether_error_set(TETHER_EUSAGE, "flatbuffer: a vector of %u-byte elements holds no offsets",
		                        (unsigned)v->elem_size);
	if (i >= v->n)
		return fb_fail("vector index out of range", v->pos);
	return follow_uoffset(v->buf, v->len, (uint64_t)v->pos + 4 * (uint64_t)i, target);
}

int fb_vec_table(const struct fb_vec *v, uint32_t i, struct fb_table *out)
{
	uint64_t target = 0;
	int rc = vec_ref(v, i, &target);
	if (rc)
		return rc;
	return open_table(v->buf, v->len, target, out);
}

int fb_vec_string(const struct fb_vec *v, uint32_t i, const char **s, uint32_t *n)
{
	uint64_t target = 0;
	*s = NULL;
	*n = 0;
	int rc = vec_ref(v, i, &target);
	if (rc)
		return rc;
	return open_string(v->buf, v->len, target, s, n);
}
