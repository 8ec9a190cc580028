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

#include <stdlib.h>
#include <string.h>

static void csv_field(FILE *f, const json_t *v)
{
	if (json_is_null(v) || !v)
		return;
	if (json_is_integer(v)) {
		fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return;
	}
	if (json_is_boolean(v)) {
		fputs(json_is_true(v) ? "true" : "false", f);
		return;
	}
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
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
	for (size_t c = 0; c < t->ncols; c++)
		fprintf(f, "%s%s", c ? "," : "", t->cols[c].name);
	fputs("\r\n", f);
	size_t i;
	json_t *row;
	json_array_foreach(t->rows, i, row) {
		for (size_t c = 0; c < t->ncols; c++) {
			if (c)
				fputc(',', f);
			csv_field(f, json_array_get(row, c));
		}
		fputs("\r\n", f);
	}
	if (ferror(f) | (fclose(f) != 0))
		return tt_sql_io_error(file, "cannot write");
	return 0;
}

static int write_jsonl_table(const struct tt_export_table *t, const char *file)
{
	FILE *f = fopen(file, "w");
	if (!f)
		return tt_sql_io_error(file, "cannot create");
	size_t i;
	json_t *row;
	json_array_foreach(t->rows, i, row) {
		json_t *o = json_object();
		for (size_t c = 0; c < t->ncols; c++)
			json_object_set(o, t->cols[c].name, json_array_get(row, c));
		json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER);
		fputc('\n', f);
		json_decref(o);
	}
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
