/* The `ducklake` backend's internals: DuckLake catalogs (Addressable). A
 * catalog's newest snapshot is the state; DuckLake has no tags or branches,
 * so nothing is pinned, and `ducklake_expire_snapshots` bounds how long a
 * recorded snapshot stays readable.
 *
 * tether reads the catalog's metadata tables itself, with SQL, through one
 * small connection interface (struct dl_conn) with an implementation per
 * catalog database: SQLite (libsqlite3), Postgres (libpq), MySQL
 * (libmariadb), and DuckDB files (libduckdb, dlopen'd when present). Every
 * operation reads in one consistent read transaction.
 *
 * locator.c   locators: the metadata string, data_path, table; identity
 * conn*.c     the connections, one file per catalog database
 * catalog.c   the metadata tables: version, snapshots, tables, row counts
 * changes.c   the `changes_made` lists of ducklake_snapshot_changes
 * diff.c      per-table diffs between two snapshots
 * backend.c   the backend: fingerprint, verify, history, handle */
#ifndef TETHER_BACKENDS_DUCKLAKE_DL_H
#define TETHER_BACKENDS_DUCKLAKE_DL_H

#include <tether.h>
#include <tether/backend.h>

#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Locators                                                            */
/* ------------------------------------------------------------------ */

enum dl_catalog_type { DL_DUCKDB, DL_SQLITE, DL_POSTGRES, DL_MYSQL };

/* One keyword=value of a Postgres or MySQL connection string. */
struct dl_param {
	char *key;
	char *value;
};

struct dl_target {
	char *metadata;            /* as the locator stores it: "ducklake:..." */
	enum dl_catalog_type type;
	char *path;                /* DL_DUCKDB, DL_SQLITE: the catalog file */
	struct dl_param *params;   /* DL_POSTGRES, DL_MYSQL */
	size_t nparams;
	char *server;              /* DL_POSTGRES, DL_MYSQL: "host:port", what secrets name */
	char *data_path;           /* or NULL */
	char *schema, *table;      /* the table the handle is scoped to, or NULL */
	int64_t at;                /* add --at: a snapshot id, or -1 */
};

/* Parse a committed locator (untrusted: a clone chose it). TETHER_ECONFIG
 * naming what is wrong. */
int dl_target_read(const json_t *locator, struct dl_target *t);
void dl_target_free(struct dl_target *t);
/* Parse the part after "ducklake:" into t (type, path, params, server).
 * `committed`: refuse credentials and unknown keywords as TETHER_ECONFIG
 * (else TETHER_EUSAGE). */
int dl_parse_metadata(const char *metadata, int committed, struct dl_target *t);
/* The value of keyword `key` (or NULL). Inline: the Postgres and MySQL
 * connections are modules of their own (conn.c), which see nothing of
 * this one's hidden symbols. */
static inline const char *dl_param(const struct dl_target *t, const char *key)
{
	for (size_t i = 0; i < t->nparams; i++)
		if (strcmp(t->params[i].key, key) == 0)
			return t->params[i].value;
	return NULL;
}
/* "schema.table", each part double-quoted unless a plain identifier. */
char *dl_table_name(const char *schema, const char *table);
/* Parse "t", "s.t", "\"a.b\".t" into schema (default "main") and table. */
int dl_parse_table(const char *text, char **schema, char **table);

int dl_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                    json_t **locator);
int dl_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity);

/* What secrets.toml gives this object: the credentials (only for the
 * server its `server` key names) and init_sql. */
struct dl_secrets {
	const char *user, *password;
	const json_t *init_sql; /* array of strings, or NULL */
};
/* Read ctx's secrets for target t, refusing init_sql in tether.toml and
 * credentials meant for another server. */
int dl_secrets_read(const struct tether_bctx *ctx, const struct dl_target *t, struct dl_secrets *s);

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

/* One result row: n values as text, NULL for SQL NULL. Return non-zero
 * (with the error set) to stop. */
typedef int (*dl_row_fn)(void *ud, int n, const char *const *vals);

struct dl_conn;
/* A connection's functions, and its dialect as data. */
struct dl_conn_ops {
	/* Run one statement; call fn per row (fn may be NULL). */
	int (*query)(struct dl_conn *c, const char *sql, dl_row_fn fn, void *ud);
	/* End the read transaction and disconnect. */
	void (*close)(struct dl_conn *c);
	char quote;             /* identifier quote: '"', or '`' for MySQL */
	const char *time_sql;   /* a format whose %s is the column: its value in
	                         * epoch microseconds, or "%s" when it reads as text */
	const char *exists_sql; /* a format whose %s is a quoted literal: a count of
	                         * the metadata schema's tables of that name, 0 or 1 */
};

struct dl_conn {
	const struct dl_conn_ops *ops;
	const char *what; /* the catalog, for messages (the target's metadata) */
};

/* Open t's catalog and begin one read-only transaction that every query
 * of this connection sees. */
int dl_conn_open(const struct tether_bctx *ctx, const struct dl_target *t, struct dl_conn **out);
int dl_conn_query(struct dl_conn *c, const char *sql, dl_row_fn fn, void *ud);
void dl_conn_close(struct dl_conn *c);
/* The first column of the first row as int64 (*found 0 when no row or NULL). */
int dl_conn_int(struct dl_conn *c, const char *sql, int64_t *v, int *found);
/* s between two `q`s, a `q` inside doubled: an SQL string literal
 * (q = '\'') or a quoted identifier (malloc'd). */
char *dl_quote(const char *s, char q);
/* An identifier quoted for c's dialect (malloc'd). */
char *dl_conn_ident(const struct dl_conn *c, const char *name);
/* Does the catalog's metadata schema hold table `name`? */
int dl_conn_has_table(struct dl_conn *c, const char *name, int *yes);

/* The implementations; each sets the error naming t->metadata and what
 * the library or server said. libpq and libmariadb pull some thirty
 * libraries (Kerberos, LDAP, TLS) through the loader, so the Postgres and
 * MySQL connections are modules of their own, tether-ducklake-pg.so and
 * tether-ducklake-mysql.so, loaded from this module's directory on first
 * need (conn.c): a SQLite or DuckDB-file catalog never maps them. Their
 * names do not start with "tether-backend-", so module discovery skips
 * them. */
typedef int (*dl_open_fn)(const struct dl_target *t, const struct dl_secrets *s, struct dl_conn **out);
int dl_sqlite_open(const struct dl_target *t, struct dl_conn **out);
TETHER_API int tether_ducklake_pg_open(const struct dl_target *t, const struct dl_secrets *s, struct dl_conn **out);
TETHER_API int tether_ducklake_mysql_open(const struct dl_target *t, const struct dl_secrets *s,
                                          struct dl_conn **out);
int dl_duckdb_open(const struct dl_target *t, const struct dl_secrets *s, struct dl_conn **out);

/* ------------------------------------------------------------------ */
/* The catalog                                                         */
/* ------------------------------------------------------------------ */

struct dl_snapshot {
	int64_t id;
	int64_t time_us;
};

/* Refuse a catalog that is not DuckLake, or of a version tether does not
 * read (a newer one names both versions). */
int dl_check_version(struct dl_conn *c);
/* The newest snapshot. */
int dl_latest(struct dl_conn *c, struct dl_snapshot *s);
/* Snapshot `id`: *found 0 when the catalog no longer has it. */
int dl_snapshot_get(struct dl_conn *c, int64_t id, struct dl_snapshot *s, int *found);
/* Parse a snapshot time as a catalog gives it: epoch microseconds, or
 * "YYYY-MM-DD HH:MM:SS[.f][+HH[:MM]]". */
int dl_parse_time(const char *text, int64_t *us);
/* [{"id", "time", "message", "refs"}], newest first, at most max (> 0). */
int dl_history(struct dl_conn *c, int64_t at, int max, json_t **entries);

/* A table visible at a snapshot. */
struct dl_table {
	int64_t id;
	char *schema, *name;
};
struct dl_tables {
	struct dl_table *v;
	size_t n;
};
int dl_tables_at(struct dl_conn *c, int64_t snapshot, struct dl_tables *out);
void dl_tables_free(struct dl_tables *t);
const struct dl_table *dl_tables_find(const struct dl_tables *t, int64_t id);
/* Live rows of table `id` at snapshot s, and rows inserted in (a, b]. */
int dl_live_rows(struct dl_conn *c, int64_t id, int64_t s, int64_t *rows);
int dl_inserted_rows(struct dl_conn *c, int64_t id, int64_t a, int64_t b, int64_t *rows);

/* ------------------------------------------------------------------ */
/* Changes and diffs                                                   */
/* ------------------------------------------------------------------ */

/* The table ids a changes_made list says were altered (altered_table:<id>),
 * added to *ids (a growing array of *n). */
int dl_changes_altered(const char *changes, int64_t **ids, size_t *n);

int dl_diff(struct dl_conn *c, int64_t a, int64_t b, size_t max_entries, json_t **diff);
/* dl_diff between two recorded states. */
int dl_diff_states(struct dl_conn *c, const json_t *a, const json_t *b, size_t max_entries, json_t **diff);

#endif
