/* The Parquet reader's internals, shared by its files: the footer as parsed
 * (parquet_meta.c), a column chunk decoded to levels and JSON values
 * (parquet_chunk.c), and their assembly into rows (parquet_read.c). */
#ifndef TETHER_FORMAT_PARQUET_INTERNAL_H
#define TETHER_FORMAT_PARQUET_INTERNAL_H

#include "format/parquet.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parquet's physical types. */
enum pq_type {
	PQ_BOOLEAN = 0,
	PQ_INT32 = 1,
	PQ_INT64 = 2,
	PQ_INT96 = 3,
	PQ_FLOAT = 4,
	PQ_DOUBLE = 5,
	PQ_BYTE_ARRAY = 6,
	PQ_FIXED_LEN_BYTE_ARRAY = 7,
	PQ_GROUP = -1, /* not a Parquet value: a schema group */
};

enum pq_repetition { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };

/* Encodings. */
enum pq_encoding {
	PQ_PLAIN = 0,
	PQ_PLAIN_DICTIONARY = 2,
	PQ_RLE = 3,
	PQ_BIT_PACKED = 4,
	PQ_DELTA_BINARY_PACKED = 5,
	PQ_DELTA_LENGTH_BYTE_ARRAY = 6,
	PQ_DELTA_BYTE_ARRAY = 7,
	PQ_RLE_DICTIONARY = 8,
	PQ_BYTE_STREAM_SPLIT = 9,
};

/* ConvertedType values the reader acts on. */
enum pq_converted {
	PQ_CT_NONE = -1,
	PQ_CT_UTF8 = 0,
	PQ_CT_MAP = 1,
	PQ_CT_MAP_KEY_VALUE = 2,
	PQ_CT_LIST = 3,
	PQ_CT_ENUM = 4,
	PQ_CT_UINT_8 = 11,
	PQ_CT_UINT_64 = 14,
	PQ_CT_JSON = 19,
};

/* LogicalType union members (their field ids). */
enum pq_logical {
	PQ_LT_NONE = 0,
	PQ_LT_STRING = 1,
	PQ_LT_MAP = 2,
	PQ_LT_LIST = 3,
	PQ_LT_ENUM = 4,
	PQ_LT_TIMESTAMP = 8,
	PQ_LT_INTEGER = 10,
	PQ_LT_JSON = 12,
};

/* Deepest schema a file may have (levels fit a byte with room to spare). */
#define PQ_MAX_SCHEMA_DEPTH 64

/* The decoded bytes one read may hold at once (pages, levels, values):
 * what stops a decompression bomb. The fuzz targets build with less. */
#ifndef TT_PARQUET_MAX_DECODED
#define TT_PARQUET_MAX_DECODED ((size_t)1 << 30)
#endif

struct pq_node {
	char *name;
	int type; /* enum pq_type */
	int32_t type_length;
	int repetition;
	int converted; /* enum pq_converted or another ConvertedType */
	int logical;   /* enum pq_logical or another member */
	bool is_unsigned;
	bool is_string; /* bytes that are UTF-8 text */
	uint32_t nchildren;
	uint32_t *children; /* node indices */
	int32_t parent;     /* -1 for the root */
	int def, rep;       /* the levels at which this node is present / repeats */
	uint32_t leaf_first, leaf_count; /* the leaves under it (contiguous) */
};

struct pq_chunk {
	bool has_meta;
	bool external; /* file_path set: the data is in another file */
	int type;
	int codec;
	int64_t num_values;
	int64_t compressed_size;
	int64_t data_page_offset;
	int64_t dictionary_page_offset; /* -1: none */
};

struct pq_row_group {
	int64_t num_rows;
	struct pq_chunk *chunks; /* one per leaf */
};

struct pq_kv {
	char *key, *value;
};

struct tt_parquet_file {
	const uint8_t *data;
	size_t len;
	size_t footer_start; /* where the column chunks' bytes must end */
	char *what;
	struct pq_node *nodes; /* nodes[0] is the root */
	size_t nnodes;
	uint32_t *leaf_node; /* leaf index -> node index */
	size_t nleaves;
	int64_t num_rows;
	struct pq_row_group *rgs;
	size_t nrgs;
	struct pq_kv *kvs;
	size_t nkvs;
};

/* Parse the footer into f (data, len, what set). Returns 0 or sets the
 * error; f is freed by the caller either way. */
int pq_parse_footer(struct tt_parquet_file *f);
void pq_file_free(struct tt_parquet_file *f);

/* A column chunk decoded: levels (NULL when the leaf's maximum is 0) and
 * the values of the defined entries as JSON. */
struct pq_column {
	uint8_t *def, *rep;
	size_t nlevels;
	json_t **vals;
	size_t nvals;
	size_t cap;    /* room in vals */
	size_t li, vi; /* the assembly's cursors */
};

/* The decoded-bytes budget of one read. */
struct pq_budget {
	size_t left;
};

/* What one decoded value's JSON is charged (a json_t and its allocation). */
#define PQ_JSON_VALUE_COST 48

/* The decoding of one column chunk (parquet_chunk.c), which the value
 * decoders (parquet_values.c) report through. */
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

/* "FILE: row group N, column PATH, page N: message", TETHER_EIO. */
int pq_cerr(struct pq_cctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pq_oom(struct pq_cctx *c);
int pq_over_budget(struct pq_cctx *c);
/* Take n bytes from the budget; false when it has not that many left. */
bool pq_charge(struct pq_budget *b, size_t n);
/* n elements of size bytes, charged to the budget (the error set when
 * NULL); pq_scratch_free gives back both. */
void *pq_scratch(struct pq_cctx *c, size_t n, size_t size);
void pq_scratch_free(struct pq_cctx *c, void *p, size_t n, size_t size);

/* Values (parquet_values.c). The encoding's name ("DELTA_BYTE_ARRAY",
 * "encoding 42" in buf). */
const char *pq_encoding_name(int e, char buf[24]);
/* count PLAIN values of leaf n from p[0..len) into out (zeroed; what is
 * filled on an error is the caller's to release). NULL or a message. */
const char *pq_plain(const struct pq_node *n, const uint8_t *p, size_t len, size_t count, json_t **out,
                     struct pq_budget *b);
/* The ndef defined values of a data page in its encoding into out. */
int pq_values(struct pq_cctx *c, int encoding, const uint8_t *p, size_t len, size_t ndef, json_t **out);

static inline uint32_t pq_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Decode leaf `leaf` of row group `rg` into *col. Errors are set with
 * tether_error_set, naming the file, row group, column and page. */
int pq_read_chunk(const struct tt_parquet_file *f, size_t rg, uint32_t leaf, struct pq_budget *budget,
                  struct pq_column *col);
void pq_column_free(struct pq_column *col);

/* Bit-level decoding (parquet_bits.c). width bits (0-64) at bit offset
 * bit of p, least significant first; the caller has checked the bytes. */
uint64_t pq_bits(const uint8_t *p, uint64_t bit, int width);
/* count values of bw bits (0-32) of the RLE/bit-packed hybrid into out.
 * Returns NULL or a message. */
const char *pq_rle(const uint8_t *p, size_t len, int bw, size_t count, uint32_t *out);
/* DELTA_BINARY_PACKED: exactly count values (the header must say so) into
 * out as 64-bit two's complement; *used is the bytes read. */
const char *pq_delta_binary(const uint8_t *p, size_t len, size_t count, uint64_t *out, size_t *used);

/* The dotted path of a leaf ("add.partitionValues.key_value.key"), for
 * messages, into buf. */
const char *pq_leaf_path(const struct tt_parquet_file *f, uint32_t leaf, char *buf, size_t size);

#endif
