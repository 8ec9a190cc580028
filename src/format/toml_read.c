/* TOML 1.0 reader: one pass over the document, building jansson values as it
 * goes.
 *
 * Errors are "NAME:LINE:COL: message". LINE and COL are 1-based; COL counts
 * Unicode characters (code points) from the start of the line, so a tab or an
 * "é" is one column each, which is what editors show.
 *
 * The rules about which tables may be extended are kept in a side table keyed
 * by the json_t pointer (see struct node), because jansson values cannot carry
 * flags of their own.
 *
 * Limits: containers may nest at most MAX_DEPTH levels (tables, arrays and
 * inline tables all count). jansson frees and our writer walks values
 * recursively, so an unbounded depth would let a small hostile document
 * overflow the stack. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "format/toml.h"
#include "util/hex.h"

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 256 };

/* ---- growable byte buffer ---- */

struct buf {
	char *data;
	size_t len, cap;
};

static bool buf_reserve(struct buf *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return true;
	size_t need = b->len + extra;
	if (need < b->len)
		return false;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	char *data = realloc(b->data, cap);
	if (!data)
		return false;
	b->data = data;
	b->cap = cap;
	return true;
}

static bool buf_append(struct buf *b, const char *s, size_t n)
{
	if (n == 0)
		return true;
	if (!buf_reserve(b, n))
		return false;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return true;
}

static bool buf_putc(struct buf *b, char c)
{
	return buf_append(b, &c, 1);
}

/* ---- what we know about each table and array ---- */

enum node_kind {
	KIND_IMPLICIT, /* made as a step of a [header] path; may get its own header later */
	KIND_HEADER,   /* defined by [header] or [[header]], or the root table */
	KIND_DOTTED,   /* defined by dotted keys; open to more dotted keys only in its section */
	KIND_FROZEN,   /* an inline table: nothing may be added to it, or below it */
	KIND_AOT,      /* an array made by [[header]]: later [[header]]s append to it */
};

struct node {
	const json_t *value; /* NULL marks a free slot */
	unsigned long section;
	unsigned char kind;
};

/* Open addressing on the pointer: parsing registers every table it makes, so
 * this has to stay O(1). */
struct node_map {
	struct node *slots;
	size_t cap, count;
};

static size_t node_slot(const struct node_map *m, const json_t *v)
{
	uint64_t x = (uint64_t)(uintptr_t)v;
	x ^= x >> 29;
	x *= 0x9E3779B97F4A7C15ull;
	x ^= x >> 32;
	return (size_t)x & (m->cap - 1);
}

static struct node *node_find(const struct node_map *m, const json_t *v)
{
	if (!m->cap)
		return NULL;
	for (size_t i = node_slot(m, v);; i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].value == v)
			return &m->slots[i];
		if (!m->slots[i].value)
			return NULL;
	}
}

static bool node_grow(struct node_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct node *slots = calloc(cap, sizeof *slots);
	if (!slots)
		return false;
	struct node_map bigger = {slots, cap, m->count};
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].value)
			continue;
		size_t j = node_slot(&bigger, m->slots[i].value);
		while (slots[j].value)
			j = (j + 1) & (cap - 1);
		slots[j] = m->slots[i];
	}
	free(m->slots);
	*m = bigger;
	return true;
}

static bool node_add(struct node_map *m, const json_t *v, enum node_kind kind, unsigned long section)
{
	if ((m->count + 1) * 2 > m->cap && !node_grow(m))
		return false;
	size_t i = node_slot(m, v);
	while (m->slots[i].value && m->slots[i].value != v)
		i = (i + 1) & (m->cap - 1);
	if (!m->slots[i].value)
		m->count++;
	m->slots[i] = (struct node){v, section, (unsigned char)kind};
	return true;
}

/* ---- where each key was written ---- */

/* One key of one table: the table is the json_t the document holds, so an
 * entry stays valid while the caller keeps the document. The offset is
 * turned into a line and column once the whole document is read. */
struct where_entry {
	const json_t *table;
	char *key;
	size_t keylen;
	size_t offset;
	size_t line, col;
};

struct tt_toml_where {
	struct where_entry *v;
	size_t n, cap;
	bool oom;
};

static void where_note(struct tt_toml_where *w, const json_t *table, const char *key, size_t keylen,
                       size_t offset)
{
	if (!w || w->oom)
		return;
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 32;
		struct where_entry *v = realloc(w->v, cap * sizeof *v);
		if (!v) {
			w->oom = true;
			return;
		}
		w->v = v;
		w->cap = cap;
	}
	char *copy = malloc(keylen + 1);
	if (!copy) {
		w->oom = true;
		return;
	}
	memcpy(copy, key, keylen);
	copy[keylen] = '\0';
	w->v[w->n++] = (struct where_entry){table, copy, keylen, offset, 0, 0};
}

/* Entries are noted in document order, so one forward pass finds every
 * line and column. */
static void where_resolve(struct tt_toml_where *w, const char *start, const char *end)
{
	const char *q = start, *line_start = start;
	size_t line = 1;
	for (size_t i = 0; i < w->n; i++) {
		const char *at = start + w->v[i].offset;
		if (at < q) { /* not in order: count again from the top */
			q = line_start = start;
			line = 1;
		}
		for (; q < at && q < end; q++) {
			if (*q == '\n') {
				line++;
				line_start = q + 1;
			}
		}
		size_t col = 1;
		for (const char *c = line_start; c < at; c++)
			if (((unsigned char)*c & 0xC0) != 0x80)
				col++;
		w->v[i].line = line;
		w->v[i].col = col;
	}
}

void tt_toml_where_free(struct tt_toml_where *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].key);
	free(w->v);
	free(w);
}

int tt_toml_where_key(const struct tt_toml_where *w, const json_t *table, const char *key, size_t *line,
                      size_t *col)
{
	*line = *col = 0;
	if (!w || !key)
		return 0;
	size_t len = strlen(key);
	for (size_t i = 0; i < w->n; i++) {
		const struct where_entry *e = &w->v[i];
		if (e->table == table && e->keylen == len && memcmp(e->key, key, len) == 0) {
			*line = e->line;
			*col = e->col;
			return 1;
		}
	}
	return 0;
}

void tt_toml_where_name(const struct tt_toml_where *w, const json_t *table, const char *key, const char *name,
                        char *out, size_t n)
{
	size_t line, col;
	if (tt_toml_where_key(w, table, key, &line, &col))
		snprintf(out, n, "%s:%zu:%zu", name, line, col);
	else
		snprintf(out, n, "%s", name);
}

/* ---- parser state and errors ---- */

struct parser {
	const char *start, *p, *end;
	const char *name;
	char *err;
	size_t errlen;
	bool failed;
	json_t *root;
	json_t *table;          /* where key/value lines go now */
	unsigned table_depth;   /* nesting level of `table` (root is 0) */
	unsigned long section;  /* id of the current [header] section */
	unsigned long sections; /* last id handed out, to headers and inline tables */
	struct node_map nodes;
	struct buf text; /* decoded string values */
	struct buf num;  /* a float's digits without underscores, for strtod */
	locale_t c_locale;
	struct tt_toml_where *where; /* NULL: positions not wanted */
};

static void location(const struct parser *P, const char *at, size_t *line, size_t *col)
{
	const char *line_start = P->start;
	*line = 1;
	for (const char *q = P->start; q < at; q++) {
		if (*q == '\n') {
			++*line;
			line_start = q + 1;
		}
	}
	*col = 1;
	for (const char *q = line_start; q < at; q++)
		if (((unsigned char)*q & 0xC0) != 0x80)
			++*col;
}

/* Records the first error only: later ones are consequences of it. Returns
 * false so callers can `return fail_at(...)`. */
__attribute__((format(printf, 3, 4)))
static bool fail_at(struct parser *P, const char *at, const char *fmt, ...)
{
	if (P->failed)
		return false;
	P->failed = true;
	if (!P->err || !P->errlen)
		return false;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	size_t line, col;
	location(P, at, &line, &col);
	snprintf(P->err, P->errlen, "%s:%zu:%zu: %s", P->name ? P->name : "<input>", line, col, msg);
	return false;
}

static bool fail_oom(struct parser *P)
{
	return fail_at(P, P->p, "out of memory");
}

static bool is_newline_at(const struct parser *P, const char *q)
{
	return q < P->end && (*q == '\n' || (*q == '\r' && q + 1 < P->end && q[1] == '\n'));
}

static bool is_control(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7F;
}

static size_t utf8_length(unsigned char lead)
{
	return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/* Names the character at `at` for "expected X, found Y" messages. */
static void describe_char(const struct parser *P, const char *at, char *out, size_t n)
{
	if (at >= P->end) {
		snprintf(out, n, "end of input");
	} else if (is_newline_at(P, at)) {
		snprintf(out, n, "newline");
	} else {
		unsigned char c = (unsigned char)*at;
		if (is_control(c))
			snprintf(out, n, "control character U+%04X", c);
		else if (c == '\t')
			snprintf(out, n, "tab");
		else
			snprintf(out, n, "'%.*s'", (int)utf8_length(c), at);
	}
}

static bool fail_expected_at(struct parser *P, const char *at, const char *expected)
{
	char found[32];
	describe_char(P, at, found, sizeof found);
	return fail_at(P, at, "expected %s, found %s", expected, found);
}

static bool fail_expected(struct parser *P, const char *expected)
{
	return fail_expected_at(P, P->p, expected);
}

/* A key made printable for a message: control bytes become '?', long keys are
 * cut at a character boundary. */
static void printable_key(const char *s, size_t len, char *out, size_t n)
{
	if (n < 8) {
		if (n)
			out[0] = '\0';
		return;
	}
	size_t o = 0, limit = n - 4;
	for (size_t i = 0; i < len;) {
		size_t step = utf8_length((unsigned char)s[i]);
		if (i + step > len)
			step = len - i;
		if (o + step > limit) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (step == 1 && is_control((unsigned char)s[i]))
			out[o] = '?';
		else
			memcpy(out + o, s + i, step);
		o += step;
		i += step;
	}
	out[o] = '\0';
}

/* ---- the document as a whole ---- */

/* Returns the first byte that does not start a well-formed UTF-8 sequence
 * (overlong forms, surrogates and values past U+10FFFF included), or NULL. */
static const char *find_invalid_utf8(const char *s, const char *end)
{
	const unsigned char *p = (const unsigned char *)s, *e = (const unsigned char *)end;
	while (p < e) {
		unsigned c = *p;
		if (c < 0x80) {
			p++;
			continue;
		}
		size_t n;
		uint32_t cp, min;
		if (c >= 0xC2 && c <= 0xDF) {
			n = 1, cp = c & 0x1F, min = 0x80;
		} else if ((c & 0xF0) == 0xE0) {
			n = 2, cp = c & 0x0F, min = 0x800;
		} else if (c >= 0xF0 && c <= 0xF4) {
			n = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return (const char *)p;
		}
		if ((size_t)(e - p) <= n)
			return (const char *)p;
		for (size_t i = 1; i <= n; i++) {
			if ((p[i] & 0xC0) != 0x80)
				return (const char *)p;
			cp = cp << 6 | (p[i] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return (const char *)p;
		p += n + 1;
	}
	return NULL;
}

static void skip_ws(struct parser *P)
{
	while (P->p < P->end && (*P->p == ' ' || *P->p == '\t'))
		P->p++;
}

/* At '#': runs to the end of the line. Comments may hold any character but
 * the controls (a CR only as part of CRLF). */
static bool skip_comment(struct parser *P)
{
	for (P->p++; P->p < P->end && *P->p != '\n'; P->p++) {
		unsigned char c = (unsigned char)*P->p;
		if (is_control(c) && !is_newline_at(P, P->p))
			return fail_at(P, P->p, "control character U+%04X is not allowed in a comment", c);
		if (c == '\r')
			break;
	}
	return true;
}

/* After a key/value or a header: optional whitespace and comment, then a
 * newline or the end of the document. */
static bool expect_line_end(struct parser *P)
{
	skip_ws(P);
	if (P->p < P->end && *P->p == '#' && !skip_comment(P))
		return false;
	if (P->p >= P->end)
		return true;
	if (is_newline_at(P, P->p)) {
		P->p += *P->p == '\r' ? 2 : 1;
		return true;
	}
	return fail_expected(P, "a newline");
}

/* Whitespace, newlines and comments: what may separate array elements. */
static bool skip_blank(struct parser *P)
{
	for (;;) {
		skip_ws(P);
		if (P->p >= P->end)
			return true;
		if (*P->p == '#') {
			if (!skip_comment(P))
				return false;
		} else if (is_newline_at(P, P->p)) {
			P->p += *P->p == '\r' ? 2 : 1;
		} else {
			return true;
		}
	}
}

/* ---- strings ---- */

static bool put_utf8(struct buf *b, uint32_t cp)
{
	char s[4];
	size_t n;
	if (cp < 0x80) {
		s[0] = (char)cp, n = 1;
	} else if (cp < 0x800) {
		s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
	} else if (cp < 0x10000) {
		s[0] = (char)(0xE0 | cp >> 12), s[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		s[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
	} else {
		s[0] = (char)(0xF0 | cp >> 18), s[1] = (char)(0x80 | (cp >> 12 & 0x3F));
		s[2] = (char)(0x80 | (cp >> 6 & 0x3F)), s[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
	}
	return buf_append(b, s, n);
}

/* \uXXXX or \UXXXXXXXX, at the backslash. Only Unicode scalar values may be
 * written this way: surrogates cannot be encoded in UTF-8 at all. */
static bool parse_unicode_escape(struct parser *P, struct buf *out)
{
	const char *at = P->p;
	size_t digits = at[1] == 'u' ? 4 : 8;
	uint32_t cp = 0;
	for (size_t i = 0; i < digits; i++) {
		const char *q = at + 2 + i;
		int h = q < P->end ? tt_hex_digit(*q) : -1;
		if (h < 0)
			return fail_at(P, at, "\\%c escape needs exactly %zu hex digits", at[1], digits);
		cp = cp << 4 | (uint32_t)h;
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return fail_at(P, at, "escape \\%.*s is not a Unicode scalar value", (int)digits + 1, at + 1);
	P->p = at + 2 + digits;
	return put_utf8(out, cp) || fail_oom(P);
}

/* At a backslash in a basic string (not a line-ending one). */
static bool parse_escape(struct parser *P, struct buf *out)
{
	const char *at = P->p;
	char c = at + 1 < P->end ? at[1] : '\0';
	char decoded;
	switch (c) {
	case 'b': decoded = '\b'; break;
	case 't': decoded = '\t'; break;
	case 'n': decoded = '\n'; break;
	case 'f': decoded = '\f'; break;
	case 'r': decoded = '\r'; break;
	case '"': decoded = '"'; break;
	case '\\': decoded = '\\'; break;
	case 'u':
	case 'U':
		return parse_unicode_escape(P, out);
	default: {
		char found[32];
		describe_char(P, at + 1, found, sizeof found);
		return fail_at(P, at, "invalid escape sequence: backslash followed by %s", found);
	}
	}
	P->p += 2;
	return buf_putc(out, decoded) || fail_oom(P);
}

/* Bytes that stand for themselves in a string: everything but the closing
 * quote, the backslash where it escapes, and the controls (tab is allowed). */
static bool is_string_text(unsigned char c, char quote, bool escapes)
{
	return c != (unsigned char)quote && !(escapes && c == '\\') && !is_control(c);
}

static bool fail_string_control(struct parser *P)
{
	return fail_at(P, P->p, "control character U+%04X is not allowed in a string",
	               (unsigned char)*P->p);
}

/* "...": appends the decoded text to out. */
static bool parse_basic_string(struct parser *P, struct buf *out)
{
	const char *open = P->p++;
	for (;;) {
		const char *run = P->p;
		while (P->p < P->end && is_string_text((unsigned char)*P->p, '"', true))
			P->p++;
		if (!buf_append(out, run, (size_t)(P->p - run)))
			return fail_oom(P);
		if (P->p >= P->end || is_newline_at(P, P->p))
			return fail_at(P, open, "unterminated string (a \"...\" string ends on its line)");
		if (*P->p == '"') {
			P->p++;
			return true;
		}
		if (*P->p != '\\')
			return fail_string_control(P);
		if (!parse_escape(P, out))
			return false;
	}
}

/* '...': no escapes, so the text is the source bytes themselves. */
static bool parse_literal_string(struct parser *P, const char **text, size_t *len)
{
	const char *open = P->p++;
	*text = P->p;
	while (P->p < P->end && is_string_text((unsigned char)*P->p, '\'', false))
		P->p++;
	if (P->p >= P->end || is_newline_at(P, P->p))
		return fail_at(P, open, "unterminated string (a '...' string ends on its line)");
	if (*P->p != '\'')
		return fail_string_control(P);
	*len = (size_t)(P->p - *text);
	P->p++;
	return true;
}

/* A newline right after the opening delimiter is not part of the string. */
static void skip_first_newline(struct parser *P)
{
	if (is_newline_at(P, P->p))
		P->p += *P->p == '\r' ? 2 : 1;
}

/* At a run of quote characters inside a multi-line string. Up to two quotes
 * may stand next to the closing three, so a run of 3 to 5 closes the string
 * (*closed is set) and gives its first n-3 quotes to the text. */
static bool take_quote_run(struct parser *P, struct buf *out, char quote, bool *closed)
{
	size_t n = 0;
	while (P->p + n < P->end && P->p[n] == quote && n < 6)
		n++;
	if (n == 6)
		return fail_at(P, P->p + 5, "too many quotes: at most two may precede the closing %c%c%c",
		               quote, quote, quote);
	*closed = n >= 3;
	size_t keep = *closed ? n - 3 : n;
	P->p += n;
	return buf_append(out, P->p - n, keep) || fail_oom(P);
}

/* Multi-line strings keep their newlines; a CRLF is stored as LF so the value
 * does not depend on the platform that wrote the file. */
static bool take_newline(struct parser *P, struct buf *out)
{
	P->p += *P->p == '\r' ? 2 : 1;
	return buf_putc(out, '\n') || fail_oom(P);
}

/* A backslash that ends a line (possibly with whitespace between) swallows
 * all whitespace and newlines up to the next visible character. */
static bool is_line_ending_backslash(const struct parser *P)
{
	const char *q = P->p + 1;
	while (q < P->end && (*q == ' ' || *q == '\t'))
		q++;
	return is_newline_at(P, q);
}

static void skip_line_ending_backslash(struct parser *P)
{
	P->p++;
	for (;;) {
		if (P->p < P->end && (*P->p == ' ' || *P->p == '\t'))
			P->p++;
		else if (is_newline_at(P, P->p))
			P->p += *P->p == '\r' ? 2 : 1;
		else
			return;
	}
}

static bool parse_ml_string(struct parser *P, struct buf *out, char quote)
{
	const char *open = P->p;
	bool escapes = quote == '"';
	P->p += 3;
	skip_first_newline(P);
	for (;;) {
		const char *run = P->p;
		while (P->p < P->end && is_string_text((unsigned char)*P->p, quote, escapes))
			P->p++;
		if (!buf_append(out, run, (size_t)(P->p - run)))
			return fail_oom(P);
		if (P->p >= P->end)
			return fail_at(P, open, "unterminated multi-line string");
		char c = *P->p;
		bool closed = false;
		if (c == quote) {
			if (!take_quote_run(P, out, quote, &closed))
				return false;
			if (closed)
				return true;
		} else if (is_newline_at(P, P->p)) {
			if (!take_newline(P, out))
				return false;
		} else if (c == '\\' && escapes) {
			if (is_line_ending_backslash(P))
				skip_line_ending_backslash(P);
			else if (!parse_escape(P, out))
				return false;
		} else {
			return fail_string_control(P);
		}
	}
}

static json_t *make_string(struct parser *P, const char *s, size_t len)
{
	/* The document was checked to be UTF-8 and escapes only produce scalar
	 * values, so jansson's own check would be redundant. */
	json_t *v = json_stringn_nocheck(len ? s : "", len);
	if (!v)
		fail_oom(P);
	return v;
}

static json_t *parse_string_value(struct parser *P)
{
	char quote = *P->p;
	bool multi = P->end - P->p >= 3 && P->p[1] == quote && P->p[2] == quote;
	P->text.len = 0;
	if (quote == '\'' && !multi) {
		const char *s;
		size_t len;
		return parse_literal_string(P, &s, &len) ? make_string(P, s, len) : NULL;
	}
	bool ok = multi ? parse_ml_string(P, &P->text, quote) : parse_basic_string(P, &P->text);
	return ok ? make_string(P, P->text.data, P->text.len) : NULL;
}

/* ---- numbers ---- */

static bool is_number_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '_' || c == '.' || c == '+' || c == '-';
}

static int digit_value(char c, int radix)
{
	int v = tt_hex_digit(c);
	return v >= 0 && v < radix ? v : -1;
}

/* digit *( ['_'] digit ): an underscore must sit between two digits. */
static const char *scan_digits(struct parser *P, const char *q, const char *end, int radix)
{
	if (q >= end || digit_value(*q, radix) < 0) {
		if (q < end && *q == '_')
			fail_at(P, q, "an underscore in a number must be between two digits");
		else
			fail_expected_at(P, q, "a digit");
		return NULL;
	}
	while (q < end) {
		if (digit_value(*q, radix) >= 0) {
			q++;
		} else if (*q == '_') {
			if (q + 1 >= end || digit_value(q[1], radix) < 0) {
				fail_at(P, q, "an underscore in a number must be between two digits");
				return NULL;
			}
			q += 2;
		} else {
			break;
		}
	}
	return q;
}

/* Digits (and underscores) to a value, refusing anything past `limit`. */
static bool accumulate(const char *q, const char *end, int radix, uint64_t limit, uint64_t *out)
{
	uint64_t v = 0;
	for (; q < end; q++) {
		if (*q == '_')
			continue;
		uint64_t d = (uint64_t)digit_value(*q, radix);
		if (v > (limit - d) / (uint64_t)radix)
			return false;
		v = v * (uint64_t)radix + d;
	}
	*out = v;
	return true;
}

static json_t *make_integer(struct parser *P, json_int_t v)
{
	json_t *j = json_integer(v);
	if (!j)
		fail_oom(P);
	return j;
}

/* 0x / 0o / 0b: never signed, leading zeros allowed after the prefix. */
static json_t *parse_prefixed_integer(struct parser *P, const char *s, const char *end)
{
	int radix = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
	const char *q = scan_digits(P, s + 2, end, radix);
	if (!q)
		return NULL;
	if (q != end) {
		fail_at(P, q, "invalid digit in a base-%d integer", radix);
		return NULL;
	}
	uint64_t v;
	if (!accumulate(s + 2, end, radix, INT64_MAX, &v)) {
		fail_at(P, s, "integer does not fit in 64 bits");
		return NULL;
	}
	return make_integer(P, (json_int_t)v);
}

static json_t *make_tagged(struct parser *P, const char *tag, const char *text, size_t len)
{
	json_t *obj = json_object();
	json_t *str = json_stringn_nocheck(text, len);
	if (!obj || !str || json_object_set_new_nocheck(obj, tag, str)) {
		if (!obj)
			json_decref(str);
		json_decref(obj);
		fail_oom(P);
		return NULL;
	}
	return obj;
}

/* strtod reads the decimal point of the current locale; TOML's is always
 * '.', so convert under the C locale (per thread, leaving the caller's alone). */
static bool decimal_to_double(struct parser *P, const char *digits, double *out)
{
	*out = 0.0;
	if (!P->c_locale) {
		P->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
		if (!P->c_locale)
			return fail_oom(P);
	}
	locale_t saved = uselocale(P->c_locale);
	errno = 0;
	char *stop;
	*out = strtod(digits, &stop);
	int error = errno;
	uselocale(saved);
	/* Underflow rounds to a tiny or zero value, which is the nearest double;
	 * overflow would silently become infinity, so it is refused. */
	return !(error == ERANGE && (*out > 1.0 || *out < -1.0));
}

static json_t *make_float(struct parser *P, const char *s, const char *end)
{
	P->num.len = 0;
	for (const char *q = s; q < end; q++)
		if (*q != '_' && !buf_putc(&P->num, *q))
			return fail_oom(P), NULL;
	if (!buf_putc(&P->num, '\0'))
		return fail_oom(P), NULL;
	double d;
	if (!decimal_to_double(P, P->num.data, &d)) {
		if (!P->failed)
			fail_at(P, s, "float is out of range");
		return NULL;
	}
	json_t *j = json_real(d);
	if (!j)
		fail_oom(P);
	return j;
}

static json_t *parse_decimal(struct parser *P, const char *s, const char *end)
{
	bool negative = *s == '-';
	const char *q = s + (*s == '+' || *s == '-');
	const char *int_start = q;
	if (!(q = scan_digits(P, q, end, 10)))
		return NULL;
	if (*int_start == '0' && q - int_start > 1) {
		fail_at(P, int_start, "leading zeros are not allowed");
		return NULL;
	}
	bool is_float = false;
	if (q < end && *q == '.') {
		is_float = true;
		if (!(q = scan_digits(P, q + 1, end, 10)))
			return NULL;
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		is_float = true;
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			q++;
		if (!(q = scan_digits(P, q, end, 10)))
			return NULL;
	}
	if (q != end) {
		fail_at(P, q, "invalid character in a number");
		return NULL;
	}
	if (is_float)
		return make_float(P, s, end);
	uint64_t magnitude;
	if (!accumulate(int_start, end, 10, negative ? (uint64_t)INT64_MAX + 1 : INT64_MAX, &magnitude)) {
		fail_at(P, s, "integer does not fit in 64 bits");
		return NULL;
	}
	if (negative && magnitude == (uint64_t)INT64_MAX + 1)
		return make_integer(P, INT64_MIN);
	return make_integer(P, negative ? -(json_int_t)magnitude : (json_int_t)magnitude);
}

/* Integers, floats, inf and nan: the whole run of characters that could
 * belong to a number is taken first, then checked against the grammar, so
 * "1.2.3" or "0x_1" fail as a whole. */
static json_t *parse_number(struct parser *P)
{
	const char *s = P->p, *end = s;
	while (end < P->end && is_number_char(*end))
		end++;
	P->p = end;
	const char *body = s + (*s == '+' || *s == '-');
	size_t body_len = (size_t)(end - body);
	if (body_len == 3 && (memcmp(body, "inf", 3) == 0 || memcmp(body, "nan", 3) == 0)) {
		if (body[0] == 'n')
			return make_tagged(P, "$float", "nan", 3);
		return *s == '-' ? make_tagged(P, "$float", "-inf", 4) : make_tagged(P, "$float", "inf", 3);
	}
	if (body == s && body_len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b'))
		return parse_prefixed_integer(P, s, end);
	if (body < end && (*body < '0' || *body > '9')) {
		fail_at(P, s, "invalid value");
		return NULL;
	}
	return parse_decimal(P, s, end);
}

/* ---- dates and times ---- */

static bool digits_at(const struct parser *P, const char *q, size_t n)
{
	if ((size_t)(P->end - q) < n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (q[i] < '0' || q[i] > '9')
			return false;
	return true;
}

static int two_digits(const char *q)
{
	return (q[0] - '0') * 10 + (q[1] - '0');
}

static bool looks_like_date(const struct parser *P, const char *q)
{
	return digits_at(P, q, 4) && P->end - q > 4 && q[4] == '-';
}

static bool looks_like_time(const struct parser *P, const char *q)
{
	return digits_at(P, q, 2) && P->end - q > 2 && q[2] == ':';
}

static int days_in_month(int year, int month)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
	return month == 2 && leap ? 29 : days[month - 1];
}

/* YYYY-MM-DD at q; sets *end past it. */
static bool scan_date(struct parser *P, const char *q, const char **end)
{
	if (P->end - q < 10 || !digits_at(P, q, 4) || q[4] != '-' || !digits_at(P, q + 5, 2) ||
	    q[7] != '-' || !digits_at(P, q + 8, 2))
		return fail_at(P, q, "invalid date: expected YYYY-MM-DD");
	int year = (q[0] - '0') * 1000 + (q[1] - '0') * 100 + two_digits(q + 2);
	int month = two_digits(q + 5), day = two_digits(q + 8);
	if (month < 1 || month > 12)
		return fail_at(P, q + 5, "invalid date: month %02d is out of range", month);
	if (day < 1 || day > days_in_month(year, month))
		return fail_at(P, q + 8, "invalid date: day %02d is out of range for %04d-%02d", day, year,
		               month);
	*end = q + 10;
	return true;
}

/* HH:MM:SS[.fraction] at q. Seconds are required in TOML 1.0; 60 is allowed
 * for a leap second, as RFC 3339 does. */
static bool scan_time(struct parser *P, const char *q, const char **end)
{
	if (P->end - q < 8 || !digits_at(P, q, 2) || q[2] != ':' || !digits_at(P, q + 3, 2) ||
	    q[5] != ':' || !digits_at(P, q + 6, 2))
		return fail_at(P, q, "invalid time: expected HH:MM:SS");
	if (two_digits(q) > 23)
		return fail_at(P, q, "invalid time: hour %02d is out of range", two_digits(q));
	if (two_digits(q + 3) > 59)
		return fail_at(P, q + 3, "invalid time: minute %02d is out of range", two_digits(q + 3));
	if (two_digits(q + 6) > 60)
		return fail_at(P, q + 6, "invalid time: second %02d is out of range", two_digits(q + 6));
	q += 8;
	if (q < P->end && *q == '.') {
		if (!digits_at(P, q + 1, 1))
			return fail_at(P, q, "invalid time: expected digits after '.'");
		q++;
		while (q < P->end && *q >= '0' && *q <= '9')
			q++;
	}
	*end = q;
	return true;
}

/* Z or +HH:MM / -HH:MM at q. */
static bool scan_offset(struct parser *P, const char *q, const char **end)
{
	if (*q == 'Z' || *q == 'z') {
		*end = q + 1;
		return true;
	}
	if (P->end - q < 6 || !digits_at(P, q + 1, 2) || q[3] != ':' || !digits_at(P, q + 4, 2))
		return fail_at(P, q, "invalid time offset: expected Z, +HH:MM or -HH:MM");
	if (two_digits(q + 1) > 23)
		return fail_at(P, q + 1, "invalid time offset: hour %02d is out of range", two_digits(q + 1));
	if (two_digits(q + 4) > 59)
		return fail_at(P, q + 4, "invalid time offset: minute %02d is out of range",
		               two_digits(q + 4));
	*end = q + 6;
	return true;
}

/* The date/time separator: T, t, or a space when a time follows it. */
static bool has_time_after_date(const struct parser *P, const char *q)
{
	if (q >= P->end)
		return false;
	if (*q == 'T' || *q == 't')
		return true;
	return *q == ' ' && looks_like_time(P, q + 1);
}

/* The text is kept as written, except that the separator becomes 'T' and a
 * 'z' becomes 'Z', so equal values have one spelling. */
static json_t *make_datetime(struct parser *P, const char *tag, const char *s, const char *end,
                             bool has_date, bool has_time)
{
	size_t len = (size_t)(end - s);
	P->text.len = 0;
	if (!buf_append(&P->text, s, len))
		return fail_oom(P), NULL;
	if (has_date && has_time)
		P->text.data[10] = 'T';
	if (P->text.data[len - 1] == 'z')
		P->text.data[len - 1] = 'Z';
	return make_tagged(P, tag, P->text.data, len);
}

static json_t *parse_datetime(struct parser *P)
{
	const char *s = P->p, *q = s;
	bool has_date = looks_like_date(P, s), has_time = !has_date, has_offset = false;
	if (has_date) {
		if (!scan_date(P, s, &q))
			return NULL;
		if (has_time_after_date(P, q)) {
			has_time = true;
			if (!scan_time(P, q + 1, &q))
				return NULL;
			if (q < P->end && (*q == 'Z' || *q == 'z' || *q == '+' || *q == '-')) {
				has_offset = true;
				if (!scan_offset(P, q, &q))
					return NULL;
			}
		}
	} else if (!scan_time(P, s, &q)) {
		return NULL;
	}
	P->p = q;
	const char *tag = has_offset ? "$datetime"
	                  : has_date && has_time ? "$datetime-local"
	                  : has_date ? "$date-local"
	                             : "$time-local";
	return make_datetime(P, tag, s, q, has_date, has_time);
}

/* ---- keys ---- */

/* One part of a dotted key. Bare and literal keys point into the document;
 * basic-quoted ones are decoded into the key's own buffer (src is NULL). */
struct key_part {
	const char *src;
	size_t off, len;
	const char *at;
};

struct key_path {
	struct key_part small[8];
	struct key_part *parts;
	size_t count, cap;
	struct buf decoded;
};

static void key_init(struct key_path *k)
{
	k->parts = k->small;
	k->count = 0;
	k->cap = sizeof k->small / sizeof k->small[0];
	k->decoded = (struct buf){0};
}

static void key_free(struct key_path *k)
{
	if (k->parts != k->small)
		free(k->parts);
	free(k->decoded.data);
}

static const char *key_bytes(const struct key_path *k, size_t i)
{
	const struct key_part *part = &k->parts[i];
	if (part->src)
		return part->src;
	return k->decoded.data ? k->decoded.data + part->off : "";
}

static bool key_push(struct parser *P, struct key_path *k, struct key_part part)
{
	if (k->count == k->cap) {
		size_t cap = k->cap * 2;
		struct key_part *parts = malloc(cap * sizeof *parts);
		if (!parts)
			return fail_oom(P);
		memcpy(parts, k->parts, k->count * sizeof *parts);
		if (k->parts != k->small)
			free(k->parts);
		k->parts = parts;
		k->cap = cap;
	}
	k->parts[k->count++] = part;
	return true;
}

static bool is_bare_key_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-';
}

static bool parse_simple_key(struct parser *P, struct key_path *k)
{
	const char *at = P->p;
	struct key_part part = {NULL, 0, 0, at};
	if (at < P->end && *at == '"') {
		part.off = k->decoded.len;
		if (!parse_basic_string(P, &k->decoded))
			return false;
		part.len = k->decoded.len - part.off;
	} else if (at < P->end && *at == '\'') {
		if (!parse_literal_string(P, &part.src, &part.len))
			return false;
	} else {
		while (P->p < P->end && is_bare_key_char(*P->p))
			P->p++;
		if (P->p == at)
			return fail_expected(P, "a key");
		part.src = at;
		part.len = (size_t)(P->p - at);
	}
	return key_push(P, k, part);
}

/* simple-key *( ws '.' ws simple-key ), and the whitespace after it. */
static bool parse_key(struct parser *P, struct key_path *k)
{
	for (;;) {
		if (!parse_simple_key(P, k))
			return false;
		skip_ws(P);
		if (P->p >= P->end || *P->p != '.')
			return true;
		P->p++;
		skip_ws(P);
	}
}

/* "a.b.c" for messages, up to part `last`. */
static void describe_key(const struct key_path *k, size_t last, char *out, size_t n)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i <= last && o + 8 < n; i++) {
		if (i) {
			out[o++] = '.';
			out[o] = '\0';
		}
		printable_key(key_bytes(k, i), k->parts[i].len, out + o, n - o);
		o += strlen(out + o);
	}
}

/* ---- tables ---- */

static json_t *new_container(struct parser *P, json_t *parent, const struct key_path *k, size_t i,
                             json_t *child, enum node_kind kind, unsigned depth,
                             unsigned long section)
{
	if (!child) {
		fail_oom(P);
		return NULL;
	}
	if (depth > MAX_DEPTH) {
		json_decref(child);
		fail_at(P, k->parts[i].at, "tables nest more than %d levels deep", MAX_DEPTH);
		return NULL;
	}
	if (!node_add(&P->nodes, child, kind, section)) {
		json_decref(child);
		fail_oom(P);
		return NULL;
	}
	if (json_object_setn_new_nocheck(parent, key_bytes(k, i), k->parts[i].len, child)) {
		fail_oom(P);
		return NULL;
	}
	where_note(P->where, parent, key_bytes(k, i), k->parts[i].len, (size_t)(k->parts[i].at - P->start));
	return child;
}

/* Why `existing` cannot be used as the table a key or header names. */
static bool fail_not_extensible(struct parser *P, const struct key_path *k, size_t i,
                                const json_t *existing, const char *how)
{
	char name[128];
	describe_key(k, i, name, sizeof name);
	const struct node *node = node_find(&P->nodes, existing);
	const char *at = k->parts[i].at;
	if (json_is_object(existing) && (!node || node->kind == KIND_FROZEN))
		return fail_at(P, at, "'%s' is an inline table, which cannot be extended", name);
	if (json_is_object(existing))
		return fail_at(P, at, "table '%s' is already defined and cannot be extended %s", name, how);
	if (json_is_array(existing) && node && node->kind == KIND_AOT)
		return fail_at(P, at, "'%s' is an array of tables and cannot be extended %s", name, how);
	if (json_is_array(existing))
		return fail_at(P, at, "'%s' is an array, which cannot be extended", name);
	return fail_at(P, at, "key '%s' already holds a value", name);
}

/* Walks the dotted part of a key/value line ("a.b" of a.b.c = 1) down from
 * `table`, making tables as needed. Dotted keys may only pass through tables
 * that dotted keys of this same section made, or that headers merely implied:
 * a table defined by a [header] or inline is closed to them. */
static json_t *walk_dotted(struct parser *P, const struct key_path *k, json_t *table,
                           unsigned *depth, unsigned long section)
{
	for (size_t i = 0; i + 1 < k->count; i++) {
		json_t *child = json_object_getn(table, key_bytes(k, i), k->parts[i].len);
		++*depth;
		if (!child) {
			child = new_container(P, table, k, i, json_object(), KIND_DOTTED, *depth, section);
			if (!child)
				return NULL;
		} else {
			struct node *node = json_is_object(child) ? node_find(&P->nodes, child) : NULL;
			bool open = node && ((node->kind == KIND_DOTTED && node->section == section) ||
			                     node->kind == KIND_IMPLICIT);
			if (!open) {
				fail_not_extensible(P, k, i, child, "with dotted keys");
				return NULL;
			}
			node->kind = KIND_DOTTED;
			node->section = section;
		}
		table = child;
	}
	return table;
}

static json_t *parse_value(struct parser *P, unsigned depth);

/* key = value, into `table` (which is at nesting level `depth`). */
static bool parse_keyval(struct parser *P, json_t *table, unsigned depth, unsigned long section)
{
	struct key_path k;
	key_init(&k);
	bool ok = false;
	if (!parse_key(P, &k))
		goto out;
	if (P->p >= P->end || *P->p != '=') {
		fail_expected(P, "'=' after the key");
		goto out;
	}
	P->p++;
	skip_ws(P);
	json_t *target = walk_dotted(P, &k, table, &depth, section);
	if (!target)
		goto out;
	size_t last = k.count - 1;
	const char *name = key_bytes(&k, last);
	if (json_object_getn(target, name, k.parts[last].len)) {
		char shown[128];
		describe_key(&k, last, shown, sizeof shown);
		fail_at(P, k.parts[last].at, "duplicate key '%s'", shown);
		goto out;
	}
	json_t *value = parse_value(P, depth + 1);
	if (!value)
		goto out;
	if (json_object_setn_new_nocheck(target, name, k.parts[last].len, value)) {
		fail_oom(P);
		goto out;
	}
	where_note(P->where, target, name, k.parts[last].len, (size_t)(k.parts[last].at - P->start));
	ok = true;
out:
	key_free(&k);
	return ok;
}

/* The last part of a [header]: a missing table is made; one that only earlier
 * headers implied becomes defined; anything else is a second definition. */
static json_t *define_table(struct parser *P, const struct key_path *k, json_t *parent, unsigned depth)
{
	size_t last = k->count - 1;
	json_t *child = json_object_getn(parent, key_bytes(k, last), k->parts[last].len);
	if (!child)
		return new_container(P, parent, k, last, json_object(), KIND_HEADER, depth, 0);
	struct node *node = json_is_object(child) ? node_find(&P->nodes, child) : NULL;
	if (node && node->kind == KIND_IMPLICIT) {
		node->kind = KIND_HEADER;
		return child;
	}
	if (json_is_object(child) && node && node->kind != KIND_FROZEN) {
		char name[128];
		describe_key(k, last, name, sizeof name);
		fail_at(P, k->parts[last].at, "table '%s' is defined twice", name);
		return NULL;
	}
	fail_not_extensible(P, k, last, child, "by a header");
	return NULL;
}

/* The last part of a [[header]]: appends a table to the array it names. */
static json_t *append_table(struct parser *P, const struct key_path *k, json_t *parent, unsigned depth)
{
	size_t last = k->count - 1;
	json_t *array = json_object_getn(parent, key_bytes(k, last), k->parts[last].len);
	if (!array) {
		array = new_container(P, parent, k, last, json_array(), KIND_AOT, depth, 0);
		if (!array)
			return NULL;
	} else {
		const struct node *node = json_is_array(array) ? node_find(&P->nodes, array) : NULL;
		if (!node || node->kind != KIND_AOT) {
			char name[128];
			describe_key(k, last, name, sizeof name);
			fail_at(P, k->parts[last].at, "'%s' is already defined and is not an array of tables",
			        name);
			return NULL;
		}
	}
	if (depth + 1 > MAX_DEPTH) {
		fail_at(P, k->parts[last].at, "tables nest more than %d levels deep", MAX_DEPTH);
		return NULL;
	}
	json_t *table = json_object();
	if (!table || json_array_append_new(array, table) || !node_add(&P->nodes, table, KIND_HEADER, 0)) {
		fail_oom(P);
		return NULL;
	}
	return table;
}

/* Walks a header's path from the root. Headers may pass through any table
 * but an inline one; through an array of tables they go to its last element. */
static json_t *walk_header(struct parser *P, const struct key_path *k, unsigned *depth)
{
	json_t *table = P->root;
	*depth = 0;
	for (size_t i = 0; i + 1 < k->count; i++) {
		json_t *child = json_object_getn(table, key_bytes(k, i), k->parts[i].len);
		++*depth;
		if (!child) {
			child = new_container(P, table, k, i, json_object(), KIND_IMPLICIT, *depth, 0);
			if (!child)
				return NULL;
		} else {
			const struct node *node = node_find(&P->nodes, child);
			if (node && json_is_array(child) && node->kind == KIND_AOT) {
				child = json_array_get(child, json_array_size(child) - 1);
				++*depth;
			} else if (!node || !json_is_object(child) || node->kind == KIND_FROZEN) {
				fail_not_extensible(P, k, i, child, "by a header");
				return NULL;
			}
		}
		table = child;
	}
	return table;
}

static bool expect_header_close(struct parser *P, bool array_of_tables)
{
	if (P->p < P->end && *P->p == ']' &&
	    (!array_of_tables || (P->p + 1 < P->end && P->p[1] == ']'))) {
		P->p += array_of_tables ? 2 : 1;
		return true;
	}
	return fail_expected(P, array_of_tables ? "']]' to close the header" : "']' to close the header");
}

/* [a.b] or [[a.b]]: makes it the table later key/values go to. */
static bool parse_header(struct parser *P)
{
	P->p++;
	bool array_of_tables = P->p < P->end && *P->p == '[';
	if (array_of_tables)
		P->p++;
	skip_ws(P);
	struct key_path k;
	key_init(&k);
	json_t *table = NULL;
	unsigned depth;
	if (parse_key(P, &k) && expect_header_close(P, array_of_tables)) {
		json_t *parent = walk_header(P, &k, &depth);
		if (parent && array_of_tables) {
			table = append_table(P, &k, parent, depth + 1);
			depth += 2;
		} else if (parent) {
			table = define_table(P, &k, parent, depth + 1);
			depth += 1;
		}
	}
	key_free(&k);
	if (!table)
		return false;
	P->table = table;
	P->table_depth = depth;
	P->section = ++P->sections;
	return expect_line_end(P);
}

/* ---- arrays and inline tables ---- */

static json_t *parse_array(struct parser *P, unsigned depth)
{
	json_t *array = json_array();
	if (!array)
		return fail_oom(P), NULL;
	P->p++;
	for (;;) {
		if (!skip_blank(P))
			break;
		if (P->p < P->end && *P->p == ']') {
			P->p++;
			return array;
		}
		json_t *value = parse_value(P, depth + 1);
		if (!value)
			break;
		if (json_array_append_new(array, value)) {
			fail_oom(P);
			break;
		}
		if (!skip_blank(P))
			break;
		if (P->p < P->end && *P->p == ',') {
			P->p++;
		} else if (P->p >= P->end || *P->p != ']') {
			fail_expected(P, "',' or ']' in the array");
			break;
		}
	}
	json_decref(array);
	return NULL;
}

/* { k = v, ... } on one line (values inside may still span lines), no
 * trailing comma. It gets a section of its own so its dotted keys can build
 * on each other, and is frozen once closed. */
static json_t *parse_inline_table(struct parser *P, unsigned depth)
{
	json_t *table = json_object();
	if (!table)
		return fail_oom(P), NULL;
	unsigned long section = ++P->sections;
	P->p++;
	skip_ws(P);
	if (P->p < P->end && *P->p == '}') {
		P->p++;
	} else {
		for (;;) {
			if (!parse_keyval(P, table, depth, section))
				goto fail;
			skip_ws(P);
			if (P->p < P->end && *P->p == '}') {
				P->p++;
				break;
			}
			if (P->p >= P->end || *P->p != ',') {
				fail_expected(P, "',' or '}' in the inline table");
				goto fail;
			}
			P->p++;
			skip_ws(P);
			if (P->p < P->end && *P->p == '}') {
				fail_at(P, P->p, "a trailing comma is not allowed in an inline table");
				goto fail;
			}
		}
	}
	if (!node_add(&P->nodes, table, KIND_FROZEN, section)) {
		fail_oom(P);
		goto fail;
	}
	return table;
fail:
	json_decref(table);
	return NULL;
}

static json_t *parse_bool(struct parser *P)
{
	bool value = *P->p == 't';
	const char *word = value ? "true" : "false";
	size_t len = strlen(word);
	if ((size_t)(P->end - P->p) < len || memcmp(P->p, word, len) != 0) {
		fail_at(P, P->p, "invalid value (booleans are 'true' and 'false')");
		return NULL;
	}
	P->p += len;
	return json_boolean(value);
}

/* A value of nesting level `depth`. What follows it is the caller's to check. */
static json_t *parse_value(struct parser *P, unsigned depth)
{
	if (P->p >= P->end)
		return fail_expected(P, "a value"), NULL;
	char c = *P->p;
	if ((c == '[' || c == '{') && depth > MAX_DEPTH) {
		fail_at(P, P->p, "values nest more than %d levels deep", MAX_DEPTH);
		return NULL;
	}
	switch (c) {
	case '"':
	case '\'':
		return parse_string_value(P);
	case '[':
		return parse_array(P, depth);
	case '{':
		return parse_inline_table(P, depth);
	case 't':
	case 'f':
		return parse_bool(P);
	default:
		break;
	}
	if (looks_like_date(P, P->p) || looks_like_time(P, P->p))
		return parse_datetime(P);
	if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'i' || c == 'n')
		return parse_number(P);
	fail_expected(P, "a value");
	return NULL;
}

/* ---- entry point ---- */

static void parse_document(struct parser *P)
{
	while (P->p < P->end) {
		skip_ws(P);
		if (P->p >= P->end)
			return;
		char c = *P->p;
		bool ok;
		if (c == '#' || c == '\n' || c == '\r')
			ok = expect_line_end(P);
		else if (c == '[')
			ok = parse_header(P);
		else
			ok = parse_keyval(P, P->table, P->table_depth, P->section) && expect_line_end(P);
		if (!ok)
			return;
	}
}

json_t *tt_toml_parse(const char *buf, size_t len, const char *name, char *err, size_t errlen)
{
	return tt_toml_parse_at(buf, len, name, err, errlen, NULL);
}

/* The first line (1-based) that opens with a merge-conflict marker, as
 * git writes them (<<<<<<<, |||||||, =======, >>>>>>>) and jj (%%%%%%%,
 * +++++++ besides; jj makes them longer when the text holds such a run),
 * seven or more of one character then a space or the line's end; 0 when
 * none does. Asked only of a file that did not parse. */
static size_t conflict_marker_line(const char *p, const char *end)
{
	size_t line = 1;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *stop = eol ? eol : end;
		if (stop - p >= 7 && *p && strchr("<|=>%+", *p)) {
			const char *q = p + 1;
			while (q < stop && *q == *p)
				q++;
			if (q - p >= 7 && (q == stop || *q == ' ' || *q == '\r'))
				return line;
		}
		if (!eol)
			break;
		p = eol + 1;
		line++;
	}
	return 0;
}

json_t *tt_toml_parse_at(const char *buf, size_t len, const char *name, char *err, size_t errlen,
                         struct tt_toml_where **where)
{
	if (where)
		*where = NULL;
	if (err && errlen)
		err[0] = '\0';
	struct parser P = {0};
	if (where && !(P.where = calloc(1, sizeof *P.where))) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", name ? name : "<input>");
		return NULL;
	}
	P.start = buf && len ? buf : "";
	P.end = P.start + (buf ? len : 0);
	if (P.end - P.start >= 3 && memcmp(P.start, "\xEF\xBB\xBF", 3) == 0)
		P.start += 3;
	P.p = P.start;
	P.name = name;
	P.err = err;
	P.errlen = errlen;

	const char *bad = find_invalid_utf8(P.start, P.end);
	if (bad) {
		fail_at(&P, bad, "invalid UTF-8");
		tt_toml_where_free(P.where);
		return NULL;
	}
	P.root = json_object();
	if (!P.root || !node_add(&P.nodes, P.root, KIND_HEADER, 0))
		fail_oom(&P);
	P.table = P.root;
	if (!P.failed)
		parse_document(&P);

	free(P.nodes.slots);
	free(P.text.data);
	free(P.num.data);
	if (P.c_locale)
		freelocale(P.c_locale);
	if (!P.failed && P.where && P.where->oom)
		fail_oom(&P);
	if (P.failed) {
		/* A merge left both sides in the file: say so, not what the parser
		 * tripped on first. */
		size_t marker = conflict_marker_line(P.start, P.end);
		if (marker && err && errlen)
			snprintf(err, errlen, "%s:%zu:1: unresolved merge conflict markers; resolve the conflict "
			         "(e.g. keep one side) and retry", name ? name : "<input>", marker);
		json_decref(P.root);
		tt_toml_where_free(P.where);
		return NULL;
	}
	if (P.where) {
		where_resolve(P.where, P.start, P.end);
		*where = P.where;
	}
	return P.root;
}
