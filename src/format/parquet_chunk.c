/* One column chunk decoded: its pages (dictionary, data v1 and v2) read
 * in order, each decompressed into a buffer of the size its header
 * declares (charged against the read's budget first), levels decoded from
 * the RLE/bit-packed hybrid, values from PLAIN or dictionary indices, into
 * JSON. Every length is checked against the bytes it claims to span. */
#include "format/parquet_codec.h"
#include "format/parquet_internal.h"
#include "format/thrift_compact.h"
#include "util/hex.h"

#include <tether/backend.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one decoded value's JSON is charged (a json_t and its allocation). */
#define PQ_JSON_VALUE_COST 48

enum { PQ_DATA_PAGE = 0, PQ_INDEX_PAGE = 1, PQ_DICTIONARY_PAGE = 2, PQ_DATA_PAGE_V2 = 3 };

struct pq_page {
	int type;
	int32_t usize, csize;
	int32_t nvals;
	int encoding, def_encoding, rep_encoding;
	int32_t def_len, rep_len; /* v2: the levels' byte lengths */
	bool compressed;          /* v2: are the values compressed */
	bool have_sub;            /* the header for its type was present */
};

struct pq_cctx {
	const struct tt_parquet_file *f;
	const struct pq_node *node;
	struct pq_budget *budget;
	struct pq_column *col;
	size_t rg;
	size_t page;
	int64_t num_values;
	json_t **dict;
	size_t ndict;
	char path[256];
};

static int pq_cerr(struct pq_cctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pq_cerr(struct pq_cctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tether_error_set(TETHER_EIO, "%s: row group %zu, column %s, page %zu: %s", c->f->what, c->rg, c->path,
	                        c->page, msg);
}

static int pq_oom(struct pq_cctx *c)
{
	return tether_error_set(TETHER_ERROR, "%s: out of memory reading column %s", c->f->what, c->path);
}

static bool pq_charge(struct pq_budget *b, size_t n)
{
	if (n > b->left)
		return false;
	b->left -= n;
	return true;
}

static int pq_over_budget(struct pq_cctx *c)
{
	return pq_cerr(c, "decoded data over the limit of %zu MiB (a decompression bomb?)",
	               (size_t)TT_PARQUET_MAX_DECODED >> 20);
}

static const char *pq_encoding_name(int e, char buf[24])
{
	static const char *const names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
	                                    "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
	                                    "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
	if (e >= 0 && e < (int)(sizeof names / sizeof *names))
		return names[e];
	snprintf(buf, 24, "encoding %d", e);
	return buf;
}

/* ---- the page header ---- */

static int pq_sub_header(struct tc_reader *r, int which, struct pq_page *pg)
{
	int16_t last;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	pg->have_sub = true;
	pg->nvals = -1;
	for (;;) {
		int t, rc = 0;
		int16_t id;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		if (id == 1) {
			rc = tc_i32(r, t, &pg->nvals);
		} else if (which == 7 && id == 2) { /* DictionaryPageHeader.encoding */
			rc = tc_i32(r, t, &pg->encoding);
		} else if (which == 5 && id >= 2 && id <= 4) { /* DataPageHeader */
			rc = tc_i32(r, t, id == 2 ? &pg->encoding : id == 3 ? &pg->def_encoding : &pg->rep_encoding);
		} else if (which == 8 && id == 4) { /* DataPageHeaderV2 */
			rc = tc_i32(r, t, &pg->encoding);
		} else if (which == 8 && id == 5) {
			rc = tc_i32(r, t, &pg->def_len);
		} else if (which == 8 && id == 6) {
			rc = tc_i32(r, t, &pg->rep_len);
		} else if (which == 8 && id == 7) {
			rc = tc_bool(r, t, &pg->compressed);
		} else {
			rc = tc_skip(r, t);
		}
		if (rc != 0)
			return -1;
	}
	tc_struct_end(r);
	if (pg->nvals < 0)
		return tc_fail(r, "page without a value count");
	return 0;
}

static int pq_page_header(struct tc_reader *r, struct pq_page *pg)
{
	int16_t last;
	memset(pg, 0, sizeof *pg);
	pg->type = pg->usize = pg->csize = -1;
	pg->compressed = true;
	pg->def_encoding = pg->rep_encoding = PQ_RLE;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	for (;;) {
		int t, rc = 0;
		int16_t id;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		if (id == 1)
			rc = tc_i32(r, t, &pg->type);
		else if (id == 2)
			rc = tc_i32(r, t, &pg->usize);
		else if (id == 3)
			rc = tc_i32(r, t, &pg->csize);
		else if ((id == 5 && pg->type == PQ_DATA_PAGE) || (id == 7 && pg->type == PQ_DICTIONARY_PAGE) ||
		         (id == 8 && pg->type == PQ_DATA_PAGE_V2))
			rc = t == TC_STRUCT ? pq_sub_header(r, id, pg) : tc_fail(r, "page sub-header not a struct");
		else
			rc = tc_skip(r, t);
		if (rc != 0)
			return -1;
	}
	tc_struct_end(r);
	if (pg->type < 0 || pg->usize < 0 || pg->csize < 0)
		return tc_fail(r, "page header without type or sizes");
	if (pg->type != PQ_INDEX_PAGE && pg->type <= PQ_DATA_PAGE_V2 && !pg->have_sub)
		return tc_fail(r, "page header without the header of its type");
	return 0;
}

/* ---- the RLE / bit-packed hybrid ---- */

/* count values of bw bits (0-32) from p[0..len) into out. */
static const char *pq_rle(const uint8_t *p, size_t len, int bw, size_t count, uint32_t *out)
{
	size_t pos = 0, got = 0;
	size_t vbytes = ((size_t)bw + 7) / 8;
	uint64_t vmax = bw == 32 ? UINT32_MAX : ((uint64_t)1 << bw) - 1;
	while (got < count) {
		uint64_t h = 0;
		int shift = 0;
		for (;;) {
			if (pos >= len)
				return "RLE data truncated";
			uint8_t b = p[pos++];
			h |= (uint64_t)(b & 0x7f) << shift;
			if (!(b & 0x80))
				break;
			if ((shift += 7) > 35)
				return "RLE run header over 32 bits";
		}
		if (h & 1) {
			uint64_t groups = h >> 1;
			uint64_t n = groups * 8;
			if (n > count - got)
				n = count - got;
			/* The bytes the used values span (a writer may stop short of
			 * the padding of the last group). */
			uint64_t bits = n * (uint64_t)bw;
			if ((bits + 7) / 8 > len - pos)
				return "bit-packed run past the end";
			for (uint64_t j = 0; j < n; j++) {
				uint64_t bit = j * (uint64_t)bw, v = 0;
				size_t byte = pos + (size_t)(bit >> 3);
				unsigned sh = (unsigned)(bit & 7);
				size_t need = ((size_t)sh + (size_t)bw + 7) / 8;
				for (size_t k = 0; k < need; k++)
					v |= (uint64_t)p[byte + k] << (8 * k);
				out[got++] = (uint32_t)((v >> sh) & vmax);
			}
			uint64_t full = groups * (uint64_t)bw;
			pos = full > len - pos ? len : pos + (size_t)full;
		} else {
			uint64_t run = h >> 1;
			if (vbytes > len - pos)
				return "RLE run value past the end";
			uint64_t v = 0;
			for (size_t k = 0; k < vbytes; k++)
				v |= (uint64_t)p[pos + k] << (8 * k);
			pos += vbytes;
			if (v > vmax)
				return "RLE run value wider than its bit width";
			if (run > count - got)
				run = count - got;
			for (uint64_t j = 0; j < run; j++)
				out[got++] = (uint32_t)v;
		}
	}
	return NULL;
}

static int pq_bit_width(uint32_t max)
{
	int bw = 0;
	while (max) {
		bw++;
		max >>= 1;
	}
	return bw;
}

/* n levels of maximum max into out, from RLE data (the caller has removed
 * any length prefix). tmp holds n uint32s. */
static const char *pq_levels(const uint8_t *p, size_t len, int max, size_t n, uint32_t *tmp, uint8_t *out)
{
	const char *err = pq_rle(p, len, pq_bit_width((uint32_t)max), n, tmp);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (tmp[i] > (uint32_t)max)
			return "level above the column's maximum";
		out[i] = (uint8_t)tmp[i];
	}
	return NULL;
}

/* ---- values ---- */

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

static uint32_t pq_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
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

/* count PLAIN values from p[0..len) into out (zeroed; what is filled on
 * an error is the caller's to release). */
static const char *pq_plain(const struct pq_node *n, const uint8_t *p, size_t len, size_t count, json_t **out,
                            struct pq_budget *b)
{
	size_t width = 0;
	switch (n->type) {
	case PQ_BOOLEAN:
		if (count > len * 8)
			return "PLAIN booleans past the end";
		for (size_t i = 0; i < count; i++)
			out[i] = json_boolean((p[i / 8] >> (i % 8)) & 1);
		return NULL;
	case PQ_INT32:
	case PQ_FLOAT:
		width = 4;
		break;
	case PQ_INT64:
	case PQ_DOUBLE:
		width = 8;
		break;
	case PQ_INT96:
		width = 12;
		break;
	case PQ_FIXED_LEN_BYTE_ARRAY:
		width = (size_t)n->type_length;
		break;
	case PQ_BYTE_ARRAY: {
		size_t pos = 0;
		for (size_t i = 0; i < count; i++) {
			if (len - pos < 4)
				return "PLAIN byte array length past the end";
			uint32_t l = pq_le32(p + pos);
			pos += 4;
			if (l > len - pos)
				return "PLAIN byte array past the end";
			if (!pq_charge(b, (size_t)l * 2 + PQ_JSON_VALUE_COST))
				return "decoded data over the limit";
			const char *err = NULL;
			if (!(out[i] = pq_bytes_json(n, p + pos, l, &err)))
				return err;
			pos += l;
		}
		return NULL;
	}
	default:
		return "unknown physical type";
	}
	if (count > len / width)
		return "PLAIN values past the end";
	if (!pq_charge(b, count * PQ_JSON_VALUE_COST))
		return "decoded data over the limit";
	for (size_t i = 0; i < count; i++) {
		const uint8_t *v = p + i * width;
		const char *err = NULL;
		switch (n->type) {
		case PQ_INT32: {
			uint32_t u = pq_le32(v);
			out[i] = n->is_unsigned ? json_integer((json_int_t)u) : json_integer((int32_t)u);
			break;
		}
		case PQ_INT64:
			out[i] = pq_int64_json(n, (int64_t)pq_le64(v));
			break;
		case PQ_FLOAT: {
			uint32_t u = pq_le32(v);
			float fl;
			memcpy(&fl, &u, sizeof fl);
			out[i] = pq_real(fl);
			break;
		}
		case PQ_DOUBLE: {
			uint64_t u = pq_le64(v);
			double d;
			memcpy(&d, &u, sizeof d);
			out[i] = pq_real(d);
			break;
		}
		default:
			if (!pq_charge(b, width * 2))
				return "decoded data over the limit";
			out[i] = pq_bytes_json(n, v, width, &err);
			if (!out[i])
				return err;
		}
		if (!out[i])
			return "out of memory";
	}
	return NULL;
}

/* The values of ndef defined entries, in the page's encoding. */
static int pq_values(struct pq_cctx *c, int encoding, const uint8_t *p, size_t len, size_t ndef, json_t **out)
{
	char eb[24];
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
		if (ndef > SIZE_MAX / sizeof(uint32_t) || !pq_charge(c->budget, ndef * sizeof(uint32_t)))
			return pq_over_budget(c);
		uint32_t *idx = malloc(ndef * sizeof *idx);
		if (!idx)
			return pq_oom(c);
		err = pq_rle(p + 1, len - 1, p[0], ndef, idx);
		for (size_t i = 0; !err && i < ndef; i++) {
			if (idx[i] >= c->ndict)
				err = "dictionary index past the dictionary";
			else
				out[i] = json_incref(c->dict[idx[i]]);
		}
		free(idx);
		c->budget->left += ndef * sizeof(uint32_t);
	} else if (encoding == PQ_RLE && c->node->type == PQ_BOOLEAN) {
		if (len < 4 || pq_le32(p) > len - 4)
			return pq_cerr(c, "RLE booleans' length past the end");
		if (ndef > SIZE_MAX / sizeof(uint32_t) || !pq_charge(c->budget, ndef * sizeof(uint32_t)))
			return pq_over_budget(c);
		uint32_t *bits = malloc((ndef ? ndef : 1) * sizeof *bits);
		if (!bits)
			return pq_oom(c);
		err = pq_rle(p + 4, pq_le32(p), 1, ndef, bits);
		for (size_t i = 0; !err && i < ndef; i++)
			out[i] = json_boolean(bits[i]);
		free(bits);
		c->budget->left += ndef * sizeof(uint32_t);
	} else {
		return pq_cerr(c, "values in %s (not supported)", pq_encoding_name(encoding, eb));
	}
	if (err)
		return pq_cerr(c, "%s", err);
	return 0;
}

/* ---- pages ---- */

/* The page's bytes decompressed, charged to the budget. *owned is what to
 * free (NULL when the input is used as it is). */
static int pq_inflate(struct pq_cctx *c, int codec, const uint8_t *src, size_t srclen, size_t usize,
                      const uint8_t **out, uint8_t **owned)
{
	*owned = NULL;
	if (codec == PQ_UNCOMPRESSED) {
		if (srclen != usize)
			return pq_cerr(c, "uncompressed page of %zu bytes, its header says %zu", srclen, usize);
		*out = src;
		return 0;
	}
	if (!pq_charge(c->budget, usize))
		return pq_over_budget(c);
	uint8_t *buf = malloc(usize ? usize : 1);
	if (!buf)
		return pq_oom(c);
	const char *err = pq_decompress(codec, src, srclen, buf, usize);
	if (err) {
		free(buf);
		c->budget->left += usize;
		return pq_cerr(c, "%s", err);
	}
	*out = buf;
	*owned = buf;
	return 0;
}

static void pq_release(struct pq_cctx *c, uint8_t *owned, size_t usize)
{
	if (owned) {
		free(owned);
		c->budget->left += usize;
	}
}

static int pq_dictionary_page(struct pq_cctx *c, int codec, const struct pq_page *pg, const uint8_t *body)
{
	char eb[24];
	if (c->dict)
		return pq_cerr(c, "a second dictionary page");
	if (pg->encoding != PQ_PLAIN && pg->encoding != PQ_PLAIN_DICTIONARY)
		return pq_cerr(c, "dictionary in %s (not supported)", pq_encoding_name(pg->encoding, eb));
	size_t n = (size_t)pg->nvals;
	if (n > (SIZE_MAX / sizeof(json_t *)) || !pq_charge(c->budget, n * sizeof(json_t *)))
		return pq_over_budget(c);
	const uint8_t *data;
	uint8_t *owned;
	if (pq_inflate(c, codec, body, (size_t)pg->csize, (size_t)pg->usize, &data, &owned) != 0)
		return -1;
	c->dict = calloc(n ? n : 1, sizeof *c->dict);
	if (!c->dict) {
		pq_release(c, owned, (size_t)pg->usize);
		return pq_oom(c);
	}
	c->ndict = n;
	const char *err = pq_plain(c->node, data, (size_t)pg->usize, n, c->dict, c->budget);
	pq_release(c, owned, (size_t)pg->usize);
	if (err)
		return pq_cerr(c, "dictionary: %s", err);
	return 0;
}

/* The levels and values of a data page (v1 or v2) appended to the column. */
static int pq_data_page(struct pq_cctx *c, int codec, const struct pq_page *pg, const uint8_t *body)
{
	char eb[24];
	struct pq_column *col = c->col;
	const struct pq_node *n = c->node;
	size_t nv = (size_t)pg->nvals;
	if ((int64_t)nv > c->num_values - (int64_t)col->nlevels)
		return pq_cerr(c, "more values than the column chunk's metadata says (%lld)", (long long)c->num_values);
	bool v2 = pg->type == PQ_DATA_PAGE_V2;
	const uint8_t *data, *levels;
	uint8_t *owned = NULL;
	size_t dlen, llen, usize = (size_t)pg->usize, csize = (size_t)pg->csize;
	if (v2) {
		/* v2: the levels come first, never compressed; then the values. */
		if (pg->rep_len < 0 || pg->def_len < 0 || (size_t)pg->rep_len + (size_t)pg->def_len > csize ||
		    (size_t)pg->rep_len + (size_t)pg->def_len > usize)
			return pq_cerr(c, "level lengths past the page");
		llen = (size_t)pg->rep_len + (size_t)pg->def_len;
		levels = body;
		const uint8_t *vsrc = body + llen;
		size_t vclen = csize - llen, vulen = usize - llen;
		if (pq_inflate(c, pg->compressed ? codec : PQ_UNCOMPRESSED, vsrc, vclen, vulen, &data, &owned) != 0)
			return -1;
		dlen = vulen;
	} else {
		if (pq_inflate(c, codec, body, csize, usize, &levels, &owned) != 0)
			return -1;
		llen = usize;
		data = NULL;
		dlen = 0;
	}
	int rc = -1;
	uint32_t *tmp = NULL;
	size_t tmpsize = nv * sizeof(uint32_t);
	if (nv > SIZE_MAX / sizeof(uint32_t) || !pq_charge(c->budget, tmpsize)) {
		pq_over_budget(c);
		goto out;
	}
	tmp = malloc(tmpsize ? tmpsize : 1);
	if (!tmp) {
		c->budget->left += tmpsize;
		pq_oom(c);
		goto out;
	}
	size_t lpos = 0;
	for (int which = 0; which < 2; which++) { /* repetition, then definition */
		int max = which == 0 ? n->rep : n->def;
		uint8_t *dst = which == 0 ? col->rep : col->def;
		if (max == 0)
			continue;
		size_t len;
		if (v2) {
			len = (size_t)(which == 0 ? pg->rep_len : pg->def_len);
		} else {
			int enc = which == 0 ? pg->rep_encoding : pg->def_encoding;
			if (enc != PQ_RLE) {
				pq_cerr(c, "%s levels in %s (not supported)", which ? "definition" : "repetition",
				        pq_encoding_name(enc, eb));
				goto out;
			}
			if (llen - lpos < 4 || pq_le32(levels + lpos) > llen - lpos - 4) {
				pq_cerr(c, "%s levels' length past the page", which ? "definition" : "repetition");
				goto out;
			}
			len = pq_le32(levels + lpos);
			lpos += 4;
		}
		const char *err = pq_levels(levels + lpos, len, max, nv, tmp, dst + col->nlevels);
		if (err) {
			pq_cerr(c, "%s levels: %s", which ? "definition" : "repetition", err);
			goto out;
		}
		lpos += len;
	}
	if (!v2) {
		data = levels + lpos;
		dlen = llen - lpos;
	}
	size_t ndef = nv;
	if (n->def > 0) {
		ndef = 0;
		for (size_t i = 0; i < nv; i++)
			ndef += col->def[col->nlevels + i] == n->def;
	}
	if (pq_values(c, pg->encoding, data, dlen, ndef, col->vals + col->nvals) != 0)
		goto out;
	col->nlevels += nv;
	col->nvals += ndef;
	rc = 0;
out:
	if (tmp) {
		free(tmp);
		c->budget->left += tmpsize;
	}
	pq_release(c, owned, v2 ? usize - llen : usize);
	return rc;
}

int pq_read_chunk(const struct tt_parquet_file *f, size_t rg, uint32_t leaf, struct pq_budget *budget,
                  struct pq_column *col)
{
	char cb[24];
	struct pq_cctx c = {.f = f, .budget = budget, .col = col, .rg = rg};
	const struct pq_chunk *ch = &f->rgs[rg].chunks[leaf];
	c.node = &f->nodes[f->leaf_node[leaf]];
	pq_leaf_path(f, leaf, c.path, sizeof c.path);
	memset(col, 0, sizeof *col);
	if (ch->external)
		return pq_cerr(&c, "column chunk in another file (not supported)");
	if (!ch->has_meta)
		return pq_cerr(&c, "column chunk without metadata (encrypted?)");
	if (ch->type != c.node->type)
		return pq_cerr(&c, "column chunk of type %d, the schema says %d", ch->type, c.node->type);
	if (ch->codec != PQ_UNCOMPRESSED && ch->codec != PQ_SNAPPY && ch->codec != PQ_GZIP && ch->codec != PQ_ZSTD)
		return pq_cerr(&c, "compression %s (not supported)", pq_codec_name(ch->codec, cb));
	int64_t start = ch->data_page_offset;
	if (ch->dictionary_page_offset > 0 && ch->dictionary_page_offset < start)
		start = ch->dictionary_page_offset;
	if (start < 4 || (uint64_t)start > f->footer_start || (uint64_t)ch->compressed_size > f->footer_start - (uint64_t)start)
		return pq_cerr(&c, "column chunk at %lld+%lld past the data", (long long)start, (long long)ch->compressed_size);
	c.num_values = ch->num_values;
	size_t nv = (size_t)ch->num_values;
	/* The levels and value slots now; each value's JSON as it is made. */
	size_t per = sizeof(json_t *) + (c.node->def > 0) + (c.node->rep > 0);
	if ((uint64_t)ch->num_values > SIZE_MAX / per || !pq_charge(budget, nv * per))
		return pq_over_budget(&c);
	col->vals = calloc(nv ? nv : 1, sizeof *col->vals);
	col->cap = col->vals ? nv : 0;
	if (c.node->def > 0)
		col->def = malloc(nv ? nv : 1);
	if (c.node->rep > 0)
		col->rep = malloc(nv ? nv : 1);
	if (!col->vals || (c.node->def > 0 && !col->def) || (c.node->rep > 0 && !col->rep))
		return pq_oom(&c);
	const uint8_t *p = f->data + start, *end = p + ch->compressed_size;
	int rc = 0;
	while ((int64_t)col->nlevels < ch->num_values) {
		if (p >= end) {
			rc = pq_cerr(&c, "column chunk ends after %zu of %lld values", col->nlevels, (long long)ch->num_values);
			break;
		}
		struct tc_reader r;
		struct pq_page pg;
		tc_reader_init(&r, p, (size_t)(end - p));
		if (pq_page_header(&r, &pg) != 0) {
			rc = pq_cerr(&c, "page header corrupt: %s at byte %lld", r.err ? r.err : "unreadable",
			             (long long)(p - f->data) + (long long)r.err_at);
			break;
		}
		const uint8_t *body = r.p;
		if ((size_t)pg.csize > (size_t)(end - body)) {
			rc = pq_cerr(&c, "page of %d bytes past the end of the column chunk", pg.csize);
			break;
		}
		if (pg.type == PQ_DICTIONARY_PAGE)
			rc = pq_dictionary_page(&c, ch->codec, &pg, body);
		else if (pg.type == PQ_DATA_PAGE || pg.type == PQ_DATA_PAGE_V2)
			rc = pq_data_page(&c, ch->codec, &pg, body);
		if (rc != 0)
			break;
		p = body + pg.csize;
		c.page++;
	}
	for (size_t i = 0; i < c.ndict; i++)
		json_decref(c.dict[i]);
	free(c.dict);
	if (rc == 0 && c.node->def == 0 && c.node->rep == 0 && col->nvals != col->nlevels)
		rc = pq_cerr(&c, "values missing");
	return rc;
}

void pq_column_free(struct pq_column *col)
{
	if (col->vals) {
		/* All of them: a failed page may have filled some past nvals. */
		for (size_t i = 0; i < col->cap; i++)
			json_decref(col->vals[i]);
		free(col->vals);
	}
	free(col->def);
	free(col->rep);
	memset(col, 0, sizeof *col);
}
