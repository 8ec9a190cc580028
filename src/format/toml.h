/* TOML 1.0 <-> jansson.
 *
 * Mapping: tables and inline tables -> objects; arrays -> arrays; strings ->
 * strings; integers -> integers (json_int_t, 64-bit); floats -> reals; bools
 * -> true/false. TOML values JSON cannot hold are objects with exactly one
 * key naming their type, whose value is the canonical text:
 *   {"$datetime": "1979-05-27T07:32:00Z"}         offset date-time
 *   {"$datetime-local": "1979-05-27T07:32:00"}    local date-time
 *   {"$date-local": "1979-05-27"}                 local date
 *   {"$time-local": "07:32:00"}                   local time
 *   {"$float": "inf" | "-inf" | "nan"}            non-finite floats
 * The writer turns these back into TOML values.
 *
 * Datetime text is kept as written (fraction digits included), except that a
 * 't' or space separator becomes 'T' and a 'z' becomes 'Z'. +inf is "inf";
 * nan of either sign is "nan". Newlines in multi-line strings are stored as
 * LF even when the file has CRLF. Containers may nest at most 256 levels
 * (tables, arrays and inline tables all count); deeper documents are refused
 * rather than risking the stack. */
#ifndef TETHER_FORMAT_TOML_H
#define TETHER_FORMAT_TOML_H

#include <jansson.h>
#include <stddef.h>

/* Parse a whole document. On error returns NULL and writes
 * "NAME:LINE:COL: message" into err (NAME is `name`, e.g. a file path).
 * LINE and COL are 1-based; COL counts characters (Unicode code points), not
 * bytes. A UTF-8 BOM at the start is skipped. err may be NULL. */
json_t *tt_toml_parse(const char *buf, size_t len, const char *name, char *err, size_t errlen);

/* Where each key of a parsed document was written, so that a validator
 * can name the line and column of a value it refuses. */
struct tt_toml_where;
/* tt_toml_parse, also returning (when where is not NULL) the position of
 * every key: of key/value lines, of dotted-key steps and of [header]
 * tables, each the first character of the key as written. Free it with
 * tt_toml_where_free; it refers to the document's tables by pointer, so it
 * answers only while the document lives and for tables the parser made. */
json_t *tt_toml_parse_at(const char *buf, size_t len, const char *name, char *err, size_t errlen,
                         struct tt_toml_where **where);
/* 1-based line and column (in characters) of `key` in `table`; returns 1,
 * or 0 with both set to 0 when the key is not known there (a value the
 * parser did not make, or an element of an array). */
int tt_toml_where_key(const struct tt_toml_where *w, const json_t *table, const char *key, size_t *line,
                      size_t *col);
/* "NAME:LINE:COL" of `key` in `table` into out, or "NAME" when the key's
 * position is not known: the start of a validator's message. */
void tt_toml_where_name(const struct tt_toml_where *w, const json_t *table, const char *key, const char *name,
                        char *out, size_t n);
void tt_toml_where_free(struct tt_toml_where *w);

/* Canonical TOML for an object: keys sorted bytewise, scalars and arrays of
 * scalars/inline values first, then sub-tables as [a.b] sections, arrays of
 * tables as [[a]]; one fixed spelling per value, so the same value always
 * gives the same bytes. Returns a malloc'd NUL-terminated string, or NULL
 * with a message in err (e.g. a null value, which TOML cannot hold), naming
 * where the value sits ("a.b[2]"). An object is written as one of the "$..."
 * values above only when its single key is that name and its text is exactly
 * what the parser produces for such a value; any other object, {"$float":
 * "+inf"} say, is an ordinary table. So whatever the parser returned, writing
 * it and parsing that gives back an equal value. */
char *tt_toml_write(const json_t *doc, char *err, size_t errlen);

#endif
