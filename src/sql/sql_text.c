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

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void csv_field(FILE *f, enum tt_col_type type, const struct tt_cell *v)
{
	if (v->null)
		return;
	if (type == TT_COL_INT) {
		fprintf(f, "%" PRId64, v->i);
		return;
	}
	if (type == TT_COL_BOOL) {
		fputs(v->i ? "true" : "false", f);
		return;
	}
	const char *s = v->s;
	size_t n = v->len;
	int quote = n == 0 || s[0] == ' ' || s[n - 1] == ' ' || strpbrk(s, ",\"\r\n") != NULL;
	if (!quote) {
		fwrite(s, 1, n, f);
		return;
	}
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			fputc('"', f);
		fputc(s[i], f);
	}
	fputc('"', f);
}

static int write_csv_table(const struct tt_export_table *t, const char *file)
{
	FILE *f = fopen(file, "w");
	if (!f)
		return tt_sql_io_error(file, "cannot create");
	struct tt_cell *cells = calloc(t->ncols ? t->ncols : 1, sizeof *cells);
	if (!cells)
		abort();
	for (size_t c = 0; c < t->ncols; c++)
		fprintf(f, "%s%s", c ? "," : "", t->cols[c].name);
	fputs("\r\n", f);
	for (size_t r = 0; r < t->nrows; r++) {
		t->row(t, r, cells);
		for (size_t c = 0; c < t->ncols; c++) {
			if (c)
				fputc(',', f);
			csv_field(f, t->cols[c].type, &cells[c]);
		}
		fputs("\r\n", f);
	}
	free(cells);
	if (ferror(f) | (fclose(f) != 0))
		return tt_sql_io_error(file, "cannot write");
	return 0;
}

/* A JSON string as jansson's compact dump writes one (what this writer
 * wrote before it wrote rows itself, and so still does): quote and
 * backslash escaped, \b \f \n \r \t as such, other control characters as
 * \u00XX, everything else (UTF-8 included) as it is. */
static void json_string_out(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	size_t run = 0; /* the first byte not yet written */
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		fwrite(s + run, 1, i - run, f);
		run = i + 1;
		switch (ch) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default: fprintf(f, "\\u%04X", ch);
		}
	}
	fwrite(s + run, 1, n - run, f);
	fputc('"', f);
}

static int write_jsonl_table(const struct tt_export_table *t, const char *file)
{
	FILE *f = fopen(file, "w");
	if (!f)
		return tt_sql_io_error(file, "cannot create");
	struct tt_cell *cells = calloc(t->ncols ? t->ncols : 1, sizeof *cells);
	if (!cells)
		abort();
	for (size_t r = 0; r < t->nrows; r++) {
		t->row(t, r, cells);
		for (size_t c = 0; c < t->ncols; c++) {
			const struct tt_cell *v = &cells[c];
			fputc(c ? ',' : '{', f);
			json_string_out(f, t->cols[c].name, strlen(t->cols[c].name));
			fputc(':', f);
			if (v->null)
				fputs("null", f);
			else if (t->cols[c].type == TT_COL_INT)
				fprintf(f, "%" PRId64, v->i);
			else if (t->cols[c].type == TT_COL_BOOL)
				fputs(v->i ? "true" : "false", f);
			else
				json_string_out(f, v->s, v->len);
		}
		fputs(t->ncols ? "}\n" : "{}\n", f);
	}
	free(cells);
	if (ferror(f) | (fclose(f) != 0))
		return tt_sql_io_error(file, "cannot write");
	return 0;
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
