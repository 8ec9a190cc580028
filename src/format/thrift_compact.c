/* The Thrift compact protocol: checked reading, appending writing. */
#include "format/thrift_compact.h"

#include <stdlib.h>
#include <string.h>

void tc_reader_init(struct tc_reader *r, const void *data, size_t len)
{
	r->base = data;
	r->p = data;
	r->end = r->base + len;
	r->depth = 0;
	r->err = NULL;
	r->err_at = 0;
}

int tc_fail(struct tc_reader *r, const char *msg)
{
	if (!r->err) {
		r->err = msg;
		r->err_at = (size_t)(r->p - r->base);
	}
	r->p = r->end; /* nothing more is read after an error */
	return -1;
}

static int tc_varint(struct tc_reader *r, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return tc_fail(r, "truncated varint");
		uint8_t b = *r->p++;
		if (shift == 63 && (b & 0x7e))
			return tc_fail(r, "varint over 64 bits");
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return tc_fail(r, "varint over 64 bits");
}

static int64_t tc_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static int tc_zigzag(struct tc_reader *r, int64_t *out)
{
	uint64_t v;
	if (tc_varint(r, &v) != 0)
		return -1;
	*out = tc_unzigzag(v);
	return 0;
}

int tc_struct_begin(struct tc_reader *r, int16_t *last)
{
	if (r->err)
		return -1;
	if (++r->depth > TC_MAX_DEPTH)
		return tc_fail(r, "structs nested too deep");
	*last = 0;
	return 0;
}

void tc_struct_end(struct tc_reader *r)
{
	r->depth--;
}

int tc_field(struct tc_reader *r, int16_t *last, int *type, int16_t *id)
{
	if (r->err)
		return -1;
	if (r->p >= r->end)
		return tc_fail(r, "truncated struct");
	uint8_t b = *r->p++;
	*type = b & 0x0f;
	if (*type == TC_STOP) {
		*id = 0;
		return 0;
	}
	if (*type > TC_STRUCT)
		return tc_fail(r, "unknown field type");
	int delta = b >> 4;
	if (delta) {
		*id = (int16_t)(*last + delta);
	} else {
		int64_t v;
		if (tc_zigzag(r, &v) != 0)
			return -1;
		if (v < INT16_MIN || v > INT16_MAX)
			return tc_fail(r, "field id out of range");
		*id = (int16_t)v;
	}
	*last = *id;
	return 0;
}

static int tc_int(struct tc_reader *r, int type, int64_t *out)
{
	if (r->err)
		return -1;
	switch (type) {
	case TC_I8:
		if (r->p >= r->end)
			return tc_fail(r, "truncated byte");
		*out = (int8_t)*r->p++;
		return 0;
	case TC_I16:
	case TC_I32:
	case TC_I64:
		return tc_zigzag(r, out);
	default:
		return tc_fail(r, "integer field of another type");
	}
}

int tc_i32(struct tc_reader *r, int type, int32_t *out)
{
	int64_t v;
	if (tc_int(r, type, &v) != 0)
		return -1;
	if (v < INT32_MIN || v > INT32_MAX)
		return tc_fail(r, "i32 out of range");
	*out = (int32_t)v;
	return 0;
}

int tc_i64(struct tc_reader *r, int type, int64_t *out)
{
	return tc_int(r, type, out);
}

int tc_bool(struct tc_reader *r, int type, bool *out)
{
	if (r->err)
		return -1;
	if (type != TC_TRUE && type != TC_FALSE)
		return tc_fail(r, "boolean field of another type");
	*out = type == TC_TRUE;
	return 0;
}

int tc_binary(struct tc_reader *r, int type, const uint8_t **out, size_t *len)
{
	uint64_t n;
	if (r->err)
		return -1;
	if (type != TC_BINARY)
		return tc_fail(r, "binary field of another type");
	if (tc_varint(r, &n) != 0)
		return -1;
	if (n > (uint64_t)(r->end - r->p))
		return tc_fail(r, "binary past the end");
	*out = r->p;
	*len = (size_t)n;
	r->p += n;
	return 0;
}

int tc_list_begin(struct tc_reader *r, int type, int *elem_type, uint32_t *count)
{
	if (r->err)
		return -1;
	if (type != TC_LIST && type != TC_SET)
		return tc_fail(r, "list field of another type");
	if (r->p >= r->end)
		return tc_fail(r, "truncated list");
	uint8_t b = *r->p++;
	uint64_t n = b >> 4;
	*elem_type = b & 0x0f;
	if (n == 15 && tc_varint(r, &n) != 0)
		return -1;
	/* Every element takes at least one byte, except booleans as struct
	 * fields, which lists do not have. */
	if (n > (uint64_t)(r->end - r->p))
		return tc_fail(r, "list longer than the bytes left");
	if (*elem_type == TC_STOP || *elem_type > TC_STRUCT)
		return tc_fail(r, "unknown list element type");
	*count = (uint32_t)n;
	return 0;
}

static int tc_skip_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	(void)r;
	(void)id;
	(void)type;
	(void)ctx;
	return TC_FIELD_SKIP;
}

int tc_read_struct(struct tc_reader *r, tc_field_fn on_field, void *ctx)
{
	int16_t last;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	for (;;) {
		int type;
		int16_t id;
		if (tc_field(r, &last, &type, &id) != 0)
			return -1;
		if (type == TC_STOP)
			break;
		int rc = on_field(r, id, type, ctx);
		if (rc == TC_FIELD_SKIP)
			rc = tc_skip(r, type);
		if (rc != 0)
			return tc_fail(r, "unreadable field");
	}
	tc_struct_end(r);
	return 0;
}

/* One element of a list, set or map: booleans there are one byte. */
static int tc_skip_element(struct tc_reader *r, int type)
{
	if (type == TC_TRUE || type == TC_FALSE) {
		if (r->p >= r->end)
			return tc_fail(r, "truncated boolean");
		r->p++;
		return 0;
	}
	return tc_skip(r, type);
}

int tc_skip(struct tc_reader *r, int type)
{
	if (r->err)
		return -1;
	switch (type) {
	case TC_TRUE:
	case TC_FALSE:
		return 0;
	case TC_I8:
		if (r->p >= r->end)
			return tc_fail(r, "truncated byte");
		r->p++;
		return 0;
	case TC_I16:
	case TC_I32:
	case TC_I64: {
		uint64_t v;
		return tc_varint(r, &v);
	}
	case TC_DOUBLE:
		if (r->end - r->p < 8)
			return tc_fail(r, "truncated double");
		r->p += 8;
		return 0;
	case TC_BINARY: {
		const uint8_t *p;
		size_t n;
		return tc_binary(r, type, &p, &n);
	}
	case TC_LIST:
	case TC_SET: {
		int et;
		uint32_t n;
		if (tc_list_begin(r, type, &et, &n) != 0)
			return -1;
		if (++r->depth > TC_MAX_DEPTH)
			return tc_fail(r, "lists nested too deep");
		for (uint32_t i = 0; i < n; i++) {
			if (tc_skip_element(r, et) != 0)
				return -1;
		}
		r->depth--;
		return 0;
	}
	case TC_MAP: {
		uint64_t n;
		if (tc_varint(r, &n) != 0)
			return -1;
		if (n == 0)
			return 0;
		if (n > (uint64_t)(r->end - r->p) / 2)
			return tc_fail(r, "map longer than the bytes left");
		if (r->p >= r->end)
			return tc_fail(r, "truncated map");
		uint8_t kv = *r->p++;
		int kt = kv >> 4, vt = kv & 0x0f;
		if (kt == TC_STOP || kt > TC_STRUCT || vt == TC_STOP || vt > TC_STRUCT)
			return tc_fail(r, "unknown map element type");
		if (++r->depth > TC_MAX_DEPTH)
			return tc_fail(r, "maps nested too deep");
		for (uint64_t i = 0; i < n; i++) {
			if (tc_skip_element(r, kt) != 0 || tc_skip_element(r, vt) != 0)
				return -1;
		}
		r->depth--;
		return 0;
	}
	case TC_STRUCT:
		return tc_read_struct(r, tc_skip_field, NULL);
	default:
		return tc_fail(r, "unknown field type");
	}
}

/* ---- writing ---- */

void tc_writer_init(struct tc_writer *w)
{
	memset(w, 0, sizeof *w);
}

void tc_writer_free(struct tc_writer *w)
{
	free(w->buf);
	memset(w, 0, sizeof *w);
}

void tc_w_bytes(struct tc_writer *w, const void *data, size_t n)
{
	if (w->oom || n == 0)
		return;
	if (w->cap - w->len < n) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap - w->len < n) {
			if (cap > SIZE_MAX / 2) {
				w->oom = true;
				return;
			}
			cap *= 2;
		}
		uint8_t *nb = realloc(w->buf, cap);
		if (!nb) {
			w->oom = true;
			return;
		}
		w->buf = nb;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, data, n);
	w->len += n;
}

void tc_w_uvarint(struct tc_writer *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;
	while (v >= 0x80) {
		b[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t)v;
	tc_w_bytes(w, b, n);
}

static uint64_t tc_zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void tc_w_field(struct tc_writer *w, int16_t id, int type)
{
	int16_t *last = &w->last[w->depth];
	int delta = id - *last;
	if (delta > 0 && delta <= 15) {
		uint8_t b = (uint8_t)(delta << 4 | type);
		tc_w_bytes(w, &b, 1);
	} else {
		uint8_t b = (uint8_t)type;
		tc_w_bytes(w, &b, 1);
		tc_w_uvarint(w, tc_zz(id));
	}
	*last = id;
}

void tc_w_struct_begin(struct tc_writer *w)
{
	if (w->depth + 1 >= TC_MAX_DEPTH) {
		w->oom = true; /* the writer's own nesting is fixed and shallow */
		return;
	}
	w->last[++w->depth] = 0;
}

void tc_w_struct_end(struct tc_writer *w)
{
	uint8_t stop = 0;
	tc_w_bytes(w, &stop, 1);
	if (w->depth > 0)
		w->depth--;
}

void tc_w_i32(struct tc_writer *w, int16_t id, int32_t v)
{
	tc_w_field(w, id, TC_I32);
	tc_w_uvarint(w, tc_zz(v));
}

void tc_w_i64(struct tc_writer *w, int16_t id, int64_t v)
{
	tc_w_field(w, id, TC_I64);
	tc_w_uvarint(w, tc_zz(v));
}

void tc_w_bool(struct tc_writer *w, int16_t id, bool v)
{
	tc_w_field(w, id, v ? TC_TRUE : TC_FALSE);
}

void tc_w_raw_binary(struct tc_writer *w, const void *data, size_t len)
{
	tc_w_uvarint(w, len);
	tc_w_bytes(w, data, len);
}

void tc_w_binary(struct tc_writer *w, int16_t id, const void *data, size_t len)
{
	tc_w_field(w, id, TC_BINARY);
	tc_w_raw_binary(w, data, len);
}

void tc_w_list(struct tc_writer *w, int16_t id, int elem_type, uint32_t count)
{
	tc_w_field(w, id, TC_LIST);
	if (count < 15) {
		uint8_t b = (uint8_t)(count << 4 | elem_type);
		tc_w_bytes(w, &b, 1);
	} else {
		uint8_t b = (uint8_t)(0xf0 | elem_type);
		tc_w_bytes(w, &b, 1);
		tc_w_uvarint(w, count);
	}
}

void tc_w_varint_i32(struct tc_writer *w, int32_t v)
{
	tc_w_uvarint(w, tc_zz(v));
}
