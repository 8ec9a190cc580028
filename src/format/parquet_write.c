/* The Parquet writer: flat columns, one data page (v1) per column chunk,
 * dictionary-encoded where dictionary plus indices is smaller than PLAIN,
 * zstd-compressed, with min/max/null-count statistics under the types'
 * defined orders (column_orders says so, so readers use them). Rows are
 * buffered per row group, each distinct string once, and each chunk is
 * written as soon as it is made; nothing depends on time or addresses, so
 * the same rows give the same bytes. */
#include "format/parquet.h"
#include "format/parquet_codec.h"
#include "format/thrift_compact.h"
#include "util/utf8.h"

#include <tether/backend.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* A row group is flushed at this much buffered data (parquet.h: "about
 * 64 MiB") or at the caller's row count; a page's value count is an i32. */
#define PQW_GROUP_BYTES ((size_t)64 << 20)
#define PQW_MAX_GROUP_ROWS ((size_t)1 << 30)
/* One string value at most (its length is a u32 in PLAIN). */
#define PQW_MAX_STRING ((size_t)1 << 30)

enum { PQW_BOOLEAN = 0, PQW_INT32 = 1, PQW_INT64 = 2, PQW_DOUBLE = 5, PQW_BYTE_ARRAY = 6 };
enum { PQW_PLAIN = 0, PQW_PLAIN_DICTIONARY = 2, PQW_RLE = 3 };

/* A block of a column's string pool. */
struct pqw_block {
	uint8_t *buf;
	size_t len, cap;
};

struct pqw_col {
	char *name;
	enum tt_parquet_type type;
	bool nullable;
	uint8_t *defined; /* per buffered row: 1 when not null */
	uint64_t *v;      /* per non-null value: the bits, or for strings its entry */
	size_t nv, vcap;
	/* Strings: the row group's distinct values (entries), numbered in the
	 * order first seen, found through a hash table as they are added: a
	 * repeated string is never copied, and the entries are the dictionary
	 * the chunk may be written with. */
	const uint8_t **ent;     /* each entry's bytes, in pool */
	uint32_t *ent_len;
	uint64_t *ent_hash;
	size_t nent, entcap;
	uint32_t *slots;         /* entry + 1, or 0: empty */
	size_t nslots;           /* a power of 2, at least twice nent */
	size_t plain;            /* the PLAIN size of all buffered values */
	/* The entries as PLAIN encodes them, each its 4-byte length then its
	 * bytes. Blocks, not one buffer: a growing buffer is copied at each
	 * doubling; an entry never moves once added. Blocks are kept from row
	 * group to row group. */
	struct pqw_block *pool;
	size_t npool, used; /* blocks allocated; in use: pool[0..used) */
};

struct tt_parquet_writer {
	int fd;
	char *what;
	struct pqw_col *cols;
	size_t ncols;
	size_t group_rows; /* flush at this many rows */
	size_t rows;       /* buffered */
	size_t bytes;      /* buffered, estimated */
	size_t rcap;
	uint64_t offset;   /* bytes written to fd */
	int64_t total_rows;
	struct tc_writer groups; /* the footer's row_groups list elements, built as they are written */
	size_t ngroups;
	int err;
	/* Scratch kept from chunk to chunk (a row group's buffers are as big
	 * as its data: allocating them afresh for each column costs page
	 * faults): a page's body, its compressed form, the compressor. */
	struct tc_writer body;
	uint8_t *z;
	size_t zcap;
	ZSTD_CCtx *zctx;
};

static int pqw_fail(struct tt_parquet_writer *w, int code, const char *fmt, const char *detail)
{
	if (!w->err)
		w->err = tether_error_set(code, fmt, w->what, detail);
	return w->err;
}

static int pqw_oom(struct tt_parquet_writer *w)
{
	return pqw_fail(w, TETHER_ERROR, "%s: out of memory%s", "");
}

static int pqw_physical(enum tt_parquet_type t)
{
	switch (t) {
	case TT_PARQUET_BOOLEAN:
		return PQW_BOOLEAN;
	case TT_PARQUET_INT32:
		return PQW_INT32;
	case TT_PARQUET_DOUBLE:
		return PQW_DOUBLE;
	case TT_PARQUET_STRING:
		return PQW_BYTE_ARRAY;
	default:
		return PQW_INT64;
	}
}

static size_t pqw_width(enum tt_parquet_type t)
{
	return t == TT_PARQUET_INT32 ? 4 : 8;
}

void tt_parquet_writer_free(struct tt_parquet_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->ncols; i++) {
		free(w->cols[i].name);
		free(w->cols[i].defined);
		free(w->cols[i].v);
		free(w->cols[i].ent);
		free(w->cols[i].ent_len);
		free(w->cols[i].ent_hash);
		free(w->cols[i].slots);
		for (size_t b = 0; b < w->cols[i].npool; b++)
			free(w->cols[i].pool[b].buf);
		free(w->cols[i].pool);
	}
	free(w->cols);
	free(w->what);
	tc_writer_free(&w->groups);
	tc_writer_free(&w->body);
	free(w->z);
	ZSTD_freeCCtx(w->zctx);
	free(w);
}

int tt_parquet_writer_new(int fd, const char *what, const struct tt_parquet_column *cols, size_t ncols,
                          size_t row_group_rows, struct tt_parquet_writer **out)
{
	*out = NULL;
	if (ncols == 0 || ncols > INT32_MAX)
		return tether_error_set(TETHER_EUSAGE, "%s: a Parquet file needs 1 to 2^31-1 columns, not %zu", what, ncols);
	for (size_t i = 0; i < ncols; i++) {
		for (size_t j = 0; j < i && cols[i].name; j++) {
			if (cols[j].name && strcmp(cols[i].name, cols[j].name) == 0)
				return tether_error_set(TETHER_EUSAGE, "%s: two columns named %s", what, cols[i].name);
		}
	}
	struct tt_parquet_writer *w = calloc(1, sizeof *w);
	if (!w || !(w->what = strdup(what)) || !(w->cols = calloc(ncols, sizeof *w->cols))) {
		tt_parquet_writer_free(w);
		return tether_error_set(TETHER_ERROR, "%s: out of memory", what);
	}
	w->fd = fd;
	w->ncols = ncols;
	w->group_rows = row_group_rows && row_group_rows < PQW_MAX_GROUP_ROWS ? row_group_rows : PQW_MAX_GROUP_ROWS;
	tc_writer_init(&w->groups);
	tc_writer_init(&w->body);
	for (size_t i = 0; i < ncols; i++) {
		if (!cols[i].name || !*cols[i].name || (unsigned)cols[i].type > TT_PARQUET_TIMESTAMP_US) {
			tt_parquet_writer_free(w);
			return tether_error_set(TETHER_EUSAGE, "%s: column %zu without a name or of an unknown type", what, i);
		}
		w->cols[i].type = cols[i].type;
		w->cols[i].nullable = cols[i].nullable;
		if (!(w->cols[i].name = strdup(cols[i].name))) {
			tt_parquet_writer_free(w);
			return tether_error_set(TETHER_ERROR, "%s: out of memory", what);
		}
	}
	*out = w;
	return 0;
}

/* ---- encoding ---- */

static void pqw_le(struct tc_writer *b, uint64_t v, size_t n)
{
	uint8_t x[8];
	for (size_t i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	tc_w_bytes(b, x, n);
}

/* Equal values from i, counted up to 8 (all a run decision needs). */
static size_t pqw_run8(const uint32_t *v, size_t n, size_t i)
{
	size_t r = 1;
	while (i + r < n && r < 8 && v[i + r] == v[i])
		r++;
	return r;
}

/* The RLE/bit-packed hybrid: runs of 8 or more equal values as RLE runs,
 * the rest bit-packed in groups of 8 (the last group zero-padded). */
static void pqw_rle(struct tc_writer *b, const uint32_t *v, size_t n, int bw)
{
	size_t vbytes = ((size_t)bw + 7) / 8;
	size_t i = 0;
	while (i < n) {
		if (pqw_run8(v, n, i) == 8) {
			size_t run = 8;
			while (i + run < n && v[i + run] == v[i])
				run++;
			tc_w_uvarint(b, (uint64_t)run << 1);
			pqw_le(b, v[i], vbytes);
			i += run;
			continue;
		}
		size_t start = i, groups = 0;
		do {
			i += 8;
			groups++;
		} while (i < n && pqw_run8(v, n, i) < 8);
		tc_w_uvarint(b, (uint64_t)groups << 1 | 1);
		/* a group of 8 values is bw bytes (at most 32): gathered, then
		 * appended a few groups at a time */
		uint8_t packed[256];
		size_t np = 0;
		uint64_t acc = 0;
		int nbits = 0;
		for (size_t j = start; j < start + groups * 8; j++) {
			acc |= (uint64_t)(j < n ? v[j] : 0) << nbits;
			nbits += bw;
			while (nbits >= 8) {
				packed[np++] = (uint8_t)acc;
				acc >>= 8;
				nbits -= 8;
			}
			if (np > sizeof packed - 8) {
				tc_w_bytes(b, packed, np);
				np = 0;
			}
		}
		tc_w_bytes(b, packed, np);
	}
}

static int pqw_bit_width(size_t max)
{
	int bw = 0;
	while (max) {
		bw++;
		max >>= 1;
	}
	return bw ? bw : 1;
}

/* String value i's bytes (the 4 bytes before them, in the pool, are its
 * PLAIN length prefix) and its length. */
static const uint8_t *pqw_str(const struct pqw_col *c, size_t i)
{
	return c->ent[c->v[i]];
}

static uint32_t pqw_len(const struct pqw_col *c, size_t i)
{
	return c->ent_len[c->v[i]];
}

/* Equality and hash of values other than strings (a string's entry is
 * already its distinct value). */
static bool pqw_equal(const struct pqw_col *c, size_t a, size_t b)
{
	return c->v[a] == c->v[b];
}

static uint64_t pqw_hash(const struct pqw_col *c, size_t i)
{
	uint64_t h = 0xcbf29ce484222325u;
	h ^= c->v[i];
	h *= 0x100000001b3u;
	return h ^ (h >> 29);
}

/* A string's hash, eight bytes a step: only the table's layout depends
 * on it, never the entries' order (first seen) or the file. */
static uint64_t pqw_hash_bytes(const uint8_t *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u ^ n;
	size_t k = 0;
	for (; k + 8 <= n; k += 8) {
		uint64_t x;
		memcpy(&x, s + k, 8);
		h = (h ^ x) * 0x9e3779b97f4a7c15u;
		h ^= h >> 32;
	}
	for (; k < n; k++)
		h = (h ^ s[k]) * 0x100000001b3u;
	return h ^ (h >> 29);
}

/* The dictionary of c's values in first-seen order: *dict holds the value
 * index of each entry, idx[i] each value's entry. Returns the entry count,
 * or SIZE_MAX when out of memory. */
static size_t pqw_dictionary(const struct pqw_col *c, size_t **dict, uint32_t *idx)
{
	if (c->type == TT_PARQUET_STRING) {
		/* the entries are the dictionary: each one's first value */
		size_t *d = malloc((c->nent ? c->nent : 1) * sizeof *d), n = 0;
		if (!d)
			return SIZE_MAX;
		for (size_t i = 0; i < c->nv; i++) {
			idx[i] = (uint32_t)c->v[i];
			if (c->v[i] == n)
				d[n++] = i;
		}
		*dict = d;
		return n;
	}
	size_t cap = 16;
	while (cap < c->nv * 2)
		cap *= 2;
	size_t *slots = malloc(cap * sizeof *slots), *d = malloc((c->nv ? c->nv : 1) * sizeof *d);
	if (!slots || !d) {
		free(slots);
		free(d);
		return SIZE_MAX;
	}
	for (size_t s = 0; s < cap; s++)
		slots[s] = SIZE_MAX;
	size_t n = 0;
	for (size_t i = 0; i < c->nv; i++) {
		size_t s = (size_t)pqw_hash(c, i) & (cap - 1);
		while (slots[s] != SIZE_MAX && !pqw_equal(c, d[slots[s]], i))
			s = (s + 1) & (cap - 1);
		if (slots[s] == SIZE_MAX) {
			slots[s] = n;
			d[n++] = i;
		}
		idx[i] = (uint32_t)slots[s];
	}
	free(slots);
	*dict = d;
	return n;
}

static void pqw_plain_value(struct tc_writer *b, const struct pqw_col *c, size_t i)
{
	if (c->type == TT_PARQUET_STRING)
		tc_w_bytes(b, pqw_str(c, i) - 4, 4 + (size_t)pqw_len(c, i)); /* the pool's length prefix too */
	else
		pqw_le(b, c->v[i], pqw_width(c->type));
}

/* The PLAIN encoding of the values `entries` names (NULL: every value,
 * in order) into b. */
static void pqw_plain_values(struct tc_writer *b, const struct pqw_col *c, const size_t *entries, size_t n)
{
	uint8_t buf[512];
	size_t at = 0, width = pqw_width(c->type);
	for (size_t k = 0; k < n; k++) {
		size_t i = entries ? entries[k] : k;
		if (c->type == TT_PARQUET_STRING) {
			pqw_plain_value(b, c, i);
			continue;
		}
		for (size_t j = 0; j < width; j++)
			buf[at++] = (uint8_t)(c->v[i] >> (8 * j));
		if (at > sizeof buf - 8) {
			tc_w_bytes(b, buf, at);
			at = 0;
		}
	}
	tc_w_bytes(b, buf, at);
}

static size_t pqw_plain_size(const struct pqw_col *c, size_t i)
{
	return c->type == TT_PARQUET_STRING ? 4 + (size_t)pqw_len(c, i) : pqw_width(c->type);
}

/* ---- statistics ---- */

static double pqw_double(uint64_t bits)
{
	double d;
	memcpy(&d, &bits, sizeof d);
	return d;
}

/* a < b in the type's defined order (strings: unsigned bytewise, as the
 * STRING logical type orders them). NaN never compares. */
static bool pqw_less(const struct pqw_col *c, size_t a, size_t b)
{
	switch (c->type) {
	case TT_PARQUET_BOOLEAN:
		return c->v[a] < c->v[b];
	case TT_PARQUET_INT32:
		return (int32_t)c->v[a] < (int32_t)c->v[b];
	case TT_PARQUET_DOUBLE:
		return pqw_double(c->v[a]) < pqw_double(c->v[b]);
	case TT_PARQUET_STRING: {
		uint32_t la = pqw_len(c, a), lb = pqw_len(c, b);
		int r = memcmp(pqw_str(c, a), pqw_str(c, b), la < lb ? la : lb);
		return r < 0 || (r == 0 && la < lb);
	}
	default:
		return (int64_t)c->v[a] < (int64_t)c->v[b];
	}
}

static void pqw_stat_value(struct tc_writer *b, int16_t id, const struct pqw_col *c, size_t i, int zero_sign)
{
	uint8_t x[8];
	if (c->type == TT_PARQUET_STRING) {
		tc_w_binary(b, id, pqw_str(c, i), pqw_len(c, i));
		return;
	}
	uint64_t v = c->v[i];
	size_t n = c->type == TT_PARQUET_BOOLEAN ? 1 : pqw_width(c->type);
	/* A zero bound is written -0.0 as a minimum, +0.0 as a maximum, as the
	 * format asks (readers may not know which zero the column holds). */
	if (c->type == TT_PARQUET_DOUBLE && pqw_double(v) == 0.0)
		v = zero_sign < 0 ? 0x8000000000000000u : 0;
	for (size_t k = 0; k < n; k++)
		x[k] = (uint8_t)(v >> (8 * k));
	tc_w_binary(b, id, x, n);
}

/* Statistics {3: null_count, 5: max_value, 6: min_value}, over the
 * values `entries` names (NULL: all of them; the dictionary's entries
 * when there is one: the same bounds, each distinct value compared once). */
static void pqw_statistics(struct tc_writer *m, const struct pqw_col *c, size_t nulls, const size_t *entries,
                           size_t n)
{
	size_t lo = SIZE_MAX, hi = SIZE_MAX;
	for (size_t k = 0; k < n; k++) {
		size_t i = entries ? entries[k] : k;
		if (c->type == TT_PARQUET_DOUBLE && isnan(pqw_double(c->v[i])))
			continue;
		if (lo == SIZE_MAX || pqw_less(c, i, lo))
			lo = i;
		if (hi == SIZE_MAX || pqw_less(c, hi, i))
			hi = i;
	}
	tc_w_field(m, 12, TC_STRUCT);
	tc_w_struct_begin(m);
	tc_w_i64(m, 3, (int64_t)nulls);
	if (lo != SIZE_MAX) {
		pqw_stat_value(m, 5, c, hi, 1);
		pqw_stat_value(m, 6, c, lo, -1);
	}
	tc_w_struct_end(m);
}

/* ---- writing ---- */

/* The zstd level: libzstd's default, a good ratio at speed. The same input
 * and libzstd give the same bytes. */
#define PQW_ZSTD_LEVEL 3

/* src compressed into w->z; one context for the writer's life (a
 * context's output is ZSTD_compress's, without its set-up per call). */
static const char *pqw_zstd(struct tt_parquet_writer *w, const uint8_t *src, size_t len, size_t *outlen)
{
	size_t cap = ZSTD_compressBound(len);
	if (cap > w->zcap) {
		uint8_t *z = realloc(w->z, cap);
		if (!z)
			return "out of memory";
		w->z = z;
		w->zcap = cap;
	}
	if (!w->zctx && !(w->zctx = ZSTD_createCCtx()))
		return "out of memory";
	size_t n = ZSTD_compressCCtx(w->zctx, w->z, w->zcap, src, len, PQW_ZSTD_LEVEL);
	if (ZSTD_isError(n))
		return ZSTD_getErrorName(n);
	*outlen = n;
	return NULL;
}

static int pqw_write(struct tt_parquet_writer *w, const void *data, size_t n)
{
	const uint8_t *p = data;
	while (n > 0) {
		ssize_t k = write(w->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return pqw_fail(w, TETHER_EIO, "%s: write failed: %s", strerror(errno));
		p += k;
		n -= (size_t)k;
		w->offset += (uint64_t)k;
	}
	return 0;
}

/* A page written to the file: its header, then w->body compressed with
 * zstd. */
static int pqw_page(struct tt_parquet_writer *w, bool dict_page, size_t nvals, int encoding, uint64_t *uncompressed)
{
	const struct tc_writer *body = &w->body;
	if (body->oom)
		return pqw_oom(w);
	size_t zlen = 0;
	const char *err = pqw_zstd(w, body->buf, body->len, &zlen);
	if (err)
		return pqw_fail(w, TETHER_ERROR, "%s: zstd: %s", err);
	if (body->len > INT32_MAX || zlen > INT32_MAX)
		return pqw_fail(w, TETHER_ERROR, "%s: %s", "a page over 2 GiB");
	struct tc_writer h;
	tc_writer_init(&h);
	tc_w_struct_begin(&h);
	tc_w_i32(&h, 1, dict_page ? 2 : 0);
	tc_w_i32(&h, 2, (int32_t)body->len);
	tc_w_i32(&h, 3, (int32_t)zlen);
	tc_w_field(&h, dict_page ? 7 : 5, TC_STRUCT);
	tc_w_struct_begin(&h);
	tc_w_i32(&h, 1, (int32_t)nvals);
	tc_w_i32(&h, 2, encoding);
	if (!dict_page) {
		tc_w_i32(&h, 3, PQW_RLE);
		tc_w_i32(&h, 4, PQW_RLE);
	}
	tc_w_struct_end(&h);
	tc_w_struct_end(&h);
	*uncompressed += h.len + body->len;
	int rc = h.oom ? pqw_oom(w) : pqw_write(w, h.buf, h.len);
	if (!rc)
		rc = pqw_write(w, w->z, zlen);
	tc_writer_free(&h);
	return rc;
}

/* Column c of the buffered row group written to the file, and its
 * ColumnChunk into meta. */
static int pqw_chunk(struct tt_parquet_writer *w, const struct pqw_col *c, struct tc_writer *meta,
                     uint64_t *group_uncompressed)
{
	size_t nulls = w->rows - c->nv;
	size_t plain;
	if (c->type == TT_PARQUET_BOOLEAN)
		plain = (c->nv + 7) / 8;
	else if (c->type == TT_PARQUET_STRING)
		plain = c->plain;
	else
		plain = c->nv * pqw_width(c->type);
	/* The dictionary, and whether it is smaller than PLAIN. */
	size_t *dict = NULL, ndict = 0;
	uint32_t *idx = NULL;
	bool use_dict = false;
	if (c->type != TT_PARQUET_BOOLEAN && c->nv > 0) {
		if (!(idx = malloc(c->nv * sizeof *idx)) || (ndict = pqw_dictionary(c, &dict, idx)) == SIZE_MAX) {
			free(idx);
			return pqw_oom(w);
		}
		size_t dsize = 0;
		for (size_t k = 0; k < ndict; k++)
			dsize += pqw_plain_size(c, dict[k]);
		size_t isize = 1 + (c->nv * (size_t)pqw_bit_width(ndict - 1) + 7) / 8;
		use_dict = dsize + isize < plain;
	}
	struct tc_writer *body = &w->body;
	body->len = 0;
	uint64_t uncompressed = 0, start = w->offset, dict_offset = 0, data_offset;
	int rc = 0;
	if (use_dict) {
		pqw_plain_values(body, c, dict, ndict);
		dict_offset = start;
		rc = pqw_page(w, true, ndict, PQW_PLAIN_DICTIONARY, &uncompressed);
		body->len = 0;
	}
	data_offset = w->offset;
	if (rc == 0 && c->nullable) {
		uint32_t *lv = malloc((w->rows ? w->rows : 1) * sizeof *lv);
		if (!lv) {
			rc = pqw_oom(w);
		} else {
			for (size_t r = 0; r < w->rows; r++)
				lv[r] = c->defined[r];
			size_t at = body->len;
			pqw_le(body, 0, 4);
			pqw_rle(body, lv, w->rows, 1);
			size_t n = body->len - at - 4;
			if (!body->oom)
				for (int k = 0; k < 4; k++)
					body->buf[at + (size_t)k] = (uint8_t)(n >> (8 * k));
			free(lv);
		}
	}
	if (rc == 0) {
		if (use_dict) {
			int bw = pqw_bit_width(ndict - 1);
			uint8_t b = (uint8_t)bw;
			tc_w_bytes(body, &b, 1);
			pqw_rle(body, idx, c->nv, bw);
		} else if (c->type == TT_PARQUET_BOOLEAN) {
			for (size_t i = 0; i < c->nv; i += 8) {
				uint8_t byte = 0;
				for (size_t k = 0; k < 8 && i + k < c->nv; k++)
					byte |= (uint8_t)((c->v[i + k] & 1) << k);
				tc_w_bytes(body, &byte, 1);
			}
		} else {
			pqw_plain_values(body, c, NULL, c->nv);
		}
		rc = pqw_page(w, false, w->rows, use_dict ? PQW_PLAIN_DICTIONARY : PQW_PLAIN, &uncompressed);
	}
	free(idx);
	if (rc != 0) {
		free(dict);
		return rc;
	}
	uint64_t compressed = w->offset - start;
	*group_uncompressed += uncompressed;

	/* ColumnChunk {2: file_offset, 3: ColumnMetaData}. */
	tc_w_struct_begin(meta);
	tc_w_i64(meta, 2, (int64_t)start);
	tc_w_field(meta, 3, TC_STRUCT);
	tc_w_struct_begin(meta);
	tc_w_i32(meta, 1, pqw_physical(c->type));
	tc_w_list(meta, 2, TC_I32, 2);
	tc_w_varint_i32(meta, use_dict ? PQW_PLAIN_DICTIONARY : PQW_PLAIN);
	tc_w_varint_i32(meta, PQW_RLE);
	tc_w_list(meta, 3, TC_BINARY, 1);
	tc_w_raw_binary(meta, c->name, strlen(c->name));
	tc_w_i32(meta, 4, PQ_ZSTD);
	tc_w_i64(meta, 5, (int64_t)w->rows);
	tc_w_i64(meta, 6, (int64_t)uncompressed);
	tc_w_i64(meta, 7, (int64_t)compressed);
	tc_w_i64(meta, 9, (int64_t)data_offset);
	if (use_dict)
		tc_w_i64(meta, 11, (int64_t)dict_offset);
	pqw_statistics(meta, c, nulls, dict, dict ? ndict : c->nv);
	tc_w_struct_end(meta);
	tc_w_struct_end(meta);
	free(dict);
	return 0;
}

/* The buffered row group written: each column chunk as it is made (the
 * group is never copied whole), its RowGroup kept for the footer. */
static int pqw_flush(struct tt_parquet_writer *w)
{
	if (w->rows == 0)
		return 0;
	if (w->offset == 0 && pqw_write(w, "PAR1", 4) != 0)
		return w->err;
	struct tc_writer meta;
	tc_writer_init(&meta);
	uint64_t group_start = w->offset, uncompressed = 0;
	int rc = 0;
	/* RowGroup {1: columns, 2: total_byte_size, 3: num_rows, 5: file_offset,
	 * 6: total_compressed_size, 7: ordinal}. */
	tc_w_struct_begin(&meta);
	tc_w_list(&meta, 1, TC_STRUCT, (uint32_t)w->ncols);
	for (size_t i = 0; i < w->ncols && rc == 0; i++)
		rc = pqw_chunk(w, &w->cols[i], &meta, &uncompressed);
	if (rc == 0) {
		tc_w_i64(&meta, 2, (int64_t)uncompressed);
		tc_w_i64(&meta, 3, (int64_t)w->rows);
		tc_w_i64(&meta, 5, (int64_t)group_start);
		tc_w_i64(&meta, 6, (int64_t)(w->offset - group_start));
		tc_w_field(&meta, 7, TC_I16);
		tc_w_varint_i32(&meta, (int32_t)(w->ngroups > INT16_MAX ? INT16_MAX : w->ngroups));
		tc_w_struct_end(&meta);
		if (meta.oom)
			rc = pqw_oom(w);
	}
	if (rc == 0) {
		tc_w_bytes(&w->groups, meta.buf, meta.len);
		if (w->groups.oom)
			rc = pqw_oom(w);
		w->ngroups++;
		w->total_rows += (int64_t)w->rows;
	}
	tc_writer_free(&meta);
	for (size_t i = 0; i < w->ncols; i++) {
		struct pqw_col *c = &w->cols[i];
		c->nv = 0;
		c->used = 0;
		c->plain = 0;
		c->nent = 0;
		if (c->slots)
			memset(c->slots, 0, c->nslots * sizeof *c->slots);
	}
	w->rows = 0;
	w->bytes = 0;
	return rc;
}

static int pqw_grow(struct tt_parquet_writer *w)
{
	/* a row group of a known size up to 64K rows: room for it at once */
	size_t cap = w->rcap ? w->rcap * 2 : w->group_rows <= ((size_t)1 << 16) ? w->group_rows : 1024;
	for (size_t i = 0; i < w->ncols; i++) {
		struct pqw_col *c = &w->cols[i];
		uint8_t *d = realloc(c->defined, cap);
		if (d)
			c->defined = d;
		uint64_t *v = realloc(c->v, cap * sizeof *v);
		if (v)
			c->v = v;
		if (!d || !v)
			return pqw_oom(w);
	}
	w->rcap = cap;
	return 0;
}

static bool pqw_valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		/* ASCII eight bytes at a time: the common case, by far */
		uint64_t x;
		if (n - i >= 8 && (memcpy(&x, s + i, 8), (x & 0x8080808080808080u) == 0)) {
			i += 8;
			continue;
		}
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = tt_utf8_sequence(s + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* n bytes at the end of c's pool, in the last block in use or the next
 * one (reused when big enough: the pool's blocks stay in order), or NULL
 * when out of memory. */
static uint8_t *pqw_pool_take(struct pqw_col *c, size_t n)
{
	struct pqw_block *b = c->used ? &c->pool[c->used - 1] : NULL;
	if (!b || b->cap - b->len < n) {
		if (c->used == c->npool) {
			struct pqw_block *p = realloc(c->pool, (c->npool + 1) * sizeof *p);
			if (!p)
				return NULL;
			c->pool = p;
			c->pool[c->npool++] = (struct pqw_block){ NULL, 0, 0 };
		}
		b = &c->pool[c->used];
		if (b->cap < n) {
			/* doubling from 64 KiB up to 4 MiB a block, or one string's size */
			size_t cap = c->used ? c->pool[c->used - 1].cap * 2 : (size_t)64 << 10;
			if (cap > (size_t)4 << 20)
				cap = (size_t)4 << 20;
			if (cap < n)
				cap = n;
			free(b->buf);
			if (!(b->buf = malloc(cap))) {
				b->cap = 0;
				return NULL;
			}
			b->cap = cap;
		}
		b->len = 0;
		c->used++;
	}
	uint8_t *at = b->buf + b->len;
	b->len += n;
	return at;
}

/* The entry of string s (added when new), or SIZE_MAX when out of memory. */
static size_t pqw_entry(struct pqw_col *c, const char *s, size_t n)
{
	if (2 * (c->nent + 1) > c->nslots) {
		size_t ns = c->nslots ? 2 * c->nslots : 1024;
		uint32_t *slots = calloc(ns, sizeof *slots);
		if (!slots)
			return SIZE_MAX;
		for (size_t e = 0; e < c->nent; e++) {
			size_t at = (size_t)c->ent_hash[e] & (ns - 1);
			while (slots[at])
				at = (at + 1) & (ns - 1);
			slots[at] = (uint32_t)e + 1;
		}
		free(c->slots);
		c->slots = slots;
		c->nslots = ns;
	}
	uint64_t h = pqw_hash_bytes((const uint8_t *)s, n);
	size_t at = (size_t)h & (c->nslots - 1);
	for (; c->slots[at]; at = (at + 1) & (c->nslots - 1)) {
		size_t e = c->slots[at] - 1;
		if (c->ent_hash[e] == h && c->ent_len[e] == n && memcmp(c->ent[e], s, n) == 0)
			return e;
	}
	if (c->nent == c->entcap) {
		size_t cap = c->entcap ? 2 * c->entcap : 256;
		const uint8_t **ent = realloc(c->ent, cap * sizeof *ent);
		if (ent)
			c->ent = ent;
		uint32_t *len = realloc(c->ent_len, cap * sizeof *len);
		if (len)
			c->ent_len = len;
		uint64_t *hash = realloc(c->ent_hash, cap * sizeof *hash);
		if (hash)
			c->ent_hash = hash;
		if (!ent || !len || !hash)
			return SIZE_MAX;
		c->entcap = cap;
	}
	uint8_t *dst = pqw_pool_take(c, 4 + n);
	if (!dst)
		return SIZE_MAX;
	for (int k = 0; k < 4; k++)
		dst[k] = (uint8_t)(n >> (8 * k));
	memcpy(dst + 4, s, n);
	size_t e = c->nent++;
	c->ent[e] = dst + 4;
	c->ent_len[e] = (uint32_t)n;
	c->ent_hash[e] = h;
	c->slots[at] = (uint32_t)e + 1;
	return e;
}

int tt_parquet_writer_add(struct tt_parquet_writer *w, const struct tt_parquet_value *values)
{
	if (w->err)
		return w->err;
	/* Check the whole row before buffering any of it. */
	for (size_t i = 0; i < w->ncols; i++) {
		const struct pqw_col *c = &w->cols[i];
		const struct tt_parquet_value *v = &values[i];
		char where[320];
		if (v->is_null && !c->nullable) {
			snprintf(where, sizeof where, "row %lld, column %s: null in a column that is not nullable",
			         (long long)(w->total_rows + (int64_t)w->rows), c->name);
			return tether_error_set(TETHER_EUSAGE, "%s: %s", w->what, where);
		}
		if (!v->is_null && c->type == TT_PARQUET_STRING &&
		    (v->v.str.len > PQW_MAX_STRING || !pqw_valid_utf8((const unsigned char *)v->v.str.s, v->v.str.len))) {
			snprintf(where, sizeof where, "row %lld, column %s: string %s",
			         (long long)(w->total_rows + (int64_t)w->rows), c->name,
			         v->v.str.len > PQW_MAX_STRING ? "over 1 GiB" : "not valid UTF-8");
			return tether_error_set(TETHER_EUSAGE, "%s: %s", w->what, where);
		}
	}
	if (w->rows == w->rcap && pqw_grow(w) != 0)
		return w->err;
	for (size_t i = 0; i < w->ncols; i++) {
		struct pqw_col *c = &w->cols[i];
		const struct tt_parquet_value *v = &values[i];
		c->defined[w->rows] = !v->is_null;
		if (v->is_null) {
			w->bytes += 1;
			continue;
		}
		uint64_t bits = 0;
		size_t entry;
		switch (c->type) {
		case TT_PARQUET_BOOLEAN:
			bits = v->v.b;
			break;
		case TT_PARQUET_INT32:
			bits = (uint32_t)v->v.i32;
			break;
		case TT_PARQUET_DOUBLE:
			memcpy(&bits, &v->v.d, sizeof bits);
			break;
		case TT_PARQUET_STRING:
			if ((entry = pqw_entry(c, v->v.str.s, v->v.str.len)) == SIZE_MAX)
				return pqw_oom(w);
			bits = entry;
			c->plain += 4 + v->v.str.len;
			w->bytes += v->v.str.len;
			break;
		default:
			bits = (uint64_t)v->v.i64;
		}
		c->v[c->nv++] = bits;
		w->bytes += 8;
	}
	w->rows++;
	if (w->rows >= w->group_rows || w->bytes >= PQW_GROUP_BYTES)
		return pqw_flush(w);
	return 0;
}

/* FileMetaData {1: version, 2: schema, 3: num_rows, 4: row_groups,
 * 6: created_by, 7: column_orders}. */
static void pqw_footer(struct tt_parquet_writer *w, struct tc_writer *m)
{
	tc_w_struct_begin(m);
	tc_w_i32(m, 1, 1);
	tc_w_list(m, 2, TC_STRUCT, (uint32_t)w->ncols + 1);
	tc_w_struct_begin(m);
	tc_w_binary(m, 4, "schema", 6);
	tc_w_i32(m, 5, (int32_t)w->ncols);
	tc_w_struct_end(m);
	for (size_t i = 0; i < w->ncols; i++) {
		const struct pqw_col *c = &w->cols[i];
		tc_w_struct_begin(m);
		tc_w_i32(m, 1, pqw_physical(c->type));
		tc_w_i32(m, 3, c->nullable ? 1 : 0);
		tc_w_binary(m, 4, c->name, strlen(c->name));
		if (c->type == TT_PARQUET_STRING || c->type == TT_PARQUET_TIMESTAMP_US) {
			bool ts = c->type == TT_PARQUET_TIMESTAMP_US;
			tc_w_i32(m, 6, ts ? 10 : 0); /* TIMESTAMP_MICROS, UTF8 */
			tc_w_field(m, 10, TC_STRUCT);
			tc_w_struct_begin(m);
			tc_w_field(m, ts ? 8 : 1, TC_STRUCT); /* TimestampType, StringType */
			tc_w_struct_begin(m);
			if (ts) {
				tc_w_bool(m, 1, true); /* isAdjustedToUTC */
				tc_w_field(m, 2, TC_STRUCT); /* TimeUnit */
				tc_w_struct_begin(m);
				tc_w_field(m, 2, TC_STRUCT); /* MICROS */
				tc_w_struct_begin(m);
				tc_w_struct_end(m);
				tc_w_struct_end(m);
			}
			tc_w_struct_end(m);
			tc_w_struct_end(m);
		}
		tc_w_struct_end(m);
	}
	tc_w_i64(m, 3, w->total_rows);
	tc_w_list(m, 4, TC_STRUCT, (uint32_t)w->ngroups);
	tc_w_bytes(m, w->groups.buf, w->groups.len);
	tc_w_binary(m, 6, "tether", 6);
	/* ColumnOrder: TYPE_ORDER for every column, so readers trust min/max. */
	tc_w_list(m, 7, TC_STRUCT, (uint32_t)w->ncols);
	for (size_t i = 0; i < w->ncols; i++) {
		tc_w_struct_begin(m);
		tc_w_field(m, 1, TC_STRUCT);
		tc_w_struct_begin(m);
		tc_w_struct_end(m);
		tc_w_struct_end(m);
	}
	tc_w_struct_end(m);
}

int tt_parquet_writer_finish(struct tt_parquet_writer *w)
{
	int rc = w->err;
	if (rc == 0 && w->offset == 0)
		rc = pqw_write(w, "PAR1", 4);
	if (rc == 0)
		rc = pqw_flush(w);
	if (rc == 0) {
		struct tc_writer m;
		tc_writer_init(&m);
		pqw_footer(w, &m);
		uint8_t tail[8] = {(uint8_t)m.len, (uint8_t)(m.len >> 8), (uint8_t)(m.len >> 16), (uint8_t)(m.len >> 24),
		                   'P', 'A', 'R', '1'};
		if (m.oom || m.len > UINT32_MAX)
			rc = pqw_oom(w);
		else if ((rc = pqw_write(w, m.buf, m.len)) == 0)
			rc = pqw_write(w, tail, sizeof tail);
		tc_writer_free(&m);
	}
	tt_parquet_writer_free(w);
	return rc;
}
