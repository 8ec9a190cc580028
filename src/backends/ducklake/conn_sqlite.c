/* A DuckLake catalog in a SQLite file, on libsqlite3: opened read-only,
 * read in one deferred transaction (its shared lock holds one snapshot of
 * the file from the first read to the end), waiting out a writer's lock
 * for up to five seconds as DuckLake's own SQLite clients do. */
#include "backends/ducklake/dl.h"

#include <sqlite3.h>
#include <stdlib.h>

struct sqlite_conn {
	struct dl_conn base;
	sqlite3 *db;
};

static int sq_fail(struct sqlite_conn *c, const char *doing)
{
	return tether_error_set(TETHER_EIO, "ducklake catalog %s: %s: %s", c->base.what, doing, sqlite3_errmsg(c->db));
}

static int sq_query(struct dl_conn *base, const char *sql, dl_row_fn fn, void *ud)
{
	struct sqlite_conn *c = (struct sqlite_conn *)base;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sq_fail(c, "query");
	int n = sqlite3_column_count(st);
	const char **vals = calloc((size_t)n + 1, sizeof *vals);
	int rc = vals ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
	int step;
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < n; i++)
			vals[i] = (const char *)sqlite3_column_text(st, i);
		if (fn)
			rc = fn(ud, n, vals);
	}
	if (!rc && step != SQLITE_DONE)
		rc = sq_fail(c, "query");
	free(vals);
	sqlite3_finalize(st);
	return rc;
}

static void sq_close(struct dl_conn *base)
{
	struct sqlite_conn *c = (struct sqlite_conn *)base;
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(c->db);
	free(c);
}

static const struct dl_conn_ops sqlite_ops = {
	.query = sq_query,
	.close = sq_close,
	.quote = '"',
	.time_sql = "%s",
	.exists_sql = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = %s",
};

int dl_sqlite_open(const struct dl_target *t, struct dl_conn **out)
{
	struct sqlite_conn *c = calloc(1, sizeof *c);
	if (!c)
		return tether_error_set(TETHER_ERROR, "out of memory");
	c->base.ops = &sqlite_ops;
	c->base.what = t->metadata;
	/* SQLITE_OPEN_NOFOLLOW is not wanted (the path was resolved through
	 * its symlinks when it was added); a missing file must not be made. */
	int rc = sqlite3_open_v2(t->path, &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		int code = rc == SQLITE_CANTOPEN ? TETHER_ENOTFOUND : TETHER_EIO;
		tether_error_set(code, "ducklake catalog %s: cannot open %s: %s", t->metadata, t->path,
		                 c->db ? sqlite3_errmsg(c->db) : "out of memory");
		sqlite3_close(c->db);
		free(c);
		return code;
	}
	sqlite3_busy_timeout(c->db, 5000);
	if (sqlite3_exec(c->db, "BEGIN DEFERRED", NULL, NULL, NULL) != SQLITE_OK) {
		int code = sq_fail(c, "begin");
		sqlite3_close(c->db);
		free(c);
		return code;
	}
	*out = &c->base;
	return 0;
}
