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
