/* Reading objects: metadata (stat, head) and bytes (get, get_version),
 * current or at a generation. A read of bytes is one request: the
 * generation it read comes back in x-goog-generation, so the bytes and
 * the version they are said to be cannot disagree. */
#include "store/gcs/gcs.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "gs://b/k", or "gs://b/k (generation G)". */
static char *what_of(const struct tt_gcs *g, const char *name, const char *version_id)
{
	return version_id ? tt_strdupf("gs://%s/%s (generation %s)", g->bucket, name, version_id)
	                  : tt_gcs_what(g, name);
}

/* A 404 for the object (the bucket exists): absent now, or no such
 * generation. */
static int not_found(struct tt_gcs *g, const char *what, const char *version_id, int *absent)
{
	int rc = tt_gcs_check_bucket(g);
	if (rc)
		return rc;
	if (version_id)
		return tether_error_set(TETHER_ENOTFOUND, "%s: the object has no such generation (HTTP 404)", what);
	if (absent) {
		*absent = 1;
		return 0;
	}
	return tether_error_set(TETHER_ENOTFOUND, "%s: no such object (HTTP 404)", what);
}

int tt_gcs_stat(void *impl, const char *key, const char *version_id, struct tether_store_stat *st)
{
	struct tt_gcs *g = impl;
	if (version_id && !*version_id)
		version_id = NULL;
	memset(st, 0, sizeof *st);
	char *name = tt_gcs_object_name(g, key);
	char *what = name ? what_of(g, name, version_id) : NULL;
	if (!what) {
		free(name);
		return tt_fail_oom();
	}
	if (version_id && !tt_gcs_is_generation(version_id)) {
		int rc = tether_error_set(TETHER_ENOTFOUND, "%s: not a GCS generation (a decimal number)", what);
		free(name);
		free(what);
		return rc;
	}
	char *suffix = tt_strdupf("?fields=name,size,generation,timeDeleted%s%s", version_id ? "&generation=" : "",
	                          version_id ? version_id : "");
	char *url = suffix ? tt_gcs_object_url(g, name, suffix) : NULL;
	int rc;
	if (!url)
		rc = tt_fail_oom();
	else {
		struct tt_http_response resp;
		struct tt_gcs_call c = {.method = "GET", .url = url, .what = what};
		rc = tt_gcs_call(g, &c, &resp);
		json_t *obj = NULL;
		int absent = 0;
		if (rc == 0 && resp.status == 200 && (rc = tt_gcs_json_body(&resp, what, &obj)) == 0)
			rc = tt_gcs_object_stat(obj, what, st);
		else if (rc == 0 && resp.status == 404)
			rc = not_found(g, what, version_id, &absent);
		else if (rc == 0)
			rc = tt_gcs_fail(g, what, &resp);
		json_decref(obj);
		tt_http_response_free(&resp);
	}
	free(suffix);
	free(url);
	free(name);
	free(what);
	return rc;
}

int tt_gcs_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size)
{
	struct tether_store_stat st;
	int rc = tt_gcs_stat(impl, key, NULL, &st);
	if (rc)
		return rc;
	*exists = st.exists;
	if (version)
		*version = st.version;
	if (size)
		*size = st.size;
	return 0;
}

/* "bytes=A-B" for [offset, offset+length), or "" for the whole object. */
static void range_header(uint64_t offset, uint64_t length, char *out, size_t n)
{
	if (offset == 0 && length == TETHER_STORE_TO_END)
		out[0] = '\0';
	else if (length == TETHER_STORE_TO_END || length > UINT64_MAX - offset)
		snprintf(out, n, "bytes=%" PRIu64 "-", offset);
	else
		snprintf(out, n, "bytes=%" PRIu64 "-%" PRIu64, offset, offset + length - 1);
}

/* What the answer to a media GET says of the object it read. */
static int stat_of_media(const struct tt_http_response *resp, const char *what, struct tether_store_stat *st)
{
	memset(st, 0, sizeof *st);
	const char *gen = tt_http_header(resp, "x-goog-generation");
	const char *stored = tt_http_header(resp, "x-goog-stored-content-length");
	if (!tt_gcs_is_generation(gen))
		return tether_error_set(TETHER_EIO, "%s: the server's answer has no x-goog-generation", what);
	st->exists = 1;
	st->is_latest = 1;
	snprintf(st->version.token, sizeof st->version.token, "%s", gen);
	snprintf(st->version_id, sizeof st->version_id, "%s", gen);
	const char *range = tt_http_header(resp, "content-range"); /* "bytes A-B/TOTAL" */
	const char *total = range ? strrchr(range, '/') : NULL;
	if (stored && *stored && strspn(stored, "0123456789") == strlen(stored))
		st->size = strtoull(stored, NULL, 10);
	else if (total && total[1] && strspn(total + 1, "0123456789") == strlen(total + 1))
		st->size = strtoull(total + 1, NULL, 10);
	else
		st->size = resp->body_len; /* a whole object's answer */
	return 0;
}

int tt_gcs_get_version(void *impl, const char *key, const char *version_id, uint64_t offset, uint64_t length,
                       uint8_t **data, size_t *len, struct tether_store_stat *st)
{
	struct tt_gcs *g = impl;
	if (version_id && !*version_id)
		version_id = NULL;
	struct tether_store_stat seen;
	/* Nothing to read (no range can say "no bytes"), or a generation that
	 * is no number: what stat says is the whole answer. */
	if (length == 0 || (version_id && !tt_gcs_is_generation(version_id))) {
		int rc = tt_gcs_stat(impl, key, version_id, &seen);
		if (rc == 0 && !seen.exists)
			rc = tether_error_set(TETHER_ENOTFOUND, "gs://%s/%s%s: no such object", g->bucket, g->root, key);
		if (rc == 0 && !(*data = malloc(1)))
			rc = tt_fail_oom();
		if (rc)
			return rc;
		*len = 0;
		if (st)
			*st = seen;
		return 0;
	}
	char *name = tt_gcs_object_name(g, key);
	char *what = name ? what_of(g, name, version_id) : NULL;
	char *suffix = tt_strdupf("?alt=media%s%s", version_id ? "&generation=" : "", version_id ? version_id : "");
	char *url = name && suffix ? tt_gcs_object_url(g, name, suffix) : NULL;
	int rc = 0;
	if (!what || !url)
		rc = tt_fail_oom();
	char range[64];
	range_header(offset, length, range, sizeof range);
	/* Accept-Encoding: gzip asks for the stored bytes as they are: for an
	 * object uploaded with Content-Encoding: gzip, GCS would otherwise
	 * decompress it (so its bytes would not be its size) and ignore the
	 * range. libcurl decodes nothing unless told to. */
	struct tt_http_header h[2] = {{"Accept-Encoding", "gzip"}, {"Range", range}};
	struct tt_http_response resp = {0};
	struct tt_gcs_call c = {.method = "GET", .url = url, .what = what, .headers = h, .n_headers = *range ? 2 : 1};
	if (rc == 0)
		rc = tt_gcs_call(g, &c, &resp);
	if (rc == 0 && (resp.status == 200 || resp.status == 206)) {
		if ((rc = stat_of_media(&resp, what, &seen)) == 0) {
			*data = resp.body;
			*len = resp.body_len;
			resp.body = NULL;
			if (st)
				*st = seen;
		}
	} else if (rc == 0 && resp.status == 416) {
		/* The range starts at or past the end: no bytes, and the object's
		 * version from a stat (a 416 need not carry it). */
		rc = tt_gcs_stat(impl, key, version_id, &seen);
		if (rc == 0 && !seen.exists)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s: no such object", what);
		if (rc == 0 && !(*data = malloc(1)))
			rc = tt_fail_oom();
		if (rc == 0) {
			*len = 0;
			if (st)
				*st = seen;
		}
	} else if (rc == 0 && resp.status == 404)
		rc = not_found(g, what, version_id, NULL);
	else if (rc == 0)
		rc = tt_gcs_fail(g, what, &resp);
	tt_http_response_free(&resp);
	free(name);
	free(what);
	free(suffix);
	free(url);
	return rc;
}

int tt_gcs_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
               struct tether_store_version *version)
{
	struct tether_store_stat st;
	int rc = tt_gcs_get_version(impl, key, NULL, offset, length, data, len, &st);
	if (rc == 0 && version)
		*version = st.version;
	return rc;
}
