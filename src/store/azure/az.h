/* The Azure Blob store (tether-store-az.so): az://CONTAINER/PATH and
 * Hadoop's abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH, on the
 * Blob service's REST API through the shared HTTP client (store/http).
 *
 *   config.c   the account, its key or SAS token, the endpoint: from the
 *              store options, else the variables Azure's tools read
 *   sign.c     SharedKey: the string to sign and its HMAC-SHA256
 *   request.c  one signed request with retries; errors as TETHER_E*
 *   blob.c     get, head/stat, put, copy, delete
 *   list.c     List Blobs: list, list_stat, list_versions, the root
 *   module.c   the URI, open/close, the ops the module exports */
#ifndef TETHER_STORE_AZURE_AZ_H
#define TETHER_STORE_AZURE_AZ_H

#include "store/http/http.h"

#include <tether/backend.h>
#include <tether/store.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The REST API version every request names (x-ms-version): one that has
 * If-None-Match on Put Blob, blob versions and x-ms-source-if-match. */
#define AZ_API_VERSION "2021-08-06"

struct az_config {
	char *account;      /* the storage account's name */
	uint8_t *key;       /* its key, decoded; NULL: none */
	size_t key_len;
	char *sas;          /* a SAS token, without a leading '?'; NULL: none */
	char *endpoint;     /* the blob endpoint, no trailing '/':
	                     * https://ACCOUNT.blob.core.windows.net, or a
	                     * path-style one, http://127.0.0.1:10000/ACCOUNT */
	int allow_http;     /* plain http:// allowed */
	long connect_timeout_ms, timeout_ms;
	const char *source; /* where the credentials came from, for messages */
};

/* Resolve the configuration of a store: options (may be NULL), else the
 * environment. account_hint is the account an abfs:// URI names (NULL for
 * az://). 0, or TETHER_EUSAGE with a one-line message naming the option
 * or variable at fault. */
int az_config_resolve(const json_t *options, const char *account_hint, struct az_config *cfg);
void az_config_free(struct az_config *cfg);

/* Parse an Azure connection string ("Key=Value;..."); `what` names its
 * source for messages (an option or a variable). Fills what it carries. */
int az_connection_string_parse(const char *s, const char *what, struct az_config *cfg);

/* SharedKey (Microsoft's "Authorize with Shared Key", Blob service, API
 * versions 2015-02-21 and later). The string to sign of one request:
 * method, the standard headers' values in their fixed order (Content-
 * Length "" when 0), the x-ms-* headers lowercased and sorted, then
 * "/ACCOUNT" + the URL's path as sent + each query parameter, lowercased,
 * sorted, decoded. malloc'd; NULL when out of memory. */
char *az_string_to_sign(const char *method, const char *account, const char *url_path, const char *query,
                        const struct tt_http_header *headers, size_t n_headers, size_t content_length);
/* base64(HMAC-SHA256(key, sts)) into out (at least 45 bytes). */
void az_sign(const uint8_t *key, size_t key_len, const char *sts, char *out);

struct az_store {
	char *uri;       /* canonical, for messages */
	char *container;
	char *prefix;    /* "" or "PATH/" */
	struct az_config cfg;
	struct tt_http *http;
	/* Where the last call of a listing stopped (list.c), so the next one,
	 * which starts after the last key it gave, goes on from there rather
	 * than paging from the prefix's first blob. */
	pthread_mutex_t resume_lock;
	struct az_resume *resume;
};

/* One request to the container (key NULL) or to a blob under the root. */
struct az_request {
	const char *method;
	const char *key;   /* relative to the root; NULL: the container */
	const char *query; /* "name=value&..." already encoded, "" or NULL: none */
	const struct tt_http_header *headers;
	size_t n_headers;
	const void *body;
	size_t body_len;
};

/* Sign and perform r, with retries on what tt_http_retryable calls worth
 * one; resp holds the final answer (any status). An error only when no
 * answer came, with the message naming the URI. */
int az_perform(struct az_store *s, const struct az_request *r, struct tt_http_response *resp);
/* The TETHER_E* error for an answer that is not a success: the message
 * names op, the az URI of key (NULL: the root), the HTTP status and
 * Azure's error code. */
int az_fail(const struct az_store *s, const char *op, const char *key, const struct tt_http_response *resp);
/* Azure's error code of an answer (x-ms-error-code, else the XML body's
 * <Code>), or "" when it names none. Valid while resp lives, or copied
 * into buf. */
const char *az_error_code(const struct tt_http_response *resp, char *buf, size_t n);
/* The full blob URL of key (for x-ms-copy-source), malloc'd. */
char *az_blob_url(const struct az_store *s, const char *key);
/* "az://container/prefix/key" for messages, malloc'd. */
char *az_uri_of(const struct az_store *s, const char *key);
/* An ETag as a version token: quoted, as the Etag header carries it
 * (a listing gives it bare). */
void az_version_from_etag(const char *etag, struct tether_store_version *v);

int az_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
           struct tether_store_version *version);
int az_get_version(void *impl, const char *key, const char *version_id, uint64_t offset, uint64_t length,
                   uint8_t **data, size_t *len, struct tether_store_stat *st);
int az_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size);
int az_stat(void *impl, const char *key, const char *version_id, struct tether_store_stat *st);
int az_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
           const struct tether_store_version *expect, struct tether_store_version *new_version);
int az_copy(void *impl, const char *from, const char *to, const struct tether_store_version *if_match);
int az_delete(void *impl, const char *key);
int az_list(void *impl, const char *prefix, const char *start_after, size_t max_keys, tether_store_key_fn emit,
            void *ud, int *more);
int az_list_stat(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                 tether_store_stat_fn emit, void *ud, int *more);
int az_list_versions(void *impl, const char *key, tether_store_stat_fn emit, void *ud);
int az_root_exists(void *impl, int *exists);
void az_resume_free(struct az_resume *r);
int az_make_root(void *impl);
int az_remove_root(void *impl);

#endif
