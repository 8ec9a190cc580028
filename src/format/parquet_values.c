/* A page's values decoded into JSON, in each encoding the reader knows:
 * PLAIN, dictionary indices, RLE booleans, DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT. Every
 * value is charged to the read's budget as it is made. */
#include "format/parquet_internal.h"
#include "util/hex.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pq_encoding_name(int e, char buf[24])
{
	static const char *const names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
	                                    "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
	                                    "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
	if (e >= 0 && e < (int)(sizeof names / sizeof *names))
		return names[e];
	snprintf(buf, 24, "encoding %d", e);
	return buf;
}

/* A byte-array value as JSON: a string for text, else lower-case hex. */
static json_t *pq_bytes_json(const struct pq_node *n, const uint8_t *p, size_t len, const char **err)
{
	if (n->is_string) {
		json_t *s = json_stringn((const char *)p, len);
		if (!s)
			*err = "string value not valid UTF-8";
		return s;
	}
	if (len > (SIZE_MAX - 1) / 2) {
		*err = "value too long";
		return NULL;
	}
	char *hex = malloc(2 * len + 1);
	if (!hex) {
		*err = "out of memory";
		return NULL;
	}
	tt_hex(p, len, hex);
	json_t *s = json_stringn(hex, 2 * len);
	free(hex);
	if (!s)
		*err = "out of memory";
	return s;
}

static uint64_t pq_le64(const uint8_t *p)
{
	return (uint64_t)pq_le32(p) | (uint64_t)pq_le32(p + 4) << 32;
}

/* A real, or null for NaN and infinities, which JSON lacks. */
static json_t *pq_real(double d)
{
	return isfinite(d) ? json_real(d) : json_null();
}

static json_t *pq_int64_json(const struct pq_node *n, int64_t v)
{
	if (n->is_unsigned && v < 0)
		return json_real((double)(uint64_t)v);
	return json_integer(v);
}

/* The width of a fixed-width physical type's value; 0 for BOOLEAN and
 * BYTE_ARRAY. */
static size_t pq_width(const struct pq_node *n)
{
	switch (n->type) {
	case PQ_INT32:
	case PQ_FLOAT:
		return 4;
	case PQ_INT64:
	case PQ_DOUBLE:
		return 8;
	case PQ_INT96:
		return 12;
	case PQ_FIXED_LEN_BYTE_ARRAY:
		return (size_t)n->type_length;
	default:
		return 0;
	}
}

/* One fixed-width value from its little-endian bytes (width pq_width). */
static json_t *pq_fixed_json(const struct pq_node *n, const uint8_t *v, struct pq_budget *b, const char **err)
{
	json_t *j = NULL;
	switch (n->type) {
	case PQ_INT32: {
		uint32_t u = pq_le32(v);
		j = n->is_unsigned ? json_integer((json_int_t)u) : json_integer((int32_t)u);
		break;
	}
	case PQ_INT64:
		j = pq_int64_json(n, (int64_t)pq_le64(v));
		break;
	case PQ_FLOAT: {
		uint32_t u = pq_le32(v);
		float fl;
		memcpy(&fl, &u, sizeof fl);
		j = pq_real(fl);
		break;
	}
	case PQ_DOUBLE: {
		uint64_t u = pq_le64(v);
		double d;
		memcpy(&d, &u, sizeof d);
		j = pq_real(d);
		break;
	}
	default:
		if (!pq_charge(b, pq_width(n) * 2)) {
			*err = "decoded data over the limit";
			return NULL;
		}
		return pq_bytes_json(n, v, pq_width(n), err);
	}
	if (!j)
		*err = "out of memory";
	return j;
}

/* A byte array's JSON, charged to the budget. */
static json_t *pq_charged_bytes(const struct pq_node *n, const uint8_t *p, size_t len, struct pq_budget *b,
                                const char **err)
{
	if (len > SIZE_MAX / 4 || !pq_charge(b, len * 2 + PQ_JSON_VALUE_COST)) {
		*err = "decoded data over the limit";
		return NULL;
	}
	return pq_bytes_json(n, p, len, err);
}

/* count PLAIN values from p[0..len) into out (zeroed; what is filled on
 * an error is the caller's to release). */
const char *pq_plain(const struct pq_node *n, const uint8_t *p, size_t len, size_t count, json_t **out,
                            struct pq_budget *b)
{
	const char *err = NULL;
	if (n->type == PQ_BOOLEAN) {
		if (count > len * 8)
			return "PLAIN booleans past the end";
		for (size_t i = 0; i < count; i++)
			out[i] = json_boolean((p[i / 8] >> (i % 8)) & 1);
		return NULL;
	}
	if (n->type == PQ_BYTE_ARRAY) {
		size_t pos = 0;
		for (size_t i = 0; i < count; i++) {
			if (len - pos < 4)
				return "PLAIN byte array length past the end";
			uint32_t l = pq_le32(p + pos);
			pos += 4;
			if (l > len - pos)
				return "PLAIN byte array past the end";
			if (!(out[i] = pq_charged_bytes(n, p + pos, l, b, &err)))
				return err;
			pos += l;
		}
		return NULL;
	}
	size_t width = pq_width(n);
	if (count > len / width)
		return "PLAIN values past the end";
	if (!pq_charge(b, count * PQ_JSON_VALUE_COST))
		return "decoded data over the limit";
	for (size_t i = 0; i < count; i++) {
		if (!(out[i] = pq_fixed_json(n, p + i * width, b, &err)))
			return err;
	}
	return NULL;
}

/* DELTA_BINARY_PACKED integers. */
static const char *pq_delta_ints(struct pq_cctx *c, const uint8_t *p, size_t len, size_t ndef, json_t **out,
                                 uint64_t *vals)
{
	size_t used;
	const char *err = pq_delta_binary(p, len, ndef, vals, &used);
	if (!err && !pq_charge(c->budget, ndef * PQ_JSON_VALUE_COST))
		err = "decoded data over the limit";
	for (size_t i = 0; !err && i < ndef; i++) {
		uint8_t le[8];
		for (int k = 0; k < 8; k++)
			le[k] = (uint8_t)(vals[i] >> (8 * k));
		out[i] = pq_fixed_json(c->node, le, c->budget, &err);
	}
	return err;
}

/* DELTA_LENGTH_BYTE_ARRAY (prefix NULL) or DELTA_BYTE_ARRAY: lengths
 * (and prefix lengths) delta-packed, then the bytes one after another; a
 * DELTA_BYTE_ARRAY value is its predecessor's prefix and its own suffix. */
static const char *pq_delta_bytes(struct pq_cctx *c, const uint8_t *p, size_t len, size_t ndef, json_t **out,
                                  uint64_t *lens, uint64_t *prefix)
{
	size_t used = 0, used2;
	const char *err;
	if (prefix && (err = pq_delta_binary(p, len, ndef, prefix, &used)))
		return err;
	if ((err = pq_delta_binary(p + used, len - used, ndef, lens, &used2)))
		return err;
	size_t pos = used + used2;
	uint8_t *prev = NULL, *cur = NULL;
	size_t prevlen = 0;
	for (size_t i = 0; !err && i < ndef; i++) {
		uint64_t pl = prefix ? prefix[i] : 0, sl = lens[i];
		if (sl > len - pos)
			err = "delta byte array past the end";
		else if (pl > prevlen)
			err = "delta byte array prefix longer than the value before it";
		else if (c->node->type == PQ_FIXED_LEN_BYTE_ARRAY && pl + sl != (uint64_t)c->node->type_length)
			err = "fixed-length value of another length";
		else if (!pq_charge(c->budget, (size_t)(pl + sl)))
			err = "decoded data over the limit";
		else if (!(cur = malloc((size_t)(pl + sl) + 1)))
			err = "out of memory";
		if (err)
			break;
		if (pl)
			memcpy(cur, prev, (size_t)pl);
		if (sl)
			memcpy(cur + pl, p + pos, (size_t)sl);
		pos += (size_t)sl;
		out[i] = pq_charged_bytes(c->node, cur, (size_t)(pl + sl), c->budget, &err);
		free(prev);
		prev = cur;
		prevlen = (size_t)(pl + sl);
		cur = NULL;
	}
	free(prev);
	return err;
}

/* BYTE_STREAM_SPLIT: byte k of value i is at p[k * ndef + i]. */
static const char *pq_stream_split(struct pq_cctx *c, const uint8_t *p, size_t len, size_t ndef, json_t **out,
                                   uint8_t *tmp)
{
	size_t w = pq_width(c->node);
	const char *err = NULL;
	if (w == 0 || c->node->type == PQ_INT96 || ndef > len / w)
		return w ? "byte-stream-split values past the end" : "byte-stream-split of a variable-width type";
	if (!pq_charge(c->budget, ndef * PQ_JSON_VALUE_COST))
		return "decoded data over the limit";
	for (size_t i = 0; !err && i < ndef; i++) {
		for (size_t k = 0; k < w; k++)
			tmp[k] = p[k * ndef + i];
		out[i] = pq_fixed_json(c->node, tmp, c->budget, &err);
	}
	return err;
}

static bool pq_is_int(const struct pq_node *n)
{
	return n->type == PQ_INT32 || n->type == PQ_INT64;
}

/* The values of ndef defined entries in one of the encodings beyond PLAIN
 * and dictionaries, each into out. */
static int pq_values_other(struct pq_cctx *c, int encoding, const uint8_t *p, size_t len, size_t ndef, json_t **out)
{
	char eb[24];
	const char *err = NULL;
	const struct pq_node *n = c->node;
	bool bytes = n->type == PQ_BYTE_ARRAY || n->type == PQ_FIXED_LEN_BYTE_ARRAY;
	size_t nscratch = 0, size = sizeof(uint64_t);
	if (encoding == PQ_RLE && n->type == PQ_BOOLEAN) {
		if (len < 4 || pq_le32(p) > len - 4)
			return pq_cerr(c, "RLE booleans' length past the end");
		nscratch = ndef;
		size = sizeof(uint32_t);
	} else if (encoding == PQ_DELTA_BINARY_PACKED && pq_is_int(n)) {
		nscratch = ndef;
	} else if (encoding == PQ_DELTA_LENGTH_BYTE_ARRAY && n->type == PQ_BYTE_ARRAY) {
		nscratch = ndef;
	} else if (encoding == PQ_DELTA_BYTE_ARRAY && bytes) {
		nscratch = 2 * ndef;
	} else if (encoding == PQ_BYTE_STREAM_SPLIT && n->type != PQ_BOOLEAN && n->type != PQ_BYTE_ARRAY) {
		nscratch = pq_width(n);
		size = 1;
	} else {
		return pq_cerr(c, "values in %s (not supported) for this column's type", pq_encoding_name(encoding, eb));
	}
	void *scratch = pq_scratch(c, nscratch, size);
	if (!scratch)
		return -1;
	if (encoding == PQ_RLE) {
		uint32_t *bits = scratch;
		err = pq_rle(p + 4, pq_le32(p), 1, ndef, bits);
		for (size_t i = 0; !err && i < ndef; i++)
			out[i] = json_boolean(bits[i]);
	} else if (encoding == PQ_DELTA_BINARY_PACKED) {
		err = pq_delta_ints(c, p, len, ndef, out, scratch);
	} else if (encoding == PQ_DELTA_LENGTH_BYTE_ARRAY) {
		err = pq_delta_bytes(c, p, len, ndef, out, scratch, NULL);
	} else if (encoding == PQ_DELTA_BYTE_ARRAY) {
		err = pq_delta_bytes(c, p, len, ndef, out, scratch, (uint64_t *)scratch + ndef);
	} else {
		err = pq_stream_split(c, p, len, ndef, out, scratch);
	}
	pq_scratch_free(c, scratch, nscratch, size);
	return err ? pq_cerr(c, "%s", err) : 0;
}

/* The values of ndef defined entries, in the page's encoding. */
int pq_values(struct pq_cctx *c, int encoding, const uint8_t *p, size_t len, size_t ndef, json_t **out)
{
	const char *err = NULL;
	if (encoding == PQ_PLAIN) {
		err = pq_plain(c->node, p, len, ndef, out, c->budget);
	} else if (encoding == PQ_PLAIN_DICTIONARY || encoding == PQ_RLE_DICTIONARY) {
		if (!c->dict)
			return pq_cerr(c, "dictionary-encoded page without a dictionary page");
		if (ndef == 0)
			return 0;
		if (len < 1)
			return pq_cerr(c, "dictionary indices missing");
		if (p[0] > 32)
			return pq_cerr(c, "dictionary index bit width %u", p[0]);
		uint32_t *idx = pq_scratch(c, ndef, sizeof *idx);
		if (!idx)
			return -1;
		err = pq_rle(p + 1, len - 1, p[0], ndef, idx);
		for (size_t i = 0; !err && i < ndef; i++) {
			if (idx[i] >= c->ndict)
				err = "dictionary index past the dictionary";
			else
				out[i] = json_incref(c->dict[idx[i]]);
		}
		pq_scratch_free(c, idx, ndef, sizeof *idx);
	} else {
		return pq_values_other(c, encoding, p, len, ndef, out);
	}
	if (err)
		return pq_cerr(c, "%s", err);
	return 0;
}
