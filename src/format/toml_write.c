/* Canonical TOML writer: one spelling for every value, so equal values give
 * equal bytes and writing what the parser read back is a fixed point.
 *
 * Layout of a table: its plain entries (scalars, arrays that are not arrays
 * of tables, special values) sorted by key, then its sub-tables and arrays of
 * tables, also sorted by key, each under its own [a.b] / [[a.b]] header. A
 * table whose only contents are sub-tables gets no header of its own: the
 * sub-table headers imply it. Arrays are written [1, 2], inline tables
 * { a = 1, b = 2 }, strings as basic strings, reals in the shortest text that
 * reads back as the same double. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "format/toml.h"

#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reader refuses containers nested deeper than this, so the writer must
 * not produce them. */
enum { MAX_DEPTH = 256 };

/* A step of the path from the root to the value being written: a key, or an
 * index into an array (only shown in messages, never in headers). */
struct step {
	const char *key;
	size_t len;
	size_t index;
	bool is_index;
};

struct writer {
	char *data;
	size_t len, cap;
	bool failed;
	char *err;
	size_t errlen;
	struct step *path;
	size_t depth, path_cap;
	locale_t c_locale;
};

struct entry {
	const char *key;
	size_t len;
	const json_t *value;
	bool section; /* written under its own header, not as `key = value` */
};

/* ---- output and errors ---- */

static bool grow(struct writer *W, size_t extra)
{
	if (W->cap - W->len > extra)
		return true;
	size_t need = W->len + extra + 1;
	if (need <= W->len)
		return false;
	size_t cap = W->cap ? W->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	char *data = realloc(W->data, cap);
	if (!data)
		return false;
	W->data = data;
	W->cap = cap;
	return true;
}

/* Appends text from the document to a message, at most `max` bytes of it,
 * with control characters shown as '?' so a message stays on one line. */
static size_t append_printable(char *out, size_t o, size_t n, const char *s, size_t len, size_t max)
{
	for (size_t i = 0; i < len && i < max && o + 1 < n; i++) {
		unsigned char c = (unsigned char)s[i];
		out[o++] = c < 0x20 || c == 0x7F ? '?' : (char)c;
	}
	out[o] = '\0';
	return o;
}

/* "a.b[2].c": where the value being written sits, for messages. */
static void path_text(const struct writer *W, char *out, size_t n)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < W->depth && o + 24 < n; i++) {
		const struct step *s = &W->path[i];
		if (s->is_index) {
			o += (size_t)snprintf(out + o, n - o, "[%zu]", s->index);
		} else {
			if (i)
				o = append_printable(out, o, n, ".", 1, 1);
			o = append_printable(out, o, n, s->key, s->len, 64);
		}
	}
}

/* Keeps the first error; the message names where in the document it is. */
__attribute__((format(printf, 2, 3)))
static bool fail(struct writer *W, const char *fmt, ...)
{
	if (W->failed)
		return false;
	W->failed = true;
	if (!W->err || !W->errlen)
		return false;
	char msg[256], where[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	path_text(W, where, sizeof where);
	if (W->depth)
		snprintf(W->err, W->errlen, "%s (at '%s')", msg, where);
	else
		snprintf(W->err, W->errlen, "%s", msg);
	return false;
}

static bool put(struct writer *W, const char *s, size_t n)
{
	if (W->failed)
		return false;
	if (!grow(W, n))
		return fail(W, "out of memory");
	if (n)
		memcpy(W->data + W->len, s, n);
	W->len += n;
	W->data[W->len] = '\0';
	return true;
}

static bool put_str(struct writer *W, const char *s)
{
	return put(W, s, strlen(s));
}

static bool push_step(struct writer *W, struct step step)
{
	if (W->depth == W->path_cap) {
		size_t cap = W->path_cap ? W->path_cap * 2 : 16;
		struct step *path = realloc(W->path, cap * sizeof *path);
		if (!path)
			return fail(W, "out of memory");
		W->path = path;
		W->path_cap = cap;
	}
	W->path[W->depth++] = step;
	return true;
}

static bool push_key(struct writer *W, const char *key, size_t len)
{
	return push_step(W, (struct step){key, len, 0, false});
}

static bool push_index(struct writer *W, size_t index)
{
	return push_step(W, (struct step){NULL, 0, index, true});
}

static void pop_step(struct writer *W)
{
	W->depth--;
}

/* ---- strings and keys ---- */

static bool is_valid_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + len;
	while (p < e) {
		unsigned c = *p;
		size_t n;
		uint32_t cp, min;
		if (c < 0x80) {
			p++;
			continue;
		} else if (c >= 0xC2 && c <= 0xDF) {
			n = 1, cp = c & 0x1F, min = 0x80;
		} else if ((c & 0xF0) == 0xE0) {
			n = 2, cp = c & 0x0F, min = 0x800;
		} else if (c >= 0xF0 && c <= 0xF4) {
			n = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if ((size_t)(e - p) <= n)
			return false;
		for (size_t i = 1; i <= n; i++) {
			if ((p[i] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		p += n + 1;
	}
	return true;
}

static const char *short_escape(unsigned char c)
{
	switch (c) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\b': return "\\b";
	case '\t': return "\\t";
	case '\n': return "\\n";
	case '\f': return "\\f";
	case '\r': return "\\r";
	default: return NULL;
	}
}

/* A basic string with the fewest escapes TOML needs: quote, backslash and the
 * control characters; everything else, non-ASCII included, as is. */
static bool put_quoted(struct writer *W, const char *s, size_t len)
{
	if (!is_valid_utf8(s, len))
		return fail(W, "string is not valid UTF-8");
	put(W, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != 0x7F && c != '"' && c != '\\')
			continue;
		put(W, s + run, i - run);
		run = i + 1;
		const char *esc = short_escape(c);
		if (esc) {
			put_str(W, esc);
		} else {
			char hex[8];
			snprintf(hex, sizeof hex, "\\u%04X", c);
			put_str(W, hex);
		}
	}
	put(W, s + run, len - run);
	return put(W, "\"", 1);
}

static bool is_bare_key(const char *key, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = key[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

static bool put_key(struct writer *W, const char *key, size_t len)
{
	return is_bare_key(key, len) ? put(W, key, len) : put_quoted(W, key, len);
}

/* ---- scalars ---- */

/* snprintf and strtod use the locale's decimal point; TOML's is '.', so
 * format under the C locale (per thread, leaving the caller's alone). */
static bool use_c_locale(struct writer *W, locale_t *saved)
{
	*saved = (locale_t)0;
	if (!W->c_locale) {
		W->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
		if (!W->c_locale)
			return fail(W, "out of memory");
	}
	*saved = uselocale(W->c_locale);
	return true;
}

/* The fewest significant digits that read back as the same double, in the
 * notation "%.17g" would choose (plain for exponents -4 to 16, so 100.0 is not
 * spelled 1e+02), with ".0" added when it would otherwise read as an integer. */
static bool put_real(struct writer *W, double d)
{
	char text[40];
	locale_t saved;
	if (!use_c_locale(W, &saved))
		return false;
	for (int precision = 1; precision <= 17; precision++) {
		snprintf(text, sizeof text, "%.*g", precision, d);
		if (strtod(text, NULL) == d)
			break;
	}
	const char *e = strchr(text, 'e');
	int exponent = e ? atoi(e + 1) : 0;
	if (e && exponent >= 0 && exponent < 17)
		snprintf(text, sizeof text, "%.*g", exponent + 1, d);
	uselocale(saved);
	if (!strpbrk(text, ".eni"))
		strcat(text, ".0");
	return put_str(W, text);
}

static bool put_integer(struct writer *W, json_int_t v)
{
	char text[32];
	snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, v);
	return put_str(W, text);
}

/* ---- special values: {"$datetime": "..."} and friends ---- */

static const char *const special_tags[] = {
	"$datetime", "$datetime-local", "$date-local", "$time-local", "$float",
};

/* Whether `text` is exactly what the reader makes of that TOML value: the
 * reader is the judge, so the two can never disagree about what a datetime
 * is. The text is parsed after "v = "; it must come back unchanged, which
 * also keeps out anything that would end the line. */
static bool is_canonical_datetime(const char *tag, const char *text, size_t len)
{
	char small[64];
	char *doc = len + 5 <= sizeof small ? small : malloc(len + 5);
	if (!doc)
		return false;
	memcpy(doc, "v = ", 4);
	memcpy(doc + 4, text, len);
	json_t *parsed = tt_toml_parse(doc, len + 4, "", NULL, 0);
	if (doc != small)
		free(doc);
	const json_t *back = json_object_get(json_object_get(parsed, "v"), tag);
	bool same = json_object_size(parsed) == 1 && json_object_size(json_object_get(parsed, "v")) == 1 &&
	            json_string_length(back) == len && memcmp(json_string_value(back), text, len) == 0;
	json_decref(parsed);
	return same;
}

/* The tag when `v` stands for a TOML value JSON has no type for: an object
 * whose single key is one of the tags, holding that value's canonical text
 * (as the reader produces it). Anything else, {"$float": "+inf"} or
 * {"$datetime": 5} say, is an ordinary table, so that writing what the reader
 * produced always gives it back unchanged. */
static const char *special_tag(const json_t *v)
{
	if (!json_is_object(v) || json_object_size(v) != 1)
		return NULL;
	void *iter = json_object_iter((json_t *)v);
	const char *key = json_object_iter_key(iter);
	size_t key_len = json_object_iter_key_len(iter);
	const json_t *text = json_object_iter_value(iter);
	if (key_len < 2 || key[0] != '$' || !json_is_string(text))
		return NULL;
	const char *s = json_string_value(text);
	size_t len = json_string_length(text);
	for (size_t i = 0; i < sizeof special_tags / sizeof special_tags[0]; i++) {
		const char *tag = special_tags[i];
		if (strlen(tag) != key_len || memcmp(tag, key, key_len) != 0)
			continue;
		if (strcmp(tag, "$float") == 0)
			return strlen(s) == len && (!strcmp(s, "inf") || !strcmp(s, "-inf") || !strcmp(s, "nan"))
			           ? tag
			           : NULL;
		return is_canonical_datetime(tag, s, len) ? tag : NULL;
	}
	return NULL;
}

static bool put_special(struct writer *W, const char *tag, const json_t *obj)
{
	const json_t *text = json_object_get(obj, tag);
	return put(W, json_string_value(text), json_string_length(text));
}

/* ---- tables ---- */

static int compare_entries(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = n ? memcmp(x->key, y->key, n) : 0;
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static bool is_section(const json_t *v);

/* The object's entries in bytewise key order; *count is set. The caller frees. */
static struct entry *sorted_entries(struct writer *W, const json_t *obj, size_t *count)
{
	*count = json_object_size(obj);
	struct entry *entries = malloc((*count ? *count : 1) * sizeof *entries);
	if (!entries) {
		fail(W, "out of memory");
		return NULL;
	}
	size_t n = 0;
	for (void *it = json_object_iter((json_t *)obj); it && n < *count;
	     it = json_object_iter_next((json_t *)obj, it))
		entries[n++] = (struct entry){json_object_iter_key(it), json_object_iter_key_len(it),
		                              json_object_iter_value(it), false};
	*count = n;
	for (size_t i = 0; i < n; i++)
		entries[i].section = is_section(entries[i].value);
	qsort(entries, n, sizeof *entries, compare_entries);
	return entries;
}

static bool is_table(const json_t *v)
{
	return json_is_object(v) && !special_tag(v);
}

static bool is_array_of_tables(const json_t *v)
{
	if (!json_is_array(v) || json_array_size(v) == 0)
		return false;
	for (size_t i = 0; i < json_array_size(v); i++)
		if (!is_table(json_array_get(v, i)))
			return false;
	return true;
}

/* What gets its own [header] rather than a `key = value` line. */
static bool is_section(const json_t *v)
{
	return is_table(v) || is_array_of_tables(v);
}

static bool put_inline(struct writer *W, const json_t *v, size_t depth);

static bool put_inline_table(struct writer *W, const json_t *obj, size_t depth)
{
	size_t count;
	struct entry *entries = sorted_entries(W, obj, &count);
	if (!entries)
		return false;
	put_str(W, count ? "{ " : "{");
	for (size_t i = 0; i < count && !W->failed; i++) {
		if (i)
			put_str(W, ", ");
		if (!push_key(W, entries[i].key, entries[i].len))
			break;
		put_key(W, entries[i].key, entries[i].len);
		put_str(W, " = ");
		put_inline(W, entries[i].value, depth + 1);
		pop_step(W);
	}
	free(entries);
	return put_str(W, count ? " }" : "}");
}

static bool put_inline_array(struct writer *W, const json_t *array, size_t depth)
{
	put_str(W, "[");
	for (size_t i = 0; i < json_array_size(array) && !W->failed; i++) {
		if (i)
			put_str(W, ", ");
		if (!push_index(W, i))
			break;
		put_inline(W, json_array_get(array, i), depth + 1);
		pop_step(W);
	}
	return put_str(W, "]");
}

/* Any value on the right of '=' or inside an array; `depth` is its nesting
 * level, counted as the reader counts it. */
static bool put_inline(struct writer *W, const json_t *v, size_t depth)
{
	const char *tag = special_tag(v);
	if (tag)
		return put_special(W, tag, v);
	if ((json_is_object(v) || json_is_array(v)) && depth > MAX_DEPTH)
		return fail(W, "value nests more than %d levels deep", MAX_DEPTH);
	switch (json_typeof(v)) {
	case JSON_OBJECT: return put_inline_table(W, v, depth);
	case JSON_ARRAY: return put_inline_array(W, v, depth);
	case JSON_STRING: return put_quoted(W, json_string_value(v), json_string_length(v));
	case JSON_INTEGER: return put_integer(W, json_integer_value(v));
	case JSON_REAL: return put_real(W, json_real_value(v));
	case JSON_TRUE: return put_str(W, "true");
	case JSON_FALSE: return put_str(W, "false");
	case JSON_NULL: break;
	}
	return fail(W, "null cannot be written in TOML");
}

/* "[a.b]" or "[[a.b]]" for the current path (array indices left out). */
static bool put_header(struct writer *W, bool array_of_tables)
{
	if (W->len)
		put_str(W, "\n");
	put_str(W, array_of_tables ? "[[" : "[");
	bool first = true;
	for (size_t i = 0; i < W->depth; i++) {
		if (W->path[i].is_index)
			continue;
		if (!first)
			put_str(W, ".");
		put_key(W, W->path[i].key, W->path[i].len);
		first = false;
	}
	return put_str(W, array_of_tables ? "]]\n" : "]\n");
}

static bool write_table(struct writer *W, const json_t *obj, size_t depth, int header);

enum { NO_HEADER, TABLE_HEADER, ARRAY_HEADER, HEADER_IF_NEEDED };

static bool write_array_of_tables(struct writer *W, const json_t *array, size_t depth)
{
	for (size_t i = 0; i < json_array_size(array) && !W->failed; i++) {
		if (!push_index(W, i))
			break;
		write_table(W, json_array_get(array, i), depth + 1, ARRAY_HEADER);
		pop_step(W);
	}
	return !W->failed;
}

static bool write_entries(struct writer *W, const struct entry *entries, size_t count, size_t depth)
{
	for (size_t i = 0; i < count && !W->failed; i++) {
		if (entries[i].section)
			continue;
		if (!push_key(W, entries[i].key, entries[i].len))
			break;
		put_key(W, entries[i].key, entries[i].len);
		put_str(W, " = ");
		put_inline(W, entries[i].value, depth + 1);
		put_str(W, "\n");
		pop_step(W);
	}
	return !W->failed;
}

static bool write_sections(struct writer *W, const struct entry *entries, size_t count, size_t depth)
{
	for (size_t i = 0; i < count && !W->failed; i++) {
		const json_t *v = entries[i].value;
		if (!entries[i].section)
			continue;
		/* An array of tables puts its tables one level below itself. */
		if (depth + (is_table(v) ? 1 : 2) > MAX_DEPTH)
			return fail(W, "tables nest more than %d levels deep", MAX_DEPTH);
		if (!push_key(W, entries[i].key, entries[i].len))
			break;
		if (is_table(v))
			write_table(W, v, depth + 1, HEADER_IF_NEEDED);
		else
			write_array_of_tables(W, v, depth + 1);
		pop_step(W);
	}
	return !W->failed;
}

/* A table at nesting level `depth`, with its header when `header` asks for
 * one; HEADER_IF_NEEDED leaves it out when sub-table headers imply it. */
static bool write_table(struct writer *W, const json_t *obj, size_t depth, int header)
{
	size_t count;
	struct entry *entries = sorted_entries(W, obj, &count);
	if (!entries)
		return false;
	size_t plain = 0;
	for (size_t i = 0; i < count; i++)
		plain += !entries[i].section;
	if (header == HEADER_IF_NEEDED)
		header = plain || count == 0 ? TABLE_HEADER : NO_HEADER;
	if (header != NO_HEADER)
		put_header(W, header == ARRAY_HEADER);
	write_entries(W, entries, count, depth);
	write_sections(W, entries, count, depth);
	free(entries);
	return !W->failed;
}

char *tt_toml_write(const json_t *doc, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	struct writer W = {.err = err, .errlen = errlen};
	if (!json_is_object(doc))
		fail(&W, "a TOML document must be a table (a JSON object)");
	else if (put(&W, "", 0))
		write_table(&W, doc, 0, NO_HEADER);
	free(W.path);
	if (W.c_locale)
		freelocale(W.c_locale);
	if (W.failed) {
		free(W.data);
		return NULL;
	}
	return W.data;
}
