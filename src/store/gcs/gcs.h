/* The GCS store (tether-store-gs.so): gs://BUCKET/PREFIX through Cloud
 * Storage's JSON API (storage/v1) on the shared HTTP client. What its
 * files share: the open store, and the one way every request is made and
 * every failure reported.
 *
 *   module.c    the ops table, open and close
 *   endpoint.c  where requests go (options, STORAGE_EMULATOR_HOST, Google)
 *   request.c   one call: a bearer token, retries, the error of a failure
 *   object.c    an object resource (JSON) as a tether_store_stat
 *   read.c      get, head, stat, get_version
 *   write.c     put, copy, delete
 *   list.c      list, list_stat, list_versions, the root
 *   auth.c      credentials: which source, a token cached and refreshed
 *   keyfile.c   a JSON key file (service_account, authorized_user)
 *   token.c     the token endpoints (OAuth, the metadata server)
 *   rsa_key.c, jwt.c  the service account's signed assertion */
#ifndef TT_STORE_GCS_H
#define TT_STORE_GCS_H

#include <tether/store.h>

#include "store/http/http.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct tt_gcs_auth;

struct tt_gcs {
	char *uri;    /* gs://bucket[/prefix], canonical: every message names it */
	char *bucket;
	char *root;   /* the prefix with a trailing '/', or "" for the bucket's root */
	char *base;   /* the endpoint, "https://storage.googleapis.com", no trailing '/' */
	struct tt_http *http;
	struct tt_gcs_auth *auth; /* NULL: requests go unauthenticated (an emulator) */
	pthread_mutex_t lock;
	int bucket_seen; /* the bucket answered once: a 404 is then the object's */
};

/* The endpoint: options.endpoint_url, else STORAGE_EMULATOR_HOST ("host:port"
 * or a URL; plain http), else Google's. malloc'd in *base, no trailing '/';
 * *emulator = 1 when it came from STORAGE_EMULATOR_HOST. */
int tt_gcs_endpoint(const json_t *options, char **base, int *emulator);

/* One API call. `what` names the object or bucket for messages ("gs://b/k").
 * url is complete (query included). */
struct tt_gcs_call {
	const char *method;
	const char *url;
	const char *what;
	const struct tt_http_header *headers; /* besides Authorization */
	size_t n_headers;
	const void *body;
	size_t body_len;
	int *attempts; /* may be NULL; set to the attempts made */
};

/* Make the call, with a bearer token when the store has credentials,
 * again after a retryable failure (429, 5xx, a lost connection: with
 * tt_http_backoff, up to max_attempts) and once after a 401 with a
 * token fetched anew. 0 with *resp filled whatever the final status;
 * the caller judges it (tt_gcs_fail for an error status). */
int tt_gcs_call(struct tt_gcs *g, const struct tt_gcs_call *c, struct tt_http_response *resp);

/* The TETHER_E* error for a response that is not a success, message set:
 * "gs://b/k: HTTP 412 conditionNotMet: <the server's message>"; 401/403
 * EAUTH, 404 ENOTFOUND (the bucket's absence named as such), 412
 * EREFUSED, 429/5xx ETRANSIENT, any other EIO. Returns the code. */
int tt_gcs_fail(struct tt_gcs *g, const char *what, const struct tt_http_response *resp);

/* tt_gcs_fail without the bucket check: "<what>: HTTP <status> <reason>:
 * <message><extra>" (extra may be NULL), with code, or (0) the code
 * tt_gcs_fail gives the status. For the token endpoints too (OAuth's
 * {"error", "error_description"} is read). */
int tt_gcs_status_error(const char *what, const struct tt_http_response *resp, const char *extra, int code);

/* Does the bucket exist? Asked once; a yes is remembered (bucket_seen). */
int tt_gcs_bucket_exists(struct tt_gcs *g, int *exists);
/* A 404 on an object: ENOTFOUND naming the bucket when it is the bucket
 * that is missing, else 0 (the object is). */
int tt_gcs_check_bucket(struct tt_gcs *g);

/* URLs, malloc'd (NULL: out of memory). The object's full name is the
 * root followed by key. */
char *tt_gcs_object_name(const struct tt_gcs *g, const char *key);
/* {base}/storage/v1/b/{bucket}/o/{name}{suffix}; suffix ("" or
 * "?alt=media&...") already escaped. */
char *tt_gcs_object_url(const struct tt_gcs *g, const char *name, const char *suffix);
/* "gs://bucket/name" for messages. */
char *tt_gcs_what(const struct tt_gcs *g, const char *name);

/* An object resource of the JSON API as tether says it: size, the
 * generation as version token and version id, is_latest (no timeDeleted).
 * 0, or EIO naming `what` when the resource lacks them. */
int tt_gcs_object_stat(const json_t *obj, const char *what, struct tether_store_stat *st);
/* Is s a generation (decimal digits, at most 20)? */
int tt_gcs_is_generation(const char *s);
/* A response body's JSON (EIO naming `what` when it is not an object). */
int tt_gcs_json_body(const struct tt_http_response *resp, const char *what, json_t **out);

int tt_gcs_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
               struct tether_store_version *version);
int tt_gcs_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size);
int tt_gcs_stat(void *impl, const char *key, const char *version_id, struct tether_store_stat *st);
int tt_gcs_get_version(void *impl, const char *key, const char *version_id, uint64_t offset, uint64_t length,
                       uint8_t **data, size_t *len, struct tether_store_stat *st);
int tt_gcs_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
               const struct tether_store_version *expect, struct tether_store_version *new_version);
int tt_gcs_copy(void *impl, const char *from, const char *to, const struct tether_store_version *if_match);
int tt_gcs_del(void *impl, const char *key);
int tt_gcs_list(void *impl, const char *prefix, const char *start_after, size_t max_keys, tether_store_key_fn emit,
                void *ud, int *more);
int tt_gcs_list_stat(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                     tether_store_stat_fn emit, void *ud, int *more);
int tt_gcs_list_versions(void *impl, const char *key, tether_store_stat_fn emit, void *ud);
int tt_gcs_root_exists(void *impl, int *exists);
int tt_gcs_make_root(void *impl);
int tt_gcs_remove_root(void *impl);

#endif
