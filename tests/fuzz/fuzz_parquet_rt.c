/* The Parquet writer, round trip: the input chooses a flat schema (1 to 6
 * columns of every type the writer has, nullable or not), a row-group size
 * and rows of values; the file written is read back by the reader, which
 * must give exactly those values. The writer must never fail on what its
 * contract accepts (valid UTF-8 strings, finite doubles: the reader turns
 * NaN into null), and the same rows must give the same bytes twice. */
#include "fuzz.h"

#include "format/parquet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The input read as a stream of bytes; zeros once it runs out. */
struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned byte(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint64_t bytes(struct in *in, int k)
{
	uint64_t v = 0;
	for (int i = 0; i < k; i++)
		v = v << 8 | byte(in);
	return v;
}

/* A string of valid UTF-8: ASCII, two-, three- and four-byte characters,
 * NUL included, drawn from the input. */
static size_t utf8_string(struct in *in, char *out, size_t cap)
{
	size_t len = 0, want = byte(in) % 24;
	static const char *const wide[] = { "\xc3\xa9", "\xe2\x80\xa8", "\xf0\x9f\x98\x80", "\xef\xbf\xbd" };
	for (size_t i = 0; i < want && len + 4 < cap; i++) {
		unsigned c = byte(in);
		if (c < 0xf0) {
			out[len++] = (char)(c & 0x7f);
		} else {
			const char *w = wide[c & 3];
			memcpy(out + len, w, strlen(w));
			len += strlen(w);
		}
	}
	return len;
}

#define MAX_COLS 6
#define MAX_ROWS 200
#define STR_CAP 128

static const char *const names[MAX_COLS] = { "a", "b", "c", "d", "e", "f" };

/* What the reader gives for a value written. */
static json_t *expected(enum tt_parquet_type t, const struct tt_parquet_value *v)
{
	if (v->is_null)
		return json_null();
	switch (t) {
	case TT_PARQUET_BOOLEAN:
		return json_boolean(v->v.b);
	case TT_PARQUET_INT32:
		return json_integer(v->v.i32);
	case TT_PARQUET_INT64:
	case TT_PARQUET_TIMESTAMP_US:
		return json_integer(v->v.i64);
	case TT_PARQUET_DOUBLE:
		return json_real(v->v.d);
	case TT_PARQUET_STRING:
		return json_stringn(v->v.str.s, v->v.str.len);
	}
	return NULL;
}

/* The file written for the rows, in memory (a temporary file read back). */
static unsigned char *write_file(const struct tt_parquet_column *cols, size_t ncols, size_t group,
                                 struct tt_parquet_value *vals, size_t nrows, size_t *len)
{
	FILE *f = tmpfile();
	FUZZ_ASSERT(f);
	struct tt_parquet_writer *w = NULL;
	FUZZ_ASSERT(tt_parquet_writer_new(fileno(f), "fuzz", cols, ncols, group, &w) == 0);
	for (size_t r = 0; r < nrows; r++)
		FUZZ_ASSERT(tt_parquet_writer_add(w, vals + r * ncols) == 0);
	FUZZ_ASSERT(tt_parquet_writer_finish(w) == 0);
	long end = lseek(fileno(f), 0, SEEK_END);
	FUZZ_ASSERT(end > 0);
	unsigned char *data = malloc((size_t)end);
	FUZZ_ASSERT(data && pread(fileno(f), data, (size_t)end, 0) == end);
	fclose(f);
	*len = (size_t)end;
	return data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	size_t ncols = 1 + byte(&in) % MAX_COLS, group = 1 + byte(&in) % 64, nrows = byte(&in) % MAX_ROWS;
	struct tt_parquet_column cols[MAX_COLS];
	for (size_t c = 0; c < ncols; c++) {
		unsigned t = byte(&in);
		cols[c] = (struct tt_parquet_column){ names[c], (enum tt_parquet_type)(t % 6), (t & 0x80) != 0 };
	}
	struct tt_parquet_value *vals = calloc(nrows * ncols + 1, sizeof *vals);
	char(*strs)[STR_CAP] = calloc(nrows * ncols + 1, STR_CAP);
	json_t *want = json_array();
	FUZZ_ASSERT(vals && strs && want);
	for (size_t r = 0; r < nrows; r++) {
		json_t *row = json_object();
		for (size_t c = 0; c < ncols; c++) {
			struct tt_parquet_value *v = &vals[r * ncols + c];
			/* a column with few distinct values (dictionary) or many */
			unsigned pick = byte(&in);
			v->is_null = cols[c].nullable && (pick & 7) == 0;
			switch (cols[c].type) {
			case TT_PARQUET_BOOLEAN:
				v->v.b = pick & 1;
				break;
			case TT_PARQUET_INT32:
				v->v.i32 = (int32_t)(uint32_t)bytes(&in, 4);
				break;
			case TT_PARQUET_INT64:
			case TT_PARQUET_TIMESTAMP_US:
				v->v.i64 = (int64_t)bytes(&in, pick & 1 ? 8 : 1);
				break;
			case TT_PARQUET_DOUBLE: {
				uint64_t u = bytes(&in, 8);
				double d;
				memcpy(&d, &u, sizeof d);
				v->v.d = isfinite(d) ? d : (double)(int64_t)u;
				break;
			}
			case TT_PARQUET_STRING:
				v->v.str.len = utf8_string(&in, strs[r * ncols + c], STR_CAP);
				v->v.str.s = strs[r * ncols + c];
				break;
			}
			json_object_set_new(row, names[c], expected(cols[c].type, v));
		}
		json_array_append_new(want, row);
	}

	size_t len = 0, len2 = 0;
	unsigned char *file = write_file(cols, ncols, group, vals, nrows, &len);
	unsigned char *again = write_file(cols, ncols, group, vals, nrows, &len2);
	FUZZ_ASSERT(len == len2 && memcmp(file, again, len) == 0);
	free(again);

	struct tt_parquet_file *pf = NULL;
	FUZZ_ASSERT(tt_parquet_open(file, len, "fuzz", &pf) == 0);
	FUZZ_ASSERT(tt_parquet_num_rows(pf) == (int64_t)nrows);
	json_t *got = NULL;
	FUZZ_ASSERT(tt_parquet_read_rows(pf, names, ncols, &got) == 0);
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
		fprintf(stderr, "read back:\n%s\nwritten:\n%s\n", g, w);
		free(g);
		free(w);
	}
	FUZZ_ASSERT(json_equal(got, want));
	json_decref(got);
	tt_parquet_close(pf);
	free(file);
	json_decref(want);
	free(vals);
	free(strs);
	return 0;
}
