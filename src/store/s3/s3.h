/* The S3 store (tether-store-s3.so): what its files share.
 *
 *   s3_open.c      options, the endpoint and addressing, open and close
 *   s3_address.c   which addressing style, and the URL of a request
 *   s3_query.c     the canonical query string libcurl's SigV4 needs
 *   s3_request.c   one signed request, with retries and fresh credentials
 *   s3_errors.c    an S3 answer as a TETHER_E* code and a one-line message
 *   s3_objects.c   get, head, stat, put, copy, delete
 *   s3_listing.c   ListObjectsV2, ListObjectVersions and the root
 *   s3_module.c    the ops table the module exports */
#ifndef TETHER_STORE_S3_H
#define TETHER_STORE_S3_H

#include <tether/backend.h>
#include <tether/store.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct tt_http;
struct tt_http_response;
struct tt_aws_provider;

/* Where requests go: scheme://host[:port][/base] and how a bucket is named
 * in them. */
struct s3_endpoint {
	char *scheme;    /* "http" or "https" */
	char *authority; /* host[:port] as given (IPv6 in brackets) */
	char *host;      /* host alone, for the addressing choice */
	char *base;      /* a path before the bucket ("" or "/x", no trailing '/') */
	int path_style;  /* 1: scheme://authority/base/bucket/key; 0: bucket.authority */
};

struct s3 {
	char *uri;    /* s3://bucket[/root], canonical (messages) */
	char *bucket;
	char *root;   /* the prefix under the bucket, "" or "a/b" (no trailing '/') */
	char *region;
	struct s3_endpoint ep;
	int conditional_put; /* 0 when options.conditional_put = "disabled" */
	struct tt_http *http;
	json_t *options; /* a copy, for the credential chain, made on first use */
	pthread_mutex_t creds_lock;
	struct tt_aws_provider *creds; /* NULL until the first request */
	int bucket_seen; /* a request found the bucket: a 404 HEAD is then the key's */
};

/* ---- addressing (s3_address.c) ---- */

/* Parse an endpoint URL ("http://127.0.0.1:8333", "https://s3.eu-west-1.amazonaws.com/base").
 * TETHER_EUSAGE naming it when it is not one. */
int s3_endpoint_parse(const char *url, struct s3_endpoint *ep);
void s3_endpoint_clear(struct s3_endpoint *ep);
/* Choose the addressing style as AWS's SDKs do: path-style for an IP
 * address or localhost, or a bucket name a host name cannot carry, or
 * force_path_style; virtual_hosted_style_request forces virtual-hosted
 * (-1: option not given). TETHER_EUSAGE when both are forced. */
int s3_choose_path_style(struct s3_endpoint *ep, const char *bucket, int force_path_style, int force_virtual);
/* The URL for bucket, object name (the full key under the bucket, NULL for
 * the bucket itself) and a canonical query ("" or NULL: none). malloc'd. */
char *s3_url(const struct s3_endpoint *ep, const char *bucket, const char *object, const char *query);

/* ---- the canonical query (s3_query.c) ---- */

struct s3_query {
	struct s3_param {
		char *name, *value;
	} *params;
	size_t n;
	int oom;
};

/* Add name=value (value "" writes "name="; NULL is the same). */
void s3_query_add(struct s3_query *q, const char *name, const char *value);
/* Sorted by encoded name, then value; names and values percent-encoded
 * (RFC 3986 unreserved left as is); "" when empty. NULL on out of memory. */
char *s3_query_build(const struct s3_query *q);
void s3_query_clear(struct s3_query *q);

/* ---- requests (s3_request.c) ---- */

struct s3_call {
	const char *method;
	const char *object; /* full key under the bucket; NULL: the bucket */
	const char *query;  /* canonical, or NULL */
	const struct tt_http_header *headers;
	size_t n_headers;
	const void *body;
	size_t body_len;
	size_t max_body;
};

/* One request, signed anew each attempt with the current credentials and
 * retried (tt_http_retryable, tt_http_backoff) up to max_attempts. 0 with
 * *resp on any answer from the server, even an error status (the caller
 * reads it); else the error of the last attempt, named by `what` (a
 * URI). *attempts: how many were made. */
int s3_perform(struct s3 *s, const struct s3_call *c, const char *what, struct tt_http_response *resp,
               int *attempts);

/* ---- errors (s3_errors.c) ---- */

/* The code of an S3 error answer ("NoSuchKey"), from its XML body, copied
 * into code ("" when the body has none, e.g. a HEAD). */
void s3_error_code(const struct tt_http_response *resp, char *code, size_t n, char *message, size_t mn);
/* Does the answer say NoSuchBucket? */
int s3_no_bucket(const struct tt_http_response *resp);
/* An error answer as TETHER_E* with a one-line message naming what (a
 * URI), the HTTP status and the server's code and message. A missing
 * bucket names the bucket. */
int s3_fail(const struct s3 *s, const char *what, const struct tt_http_response *resp, int attempts);

/* ---- names ---- */

/* The full key under the bucket for a store key (root + "/" + key). */
char *s3_object_name(const struct s3 *s, const char *key);
/* "s3://bucket/<object>" for messages. */
char *s3_object_uri(const struct s3 *s, const char *object);

/* The store's ops (s3_objects.c, s3_listing.c, s3_open.c). */
int s3_open(const char *uri, const json_t *options, void **impl);
void s3_close(void *impl);
int s3_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
           struct tether_store_version *version);
int s3_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size);
int s3_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
           const struct tether_store_version *expect, struct tether_store_version *new_version);
int s3_copy(void *impl, const char *from, const char *to, const struct tether_store_version *if_match);
int s3_del(void *impl, const char *key);
int s3_stat(void *impl, const char *key, const char *version_id, struct tether_store_stat *st);
int s3_get_version(void *impl, const char *key, const char *version_id, uint64_t offset, uint64_t length,
                   uint8_t **data, size_t *len, struct tether_store_stat *st);
int s3_list(void *impl, const char *prefix, const char *start_after, size_t max_keys, tether_store_key_fn emit,
            void *ud, int *more);
int s3_list_stat(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                 tether_store_stat_fn emit, void *ud, int *more);
int s3_list_versions(void *impl, const char *key, tether_store_stat_fn emit, void *ud);
int s3_root_exists(void *impl, int *exists);
int s3_make_root(void *impl);
int s3_remove_root(void *impl);

int s3_oom(void);

#endif
