/* FlexBuffers <-> jansson.
 *
 * A FlexBuffer is read from its end: the last byte is the root's width, the
 * one before it the root's packed type (type << 2 | log2 width), and the
 * root value sits just before them. Scalars (null, bool, int, uint, float)
 * live in their parent's slot; everything else is an unsigned offset in
 * the slot, counted backwards from the slot itself. The writer below makes
 * the choices Rust's flexbuffers builder makes (smallest widths, keys
 * shared, vectors aligned to their width), so for the same JSON it writes
 * the same bytes, except that arrays are always untyped vectors. */
#include "format/flexbuf.h"

#include <tether/backend.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum flex_type {
	FX_NULL = 0,
	FX_INT = 1,
	FX_UINT = 2,
	FX_FLOAT = 3,
	FX_KEY = 4,
	FX_STRING = 5,
	FX_INDIRECT_INT = 6,
	FX_INDIRECT_UINT = 7,
	FX_INDIRECT_FLOAT = 8,
	FX_MAP = 9,
	FX_VECTOR = 10,
	FX_VECTOR_INT = 11,
	FX_VECTOR_UINT = 12,
	FX_VECTOR_FLOAT = 13,
	FX_VECTOR_KEY = 14,
	FX_VECTOR_STRING_DEPRECATED = 15,
	FX_VECTOR_INT2 = 16,
	FX_VECTOR_UINT2 = 17,
	FX_VECTOR_FLOAT2 = 18,
	FX_VECTOR_INT3 = 19,
	FX_VECTOR_UINT3 = 20,
	FX_VECTOR_FLOAT3 = 21,
	FX_VECTOR_INT4 = 22,
	FX_VECTOR_UINT4 = 23,
	FX_VECTOR_FLOAT4 = 24,
	FX_BLOB = 25,
	FX_BOOL = 26,
	FX_VECTOR_BOOL = 36,
};

#define FLEX_MAX_DEPTH 64

/* ------------------------------------------------------------------ */
/* Decoding                                                            */
/* ------------------------------------------------------------------ */

/* Offsets may share data, so a small buffer can describe a huge tree (a
 * vector whose elements all point at one big vector, 64 levels deep). What
 * a decode may produce is therefore bounded by the buffer's size: values
 * (each has a slot of at least a byte unless containers are shared, which
 * no common writer does) and bytes of text copied (keys are shared by
 * writers, so a long key used in many maps is copied many times). */
#define FLEX_NODES_PER_BYTE 4
#define FLEX_NODES_BASE (1u << 16)
#define FLEX_TEXT_PER_BYTE 64
#define FLEX_TEXT_BASE (1u << 20)

struct flex_reader {
	const uint8_t *buf;
	size_t len;
	uint64_t nodes_left, text_left;
};

static int flex_fail(const char *what, uint64_t at)
{
	return tether_error_set(TETHER_EIO, "flexbuffer: %s at byte %llu", what, (unsigned long long)at);
}

static int flex_in_bounds(const struct flex_reader *r, uint64_t pos, uint64_t n)
{
	return pos <= r->len && n <= r->len - pos;
}

static int flex_spend(uint64_t *left, uint64_t units, uint64_t at)
{
	if (units > *left)
		return flex_fail("more data than the buffer's size allows (shared by too many offsets)", at);
	*left -= units;
	return 0;
}

/* An unsigned little-endian number of width bytes at pos. */
static int flex_uint(const struct flex_reader *r, uint64_t pos, unsigned width, uint64_t *out)
{
	if (!flex_in_bounds(r, pos, width))
		return flex_fail("value outside the buffer", pos);
	uint64_t v = 0;
	for (unsigned i = 0; i < width; i++)
		v |= (uint64_t)r->buf[pos + i] << (8 * i);
	*out = v;
	return 0;
}

static int flex_int(const struct flex_reader *r, uint64_t pos, unsigned width, int64_t *out)
{
	uint64_t u = 0;
	int rc = flex_uint(r, pos, width, &u);
	if (rc)
		return rc;
	if (width < 8 && (u >> (8 * width - 1)) & 1)
		u |= ~(uint64_t)0 << (8 * width); /* sign-extend */
	*out = (int64_t)u;
	return 0;
}

static int flex_float(const struct flex_reader *r, uint64_t pos, unsigned width, json_t **out)
{
	uint64_t u = 0;
	double d;
	if (width != 4 && width != 8)
		return flex_fail("float narrower than 32 bits", pos);
	int rc = flex_uint(r, pos, width, &u);
	if (rc)
		return rc;
	if (width == 4) {
		uint32_t u32 = (uint32_t)u;
		float f;
		memcpy(&f, &u32, sizeof f);
		d = f;
	} else {
		memcpy(&d, &u, sizeof d);
	}
	/* JSON has no NaN or infinity; serde_json reads them as null, and so
	 * does this, so both show the same value. */
	*out = isfinite(d) ? json_real(d) : json_null();
	return *out ? 0 : tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
}

static int flex_uint_json(uint64_t u, uint64_t at, json_t **out)
{
	if (u > INT64_MAX)
		return flex_fail("unsigned integer above 2^63-1", at);
	*out = json_integer((json_int_t)u);
	return *out ? 0 : tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
}

/* The position an offset slot names: the slot minus the offset in it. */
static int flex_deref(const struct flex_reader *r, uint64_t slot, unsigned width, uint64_t *target)
{
	uint64_t off = 0;
	int rc = flex_uint(r, slot, width, &off);
	if (rc)
		return rc;
	if (off > slot)
		return flex_fail("offset pointing before the buffer", slot);
	*target = slot - off;
	return 0;
}

/* A key: NUL-terminated UTF-8 at pos. */
static int flex_key(struct flex_reader *r, uint64_t pos, const char **s, size_t *n)
{
	if (pos >= r->len)
		return flex_fail("key outside the buffer", pos);
	const uint8_t *nul = memchr(r->buf + pos, 0, r->len - pos);
	if (!nul)
		return flex_fail("key without a terminating NUL", pos);
	*s = (const char *)r->buf + pos;
	*n = (size_t)(nul - (r->buf + pos));
	return flex_spend(&r->text_left, *n, pos);
}

static int flex_text_json(const char *s, size_t n, uint64_t at, json_t **out)
{
	*out = json_stringn(s, n);
	return *out ? 0 : flex_fail("text not valid UTF-8", at);
}

/* The length in the width-byte slot before pos, for strings and vectors. */
static int flex_length(const struct flex_reader *r, uint64_t pos, unsigned width, uint64_t *n)
{
	if (pos < width)
		return flex_fail("length before the start of the buffer", pos);
	return flex_uint(r, pos - width, width, n);
}

/* n elements of width bytes at pos (and, when untyped, n type bytes after
 * them) fit in the buffer; the product cannot wrap as n is checked first. */
static int flex_fits(const struct flex_reader *r, uint64_t pos, uint64_t n, unsigned width, int types)
{
	uint64_t per = width + (types ? 1u : 0u);
	if (n > r->len / per || !flex_in_bounds(r, pos, n * per))
		return flex_fail("vector longer than the buffer", pos);
	return 0;
}

static int flex_value(struct flex_reader *r, uint64_t slot, unsigned parent_width, uint8_t packed, int depth,
                      json_t **out);

static int flex_vector(struct flex_reader *r, uint64_t pos, unsigned width, uint64_t n, int untyped,
                       uint8_t elem_type, int depth, json_t **out)
{
	int rc = flex_fits(r, pos, n, width, untyped);
	if (rc)
		return rc;
	json_t *arr = json_array();
	if (!arr)
		return tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
	/* A typed vector's elements have its width: for the deprecated vector
	 * of strings that is the width of each string's length too, as Rust
	 * reads it. */
	uint8_t elem_packed = (uint8_t)(elem_type << 2 | (width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3));
	for (uint64_t i = 0; i < n; i++) {
		uint8_t packed = untyped ? r->buf[pos + n * width + i] : elem_packed;
		json_t *v;
		rc = flex_value(r, pos + i * width, width, packed, depth + 1, &v);
		if (!rc && json_array_append_new(arr, v))
			rc = tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
		if (rc) {
			json_decref(arr);
			return rc;
		}
	}
	*out = arr;
	return 0;
}

/* A map: its keys vector's offset, that vector's width and the length sit
 * in the three slots before the values, which are an untyped vector. */
static int flex_map(struct flex_reader *r, uint64_t pos, unsigned width, int depth, json_t **out)
{
	if (pos < 3 * (uint64_t)width)
		return flex_fail("map prefix before the start of the buffer", pos);
	uint64_t keys = 0, key_width = 0, n = 0, nkeys = 0;
	int rc = flex_deref(r, pos - 3 * width, width, &keys);
	if (!rc)
		rc = flex_uint(r, pos - 2 * width, width, &key_width);
	if (!rc)
		rc = flex_uint(r, pos - width, width, &n);
	if (rc)
		return rc;
	if (key_width != 1 && key_width != 2 && key_width != 4 && key_width != 8)
		return flex_fail("map keys of bad width", pos - 2 * width);
	unsigned kw = (unsigned)key_width;
	rc = flex_length(r, keys, kw, &nkeys);
	if (rc)
		return rc;
	if (nkeys != n)
		return flex_fail("map with as many keys as values", pos);
	rc = flex_fits(r, pos, n, width, 1);
	if (!rc)
		rc = flex_fits(r, keys, n, kw, 0);
	if (rc)
		return rc;
	json_t *obj = json_object();
	if (!obj)
		return tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key_pos = 0;
		const char *k;
		size_t klen;
		json_t *v = NULL;
		rc = flex_deref(r, keys + i * kw, kw, &key_pos);
		if (!rc)
			rc = flex_key(r, key_pos, &k, &klen);
		if (!rc)
			rc = flex_value(r, pos + i * width, width, r->buf[pos + n * width + i], depth + 1, &v);
		if (!rc && json_object_setn_new(obj, k, klen, v)) {
			v = NULL;
			rc = flex_fail("map key not valid UTF-8", key_pos);
		}
		if (rc) {
			json_decref(obj);
			return rc;
		}
	}
	*out = obj;
	return 0;
}

/* The element type of a typed vector, and its fixed length (0: prefixed). */
static int flex_typed(unsigned type, uint8_t *elem, unsigned *fixed)
{
	*fixed = 0;
	if (type >= FX_VECTOR_INT && type <= FX_VECTOR_STRING_DEPRECATED) {
		*elem = (uint8_t)(type - FX_VECTOR_INT + FX_INT);
		return 1;
	}
	if (type >= FX_VECTOR_INT2 && type <= FX_VECTOR_FLOAT4) {
		*elem = (uint8_t)((type - FX_VECTOR_INT2) % 3 + FX_INT);
		*fixed = (type - FX_VECTOR_INT2) / 3 + 2;
		return 1;
	}
	if (type == FX_VECTOR_BOOL) {
		*elem = FX_BOOL;
		return 1;
	}
	return 0;
}

/* The value in the parent_width-byte slot at `slot`, of packed type
 * `packed`. Scalars are read at the slot's width, as the C++ and Python
 * readers do (writers always make the two agree). */
static int flex_value(struct flex_reader *r, uint64_t slot, unsigned parent_width, uint8_t packed, int depth,
                      json_t **out)
{
	unsigned type = packed >> 2;
	unsigned width = 1u << (packed & 3);
	int rc = flex_spend(&r->nodes_left, 1, slot);
	if (rc)
		return rc;
	*out = NULL;
	switch (type) {
	case FX_NULL:
		*out = json_null();
		return 0;
	case FX_BOOL: {
		uint64_t u = 0;
		rc = flex_uint(r, slot, parent_width, &u);
		if (!rc)
			*out = json_boolean(u != 0);
		return rc;
	}
	case FX_INT: {
		int64_t i;
		rc = flex_int(r, slot, parent_width, &i);
		if (!rc && !(*out = json_integer(i)))
			rc = tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
		return rc;
	}
	case FX_UINT: {
		uint64_t u = 0;
		rc = flex_uint(r, slot, parent_width, &u);
		return rc ? rc : flex_uint_json(u, slot, out);
	}
	case FX_FLOAT:
		return flex_float(r, slot, parent_width, out);
	default:
		break;
	}

	uint64_t pos = 0;
	uint8_t elem;
	unsigned fixed;
	if (type > FX_BOOL && type != FX_VECTOR_BOOL)
		return flex_fail("unknown type", slot);
	rc = flex_deref(r, slot, parent_width, &pos);
	if (rc)
		return rc;
	switch (type) {
	case FX_INDIRECT_INT: {
		int64_t i;
		rc = flex_int(r, pos, width, &i);
		if (!rc && !(*out = json_integer(i)))
			rc = tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
		return rc;
	}
	case FX_INDIRECT_UINT: {
		uint64_t u = 0;
		rc = flex_uint(r, pos, width, &u);
		return rc ? rc : flex_uint_json(u, pos, out);
	}
	case FX_INDIRECT_FLOAT:
		return flex_float(r, pos, width, out);
	case FX_KEY: {
		const char *k;
		size_t n = 0;
		rc = flex_key(r, pos, &k, &n);
		return rc ? rc : flex_text_json(k, n, pos, out);
	}
	case FX_STRING: {
		uint64_t n = 0;
		rc = flex_length(r, pos, width, &n);
		if (rc)
			return rc;
		if (!flex_in_bounds(r, pos, n))
			return flex_fail("string longer than the buffer", pos);
		rc = flex_spend(&r->text_left, n, pos);
		return rc ? rc : flex_text_json((const char *)r->buf + pos, (size_t)n, pos, out);
	}
	case FX_BLOB:
		return flex_fail("blob (JSON values hold none)", pos);
	default:
		break;
	}

	/* Containers from here on. */
	if (depth >= FLEX_MAX_DEPTH)
		return flex_fail("nested deeper than 64 levels", pos);
	if (type == FX_MAP)
		return flex_map(r, pos, width, depth, out);
	uint64_t n = 0;
	if (type == FX_VECTOR) {
		rc = flex_length(r, pos, width, &n);
		return rc ? rc : flex_vector(r, pos, width, n, 1, 0, depth, out);
	}
	if (!flex_typed(type, &elem, &fixed))
		return flex_fail("unknown type", slot);
	if (fixed) {
		n = fixed;
	} else {
		rc = flex_length(r, pos, width, &n);
		if (rc)
			return rc;
	}
	return flex_vector(r, pos, width, n, 0, elem, depth, out);
}

int flex_decode(const void *data, size_t len, json_t **out)
{
	struct flex_reader r = {.buf = data, .len = len};
	*out = NULL;
	if (len < 3)
		return flex_fail("buffer shorter than its root", 0);
	r.nodes_left = (uint64_t)len * FLEX_NODES_PER_BYTE + FLEX_NODES_BASE;
	r.text_left = (uint64_t)len * FLEX_TEXT_PER_BYTE + FLEX_TEXT_BASE;
	unsigned root_width = r.buf[len - 1];
	if (root_width != 1 && root_width != 2 && root_width != 4 && root_width != 8)
		return flex_fail("root of bad width", len - 1);
	if (len - 2 < root_width)
		return flex_fail("root before the start of the buffer", len - 1);
	return flex_value(&r, len - 2 - root_width, root_width, r.buf[len - 2], 0, out);
}

/* ------------------------------------------------------------------ */
/* Encoding                                                            */
/* ------------------------------------------------------------------ */

/* A value waiting to be stored in its parent: an inline scalar, or a
 * reference to what is already in the buffer. */
struct flex_val {
	uint8_t type;
	uint8_t width; /* scalars: the value's own width; references: the child's */
	int is_ref;
	union {
		int64_t i;
		uint64_t u;
		double d;
		size_t addr;
	} v;
};

struct flex_writer {
	uint8_t *buf;
	size_t len, cap;
	struct flex_val *stack; /* values of the containers being built */
	size_t depth_vals, stack_cap;
	size_t *keys; /* addresses of keys written, sorted by their bytes */
	size_t nkeys, keys_cap;
	int failed;
};

static unsigned width_of_uint(uint64_t u)
{
	return u <= UINT8_MAX ? 1 : u <= UINT16_MAX ? 2 : u <= UINT32_MAX ? 4 : 8;
}

static unsigned width_of_int(int64_t i)
{
	if (i >= INT8_MIN && i <= INT8_MAX)
		return 1;
	if (i >= INT16_MIN && i <= INT16_MAX)
		return 2;
	if (i >= INT32_MIN && i <= INT32_MAX)
		return 4;
	return 8;
}

/* 4 when the double survives a round trip through float, as Rust checks. */
static unsigned width_of_float(double d)
{
	if (fabs(d) > FLT_MAX)
		return 8;
	return (double)(float)d == d ? 4 : 8;
}

static unsigned log2_width(unsigned w)
{
	return w == 1 ? 0 : w == 2 ? 1 : w == 4 ? 2 : 3;
}

static int fw_oom(struct flex_writer *w)
{
	if (!w->failed)
		w->failed = tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
	return w->failed;
}

static int fw_reserve(struct flex_writer *w, size_t n)
{
	if (w->failed)
		return w->failed;
	if (w->cap - w->len >= n)
		return 0;
	size_t cap = w->cap ? w->cap : 64;
	while (cap - w->len < n) {
		if (cap > SIZE_MAX / 2)
			return fw_oom(w);
		cap *= 2;
	}
	uint8_t *nb = realloc(w->buf, cap);
	if (!nb)
		return fw_oom(w);
	w->buf = nb;
	w->cap = cap;
	return 0;
}

static void fw_bytes(struct flex_writer *w, const void *p, size_t n)
{
	if (fw_reserve(w, n))
		return;
	if (n)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void fw_align(struct flex_writer *w, unsigned width)
{
	static const uint8_t zeros[8];
	fw_bytes(w, zeros, (width - w->len % width) % width);
}

static void fw_uint(struct flex_writer *w, uint64_t u, unsigned width)
{
	uint8_t le[8];
	for (unsigned i = 0; i < width; i++)
		le[i] = (uint8_t)(u >> (8 * i));
	fw_bytes(w, le, width);
}

static void fw_push(struct flex_writer *w, struct flex_val v)
{
	if (w->failed)
		return;
	if (w->depth_vals == w->stack_cap) {
		size_t cap = w->stack_cap ? 2 * w->stack_cap : 32;
		struct flex_val *ns = realloc(w->stack, cap * sizeof *ns);
		if (!ns) {
			fw_oom(w);
			return;
		}
		w->stack = ns;
		w->stack_cap = cap;
	}
	w->stack[w->depth_vals++] = v;
}

/* The narrowest width a value can be stored at in a vector whose prefix
 * starts at `start`, at slot idx (counting the prefix): a reference's
 * offset grows with the padding and slot size, so try each width. */
static unsigned width_in_vector(const struct flex_val *v, size_t start, size_t idx)
{
	if (!v->is_ref)
		return v->width;
	for (unsigned w = 1; w < 8; w *= 2) {
		size_t at = start + (w - start % w) % w + idx * w;
		if (width_of_uint(at - v->v.addr) <= w)
			return w;
	}
	return 8;
}

static uint8_t packed_type(const struct flex_val *v, unsigned parent_width)
{
	unsigned width = v->width;
	if (!v->is_ref && parent_width > width)
		width = parent_width;
	return (uint8_t)(v->type << 2 | log2_width(width));
}

static void fw_store(struct flex_writer *w, const struct flex_val *v, unsigned width)
{
	uint64_t u = 0;
	if (v->is_ref) {
		u = w->len - v->v.addr;
	} else if (v->type == FX_FLOAT) {
		if (width == 4) {
			float f = (float)v->v.d;
			uint32_t u32;
			memcpy(&u32, &f, sizeof u32);
			u = u32;
		} else {
			memcpy(&u, &v->v.d, sizeof u);
		}
	} else if (v->type == FX_INT) {
		u = (uint64_t)v->v.i;
	} else {
		u = v->v.u; /* uint, bool (0/1), null (0) */
	}
	fw_uint(w, u, width);
}

/* Stores the n values at vals as a vector (untyped, or of keys) or, with
 * keys, as a map; returns the reference to it. */
static struct flex_val fw_vector(struct flex_writer *w, const struct flex_val *vals, size_t n, size_t stride,
                                 uint8_t type, const struct flex_val *keys)
{
	int with_types = type != FX_VECTOR_KEY;
	size_t prefix = keys ? 3 : 1;
	unsigned width = width_of_uint(n);
	if (keys) {
		unsigned kw = width_in_vector(keys, w->len, 0);
		if (kw > width)
			width = kw;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned ew = width_in_vector(&vals[i * stride], w->len, i + prefix);
		if (ew > width)
			width = ew;
	}
	fw_align(w, width);
	if (keys) {
		fw_store(w, keys, width);
		fw_uint(w, keys->width, width);
	}
	fw_uint(w, n, width);
	struct flex_val ref = {.type = type, .width = (uint8_t)width, .is_ref = 1, .v.addr = w->len};
	for (size_t i = 0; i < n; i++)
		fw_store(w, &vals[i * stride], width);
	if (with_types)
		for (size_t i = 0; i < n; i++) {
			uint8_t t = packed_type(&vals[i * stride], width);
			fw_bytes(w, &t, 1);
		}
	return ref;
}

/* Compares the NUL-terminated key at addr with k[0..n). */
static int fw_key_cmp(const struct flex_writer *w, size_t addr, const char *k, size_t n)
{
	const uint8_t *a = w->buf + addr;
	size_t alen = strlen((const char *)a);
	int c = memcmp(a, k, alen < n ? alen : n);
	if (c)
		return c;
	return alen < n ? -1 : alen > n ? 1 : 0;
}

/* Writes a key once per buffer, as Rust's builder does by default. */
static void fw_key(struct flex_writer *w, const char *k, size_t n)
{
	size_t lo = 0, hi = w->nkeys;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = fw_key_cmp(w, w->keys[mid], k, n);
		if (c == 0) {
			fw_push(w, (struct flex_val){.type = FX_KEY, .width = 1, .is_ref = 1, .v.addr = w->keys[mid]});
			return;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (w->nkeys == w->keys_cap) {
		size_t cap = w->keys_cap ? 2 * w->keys_cap : 16;
		size_t *nk = realloc(w->keys, cap * sizeof *nk);
		if (!nk) {
			fw_oom(w);
			return;
		}
		w->keys = nk;
		w->keys_cap = cap;
	}
	size_t addr = w->len;
	fw_bytes(w, k, n);
	fw_bytes(w, "", 1);
	if (w->failed)
		return;
	memmove(w->keys + lo + 1, w->keys + lo, (w->nkeys - lo) * sizeof *w->keys);
	w->keys[lo] = addr;
	w->nkeys++;
	fw_push(w, (struct flex_val){.type = FX_KEY, .width = 1, .is_ref = 1, .v.addr = addr});
}

static void fw_string(struct flex_writer *w, const char *s, size_t n)
{
	unsigned width = width_of_uint(n);
	fw_align(w, width);
	fw_uint(w, n, width);
	size_t addr = w->len;
	fw_bytes(w, s, n);
	fw_bytes(w, "", 1);
	fw_push(w, (struct flex_val){.type = FX_STRING, .width = (uint8_t)width, .is_ref = 1, .v.addr = addr});
}

struct fw_entry {
	const char *key;
	size_t len;
	json_t *value;
};

static int fw_entry_cmp(const void *pa, const void *pb)
{
	const struct fw_entry *a = pa, *b = pb;
	int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);
	if (c)
		return c;
	return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

static void fw_value(struct flex_writer *w, const json_t *v, int depth);

static void fw_array(struct flex_writer *w, const json_t *v, int depth)
{
	size_t base = w->depth_vals;
	size_t n = json_array_size(v);
	for (size_t i = 0; i < n && !w->failed; i++)
		fw_value(w, json_array_get(v, i), depth + 1);
	if (w->failed)
		return;
	struct flex_val ref = fw_vector(w, w->stack + base, n, 1, FX_VECTOR, NULL);
	w->depth_vals = base;
	fw_push(w, ref);
}

/* Keys in byte order, each written (once) and followed by its value; then
 * the keys vector, then the values with the map prefix in front. */
static void fw_object(struct flex_writer *w, const json_t *v, int depth)
{
	size_t n = json_object_size(v), i = 0;
	struct fw_entry *entries = calloc(n ? n : 1, sizeof *entries);
	if (!entries) {
		fw_oom(w);
		return;
	}
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)v, key, value) {
		entries[i].key = key;
		entries[i].len = json_object_iter_key_len(json_object_key_to_iter(key));
		entries[i].value = value;
		i++;
	}
	qsort(entries, n, sizeof *entries, fw_entry_cmp);
	size_t base = w->depth_vals;
	for (i = 0; i < n && !w->failed; i++) {
		if (memchr(entries[i].key, 0, entries[i].len)) {
			w->failed = tether_error_set(TETHER_EUSAGE, "flexbuffer: map key with a NUL byte");
			break;
		}
		fw_key(w, entries[i].key, entries[i].len);
		fw_value(w, entries[i].value, depth + 1);
	}
	free(entries);
	if (w->failed)
		return;
	struct flex_val keys = fw_vector(w, w->stack + base, n, 2, FX_VECTOR_KEY, NULL);
	struct flex_val ref = fw_vector(w, w->stack + base + 1, n, 2, FX_MAP, &keys);
	w->depth_vals = base;
	fw_push(w, ref);
}

static void fw_value(struct flex_writer *w, const json_t *v, int depth)
{
	struct flex_val s = {.width = 1};
	if (w->failed)
		return;
	switch (json_typeof(v)) {
	case JSON_NULL:
		s.type = FX_NULL;
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		s.type = FX_BOOL;
		s.v.u = json_is_true(v);
		break;
	case JSON_INTEGER: {
		/* serde_json keeps non-negative integers as u64, which Rust writes
		 * as UInt; negative ones as Int. */
		json_int_t i = json_integer_value(v);
		if (i >= 0) {
			s.type = FX_UINT;
			s.v.u = (uint64_t)i;
			s.width = (uint8_t)width_of_uint(s.v.u);
		} else {
			s.type = FX_INT;
			s.v.i = i;
			s.width = (uint8_t)width_of_int(i);
		}
		break;
	}
	case JSON_REAL:
		s.type = FX_FLOAT;
		s.v.d = json_real_value(v);
		s.width = (uint8_t)width_of_float(s.v.d);
		break;
	case JSON_STRING:
		fw_string(w, json_string_value(v), json_string_length(v));
		return;
	case JSON_ARRAY:
	case JSON_OBJECT:
		if (depth >= FLEX_MAX_DEPTH) {
			w->failed = tether_error_set(TETHER_EUSAGE, "flexbuffer: value nested deeper than 64 levels");
			return;
		}
		if (json_is_array(v))
			fw_array(w, v, depth);
		else
			fw_object(w, v, depth);
		return;
	}
	fw_push(w, s);
}

int flex_encode(const json_t *value, uint8_t **out, size_t *len)
{
	struct flex_writer w = {0};
	*out = NULL;
	*len = 0;
	if (!value)
		return tether_error_set(TETHER_EUSAGE, "flexbuffer: no value to encode");
	/* The stack exists before the first container is stored, so
	 * `stack + base` is never arithmetic on a null pointer. */
	w.stack = malloc(32 * sizeof *w.stack);
	if (!w.stack)
		return tether_error_set(TETHER_ERROR, "flexbuffer: out of memory");
	w.stack_cap = 32;
	fw_value(&w, value, 0);
	if (!w.failed) {
		struct flex_val root = w.stack[0];
		unsigned width = width_in_vector(&root, w.len, 0);
		fw_align(&w, width);
		fw_store(&w, &root, width);
		uint8_t tail[2] = {packed_type(&root, width), (uint8_t)width};
		fw_bytes(&w, tail, 2);
	}
	free(w.stack);
	free(w.keys);
	if (w.failed) {
		free(w.buf);
		return w.failed;
	}
	*out = w.buf;
	*len = w.len;
	return 0;
}
