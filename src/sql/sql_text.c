/* CSV (RFC 4180) and JSON Lines: a directory of one file per table.
 *
 * CSV: a header row of the column names, then one line per row ("\r\n"
 * ends each line, as RFC 4180 says). A null is an empty field, an empty
 * string is "" (quoted), so the two stay apart; a field holding a comma, a
 * quote, a CR or LF, or beginning or ending with a space is quoted, quotes
 * doubled. Booleans are true / false. JSON Lines: one object per row, its
 * members in column order, nulls as null. */
#include "sql/sql.h"

#include <tether/backend.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A file written through a buffer of our own: a row is many small pieces,
 * and stdio takes its stream lock for each. */
struct out {
	int fd;
	int err; /* errno of a failed write, or 0 */
	size_t len;
	char buf[1 << 16];
};

/* n bytes at p to the file, or o->err set. */
static void out_write(struct out *o, const char *p, size_t n)
{
	while (n && !o->err) {
		ssize_t k = write(o->fd, p, n);
		if (k < 0 && errno != EINTR)
			o->err = errno;
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		}
	}
}

static void out_flush(struct out *o)
{
	out_write(o, o->buf, o->len);
	o->len = 0;
}

static void out_bytes(struct out *o, const char *s, size_t n)
{
	if (sizeof o->buf - o->len < n) {
		out_flush(o);
		if (n > sizeof o->buf) {
			out_write(o, s, n); /* too big to buffer: written as it is */
			return;
		}
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void out_str(struct out *o, const char *s)
{
	out_bytes(o, s, strlen(s));
}

static void out_char(struct out *o, char c)
{
	if (o->len == sizeof o->buf)
		out_flush(o);
	o->buf[o->len++] = c;
}

static void out_int(struct out *o, int64_t v)
{
	char num[32];
	out_bytes(o, num, (size_t)snprintf(num, sizeof num, "%" PRId64, v));
}

static struct out *out_open(const char *file)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return NULL;
	struct out *o = malloc(sizeof *o);
	if (!o)
		abort();
	o->fd = fd;
	o->err = 0;
	o->len = 0;
	return o;
}

/* Flush and close; rc 0 or the error, naming the file. */
static int out_close(struct out *o, const char *file)
{
	out_flush(o);
	int err = o->err;
	if (close(o->fd) != 0 && !err)
		err = errno;
	free(o);
	if (err) {
		errno = err;
		return tt_sql_io_error(file, "cannot write");
	}
	return 0;
}

static void csv_field(struct out *o, enum tt_col_type type, const struct tt_cell *v)
{
	if (v->null)
		return;
	if (type == TT_COL_INT) {
		out_int(o, v->i);
		return;
	}
	if (type == TT_COL_BOOL) {
		out_str(o, v->i ? "true" : "false");
		return;
	}
	const char *s = v->s;
	size_t n = v->len;
	int quote = n == 0 || s[0] == ' ' || s[n - 1] == ' ' || strpbrk(s, ",\"\r\n") != NULL;
	if (!quote) {
		out_bytes(o, s, n);
		return;
	}
	out_char(o, '"');
	for (const char *q; (q = memchr(s, '"', n)) != NULL; n -= (size_t)(q + 1 - s), s = q + 1) {
		out_bytes(o, s, (size_t)(q + 1 - s));
		out_char(o, '"'); /* a quote doubled */
	}
	out_bytes(o, s, n);
	out_char(o, '"');
}

static int write_csv_table(const struct tt_export_table *t, const char *file)
{
	struct out *o = out_open(file);
	if (!o)
		return tt_sql_io_error(file, "cannot create");
	struct tt_cell *cells = calloc(t->ncols ? t->ncols : 1, sizeof *cells);
	if (!cells)
		abort();
	for (size_t c = 0; c < t->ncols; c++) {
		if (c)
			out_char(o, ',');
		out_str(o, t->cols[c].name);
	}
	out_bytes(o, "\r\n", 2);
	for (size_t r = 0; r < t->nrows && !o->err; r++) {
		t->row(t, r, cells);
		for (size_t c = 0; c < t->ncols; c++) {
			if (c)
				out_char(o, ',');
			csv_field(o, t->cols[c].type, &cells[c]);
		}
		out_bytes(o, "\r\n", 2);
	}
	free(cells);
	return out_close(o, file);
}

/* A JSON string as jansson's compact dump writes one (what this writer
 * wrote before it wrote rows itself, and so still does): quote and
 * backslash escaped, \b \f \n \r \t as such, other control characters as
 * \u00XX, everything else (UTF-8 included) as it is. */
static void json_string_out(struct out *o, const char *s, size_t n)
{
	out_char(o, '"');
	size_t run = 0; /* the first byte not yet written */
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		out_bytes(o, s + run, i - run);
		run = i + 1;
		char esc[8];
		switch (ch) {
		case '"': out_str(o, "\\\""); break;
		case '\\': out_str(o, "\\\\"); break;
		case '\b': out_str(o, "\\b"); break;
		case '\f': out_str(o, "\\f"); break;
		case '\n': out_str(o, "\\n"); break;
		case '\r': out_str(o, "\\r"); break;
		case '\t': out_str(o, "\\t"); break;
		default:
			snprintf(esc, sizeof esc, "\\u%04X", ch);
			out_str(o, esc);
		}
	}
	out_bytes(o, s + run, n - run);
	out_char(o, '"');
}

static int write_jsonl_table(const struct tt_export_table *t, const char *file)
{
	struct out *o = out_open(file);
	if (!o)
		return tt_sql_io_error(file, "cannot create");
	struct tt_cell *cells = calloc(t->ncols ? t->ncols : 1, sizeof *cells);
	if (!cells)
		abort();
	for (size_t r = 0; r < t->nrows && !o->err; r++) {
		t->row(t, r, cells);
		out_char(o, '{');
		for (size_t c = 0; c < t->ncols; c++) {
			const struct tt_cell *v = &cells[c];
			if (c)
				out_char(o, ',');
			json_string_out(o, t->cols[c].name, strlen(t->cols[c].name));
			out_char(o, ':');
			if (v->null)
				out_str(o, "null");
			else if (t->cols[c].type == TT_COL_INT)
				out_int(o, v->i);
			else if (t->cols[c].type == TT_COL_BOOL)
				out_str(o, v->i ? "true" : "false");
			else
				json_string_out(o, v->s, v->len);
		}
		out_bytes(o, "}\n", 2);
	}
	free(cells);
	return out_close(o, file);
}

static int write_dir(const struct tt_export_table *tables, size_t n, const char *path, const char *ext,
                     int (*one)(const struct tt_export_table *, const char *))
{
	struct tt_sql_dir d;
	int rc = tt_sql_dir_begin(&d, path, tables, n, ext);
	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < n; i++) {
		char *file = tt_sql_dir_file(&d, tables[i].name, ext);
		rc = one(&tables[i], file);
		free(file);
	}
	return tt_sql_dir_end(&d, rc);
}

int tt_sql_write_csv(const struct tt_export_table *tables, size_t n, const char *path)
{
	return write_dir(tables, n, path, ".csv", write_csv_table);
}

int tt_sql_write_jsonl(const struct tt_export_table *tables, size_t n, const char *path)
{
	return write_dir(tables, n, path, ".jsonl", write_jsonl_table);
}
