/* One blob at a time: Get Blob (whole or a range, x-ms-range), Get Blob
 * Properties, Put Blob (a block blob in one request, with If-None-Match:
 * * or If-Match), Copy Blob within the account (If-None-Match: * on the
 * target, x-ms-source-if-match on the source) and Delete Blob. A blob's
 * version token is its ETag; its version id, x-ms-version-id, exists only
 * where the account keeps versions. */
#include "store/azure/az.h"

#include "util/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long copy waits for a copy the service left pending. */
#define COPY_WAIT_SECONDS 60

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

static char *version_query(const char *version_id)
{
	if (!version_id || !*version_id)
		return strdup("");
	char *esc = tt_http_escape(version_id, 0);
	char *q = esc ? tt_strdupf("versionid=%s", esc) : NULL;
	free(esc);
	return q;
}

/* What the headers of a Get Blob or Get Blob Properties answer say. */
static void stat_from_headers(const struct tt_http_response *resp, int ranged, struct tether_store_stat *st)
{
	memset(st, 0, sizeof *st);
	st->exists = 1;
	az_version_from_etag(tt_http_header(resp, "ETag"), &st->version);
	const char *id = tt_http_header(resp, "x-ms-version-id");
	snprintf(st->version_id, sizeof st->version_id, "%s", id ? id : "");
	const char *current = tt_http_header(resp, "x-ms-is-current-version");
	st->is_latest = !current || strcmp(current, "true") == 0;
	/* A range's answer gives the object's size after the '/' of
	 * Content-Range, "bytes 0-9/42". */
	const char *range = ranged ? tt_http_header(resp, "Content-Range") : NULL;
	const char *slash = range ? strrchr(range, '/') : NULL;
	const char *len = slash ? slash + 1 : tt_http_header(resp, "Content-Length");
	st->size = len ? strtoull(len, NULL, 10) : 0;
}

/* An answer to a request for version_id that is of another version: a
 * server without versions (Azurite) ignores versionid and answers with
 * the current blob, which is not the version asked for. */
static int other_version(const struct az_store *s, const char *key, const char *version_id,
                         const struct tether_store_stat *st)
{
	if (!version_id || !*version_id || strcmp(st->version_id, version_id) == 0)
		return 0;
	char *uri = az_uri_of(s, key);
	int rc = tether_error_set(TETHER_ENOTFOUND, "%s: no version '%s': the answer was of %s%s%s", uri ? uri : s->uri,
	                          version_id, *st->version_id ? "version '" : "a blob without versions",
	                          st->version_id, *st->version_id ? "'" : "");
	free(uri);
	return rc;
}

int az_stat(void *impl, const char *key, const char *version_id, struct tether_store_stat *st)
{
	struct az_store *s = impl;
	char *q = version_query(version_id);
	if (!q)
		return oom();
	struct az_request r = {.method = "HEAD", .key = key, .query = q};
	struct tt_http_response resp;
	int rc = az_perform(s, &r, &resp);
	free(q);
	memset(st, 0, sizeof *st);
	if (!rc && resp.status == 200) {
		stat_from_headers(&resp, 0, st);
		rc = other_version(s, key, version_id, st);
	} else if (!rc) {
		char code[128];
		int absent = resp.status == 404 && strcmp(az_error_code(&resp, code, sizeof code), "ContainerNotFound") != 0;
		if (absent && version_id && *version_id) {
			char *uri = az_uri_of(s, key);
			rc = tether_error_set(TETHER_ENOTFOUND, "%s: no version '%s' (HTTP 404)", uri ? uri : s->uri,
			                      version_id);
			free(uri);
		} else if (!absent) {
			rc = az_fail(s, "stat", key, &resp);
		}
	}
	tt_http_response_free(&resp);
	return rc;
}

int az_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size)
{
	struct tether_store_stat st;
	int rc = az_stat(impl, key, NULL, &st);
	*exists = !rc && st.exists;
	if (!rc && version)
		*version = st.version;
	if (!rc && size)
		*size = st.size;
	return rc;
}

/* Nothing to read (an empty range, or one past the end): what is there,
 * and no bytes; absent is TETHER_ENOTFOUND as for a read. */
static int read_nothing(struct az_store *s, const char *key, const char *version_id, uint8_t **data, size_t *len,
                        struct tether_store_stat *st)
{
	int rc = az_stat(s, key, version_id, st);
	if (!rc && !st->exists) {
		char *uri = az_uri_of(s, key);
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: not found (HTTP 404 BlobNotFound)", uri ? uri : s->uri);
		free(uri);
	}
	if (!rc && !(*data = malloc(1)))
		rc = oom();
	*len = 0;
	return rc;
}

int az_get_version(void *impl, const char *key, const char *version_id, uint64_t offset, uint64_t length,
                   uint8_t **data, size_t *len, struct tether_store_stat *st)
{
	struct az_store *s = impl;
	struct tether_store_stat local;
	*data = NULL;
	*len = 0;
	if (!st)
		st = &local;
	if (length == 0)
		return read_nothing(s, key, version_id, data, len, st);
	char range[64] = "";
	int ranged = offset > 0 || length != TETHER_STORE_TO_END;
	if (length != TETHER_STORE_TO_END && length - 1 > UINT64_MAX - offset)
		length = UINT64_MAX - offset + 1;
	if (ranged && length == TETHER_STORE_TO_END)
		snprintf(range, sizeof range, "bytes=%" PRIu64 "-", offset);
	else if (ranged)
		snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, offset, offset + (length - 1));
	struct tt_http_header h[] = {{"x-ms-range", range}};
	char *q = version_query(version_id);
	if (!q)
		return oom();
	struct az_request r = {.method = "GET", .key = key, .query = q, .headers = h, .n_headers = ranged ? 1 : 0};
	struct tt_http_response resp;
	int rc = az_perform(s, &r, &resp);
	free(q);
	if (!rc && (resp.status == 200 || resp.status == 206)) {
		stat_from_headers(&resp, resp.status == 206, st);
		rc = other_version(s, key, version_id, st);
		if (!rc) {
			*data = resp.body;
			*len = resp.body_len;
			resp.body = NULL;
		}
	} else if (!rc && resp.status == 416) {
		rc = read_nothing(s, key, version_id, data, len, st); /* the offset is past the end */
	} else if (!rc) {
		rc = az_fail(s, "get", key, &resp);
	}
	tt_http_response_free(&resp);
	return rc;
}

int az_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
           struct tether_store_version *version)
{
	struct tether_store_stat st;
	int rc = az_get_version(impl, key, NULL, offset, length, data, len, &st);
	if (!rc && version)
		*version = st.version;
	return rc;
}

int az_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
           const struct tether_store_version *expect, struct tether_store_version *new_version)
{
	struct az_store *s = impl;
	struct tt_http_header h[2] = {{"x-ms-blob-type", "BlockBlob"}};
	size_t n = 1;
	if (mode == TETHER_PUT_IF_ABSENT)
		h[n++] = (struct tt_http_header){"If-None-Match", "*"}; /* Azure answers 409 BlobAlreadyExists */
	else if (mode == TETHER_PUT_IF_MATCH)
		h[n++] = (struct tt_http_header){"If-Match", expect->token}; /* 412 ConditionNotMet */
	struct az_request r = {.method = "PUT", .key = key, .headers = h, .n_headers = n, .body = data, .body_len = len};
	struct tt_http_response resp;
	int rc = az_perform(s, &r, &resp);
	char code[128];
	if (!rc && resp.status == 201) {
		if (new_version)
			az_version_from_etag(tt_http_header(&resp, "ETag"), new_version);
	} else if (!rc && mode == TETHER_PUT_IF_MATCH && resp.status == 404 &&
	           strcmp(az_error_code(&resp, code, sizeof code), "BlobNotFound") == 0) {
		/* The object is gone: it is not at the version expected either. */
		char *uri = az_uri_of(s, key);
		rc = tether_error_set(TETHER_EREFUSED, "%s: put if-match: the object is not there (HTTP 404 BlobNotFound)",
		                      uri ? uri : s->uri);
		free(uri);
	} else if (!rc) {
		rc = az_fail(s, "put", key, &resp);
	}
	tt_http_response_free(&resp);
	return rc;
}

/* A copy the service left pending: its status, asked again with backoff,
 * until it is done or COPY_WAIT_SECONDS have passed. */
static int wait_for_copy(struct az_store *s, const char *to)
{
	time_t deadline = time(NULL) + COPY_WAIT_SECONDS;
	for (int attempt = 1;; attempt++) {
		int rc = tt_http_backoff(attempt < 6 ? attempt : 6);
		if (rc)
			return rc;
		struct az_request r = {.method = "HEAD", .key = to};
		struct tt_http_response resp;
		rc = az_perform(s, &r, &resp);
		const char *status = !rc && resp.status == 200 ? tt_http_header(&resp, "x-ms-copy-status") : NULL;
		char *uri = az_uri_of(s, to);
		const char *u = uri ? uri : s->uri;
		if (!rc && resp.status != 200)
			rc = az_fail(s, "copy (its status)", to, &resp);
		else if (!rc && (!status || strcmp(status, "success") == 0))
			rc = 0;
		else if (!rc && status && strcmp(status, "pending") != 0)
			rc = tether_error_set(TETHER_EIO, "%s: copy: x-ms-copy-status %s (%s)", u, status,
			                      tt_http_header(&resp, "x-ms-copy-status-description")
			                              ? tt_http_header(&resp, "x-ms-copy-status-description")
			                              : "no description");
		else if (!rc && time(NULL) >= deadline)
			rc = tether_error_set(TETHER_ETRANSIENT, "%s: copy: still pending after %d s (x-ms-copy-id %s); the "
			                      "copy may finish later", u, COPY_WAIT_SECONDS,
			                      tt_http_header(&resp, "x-ms-copy-id") ? tt_http_header(&resp, "x-ms-copy-id")
			                                                            : "?");
		else if (!rc)
			rc = -1; /* pending: ask again */
		free(uri);
		tt_http_response_free(&resp);
		if (rc != -1)
			return rc;
	}
}

int az_copy(void *impl, const char *from, const char *to, const struct tether_store_version *if_match)
{
	struct az_store *s = impl;
	char *source = az_blob_url(s, from);
	/* Authorised by a SAS token alone, the source needs it too. */
	if (source && !s->cfg.key && s->cfg.sas) {
		char *with = tt_strdupf("%s?%s", source, s->cfg.sas);
		free(source);
		source = with;
	}
	if (!source)
		return oom();
	struct tt_http_header h[3] = {{"x-ms-copy-source", source}, {"If-None-Match", "*"}};
	size_t n = 2;
	if (if_match && if_match->token[0])
		h[n++] = (struct tt_http_header){"x-ms-source-if-match", if_match->token};
	struct az_request r = {.method = "PUT", .key = to, .headers = h, .n_headers = n};
	struct tt_http_response resp;
	int rc = az_perform(s, &r, &resp);
	free(source);
	if (!rc && (resp.status == 202 || resp.status == 201)) {
		const char *status = tt_http_header(&resp, "x-ms-copy-status");
		if (status && strcmp(status, "pending") == 0)
			rc = wait_for_copy(s, to);
		else if (status && strcmp(status, "success") != 0)
			rc = az_fail(s, "copy", to, &resp);
	} else if (!rc && resp.status == 404) {
		char *uri = az_uri_of(s, from);
		char code[128];
		const char *c = az_error_code(&resp, code, sizeof code);
		rc = strcmp(c, "ContainerNotFound") == 0
		             ? az_fail(s, "copy", to, &resp)
		             : tether_error_set(TETHER_ENOTFOUND, "%s: copy: the source is not there (HTTP 404 %s)",
		                                uri ? uri : s->uri, *c ? c : "(no code)");
		free(uri);
	} else if (!rc) {
		rc = az_fail(s, "copy", to, &resp);
	}
	tt_http_response_free(&resp);
	return rc;
}

int az_delete(void *impl, const char *key)
{
	struct az_store *s = impl;
	/* A blob with snapshots is deleted with them, or not at all. */
	struct tt_http_header h[] = {{"x-ms-delete-snapshots", "include"}};
	struct az_request r = {.method = "DELETE", .key = key, .headers = h, .n_headers = 1};
	struct tt_http_response resp;
	int rc = az_perform(s, &r, &resp);
	char code[128];
	if (!rc && resp.status != 202 && resp.status != 200 &&
	    !(resp.status == 404 && strcmp(az_error_code(&resp, code, sizeof code), "BlobNotFound") == 0))
		rc = az_fail(s, "delete", key, &resp);
	tt_http_response_free(&resp);
	return rc;
}
