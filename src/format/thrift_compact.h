/* The Thrift compact protocol, as Parquet's footer and page headers use it:
 * a checked reader over a byte range (every length and count against the
 * bytes left, nesting capped, the first error kept with its offset) and an
 * appending writer. Only what Parquet needs: structs, lists, i8-i64,
 * doubles, binary, booleans; maps and sets are skipped when read, never
 * written. Shared by the Parquet reader and writer (format/parquet.h). */
#ifndef TETHER_FORMAT_THRIFT_COMPACT_H
#define TETHER_FORMAT_THRIFT_COMPACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tc_type {
	TC_STOP = 0,
	TC_TRUE = 1, /* a boolean field's value is its type */
	TC_FALSE = 2,
	TC_I8 = 3,
	TC_I16 = 4,
	TC_I32 = 5,
	TC_I64 = 6,
	TC_DOUBLE = 7,
	TC_BINARY = 8,
	TC_LIST = 9,
	TC_SET = 10,
	TC_MAP = 11,
	TC_STRUCT = 12,
};

/* Deepest struct/list nesting a reader accepts (Parquet's is about 6). */
#define TC_MAX_DEPTH 32

struct tc_reader {
	const uint8_t *base, *p, *end;
	int depth;
	const char *err; /* the first error, or NULL */
	size_t err_at;   /* its offset from base */
};

void tc_reader_init(struct tc_reader *r, const void *data, size_t len);

/* Struct framing: tc_struct_begin before the first field (counts depth),
 * tc_struct_end after TC_STOP. tc_field reads a field header: *type is
 * TC_STOP at the end; *id the field id (deltas resolved against *last). */
int tc_struct_begin(struct tc_reader *r, int16_t *last);
void tc_struct_end(struct tc_reader *r);
int tc_field(struct tc_reader *r, int16_t *last, int *type, int16_t *id);

/* A whole struct: on_field is called for each field with its id and wire
 * type, and returns 0 (read it), TC_FIELD_SKIP (skip it: a field the
 * caller has no use for) or -1 (r->err set). The struct framing, the end
 * marker and nesting are handled here. */
#define TC_FIELD_SKIP 1
typedef int (*tc_field_fn)(struct tc_reader *r, int16_t id, int type, void *ctx);
int tc_read_struct(struct tc_reader *r, tc_field_fn on_field, void *ctx);

/* Values. Each checks that the field's wire type fits what is asked
 * (pass the type tc_field gave), so a mistyped field is an error, not a
 * misread. Returns 0 or -1 (r->err set). */
int tc_i32(struct tc_reader *r, int type, int32_t *out);
int tc_i64(struct tc_reader *r, int type, int64_t *out);
int tc_bool(struct tc_reader *r, int type, bool *out);
/* Binary/string: a pointer into the input and its length. */
int tc_binary(struct tc_reader *r, int type, const uint8_t **out, size_t *len);
/* A list header: element type and count (count checked against the bytes
 * left, as each element takes at least one byte). */
int tc_list_begin(struct tc_reader *r, int type, int *elem_type, uint32_t *count);
/* Skip one value of the given wire type, nested values included. */
int tc_skip(struct tc_reader *r, int type);
/* Mark an error at the current position (keeps the first). Returns -1. */
int tc_fail(struct tc_reader *r, const char *msg);

/* ---- writing ---- */

struct tc_writer {
	uint8_t *buf;
	size_t len, cap;
	bool oom;
	int16_t last[TC_MAX_DEPTH];
	int depth;
};

void tc_writer_init(struct tc_writer *w);
void tc_writer_free(struct tc_writer *w);
/* The field header of field id with the given wire type; for booleans
 * use tc_w_bool, which writes the header and value in one byte. */
void tc_w_field(struct tc_writer *w, int16_t id, int type);
void tc_w_struct_begin(struct tc_writer *w); /* after tc_w_field(.., TC_STRUCT) or a list header */
void tc_w_struct_end(struct tc_writer *w);   /* writes TC_STOP */
void tc_w_i32(struct tc_writer *w, int16_t id, int32_t v);
void tc_w_i64(struct tc_writer *w, int16_t id, int64_t v);
void tc_w_bool(struct tc_writer *w, int16_t id, bool v);
void tc_w_binary(struct tc_writer *w, int16_t id, const void *data, size_t len);
/* A list field's header: elements follow (structs with begin/end, i32s
 * with tc_w_varint_i32, binaries with tc_w_raw_binary). */
void tc_w_list(struct tc_writer *w, int16_t id, int elem_type, uint32_t count);
void tc_w_varint_i32(struct tc_writer *w, int32_t v);
/* Raw bytes and an unsigned LEB128 varint: the writer is also the byte
 * buffer the Parquet writer builds its pages in. */
void tc_w_bytes(struct tc_writer *w, const void *data, size_t n);
void tc_w_uvarint(struct tc_writer *w, uint64_t v);
void tc_w_raw_binary(struct tc_writer *w, const void *data, size_t len);

#endif
