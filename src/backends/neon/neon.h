/* The Neon backend (tether-backend-neon.so): a database of a Neon project,
 * followed on a branch, over Neon's API v2 (the project's HTTP client,
 * src/store/http) for branches and endpoints and over Postgres (libpq) for
 * the state and quiescence.
 *
 *   locator.c  the locator, identity, state shape, add options
 *   api.c      api_url and the key (secrets.toml only), requests with
 *              Neon's 423/429/503 retried, operations polled to the end,
 *              branches by name, the session
 *   compute.c  endpoints (one read_write per branch, made once under the
 *              session's mutex), connection URIs, the SQL probe and
 *              pg_stat_activity
 *   refs.c     fingerprint, pins (child branches at an LSN), verify
 *   fork.c     forks (child branches of the pin, restore, siblings),
 *              the handle, quiescence
 *   workrefs.c the dataset's working branches listed (siblings under
 *              their workspace), and deleted (on condition or not)
 *   module.c   the backend's table
 *
 * Neon ids: a branch has an id (br-...) and a name; tether names its
 * branches (tether.<pin id>, tether.ws.<dataset8>.<bookmark>) and looks
 * them up by name. */
#ifndef TETHER_NEON_H
#define TETHER_NEON_H

#include <tether/backend.h>

#include "store/http/http.h"

#include <pthread.h>

#define NEON_KIND "neon"
#define NEON_DEFAULT_API "https://console.neon.tech/api/v2"
/* A fork tries a working branch X, then its siblings X.2 .. X.<this>. */
#define NEON_MAX_SIBLINGS 100

struct neon_loc {
	const char *project_id;
	const char *database;
	const char *role;
	const char *branch;         /* the upstream branch (default main) */
	const char *working_branch; /* tether's name, as the engine gave it */
};

/* What one command keeps for one project: the HTTP client, and under
 * `mu` the read_write endpoints it found or made (branch id ->
 * endpoint id), so that objects asking at once create one, and the branch
 * list, so that ten objects of the project list it once. */
struct neon_session {
	struct tt_http *http;
	pthread_mutex_t mu;
	json_t *endpoints;
	/* Under its own lock (an endpoint is made while `mu` is held): the
	 * project's branch list, until a request that is not a GET (one that
	 * may change it). */
	pthread_mutex_t branches_mu;
	json_t *branches;
};

/* One call's connection to the control plane. */
struct neon_conn {
	struct tt_http *http;
	int own_http;
	struct neon_session *session; /* may be NULL */
	char *api;                    /* api_url, no trailing slash */
	char *auth;                   /* "Bearer ..." */
	const char *project;
	const char *key; /* the object's key, for messages */
	int protected_pins;
};

/* locator.c */
int neon_read_locator(const json_t *locator, struct neon_loc *out);
int neon_valid_branch_name(const char *s);
int neon_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                      json_t **locator);
int neon_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity);
int neon_check_state(const json_t *state, const char **key);
extern const struct tether_add_option neon_add_options[];
extern const char *const neon_secret_keys[];
/* The branch the locator reads: its working branch, else its branch. */
const char *neon_position(const struct neon_loc *loc);

/* api.c */
int neon_connect(const struct tether_bctx *ctx, const struct neon_loc *loc, struct neon_conn *c);
void neon_disconnect(struct neon_conn *c);
int neon_begin(const struct tether_bctx *ctx, const json_t *locator, struct neon_loc *loc, struct neon_conn *c);
/* One API call to `path` (under api_url, escaped). 423, 429 and 503 are
 * retried with backoff for about a minute; a GET or DELETE also after a
 * dropped connection. *out: the JSON of a 2xx answer. A status in
 * ok_statuses (0-terminated) is 0 too with *status set; any other non-2xx
 * is an error naming the object, the request and Neon's message. When the
 * answer lists operations, they are polled until finished. */
int neon_request(struct neon_conn *c, const char *method, const char *path, const json_t *body,
                 const long *ok_statuses, long *status, json_t **out);
char *neon_esc(const char *s);
/* Every branch of the project ({"branches": [...]}'s array). */
int neon_list_branches(struct neon_conn *c, json_t **branches);
/* The branch called `name` (a new reference) or NULL when absent. */
json_t *neon_find_branch(const json_t *branches, const char *name);
int neon_branch_by_name(struct neon_conn *c, const char *name, json_t **branch);
/* Names of the branches whose parent is `id` (a new array). */
json_t *neon_children(const json_t *branches, const char *id);
int neon_session_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session);
void neon_session_close(const struct tether_bctx *ctx, void *session);

/* compute.c */
/* The id of an endpoint of `type` ("read_write" or "read_only") on the
 * branch, created (and waited for) when there is none. */
int neon_endpoint(struct neon_conn *c, const char *branch_id, const char *type, char **endpoint_id);
/* The Postgres connection URI of database/role on that endpoint. */
int neon_connection_uri(struct neon_conn *c, const struct neon_loc *loc, const char *branch_id,
                        const char *endpoint_id, char **uri);
/* {lsn, commit_xid} read over SQL on the branch. */
int neon_probe(struct neon_conn *c, const struct neon_loc *loc, const char *branch_name, const char *uri,
               char **lsn, char **commit_xid);
/* Sessions that hold a transaction id (writers), other than ours. */
int neon_writers(struct neon_conn *c, const char *branch_name, const char *uri, int *busy, char **why);
/* {lsn, commit_xid} of branch `name`, read on an endpoint of `type`. */
int neon_read_branch(struct neon_conn *c, const struct neon_loc *loc, const char *name, const char *type, char **lsn,
                     char **commit_xid);
/* Connect to `branch_name` of the locator (read_write endpoint). */
int neon_branch_uri(struct neon_conn *c, const struct neon_loc *loc, const char *branch_name, const char *type,
                    json_t **branch, char **uri);

/* refs.c */
int neon_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                     struct tether_fingerprint *out);
int neon_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
             json_t **pin_ref, int *created);
int neon_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref);
int neon_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs);
int neon_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                int *ok, char **detail);
int neon_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                     const json_t *pin_ref, int *ok, char **detail);
/* Delete a branch by id and wait for Neon to finish. */
int neon_delete_branch(struct neon_conn *c, const char *id);
/* Delete branch `name` of the list `all` unless branches hang off it
 * (TETHER_EREFUSED naming them and `rule`); 0 when it is absent. */
int neon_delete_leaf(struct neon_conn *c, const json_t *all, const char *name, const char *rule);

/* fork.c */
int neon_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              const char *branch, const json_t *expect, json_t **working_ref);
int neon_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              const json_t *working_ref, int read_only, json_t **handle);
int neon_check_quiescence(const struct tether_bctx *ctx, const json_t *locator, int *busy, char **why);
/* TETHER_EREFUSED when `name` is the locator's base branch. */
int neon_refuse_base(const struct neon_loc *loc, const char *name, const char *doing);

/* workrefs.c */
int neon_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref);
int neon_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs);
int neon_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                               const json_t *expect);
/* Of `base` and its siblings base.N in `all`, the one in use: the one
 * Neon last created or reset (ties: the higher N). malloc'd; NULL when
 * there is none. */
char *neon_current_sibling(const json_t *all, const char *base);

#endif
