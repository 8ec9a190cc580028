/* One column chunk decoded: its pages (dictionary, data v1 and v2) read
 * in order, each decompressed into a buffer of the size its header
 * declares (charged against the read's budget first), levels decoded from
 * the RLE/bit-packed hybrid, values by parquet_values.c. Every length is
 * checked against the bytes it claims to span. */
#include "format/parquet_codec.h"
#include "format/parquet_internal.h"
#include "format/thrift_compact.h"

#include <tether/backend.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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


int pq_cerr(struct pq_cctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tether_error_set(TETHER_EIO, "%s: row group %zu, column %s, page %zu: %s", c->f->what, c->rg, c->path,
	                        c->page, msg);
}

int pq_oom(struct pq_cctx *c)
{
	return tether_error_set(TETHER_ERROR, "%s: out of memory reading column %s", c->f->what, c->path);
}

bool pq_charge(struct pq_budget *b, size_t n)
{
	if (n > b->left)
		return false;
	b->left -= n;
	return true;
}

int pq_over_budget(struct pq_cctx *c)
{
	return pq_cerr(c, "decoded data over the limit of %zu MiB (a decompression bomb?)",
	               (size_t)TT_PARQUET_MAX_DECODED >> 20);
}

/* ---- the page header ---- */

struct pq_sub_ctx {
	struct pq_page *pg;
	int which; /* the PageHeader field: 5 DataPageHeader, 7 DictionaryPageHeader, 8 DataPageHeaderV2 */
};

static int pq_sub_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_sub_ctx *x = ctx;
	struct pq_page *pg = x->pg;
	if (id == 1)
		return tc_i32(r, type, &pg->nvals);
	if (x->which == 7 && id == 2)
		return tc_i32(r, type, &pg->encoding);
	if (x->which == 5 && id >= 2 && id <= 4)
		return tc_i32(r, type, id == 2 ? &pg->encoding : id == 3 ? &pg->def_encoding : &pg->rep_encoding);
	if (x->which == 8 && id == 4)
		return tc_i32(r, type, &pg->encoding);
	if (x->which == 8 && id == 5)
		return tc_i32(r, type, &pg->def_len);
	if (x->which == 8 && id == 6)
		return tc_i32(r, type, &pg->rep_len);
	if (x->which == 8 && id == 7)
		return tc_bool(r, type, &pg->compressed);
	return TC_FIELD_SKIP;
}

/* PageHeader {1: type, 2: uncompressed_page_size, 3: compressed_page_size,
 * 5/7/8: the header of its type}. */
static int pq_page_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_page *pg = ctx;
	if (id == 1)
		return tc_i32(r, type, &pg->type);
	if (id == 2)
		return tc_i32(r, type, &pg->usize);
	if (id == 3)
		return tc_i32(r, type, &pg->csize);
	if ((id == 5 && pg->type == PQ_DATA_PAGE) || (id == 7 && pg->type == PQ_DICTIONARY_PAGE) ||
	    (id == 8 && pg->type == PQ_DATA_PAGE_V2)) {
		struct pq_sub_ctx x = {pg, id};
		if (type != TC_STRUCT)
			return tc_fail(r, "page sub-header not a struct");
		pg->have_sub = true;
		pg->nvals = -1;
		if (tc_read_struct(r, pq_sub_field, &x) != 0)
			return -1;
		return pg->nvals < 0 ? tc_fail(r, "page without a value count") : 0;
	}
	return TC_FIELD_SKIP;
}

static int pq_page_header(struct tc_reader *r, struct pq_page *pg)
{
	memset(pg, 0, sizeof *pg);
	pg->type = pg->usize = pg->csize = -1;
	pg->compressed = true;
	pg->def_encoding = pg->rep_encoding = PQ_RLE;
	if (tc_read_struct(r, pq_page_field, pg) != 0)
		return -1;
	if (pg->type < 0 || pg->usize < 0 || pg->csize < 0)
		return tc_fail(r, "page header without type or sizes");
	if (pg->type != PQ_INDEX_PAGE && pg->type <= PQ_DATA_PAGE_V2 && !pg->have_sub)
		return tc_fail(r, "page header without the header of its type");
	return 0;
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

/* A scratch array of n elements of size each, charged to the budget;
 * pq_scratch_free gives both back. */
void *pq_scratch(struct pq_cctx *c, size_t n, size_t size)
{
	if (n > SIZE_MAX / size / 2 || !pq_charge(c->budget, n * size)) {
		pq_over_budget(c);
		return NULL;
	}
	void *p = malloc(n ? n * size : 1);
	if (!p) {
		c->budget->left += n * size;
		pq_oom(c);
	}
	return p;
}

void pq_scratch_free(struct pq_cctx *c, void *p, size_t n, size_t size)
{
	if (p) {
		free(p);
		c->budget->left += n * size;
	}
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
	uint32_t *tmp = pq_scratch(c, nv, sizeof *tmp);
	if (!tmp)
		goto out;
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
	pq_scratch_free(c, tmp, nv, sizeof *tmp);
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
	if (ch->num_values == 0)
		return 0; /* an empty row group's chunks may point nowhere (pyarrow's do) */
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
