/* The lakeFS backend (tether-backend-lakefs.so): a prefix of a lakeFS
 * repository, followed on a branch, over lakeFS's REST API (/api/v1) with
 * the project's HTTP client (src/store/http).
 *
 *   locator.c  the locator, identity, state shape, branch names
 *   conn.c     endpoint and keys (secrets.toml or lakectl's variables),
 *              requests, lakeFS's errors as tether's
 *   refs.c     fingerprint, pins (tags), forks (branches), working refs
 *   land.c     promote (fast-forward by hard reset), merge, move_base
 *   log.c      history, diff, the handle
 *   module.c   the backend's table and store sessions
 *
 * lakeFS ids: a commit is 64 hex digits; a tag may hold dots, a branch may
 * not (`^\w[-\w]*$`), so tether's working branch names are written in a
 * reversible spelling of their own (lfs_branch_encode). */
#ifndef TETHER_LAKEFS_H
#define TETHER_LAKEFS_H

#include <tether/backend.h>

#include "store/http/http.h"

#define LFS_KIND "lakefs"

struct lfs_loc {
	const char *repository;
	const char *branch;         /* the base branch (default main) */
	const char *prefix;         /* "" for the whole repository */
	const char *at;             /* a commit or tag, until `pull` */
	const char *working_branch; /* tether's name, as the engine gave it */
};

/* One call's connection: the session's client or one of its own. */
struct lfs_conn {
	struct tt_http *http;
	int own_http;
	char *api;  /* "<endpoint>/api/v1", no trailing slash */
	char *auth; /* "Authorization: Basic ..." value, or NULL */
	const char *repo;
};

/* locator.c */
int lfs_read_locator(const json_t *locator, struct lfs_loc *out);
int lfs_valid_repository(const char *s);
int lfs_valid_branch(const char *s);
char *lfs_branch_encode(const char *name);
char *lfs_branch_decode(const char *name);
/* Where the locator reads: its working branch, else `at`, else its
 * branch; *is_branch says whether that is a branch (whose staging
 * counts). The returned name is lakeFS's (malloc'd). */
char *lfs_position(const struct lfs_loc *loc, int *is_branch);
const char *lfs_state_commit(const json_t *state);
int lfs_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                     json_t **locator);
int lfs_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity);
int lfs_check_state(const json_t *state, const char **key);
extern const struct tether_add_option lfs_add_options[];
extern const char *const lfs_secret_keys[];

/* conn.c */
int lfs_connect(const struct tether_bctx *ctx, const struct lfs_loc *loc, struct lfs_conn *c);
void lfs_disconnect(struct lfs_conn *c);
/* One request to `path` (under /api/v1, already escaped). *status is the
 * HTTP status; *out the parsed JSON of a 2xx answer with a JSON body (may
 * be NULL). A status in `ok_statuses` (0-terminated, e.g. 404 where absence
 * is an answer) returns 0 too; any other non-2xx is an error naming the
 * request and lakeFS's message. */
int lfs_request(struct lfs_conn *c, const char *method, const char *path, const json_t *body,
                const long *ok_statuses, long *status, json_t **out);
/* path built with printf from escaped parts: lfs_esc() them first. */
char *lfs_esc(const char *s);
/* The head commit of a branch; TETHER_ENOTFOUND when there is none. */
int lfs_branch_head(struct lfs_conn *c, const char *branch, char **commit);
/* A ref (branch, tag or commit id) resolved to its commit. */
int lfs_resolve(struct lfs_conn *c, const char *ref, char **commit);
/* Uncommitted changes of `branch` under prefix: *dirty 1/0. */
int lfs_branch_dirty(struct lfs_conn *c, const char *branch, const char *prefix, int *dirty);
/* Every page of a paginated listing (results arrays concatenated), the
 * query (may be "") without `after`/`amount`; at most max_items. */
int lfs_list_all(struct lfs_conn *c, const char *path, const char *query, size_t max_items, json_t **items);
int lfs_session_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session);
void lfs_session_close(const struct tether_bctx *ctx, void *session);

/* refs.c */
int lfs_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                    struct tether_fingerprint *out);
int lfs_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
            json_t **pin_ref, int *created);
int lfs_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref);
int lfs_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs);
int lfs_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
               int *ok, char **detail);
int lfs_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                    const json_t *pin_ref, int *ok, char **detail);
int lfs_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
             const char *branch, const json_t *expect, json_t **working_ref);
int lfs_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref);
int lfs_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                              const json_t *expect);
int lfs_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs);
int lfs_descends(const struct tether_bctx *ctx, const json_t *locator, const json_t *ancestor,
                 const json_t *descendant, int *answer);
int lfs_is_ancestor(struct lfs_conn *c, const char *ancestor, const char *of, int *yes);
/* Move branch `name` to `commit` (lakeFS's hard reset). */
int lfs_reset_branch(struct lfs_conn *c, const char *name, const char *commit);
/* TETHER_EREFUSED when `name` holds staged objects, which `doing` would
 * lose or leave out. */
int lfs_refuse_staged(struct lfs_conn *c, const char *name, const char *doing);

/* land.c */
int lfs_promote(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                const json_t *expect, json_t **result);
int lfs_merge(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
              const char *message, json_t **result);
int lfs_move_base(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *expect,
                  json_t **result);

/* log.c */
int lfs_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries);
int lfs_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
             const char *la, size_t na, const char *lb, size_t nb, size_t max_entries, json_t **diff);
int lfs_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
             const json_t *working_ref, int read_only, json_t **handle);

/* Open loc and a connection for it in one step (every entry point's
 * first lines). */
int lfs_begin(const struct tether_bctx *ctx, const json_t *locator, struct lfs_loc *loc, struct lfs_conn *c);

#endif
