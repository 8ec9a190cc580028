/* The Parquet layer: the Thrift compact codec both ways and on damage; the
 * writer's files read back by the reader (nulls, dictionary and PLAIN,
 * row groups, the same bytes twice); hand-made files the reader must
 * refuse (truncations, bad magic, a decompression bomb, levels and
 * dictionary indices out of range) with one-line messages naming the file.
 * pyarrow, deltalake and DuckDB check the same code from tests/e2e/test_parquet.py. */
#include "check.h"

#include "format/parquet.h"
#include "format/parquet_codec.h"
#include "format/thrift_compact.h"

#include <tether.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* ---- Thrift ---- */

static void test_thrift_round_trip(void)
{
	struct tc_writer w;
	tc_writer_init(&w);
	tc_w_struct_begin(&w);
	tc_w_i32(&w, 1, -5);
	tc_w_i64(&w, 2, INT64_MIN);
	tc_w_bool(&w, 3, true);
	tc_w_binary(&w, 40, "hello", 5); /* a long delta: field id written in full */
	tc_w_list(&w, 41, TC_I32, 20);
	for (int i = 0; i < 20; i++)
		tc_w_varint_i32(&w, i * 1000);
	tc_w_field(&w, 42, TC_STRUCT);
	tc_w_struct_begin(&w);
	tc_w_bool(&w, 1, false);
	tc_w_struct_end(&w);
	tc_w_i32(&w, 43, INT32_MAX);
	tc_w_struct_end(&w);
	CHECK(!w.oom);

	struct tc_reader r;
	tc_reader_init(&r, w.buf, w.len);
	int16_t last;
	int t;
	int16_t id;
	int32_t i32;
	int64_t i64;
	bool b;
	const uint8_t *s;
	size_t n;
	CHECK(tc_struct_begin(&r, &last) == 0);
	CHECK(tc_field(&r, &last, &t, &id) == 0 && id == 1 && tc_i32(&r, t, &i32) == 0 && i32 == -5);
	CHECK(tc_field(&r, &last, &t, &id) == 0 && id == 2 && tc_i64(&r, t, &i64) == 0 && i64 == INT64_MIN);
	CHECK(tc_field(&r, &last, &t, &id) == 0 && id == 3 && tc_bool(&r, t, &b) == 0 && b);
	CHECK(tc_field(&r, &last, &t, &id) == 0 && id == 40 && tc_binary(&r, t, &s, &n) == 0 && n == 5 &&
	      memcmp(s, "hello", 5) == 0);
	int et;
	uint32_t count = 0;
	CHECK(tc_field(&r, &last, &t, &id) == 0 && id == 41 && tc_list_begin(&r, t, &et, &count) == 0 && count == 20);
	for (uint32_t i = 0; i < count; i++)
		CHECK(tc_i32(&r, et, &i32) == 0 && i32 == (int32_t)i * 1000);
	CHECK(tc_field(&r, &last, &t, &id) == 0 && id == 42 && tc_skip(&r, t) == 0);
	CHECK(tc_field(&r, &last, &t, &id) == 0 && id == 43 && tc_i32(&r, t, &i32) == 0 && i32 == INT32_MAX);
	CHECK(tc_field(&r, &last, &t, &id) == 0 && t == TC_STOP);
	tc_struct_end(&r);
	CHECK(r.p == r.end && r.err == NULL);

	/* A mistyped field is an error, not a misread. */
	tc_reader_init(&r, w.buf, w.len);
	CHECK(tc_struct_begin(&r, &last) == 0);
	CHECK(tc_field(&r, &last, &t, &id) == 0 && tc_binary(&r, t, &s, &n) != 0 && r.err != NULL);

	/* Every truncation of the struct is refused by a skip. */
	for (size_t cut = 0; cut < w.len; cut++) {
		tc_reader_init(&r, w.buf, cut);
		CHECK(tc_skip(&r, TC_STRUCT) != 0 && r.err != NULL);
	}
	tc_writer_free(&w);
}

static void test_thrift_hostile(void)
{
	struct tc_reader r;
	/* Structs nested past the limit. */
	uint8_t deep[200];
	for (size_t i = 0; i < sizeof deep; i++)
		deep[i] = 0x1c; /* field delta 1, type struct */
	tc_reader_init(&r, deep, sizeof deep);
	CHECK(tc_skip(&r, TC_STRUCT) != 0 && strstr(r.err, "too deep"));
	/* A list claiming more elements than bytes. */
	uint8_t list[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f, 0};
	tc_reader_init(&r, list, sizeof list);
	CHECK(tc_skip(&r, TC_STRUCT) != 0 && strstr(r.err, "list longer"));
	/* A binary longer than the input. */
	uint8_t bin[] = {0x18, 0x7f, 'a'};
	tc_reader_init(&r, bin, sizeof bin);
	CHECK(tc_skip(&r, TC_STRUCT) != 0 && strstr(r.err, "binary past the end"));
	/* A varint that never ends. */
	uint8_t var[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	tc_reader_init(&r, var, sizeof var);
	CHECK(tc_skip(&r, TC_STRUCT) != 0 && r.err != NULL);
	/* An unknown type nibble. */
	uint8_t bad[] = {0x1d, 0};
	tc_reader_init(&r, bad, sizeof bad);
	CHECK(tc_skip(&r, TC_STRUCT) != 0 && strstr(r.err, "unknown field type"));
	/* A map of more pairs than bytes. */
	uint8_t map[] = {0x1b, 0xff, 0xff, 0x03, 0x55, 0};
	tc_reader_init(&r, map, sizeof map);
	CHECK(tc_skip(&r, TC_STRUCT) != 0 && strstr(r.err, "map longer"));
}

/* ---- writer -> reader ---- */

static char tmpdir[] = "/tmp/tt-parquet-XXXXXX";

static unsigned char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		return NULL;
	unsigned char *buf = malloc((size_t)st.st_size + 1);
	*len = (size_t)read(fd, buf, (size_t)st.st_size);
	close(fd);
	return buf;
}

static const struct tt_parquet_column table_cols[] = {
	{"id", TT_PARQUET_INT64, false},   {"name", TT_PARQUET_STRING, true},      {"flag", TT_PARQUET_BOOLEAN, true},
	{"score", TT_PARQUET_DOUBLE, true}, {"n", TT_PARQUET_INT32, false},        {"at", TT_PARQUET_TIMESTAMP_US, true},
	{"uniq", TT_PARQUET_STRING, false},
};
#define NCOLS (sizeof table_cols / sizeof *table_cols)

/* Row i of the test table: repeated names (dictionary), unique strings
 * (PLAIN), a null every 7th row in the nullable columns. */
static void table_row(size_t i, struct tt_parquet_value *v, char *uniq, size_t uniqsize)
{
	static const char *const names[] = {"alpha", "beta", "gamma", "\xc3\xa9t\xc3\xa9"};
	memset(v, 0, NCOLS * sizeof *v);
	bool null = i % 7 == 3;
	v[0].v.i64 = (int64_t)i * 1000003 - 5000;
	v[1].is_null = null;
	v[1].v.str.s = names[i % 4];
	v[1].v.str.len = strlen(names[i % 4]);
	v[2].is_null = null;
	v[2].v.b = i % 3 == 0;
	v[3].is_null = null;
	v[3].v.d = (double)i / 4 - 3;
	v[4].v.i32 = (int32_t)(i % 5) - 2;
	v[5].is_null = i % 2 == 1;
	v[5].v.i64 = 1700000000000000 + (int64_t)i;
	snprintf(uniq, uniqsize, "row-%zu-%zx", i, i * 2654435761u);
	v[6].v.str.s = uniq;
	v[6].v.str.len = strlen(uniq);
}

static int write_table(const char *path, size_t nrows, size_t group_rows)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct tt_parquet_writer *w;
	if (fd < 0 || tt_parquet_writer_new(fd, path, table_cols, NCOLS, group_rows, &w) != 0)
		return -1;
	struct tt_parquet_value v[NCOLS];
	char uniq[64];
	for (size_t i = 0; i < nrows; i++) {
		table_row(i, v, uniq, sizeof uniq);
		if (tt_parquet_writer_add(w, v) != 0) {
			tt_parquet_writer_free(w);
			close(fd);
			return -1;
		}
	}
	int rc = tt_parquet_writer_finish(w);
	close(fd);
	return rc;
}

static void test_write_read(void)
{
	char path[128], path2[128];
	snprintf(path, sizeof path, "%s/t.parquet", tmpdir);
	snprintf(path2, sizeof path2, "%s/t2.parquet", tmpdir);
	const size_t nrows = 1000;
	CHECK(write_table(path, nrows, 300) == 0);
	CHECK(write_table(path2, nrows, 300) == 0);
	size_t len, len2;
	unsigned char *data = slurp(path, &len), *data2 = slurp(path2, &len2);
	CHECK(data && data2 && len == len2 && memcmp(data, data2, len) == 0); /* deterministic */
	free(data2);

	struct tt_parquet_file *f;
	CHECK(tt_parquet_open(data, len, path, &f) == 0);
	CHECK(tt_parquet_num_rows(f) == (int64_t)nrows);
	CHECK(tt_parquet_kv(f, "anything") == NULL);
	const char *cols[NCOLS + 1];
	for (size_t i = 0; i < NCOLS; i++)
		cols[i] = table_cols[i].name;
	cols[NCOLS] = "absent";
	json_t *rows = NULL;
	CHECK(tt_parquet_read_rows(f, cols, NCOLS + 1, &rows) == 0);
	CHECK(json_array_size(rows) == nrows);
	int bad = 0;
	struct tt_parquet_value v[NCOLS];
	char uniq[64];
	for (size_t i = 0; i < nrows && i < json_array_size(rows); i++) {
		json_t *row = json_array_get(rows, i);
		table_row(i, v, uniq, sizeof uniq);
		bad += json_integer_value(json_object_get(row, "id")) != v[0].v.i64;
		bad += v[1].is_null ? !json_is_null(json_object_get(row, "name"))
		                    : strcmp(json_string_value(json_object_get(row, "name")) ?: "", v[1].v.str.s) != 0;
		bad += v[2].is_null ? !json_is_null(json_object_get(row, "flag"))
		                    : json_is_true(json_object_get(row, "flag")) != v[2].v.b;
		bad += v[3].is_null ? !json_is_null(json_object_get(row, "score"))
		                    : json_number_value(json_object_get(row, "score")) != v[3].v.d;
		bad += json_integer_value(json_object_get(row, "n")) != v[4].v.i32;
		bad += v[5].is_null ? !json_is_null(json_object_get(row, "at"))
		                    : json_integer_value(json_object_get(row, "at")) != v[5].v.i64;
		bad += strcmp(json_string_value(json_object_get(row, "uniq")) ?: "", uniq) != 0;
		bad += json_object_get(row, "absent") != NULL;
	}
	CHECK(bad == 0);
	json_decref(rows);
	/* Only some columns. */
	const char *some[] = {"uniq"};
	CHECK(tt_parquet_read_rows(f, some, 1, &rows) == 0 && json_object_size(json_array_get(rows, 0)) == 1);
	json_decref(rows);
	tt_parquet_close(f);

	/* Every truncation is refused with a message naming the file, and no
	 * leak or overread (ASan). */
	int refused = 0;
	for (size_t cut = 0; cut < len; cut += (cut < 64 || len - cut < 600) ? 1 : 97) {
		unsigned char *part = malloc(cut ? cut : 1);
		memcpy(part, data, cut);
		if (tt_parquet_open(part, cut, path, &f) != 0) {
			refused += strncmp(tether_error_last(), path, strlen(path)) == 0 && !strchr(tether_error_last(), '\n');
		} else {
			/* A cut inside the column data passes the footer check only when
			 * the tail happens to look like a footer: reading must then fail. */
			json_t *r2 = NULL;
			if (tt_parquet_read_rows(f, cols, NCOLS, &r2) == 0)
				json_decref(r2);
			tt_parquet_close(f);
			refused++;
		}
		free(part);
	}
	CHECK(refused > 0);
	free(data);
}

/* Strings bigger than the writer's pool blocks (64 KiB first, 4 MiB at
 * most) and one bigger than any block, repeated (deduplicated as they are
 * added), over several row groups (whose blocks are reused, a too small
 * one replaced): read back the same. */
static char *big_value(size_t k, size_t *len)
{
	*len = k == 16 ? ((size_t)5 << 20) + 3 : k * 9000;
	char *s = malloc(*len + 1);
	for (size_t j = 0; j < *len; j++)
		s[j] = (char)('a' + (j * 31 + k) % 26);
	s[*len] = 0;
	return s;
}

static void test_write_big_strings(void)
{
	static const struct tt_parquet_column col[] = {{"s", TT_PARQUET_STRING, true}};
	char path[128];
	snprintf(path, sizeof path, "%s/big.parquet", tmpdir);
	const size_t nrows = 70;
	char *vals[17];
	size_t lens[17];
	for (size_t k = 0; k < 17; k++)
		vals[k] = big_value(k, &lens[k]);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct tt_parquet_writer *w = NULL;
	CHECK(fd >= 0 && tt_parquet_writer_new(fd, path, col, 1, 20, &w) == 0);
	for (size_t i = 0; w && i < nrows; i++) {
		size_t k = (i * 7) % 17; /* every value again within a group */
		struct tt_parquet_value v = {.is_null = i % 11 == 4, .v.str = {vals[k], lens[k]}};
		CHECK(tt_parquet_writer_add(w, &v) == 0);
	}
	CHECK(w && tt_parquet_writer_finish(w) == 0);
	close(fd);
	size_t len;
	unsigned char *data = slurp(path, &len);
	struct tt_parquet_file *f = NULL;
	const char *names[] = {"s"};
	json_t *rows = NULL;
	CHECK(data && tt_parquet_open(data, len, path, &f) == 0 && tt_parquet_read_rows(f, names, 1, &rows) == 0);
	CHECK(json_array_size(rows) == nrows);
	int bad = 0;
	for (size_t i = 0; i < json_array_size(rows); i++) {
		const json_t *got = json_object_get(json_array_get(rows, i), "s");
		size_t k = (i * 7) % 17;
		if (i % 11 == 4)
			bad += !json_is_null(got);
		else
			bad += json_string_length(got) != lens[k] || memcmp(json_string_value(got), vals[k], lens[k]) != 0;
	}
	CHECK(bad == 0);
	json_decref(rows);
	tt_parquet_close(f);
	free(data);
	for (size_t k = 0; k < 17; k++)
		free(vals[k]);
}

static void test_writer_refusals(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/r.parquet", tmpdir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct tt_parquet_writer *w;
	CHECK(tt_parquet_writer_new(fd, path, table_cols, NCOLS, 0, &w) == 0);
	struct tt_parquet_value v[NCOLS];
	char uniq[64];
	table_row(1, v, uniq, sizeof uniq);
	v[0].is_null = true;
	CHECK(tt_parquet_writer_add(w, v) == TETHER_EUSAGE && strstr(tether_error_last(), "column id: null"));
	table_row(1, v, uniq, sizeof uniq);
	v[6].v.str.s = "\xff";
	v[6].v.str.len = 1;
	CHECK(tt_parquet_writer_add(w, v) == TETHER_EUSAGE && strstr(tether_error_last(), "not valid UTF-8"));
	/* An empty table is still a valid file. */
	CHECK(tt_parquet_writer_finish(w) == 0);
	close(fd);
	size_t len;
	unsigned char *data = slurp(path, &len);
	struct tt_parquet_file *f;
	json_t *rows;
	CHECK(tt_parquet_open(data, len, path, &f) == 0 && tt_parquet_num_rows(f) == 0);
	CHECK(tt_parquet_read_rows(f, (const char *[]){"id"}, 1, &rows) == 0 && json_array_size(rows) == 0);
	json_decref(rows);
	tt_parquet_close(f);
	free(data);
	struct tt_parquet_column bad = {"", TT_PARQUET_INT32, false};
	CHECK(tt_parquet_writer_new(1, "x", &bad, 1, 0, &w) == TETHER_EUSAGE);
	CHECK(tt_parquet_writer_new(1, "x", table_cols, 0, 0, &w) == TETHER_EUSAGE);
	struct tt_parquet_column twice[] = {{"a", TT_PARQUET_INT32, false}, {"a", TT_PARQUET_STRING, true}};
	CHECK(tt_parquet_writer_new(1, "x", twice, 2, 0, &w) == TETHER_EUSAGE && strstr(tether_error_last(), "two columns named a"));
}

/* ---- hand-made files ---- */

/* A file of one optional INT32 column "x": magic, the given column chunk
 * bytes, and a footer declaring num_values values, codec, nrows rows. */
static unsigned char *make_file(const struct tc_writer *chunk, int64_t num_values, int codec, int64_t nrows,
                                size_t *len)
{
	struct tc_writer m;
	tc_writer_init(&m);
	tc_w_struct_begin(&m);
	tc_w_i32(&m, 1, 1);
	tc_w_list(&m, 2, TC_STRUCT, 2);
	tc_w_struct_begin(&m);
	tc_w_binary(&m, 4, "schema", 6);
	tc_w_i32(&m, 5, 1);
	tc_w_struct_end(&m);
	tc_w_struct_begin(&m);
	tc_w_i32(&m, 1, 1);
	tc_w_i32(&m, 3, 1);
	tc_w_binary(&m, 4, "x", 1);
	tc_w_struct_end(&m);
	tc_w_i64(&m, 3, nrows);
	tc_w_list(&m, 4, TC_STRUCT, 1);
	tc_w_struct_begin(&m);
	tc_w_list(&m, 1, TC_STRUCT, 1);
	tc_w_struct_begin(&m);
	tc_w_i64(&m, 2, 4);
	tc_w_field(&m, 3, TC_STRUCT);
	tc_w_struct_begin(&m);
	tc_w_i32(&m, 1, 1);
	tc_w_i32(&m, 4, codec);
	tc_w_i64(&m, 5, num_values);
	tc_w_i64(&m, 7, (int64_t)chunk->len);
	tc_w_i64(&m, 9, 4);
	tc_w_struct_end(&m);
	tc_w_struct_end(&m);
	tc_w_i64(&m, 3, nrows);
	tc_w_struct_end(&m);
	tc_w_struct_end(&m);
	*len = 4 + chunk->len + m.len + 8;
	unsigned char *buf = malloc(*len);
	memcpy(buf, "PAR1", 4);
	memcpy(buf + 4, chunk->buf, chunk->len);
	memcpy(buf + 4 + chunk->len, m.buf, m.len);
	uint32_t fl = (uint32_t)m.len;
	unsigned char tail[8] = {(unsigned char)fl, (unsigned char)(fl >> 8), (unsigned char)(fl >> 16),
	                         (unsigned char)(fl >> 24), 'P', 'A', 'R', '1'};
	memcpy(buf + 4 + chunk->len + m.len, tail, 8);
	tc_writer_free(&m);
	return buf;
}

/* A v1 data page header. */
static void page_header(struct tc_writer *w, int32_t usize, int32_t csize, int32_t nvals, int encoding)
{
	tc_w_struct_begin(w);
	tc_w_i32(w, 1, 0);
	tc_w_i32(w, 2, usize);
	tc_w_i32(w, 3, csize);
	tc_w_field(w, 5, TC_STRUCT);
	tc_w_struct_begin(w);
	tc_w_i32(w, 1, nvals);
	tc_w_i32(w, 2, encoding);
	tc_w_i32(w, 3, 3);
	tc_w_i32(w, 4, 3);
	tc_w_struct_end(w);
	tc_w_struct_end(w);
}

/* A file whose one column chunk is one uncompressed v1 page of nvals
 * values holding body, in the given encoding. */
static unsigned char *page_file(const void *body, size_t n, int32_t nvals, int encoding, size_t *len)
{
	struct tc_writer chunk;
	tc_writer_init(&chunk);
	page_header(&chunk, (int32_t)n, (int32_t)n, nvals, encoding);
	tc_w_bytes(&chunk, body, n);
	unsigned char *file = make_file(&chunk, nvals, 0, nvals, len);
	tc_writer_free(&chunk);
	return file;
}

/* Read the file's column x; 0 on success, else the message in msg. */
static int read_x(const unsigned char *buf, size_t len, json_t **rows, char *msg, size_t msgsize)
{
	struct tt_parquet_file *f;
	*rows = NULL;
	int rc = tt_parquet_open(buf, len, "made.parquet", &f);
	if (rc == 0) {
		rc = tt_parquet_read_rows(f, (const char *[]){"x"}, 1, rows);
		tt_parquet_close(f);
	}
	snprintf(msg, msgsize, "%s", rc ? tether_error_last() : "");
	return rc;
}

static void test_made_files(void)
{
	char msg[512];
	json_t *rows;
	size_t len;
	/* A good page: 3 values, the middle null. Levels: RLE, bit width 1. */
	struct tc_writer body, chunk;
	tc_writer_init(&body);
	uint8_t levels[] = {2, 0, 0, 0, 0x03, 0x05}; /* one bit-packed group: 1,0,1 */
	tc_w_bytes(&body, levels, sizeof levels);
	uint8_t vals[] = {7, 0, 0, 0, 9, 0, 0, 0};
	tc_w_bytes(&body, vals, sizeof vals);
	tc_writer_init(&chunk);
	page_header(&chunk, (int32_t)body.len, (int32_t)body.len, 3, 0);
	tc_w_bytes(&chunk, body.buf, body.len);
	unsigned char *file = make_file(&chunk, 3, 0, 3, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) == 0);
	char *dump = rows ? json_dumps(rows, JSON_COMPACT) : NULL;
	CHECK_STR(dump, "[{\"x\":7},{\"x\":null},{\"x\":9}]");
	free(dump);
	json_decref(rows);
	free(file);

	/* The footer's row count disagrees with the pages. */
	file = make_file(&chunk, 3, 0, 2, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "made.parquet: row group 0") &&
	      strstr(msg, "more values than rows"));
	free(file);
	/* The column metadata claims more values than the pages hold. */
	file = make_file(&chunk, 4, 0, 4, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "column chunk ends after 3 of 4 values"));
	free(file);
	/* A value count far past the limit is refused before anything is
	 * allocated for it. */
	file = make_file(&chunk, (int64_t)1 << 40, 0, 3, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "over the limit"));
	free(file);
	file = make_file(&chunk, 3, 0, (int64_t)1 << 40, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "over the limit"));
	free(file);
	/* Codecs the reader does not have. */
	file = make_file(&chunk, 3, PQ_LZ4, 3, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "compression LZ4 (not supported)"));
	free(file);

	/* A level above the column's maximum: an RLE run's value wider than
	 * the levels' bit width. */
	uint8_t badlev[] = {2, 0, 0, 0, 0x06, 0x02, 7, 0, 0, 0, 9, 0, 0, 0};
	file = page_file(badlev, sizeof badlev, 3, 0, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "definition levels: RLE run value wider"));
	free(file);

	/* Dictionary indices without a dictionary page. */
	uint8_t dl[] = {2, 0, 0, 0, 0x06, 0x01, 1, 0x06, 0x00};
	file = page_file(dl, sizeof dl, 3, 8, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "without a dictionary page"));
	free(file);
	tc_writer_free(&body);

	/* A zstd bomb: a page that says 1.5 GiB is refused before inflating;
	 * one that says 100 bytes but inflates to more is refused too. */
	size_t big = (size_t)3 << 29;
	tc_writer_free(&chunk);
	tc_writer_init(&chunk);
	uint8_t zeros[4096] = {0};
	uint8_t z[256];
	size_t zl = ZSTD_compress(z, sizeof z, zeros, sizeof zeros, 3);
	CHECK(!ZSTD_isError(zl));
	page_header(&chunk, (int32_t)big, (int32_t)zl, 3, 0);
	tc_w_bytes(&chunk, z, zl);
	file = make_file(&chunk, 3, PQ_ZSTD, 3, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "over the limit of 1024 MiB"));
	free(file);
	tc_writer_free(&chunk);
	tc_writer_init(&chunk);
	page_header(&chunk, 100, (int32_t)zl, 3, 0);
	tc_w_bytes(&chunk, z, zl);
	file = make_file(&chunk, 3, PQ_ZSTD, 3, &len);
	CHECK(read_x(file, len, &rows, msg, sizeof msg) != 0 && strstr(msg, "zstd data longer than the page header says"));
	free(file);
	tc_writer_free(&chunk);
	tc_writer_free(&body);

	/* Magic and footer damage. */
	unsigned char junk[32] = "PAR1";
	CHECK(read_x(junk, sizeof junk, &rows, msg, sizeof msg) != 0 && strstr(msg, "no PAR1 at the end"));
	memcpy(junk + 28, "PAR1", 4);
	memset(junk + 24, 0xff, 4);
	CHECK(read_x(junk, sizeof junk, &rows, msg, sizeof msg) != 0 && strstr(msg, "past the start of the file"));
	memcpy(junk + 28, "PARE", 4);
	CHECK(read_x(junk, sizeof junk, &rows, msg, sizeof msg) != 0 && strstr(msg, "encrypted"));
	CHECK(read_x((const unsigned char *)"PAR1PAR1", 8, &rows, msg, sizeof msg) != 0 && strstr(msg, "not a Parquet file"));
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_thrift_round_trip();
	test_thrift_hostile();
	test_write_read();
	test_write_big_strings();
	test_writer_refusals();
	test_made_files();
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	CHECK_DONE();
}
