/* Apache Parquet, read and written without a Parquet library (Debian has
 * none for C): the Thrift compact protocol of the footer and page headers,
 * PLAIN, RLE/bit-packed and dictionary encodings (and, reading, the DELTA_*
 * and BYTE_STREAM_SPLIT ones), definition and repetition
 * levels, and the codecs uncompressed, snappy (libsnappy), gzip (zlib) and
 * zstd (libzstd).
 *
 * The reader is for files tether does not trust (a clone's Delta
 * checkpoints): every offset, length, count and nesting depth is checked
 * against the bytes before use, and a limit on decoded size stops
 * decompression bombs. Errors are TETHER_EIO (TETHER_ERROR: out of memory) set with
 * tether_error_set(), the message naming `what` (a path or URI) and what is
 * wrong ("column chunk 3 of row group 0: page header past the end").
 *
 * The writer is for `tether export`: flat columns only. */
#ifndef TETHER_FORMAT_PARQUET_H
#define TETHER_FORMAT_PARQUET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- reading ------------------------------------------------------------ */

struct tt_parquet_file;

/* Open a whole Parquet file held in memory (data must outlive the handle).
 * Checks the magic at both ends and parses the footer. */
int tt_parquet_open(const void *data, size_t len, const char *what, struct tt_parquet_file **out);
void tt_parquet_close(struct tt_parquet_file *f);

int64_t tt_parquet_num_rows(const struct tt_parquet_file *f);

/* The file's key-value metadata value for `key`, or NULL. */
const char *tt_parquet_kv(const struct tt_parquet_file *f, const char *key);

/* Read the named top-level columns (fields of the schema root) of every row
 * as JSON: *rows is a new array with one object per row, holding each asked
 * column that is present in the file under its name (a column the file does
 * not have is simply absent from every row). Values: a null is JSON null;
 * integers (INT32/INT64 and their logical types) are integers; BOOLEAN is
 * true/false; FLOAT/DOUBLE are reals (NaN and infinities, which JSON lacks, are
 * null); BYTE_ARRAY/FIXED_LEN_BYTE_ARRAY with a
 * STRING/UTF8/ENUM/JSON annotation are strings (invalid UTF-8 is an error),
 * other byte arrays are lower-case hex strings; a group is an object of its
 * fields; a LIST (3-level, and the legacy 2-level forms) is an array; a MAP
 * is an object when its keys are strings, else an array of {"key","value"}.
 * Only the asked columns' chunks are decompressed. */
int tt_parquet_read_rows(struct tt_parquet_file *f, const char *const *columns, size_t ncolumns,
                         json_t **rows);

/* ---- writing -------------------------------------------------------------- */

enum tt_parquet_type {
	TT_PARQUET_BOOLEAN,
	TT_PARQUET_INT32,
	TT_PARQUET_INT64,
	TT_PARQUET_DOUBLE,
	TT_PARQUET_STRING,       /* BYTE_ARRAY, STRING logical type */
	TT_PARQUET_TIMESTAMP_US, /* INT64, TIMESTAMP(isAdjustedToUTC, MICROS) */
};

struct tt_parquet_column {
	const char *name;
	enum tt_parquet_type type;
	bool nullable; /* OPTIONAL when true, REQUIRED when false */
};

/* One cell. is_null only for nullable columns; s is UTF-8 of length len. */
struct tt_parquet_value {
	bool is_null;
	union {
		bool b;
		int32_t i32;
		int64_t i64; /* also TIMESTAMP_US */
		double d;
		struct {
			const char *s;
			size_t len;
		} str;
	} v;
};

struct tt_parquet_writer;

/* A writer of the given flat schema to fd (which it does not close), named
 * `what` in errors; row groups of up to row_group_rows rows (0: a default
 * sized for about 64 MiB of data), each column chunk zstd-compressed,
 * dictionary-encoded where that is smaller, with min/max/null-count
 * statistics. Same rows in give the same bytes out. */
int tt_parquet_writer_new(int fd, const char *what, const struct tt_parquet_column *cols, size_t ncols,
                          size_t row_group_rows, struct tt_parquet_writer **out);
/* Append one row: values[i] for cols[i]. */
int tt_parquet_writer_add(struct tt_parquet_writer *w, const struct tt_parquet_value *values);
/* Flush the last row group and write the footer. Frees w whatever happens. */
int tt_parquet_writer_finish(struct tt_parquet_writer *w);
/* Abandon a writer without writing a footer. */
void tt_parquet_writer_free(struct tt_parquet_writer *w);

#endif
