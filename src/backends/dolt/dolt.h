/* The `dolt` backend's internal interface, shared by its files.
 *
 * tether talks to a `dolt sql-server` (or Hosted Dolt) over the MySQL
 * protocol with libmariadb, which only this module links. A branch head's
 * commit hash is the state; a tag tether.<pin id> (CALL DOLT_TAG) the pin;
 * a branch made off it (CALL DOLT_BRANCH) the fork; DOLT_MERGE inside an
 * explicit transaction promotes and merges.
 *
 * What a server supports is asked of the server (its columns, system
 * tables, and the answer a procedure call gives), never read off a
 * version string: Dolt's SQL surface grew over many releases.
 *
 * Everything here is hidden; the module exports only tether_module. */
#ifndef TETHER_BACKENDS_DOLT_DOLT_H
#define TETHER_BACKENDS_DOLT_DOLT_H

#include <tether/backend.h>

#include <mysql.h>

#include <stddef.h>

#define DT_TAG_PREFIX "tether."
#define DT_WS_PREFIX "tether.ws."
#define DT_WS_BRANCH_PREFIX "tether/ws/" /* DT_WS_PREFIX as a Dolt branch (dt_branch_for) */
#define DT_DEFAULT_PORT 3306u
#define DT_HASH_MAX 64

/* A locator, read and checked. Strings point into the locator's JSON. */
struct dt_loc {
	const char *host;
	unsigned port;
	const char *database;
	const char *branch;         /* the upstream branch, default main */
	const char *user;           /* the locator's user, or NULL */
	const char *at;             /* the initial position, or NULL */
	const char *working_branch; /* the fork's overlay, or NULL */
};

/* One connection to the server, on one database (or revision database
 * db/ref). `where` names it in messages: mysql://host:port/db. */
struct dt_conn {
	MYSQL *my;
	char where[512];
	char dbname[300]; /* what it was opened on: database or database/ref */
	void *pool;       /* the session it came from, or NULL */
};

/* locator.c */
int dt_read_locator(const json_t *locator, struct dt_loc *out);
/* The branch a call works on: the working branch, else the locator's. */
const char *dt_work_branch(const struct dt_loc *loc);
/* A name tether may put in SQL and URLs (no quotes, '@', spaces; '/'
 * only in a ref). */
int dt_plain_name(const char *s, int ref);
/* The Dolt branch for the engine's working-branch name, and back: '.'
 * becomes '/', as Dolt (v0.40.4) refuses '.' in branch names. malloc'd. */
char *dt_branch_for(const char *engine_name);
char *dt_engine_name_of(const char *dolt_branch);
/* "mysql://host:port/database" (no user, nothing secret). malloc'd. */
char *dt_server_uri(const struct dt_loc *loc, int with_database);
int dt_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                    json_t **locator);
int dt_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity);
extern const struct tether_add_option dt_add_options[];

/* conn.c: connections, credentials, queries. `ref` NULL connects to the
 * database itself, else to the revision database database/ref (a branch
 * there is the session's branch, so DOLT_MERGE merges into it). */
int dt_connect(const struct tether_bctx *ctx, const struct dt_loc *loc, const char *ref, struct dt_conn *c);
/* dt_read_locator, then dt_connect to its database. */
int dt_connect_locator(const struct tether_bctx *ctx, const json_t *locator, struct dt_loc *loc, struct dt_conn *c);
/* Give the connection back: to the session's pool when `ok` (it is
 * known good), else closed. */
void dt_release(struct dt_conn *c, int ok);
/* The user tether connects as (secrets.toml, else the locator, else
 * root), for a handle's URL; NULL with the error set. */
char *dt_login_user(const struct tether_bctx *ctx, const struct dt_loc *loc);
/* Run a statement (no rows wanted, results drained). */
int dt_exec(struct dt_conn *c, const char *sql);
/* Run a query and return its rows as a JSON array of arrays of strings
 * (SQL NULL as JSON null). */
int dt_query(struct dt_conn *c, const char *sql, json_t **rows);
/* The same, and the column names (an array of strings). */
int dt_query_cols(struct dt_conn *c, const char *sql, json_t **rows, json_t **cols);
/* The statement with each '?' replaced by the next string argument,
 * quoted and escaped for this connection. malloc'd, NULL on OOM. */
char *dt_sql(struct dt_conn *c, const char *fmt, ...);
/* Run `sql` (freed here; NULL means out of memory) and return its rows;
 * a failure is dt_fail's message with `doing`. */
int dt_rows(struct dt_conn *c, char *sql, const char *doing, json_t **rows);
/* A cell of a result, as a string (NULL: absent, or SQL NULL). */
const char *dt_cell(const json_t *rows, size_t row, size_t col);
/* The end of a call that builds `out`: the connection released (pooled
 * when rc is 0), and `out` handed to *dst, or freed on error. */
int dt_finish(struct dt_conn *c, int rc, json_t *out, json_t **dst);
/* The server's error number of the last failed statement (0: none). */
unsigned dt_errno(const struct dt_conn *c);
/* TETHER_E* for a MySQL error number and the one-line message naming
 * the server and what it said. */
int dt_fail(struct dt_conn *c, const char *doing);
/* Is a column / table there? Asked of the server (see dolt.h's top). */
int dt_has_column(struct dt_conn *c, const char *table, const char *column, int *has);
/* Does dolt_branches have the dirty column? Asked once per session. */
int dt_has_dirty(struct dt_conn *c, int *has);
int dt_has_table(struct dt_conn *c, const char *table, int *has);
int dt_open_store(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session);
void dt_close_store(const struct tether_bctx *ctx, void *session);

/* state.c */
/* The head of `branch` (*found 0: no such branch) and whether its working
 * set is dirty; *dirty is -1 when the server cannot tell (no
 * dolt_branches.dirty column). */
int dt_branch_head(struct dt_conn *c, const char *branch, char hash[DT_HASH_MAX], int *found, int *dirty);
int dt_resolve(struct dt_conn *c, const char *rev, char hash[DT_HASH_MAX]);
int dt_commit_exists(struct dt_conn *c, const char *hash, int *exists);
int dt_state_commit(const json_t *state, const char **commit);
int dt_fingerprint(const struct tether_bctx *, const json_t *locator, const json_t *policy,
                   struct tether_fingerprint *out);
int dt_check_state(const json_t *state, const char **key);

/* pins.c */
int dt_pin(const struct tether_bctx *, const json_t *locator, const json_t *state, const char *pin_id,
           json_t **pin_ref, int *created);
int dt_unpin(const struct tether_bctx *, const json_t *locator, const json_t *pin_ref);
int dt_list_pins(const struct tether_bctx *, const json_t *locator, json_t **pin_refs);
int dt_verify(const struct tether_bctx *, const json_t *locator, const json_t *state, const json_t *pin_ref,
              int *ok, char **detail);

/* forks.c */
int dt_fork(const struct tether_bctx *, const json_t *locator, const json_t *state, const json_t *pin_ref,
            const char *branch, const json_t *expect, json_t **working_ref);
int dt_delete_working_ref(const struct tether_bctx *, const json_t *locator, const json_t *working_ref);
int dt_delete_working_ref_if(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
                             const json_t *expect);
int dt_list_working_refs(const struct tether_bctx *, const json_t *locator, json_t **refs);
int dt_open(const struct tether_bctx *, const json_t *locator, const json_t *state, const json_t *pin_ref,
            const json_t *working_ref, int read_only, json_t **handle);

/* merge.c */
int dt_promote(const struct tether_bctx *, const json_t *locator, const json_t *working_ref, const json_t *expect,
               json_t **result);
int dt_merge(const struct tether_bctx *, const json_t *locator, const json_t *working_ref, const char *message,
             json_t **result);

int dt_descends(const struct tether_bctx *, const json_t *locator, const json_t *ancestor, const json_t *descendant,
                int *answer);
int dt_move_base(const struct tether_bctx *, const json_t *locator, const json_t *state, const json_t *expect,
                 json_t **result);

/* history.c */
int dt_history(const struct tether_bctx *, const json_t *locator, int max_count, json_t **entries);
int dt_diff(const struct tether_bctx *, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
            json_t **diff);

#endif
