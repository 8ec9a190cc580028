/* SQLite: the export written as one database file (each table with its
 * primary key, the cells in their SQL types), and import's query run on
 * one, read-only. */
#include "sql/sql.h"

#include <tether/backend.h>

#include "util/fsutil.h"
#include "util/tempname.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int db_error(sqlite3 *db, const char *path, const char *what)
{
	return tether_error_set(TETHER_EIO, "%s: %s: %s", path, what, db ? sqlite3_errmsg(db) : "out of memory");
}

static const char *sql_type(enum tt_col_type t)
{
	return t == TT_COL_TEXT ? "TEXT" : t == TT_COL_INT ? "INTEGER" : "BOOLEAN";
}

/* Names are tether's own (export.c), plain identifiers: quoted anyway. */
static char *create_sql(const struct tt_export_table *t)
{
	size_t cap = 256 + 64 * t->ncols, len = 0;
	char *s = malloc(cap);
	if (!s)
		abort();
	len += (size_t)snprintf(s + len, cap - len, "CREATE TABLE \"%s\" (", t->name);
	for (size_t c = 0; c < t->ncols; c++)
		len += (size_t)snprintf(s + len, cap - len, "\"%s\" %s%s, ", t->cols[c].name, sql_type(t->cols[c].type),
		                        t->cols[c].nullable ? "" : " NOT NULL");
	len += (size_t)snprintf(s + len, cap - len, "PRIMARY KEY (");
	for (size_t c = 0; c < t->nkey; c++)
		len += (size_t)snprintf(s + len, cap - len, "%s\"%s\"", c ? ", " : "", t->cols[c].name);
	snprintf(s + len, cap - len, ")) WITHOUT ROWID");
	return s;
}

/* Rows go in up to BATCH to a statement: one statement's set-up and end
 * per batch, not per row. The rows, their order, and so the file are the
 * same. */
#define BATCH 64

/* INSERT of `rows` rows. */
static char *insert_sql(const struct tt_export_table *t, size_t rows)
{
	size_t cap = 64 + strlen(t->name) + rows * (4 + 3 * t->ncols), len = 0;
	char *s = malloc(cap);
	if (!s)
		abort();
	len += (size_t)snprintf(s + len, cap - len, "INSERT INTO \"%s\" VALUES ", t->name);
	for (size_t r = 0; r < rows; r++) {
		len += (size_t)snprintf(s + len, cap - len, "%s(", r ? ", " : "");
		for (size_t c = 0; c < t->ncols; c++)
			len += (size_t)snprintf(s + len, cap - len, "%s?", c ? "," : "");
		len += (size_t)snprintf(s + len, cap - len, ")");
	}
	return s;
}

/* Row `cells` as the batch's row `at` of st. */
static int bind_row(sqlite3_stmt *st, const struct tt_export_table *t, size_t at, const struct tt_cell *cells)
{
	int rc = SQLITE_OK;
	for (size_t c = 0; rc == SQLITE_OK && c < t->ncols; c++) {
		const struct tt_cell *v = &cells[c];
		int i = (int)(at * t->ncols + c) + 1;
		if (v->null)
			rc = sqlite3_bind_null(st, i);
		else if (t->cols[c].type == TT_COL_TEXT)
			rc = sqlite3_bind_text(st, i, v->s, (int)v->len, SQLITE_STATIC);
		else
			rc = sqlite3_bind_int64(st, i, v->i);
	}
	return rc;
}

/* Rows [from, from + rows) through st (an INSERT of that many rows). */
static int insert_rows(sqlite3 *db, sqlite3_stmt *st, const struct tt_export_table *t, size_t from, size_t rows,
                       struct tt_cell *cells, const char *path)
{
	int rc = SQLITE_OK;
	for (size_t k = 0; rc == SQLITE_OK && k < rows; k++) {
		t->row(t, from + k, cells);
		rc = bind_row(st, t, k, cells);
	}
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE)
		rc = 0;
	else
		rc = tether_error_set(TETHER_EIO, "%s: table %s, rows %zu to %zu: %s", path, t->name, from + 1,
		                      from + rows, sqlite3_errmsg(db));
	sqlite3_reset(st);
	return rc;
}

static int write_table(sqlite3 *db, const struct tt_export_table *t, const char *path)
{
	char *create = create_sql(t);
	struct tt_cell *cells = calloc(t->ncols ? t->ncols : 1, sizeof *cells);
	if (!cells)
		abort();
	int rc = sqlite3_exec(db, create, NULL, NULL, NULL) == SQLITE_OK ? 0 : db_error(db, path, "cannot create a table");
	/* as many rows as the bound parameters' limit allows, up to BATCH */
	size_t batch = (size_t)sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, -1) / (t->ncols ? t->ncols : 1);
	if (batch > BATCH)
		batch = BATCH;
	if (batch == 0)
		batch = 1;
	size_t full = t->nrows / batch, rest = t->nrows % batch;
	for (int pass = 0; pass < 2 && !rc; pass++) {
		size_t rows = pass == 0 ? batch : rest, count = pass == 0 ? full : rest != 0;
		if (!count)
			continue;
		char *insert = insert_sql(t, rows);
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(db, insert, -1, &st, NULL) != SQLITE_OK)
			rc = db_error(db, path, "cannot prepare an insert");
		for (size_t b = 0; !rc && b < count; b++)
			rc = insert_rows(db, st, t, pass == 0 ? b * batch : full * batch, rows, cells, path);
		sqlite3_finalize(st);
		free(insert);
	}
	free(cells);
	free(create);
	return rc;
}

/* Written to a temporary file beside `path` with no journal (nothing but
 * this process sees it), then renamed over it: a reader sees the old file
 * or the new one. (A plain rename on purpose: swapping the files with
 * renameat2's RENAME_EXCHANGE saves ext4's write-out of the new data that
 * a rename over a file triggers, 15-25 ms on benchmark 17's 19 MiB, but
 * that write-out is what makes a crash just after the export leave the old
 * file or the whole new one rather than a torn one.) */
int tt_sql_write_sqlite(const struct tt_export_table *tables, size_t n, const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return tether_error_set(TETHER_EREFUSED, "%s exists and is not a file: not replaced", path);
	char *tmp = tt_strdupf("%s" TT_TEMP_SUFFIX_FMT, path, (long)getpid());
	unlink(tmp);
	sqlite3 *db = NULL;
	int rc = 0;
	if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK)
		rc = db_error(db, tmp, "cannot create");
	/* A page cache that holds the whole file (up to 256 MiB, taken only as
	 * the file grows): the default 2 MiB spills pages to the file and reads
	 * them back while the one transaction builds it. Neither the cache nor
	 * the exclusive lock is stored in the file. */
	if (!rc && sqlite3_exec(db,
	                        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
	                        "PRAGMA cache_size=-262144; BEGIN",
	                        NULL, NULL, NULL) != SQLITE_OK)
		rc = db_error(db, tmp, "cannot begin");
	for (size_t i = 0; !rc && i < n; i++)
		rc = write_table(db, &tables[i], path);
	if (!rc && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = db_error(db, tmp, "cannot commit");
	if (sqlite3_close(db) != SQLITE_OK && !rc)
		rc = tether_error_set(TETHER_EIO, "%s: cannot close", tmp);
	if (!rc && rename(tmp, path) != 0)
		rc = tt_sql_io_error(path, "cannot put the export in place");
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

/* A cell as import reads it: text, or null. */
static json_t *cell(sqlite3_stmt *st, int c)
{
	switch (sqlite3_column_type(st, c)) {
	case SQLITE_NULL:
		return json_null();
	case SQLITE_BLOB:
		return NULL; /* refused by the caller */
	default: {
		const unsigned char *t = sqlite3_column_text(st, c);
		return t ? json_stringn((const char *)t, (size_t)sqlite3_column_bytes(st, c)) : NULL;
	}
	}
}

int tt_sql_query_sqlite(const char *path, const char *query, struct tt_sql_rows *out)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	memset(out, 0, sizeof *out);
	if (access(path, R_OK) != 0)
		return tether_error_set(TETHER_ENOTFOUND, "%s: cannot read: %s", path, strerror(errno));
	int rc = 0;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		rc = db_error(db, path, "cannot open");
	const char *tail = NULL;
	if (!rc && sqlite3_prepare_v2(db, query, -1, &st, &tail) != SQLITE_OK)
		rc = tether_error_set(TETHER_EUSAGE, "%s: the query failed: %s", path, sqlite3_errmsg(db));
	if (!rc && !st)
		rc = tether_error_set(TETHER_EUSAGE, "%s: the query is empty", path);
	if (!rc && tail && tail[strspn(tail, " \t\r\n;")])
		rc = tether_error_set(TETHER_EUSAGE, "%s: the query holds more than one statement", path);
	if (!rc && !sqlite3_stmt_readonly(st))
		rc = tether_error_set(TETHER_EUSAGE, "%s: the query would write: import only reads", path);
	if (!rc) {
		out->columns = json_array();
		out->rows = json_array();
		int nc = sqlite3_column_count(st);
		for (int c = 0; c < nc; c++)
			json_array_append_new(out->columns, json_string(sqlite3_column_name(st, c)));
		int step;
		while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
			json_t *row = json_array();
			for (int c = 0; !rc && c < nc; c++) {
				json_t *v = cell(st, c);
				if (!v)
					rc = tether_error_set(TETHER_EUSAGE, "row %zu, column %s: not text (a blob, or not UTF-8)",
					                      json_array_size(out->rows) + 1, sqlite3_column_name(st, c));
				json_array_append_new(row, v);
			}
			json_array_append_new(out->rows, row);
		}
		if (!rc && step != SQLITE_DONE)
			rc = tether_error_set(TETHER_EUSAGE, "%s: the query failed: %s", path, sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (rc) {
		json_decref(out->columns);
		json_decref(out->rows);
		memset(out, 0, sizeof *out);
	}
	return rc;
}
