/* iceberg_tables on SQLite and Postgres (see sql_db.h). */
#include "backends/iceberg/sql_db.h"

#include <tether/backend.h>

#include "util/fsutil.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

struct ib_db {
	sqlite3 *lite;
	PGconn *pg;
	int v0; /* no iceberg_type column (learnt from the first query) */
	char *display;
};

static const char *const select_v1 =
        "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 "
        "AND table_name = $3 AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
static const char *const select_v0 =
        "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 "
        "AND table_name = $3";
static const char *const update_v1 =
        "UPDATE iceberg_tables SET metadata_location = $4, previous_metadata_location = $5 "
        "WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3 AND metadata_location = $5 "
        "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
static const char *const update_v0 =
        "UPDATE iceberg_tables SET metadata_location = $4, previous_metadata_location = $5 "
        "WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3 AND metadata_location = $5";

/* "scheme://user:pass@host/db" without "user:pass@". */
static char *redact(const char *uri)
{
	const char *rest = strstr(uri, "://");
	const char *at = rest ? strchr(rest + 3, '@') : NULL;
	const char *slash = rest ? strchr(rest + 3, '/') : NULL;
	if (!at || (slash && slash < at))
		return strdup(uri);
	return tt_strdupf("%.*s%s", (int)(rest + 3 - uri), uri, at + 1);
}

static int open_sqlite(struct ib_db *db, const char *path)
{
	if (path[0] != '/')
		return tether_error_set(TETHER_EUSAGE, "iceberg catalog uri %s: the SQLite path must be absolute "
		                                       "(sqlite:////abs/path)", db->display);
	/* Never create: a missing file is a wrong URI, not an empty catalog. */
	int rc = sqlite3_open_v2(path, &db->lite, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL);
	if (rc != SQLITE_OK)
		return tether_error_set(rc == SQLITE_CANTOPEN ? TETHER_ENOTFOUND : TETHER_EIO,
		                        "iceberg catalog %s: %s", db->display,
		                        db->lite ? sqlite3_errmsg(db->lite) : sqlite3_errstr(rc));
	sqlite3_busy_timeout(db->lite, 10000);
	return 0;
}

static int open_pg(struct ib_db *db, const char *uri, const char *password)
{
	/* SQLAlchemy's "postgresql+psycopg2://" is libpq's "postgresql://". */
	const char *rest = strstr(uri, "://");
	char *conninfo = tt_strdupf("postgresql%s", rest);
	const char *keys[] = {"dbname", password ? "password" : NULL, "connect_timeout", NULL};
	const char *vals[] = {conninfo, password, "10", NULL};
	if (!password) {
		keys[1] = "connect_timeout";
		vals[1] = "10";
		keys[2] = NULL;
	}
	db->pg = PQconnectdbParams(keys, vals, 1);
	free(conninfo);
	if (!db->pg || PQstatus(db->pg) != CONNECTION_OK) {
		const char *msg = db->pg ? PQerrorMessage(db->pg) : "out of memory";
		size_t n = strcspn(msg, "\n");
		return tether_error_set(strstr(msg, "password") ? TETHER_EAUTH : TETHER_EIO, "iceberg catalog %s: %.*s",
		                        db->display, (int)n, msg);
	}
	return 0;
}

int ib_db_open(const char *uri, const char *password, struct ib_db **out, char **display)
{
	*out = NULL;
	struct ib_db *db = calloc(1, sizeof *db);
	if (!db || !(db->display = redact(uri))) {
		free(db);
		return tether_error_set(TETHER_ERROR, "out of memory");
	}
	int rc;
	if (strncmp(uri, "sqlite:///", 10) == 0)
		rc = open_sqlite(db, uri + 10);
	else if (strncmp(uri, "postgresql://", 13) == 0 || strncmp(uri, "postgresql+", 11) == 0 ||
	         strncmp(uri, "postgres://", 11) == 0)
		rc = open_pg(db, uri, password);
	else
		rc = tether_error_set(TETHER_EUSAGE, "iceberg catalog uri %s: a SQL catalog is sqlite:///PATH or "
		                                     "postgresql://HOST/DB", db->display);
	if (rc) {
		ib_db_close(db);
		return rc;
	}
	*display = strdup(db->display);
	*out = db;
	return 0;
}

void ib_db_close(struct ib_db *db)
{
	if (!db)
		return;
	if (db->lite)
		sqlite3_close(db->lite);
	if (db->pg)
		PQfinish(db->pg);
	free(db->display);
	free(db);
}

/* SQLite: the same statement with ?NNN for $NNN. */
static char *lite_sql(const char *sql)
{
	char *s = strdup(sql);
	for (char *p = s; p && *p; p++)
		if (*p == '$')
			*p = '?';
	return s;
}

/* One statement with up to five text parameters. Rows: *location gets
 * the first column of the first row (SELECT); *changes the rows an
 * UPDATE changed. *no_column: the statement named a column the table
 * lacks (a v0 schema). */
static int run(struct ib_db *db, const char *sql, const char *const *params, int n, char **location, int *found,
               long long *changes, int *no_column)
{
	*no_column = 0;
	if (db->pg) {
		PGresult *r = PQexecParams(db->pg, sql, n, NULL, params, NULL, NULL, 0);
		ExecStatusType st = PQresultStatus(r);
		int rc = 0;
		if (st == PGRES_TUPLES_OK) {
			*found = PQntuples(r) > 0;
			if (*found && !PQgetisnull(r, 0, 0))
				*location = strdup(PQgetvalue(r, 0, 0));
		} else if (st == PGRES_COMMAND_OK) {
			*changes = atoll(PQcmdTuples(r));
		} else {
			const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
			const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
			if (state && strcmp(state, "42703") == 0) /* undefined_column */
				*no_column = 1;
			else
				rc = tether_error_set(state && strcmp(state, "42P01") == 0 ? TETHER_ENOTFOUND : TETHER_EIO,
				                      "iceberg catalog %s: %s", db->display, msg ? msg : PQerrorMessage(db->pg));
		}
		PQclear(r);
		return rc;
	}
	char *text = lite_sql(sql);
	sqlite3_stmt *st = NULL;
	int rc = text ? sqlite3_prepare_v2(db->lite, text, -1, &st, NULL) : SQLITE_NOMEM;
	free(text);
	if (rc != SQLITE_OK) {
		const char *msg = sqlite3_errmsg(db->lite);
		if (strstr(msg, "no such column"))
			*no_column = 1;
		else
			rc = tether_error_set(strstr(msg, "no such table") ? TETHER_ENOTFOUND : TETHER_EIO,
			                      "iceberg catalog %s: %s", db->display, msg);
		sqlite3_finalize(st);
		return *no_column ? 0 : rc;
	}
	for (int i = 0; i < n; i++)
		sqlite3_bind_text(st, i + 1, params[i], -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = 1;
		const unsigned char *v = sqlite3_column_text(st, 0);
		if (v)
			*location = strdup((const char *)v);
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		*changes = sqlite3_changes(db->lite);
		rc = 0;
	} else {
		rc = tether_error_set(rc == SQLITE_BUSY ? TETHER_ETRANSIENT : TETHER_EIO, "iceberg catalog %s: %s",
		                      db->display, sqlite3_errmsg(db->lite));
	}
	sqlite3_finalize(st);
	return rc;
}

int ib_db_location(struct ib_db *db, const char *catalog, const char *ns, const char *table, char **location,
                   int *found)
{
	const char *params[] = {catalog, ns, table};
	long long changes = 0;
	int no_column = 0;
	*location = NULL;
	*found = 0;
	int rc = run(db, db->v0 ? select_v0 : select_v1, params, 3, location, found, &changes, &no_column);
	if (rc == 0 && no_column && !db->v0) {
		db->v0 = 1;
		rc = run(db, select_v0, params, 3, location, found, &changes, &no_column);
	}
	if (rc == 0 && no_column)
		rc = tether_error_set(TETHER_ECONFIG, "iceberg catalog %s: iceberg_tables lacks metadata_location", db->display);
	if (rc == 0 && *found && !*location)
		rc = tether_error_set(TETHER_ECONFIG, "iceberg catalog %s: %s.%s has no metadata_location", db->display, ns,
		                      table);
	return rc;
}

int ib_db_swap(struct ib_db *db, const char *catalog, const char *ns, const char *table, const char *old_location,
               const char *new_location, int *swapped)
{
	const char *params[] = {catalog, ns, table, new_location, old_location};
	long long changes = 0;
	int no_column = 0, found = 0;
	char *ignored = NULL;
	*swapped = 0;
	int rc = run(db, db->v0 ? update_v0 : update_v1, params, 5, &ignored, &found, &changes, &no_column);
	if (rc == 0 && no_column && !db->v0) {
		db->v0 = 1;
		rc = run(db, update_v0, params, 5, &ignored, &found, &changes, &no_column);
	}
	free(ignored);
	if (rc == 0 && no_column)
		rc = tether_error_set(TETHER_ECONFIG, "iceberg catalog %s: iceberg_tables lacks metadata_location", db->display);
	*swapped = rc == 0 && changes == 1;
	return rc;
}
