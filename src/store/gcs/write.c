/* Writing objects: a media upload (one request, the whole object) with
 * ifGenerationMatch as its precondition (0: only if absent; G: only while
 * the object is at generation G), and delete. Copy is left to the engine
 * (get at a generation, then put if absent): fake-gcs-server, the server
 * the tests run, ignores the preconditions of rewriteTo and copyTo, so a
 * server-side copy's "the target must not exist" could not be tested;
 * tether copies only small objects (Icechunk's repo file). */
#include "store/gcs/gcs.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <nettle/base64.h>
#include <nettle/md5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is the object now exactly these bytes (its md5Hash is theirs)? */
static int holds_bytes(struct tt_gcs *g, const char *name, const char *what, const void *data, size_t len,
                       struct tether_store_version *version)
{
	uint8_t digest[MD5_DIGEST_SIZE];
	struct md5_ctx md5;
	md5_init(&md5);
	md5_update(&md5, len, data);
	md5_digest(&md5, sizeof digest, digest);
	char want[BASE64_ENCODE_RAW_LENGTH(MD5_DIGEST_SIZE) + 1];
	base64_encode_raw(want, sizeof digest, digest);
	want[sizeof want - 1] = '\0';

	char *url = tt_gcs_object_url(g, name, "?fields=size,generation,md5Hash");
	if (!url)
		return 0;
	struct tt_http_response resp;
	struct tt_gcs_call c = {.method = "GET", .url = url, .what = what};
	json_t *obj = NULL;
	struct tether_store_stat st;
	int same = tt_gcs_call(g, &c, &resp) == 0 && resp.status == 200 && tt_gcs_json_body(&resp, what, &obj) == 0 &&
	           tt_gcs_object_stat(obj, what, &st) == 0 && st.size == len;
	const char *md5_hash = json_string_value(json_object_get(obj, "md5Hash"));
	same = same && md5_hash && strcmp(md5_hash, want) == 0;
	if (same && version)
		*version = st.version;
	json_decref(obj);
	tt_http_response_free(&resp);
	free(url);
	return same;
}

int tt_gcs_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
               const struct tether_store_version *expect, struct tether_store_version *new_version)
{
	struct tt_gcs *g = impl;
	if (mode == TETHER_PUT_IF_MATCH && !tt_gcs_is_generation(expect->token))
		return tether_error_set(TETHER_EREFUSED, "gs://%s/%s%s: version \"%s\" is not a GCS generation, so the "
		                        "object is not at it", g->bucket, g->root, key, expect->token);
	char *name = tt_gcs_object_name(g, key);
	char *what = name ? tt_gcs_what(g, name) : NULL;
	char *b = tt_http_escape(g->bucket, 0), *o = name ? tt_http_escape(name, 0) : NULL;
	char *url = b && o ? tt_strdupf("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s%s%s", g->base, b, o,
	                                mode == TETHER_PUT_OVERWRITE ? "" : "&ifGenerationMatch=",
	                                mode == TETHER_PUT_IF_ABSENT   ? "0"
	                                : mode == TETHER_PUT_IF_MATCH ? expect->token
	                                                              : "")
	                   : NULL;
	free(b);
	free(o);
	int rc = 0, attempts = 1;
	struct tt_http_response resp = {0};
	if (!what || !url)
		rc = tt_fail_oom();
	struct tt_http_header h = {"Content-Type", "application/octet-stream"};
	struct tt_gcs_call c = {.method = "POST", .url = url, .what = what, .headers = &h, .n_headers = 1,
	                        .body = data, .body_len = len, .attempts = &attempts};
	if (rc == 0)
		rc = tt_gcs_call(g, &c, &resp);
	json_t *obj = NULL;
	struct tether_store_stat st;
	if (rc == 0 && resp.status == 200) {
		if ((rc = tt_gcs_json_body(&resp, what, &obj)) == 0 && (rc = tt_gcs_object_stat(obj, what, &st)) == 0 &&
		    new_version)
			*new_version = st.version;
	} else if (rc == 0 && resp.status == 412 && attempts > 1 && holds_bytes(g, name, what, data, len, new_version)) {
		/* An earlier attempt of this write landed, and its answer was lost
		 * (a reset, a 503 after the commit): the precondition now fails
		 * against our own bytes. */
		rc = 0;
	} else if (rc == 0 && resp.status == 412)
		rc = tt_gcs_status_error(what, &resp, mode == TETHER_PUT_IF_ABSENT
		                                          ? " (the object already exists)"
		                                          : " (the object is no longer at the version read)", 0);
	else if (rc == 0)
		rc = tt_gcs_fail(g, what, &resp);
	json_decref(obj);
	tt_http_response_free(&resp);
	free(name);
	free(what);
	free(url);
	return rc;
}

int tt_gcs_del(void *impl, const char *key)
{
	struct tt_gcs *g = impl;
	char *name = tt_gcs_object_name(g, key);
	char *what = name ? tt_gcs_what(g, name) : NULL;
	char *url = name ? tt_gcs_object_url(g, name, "") : NULL;
	int rc = 0;
	struct tt_http_response resp = {0};
	if (!what || !url)
		rc = tt_fail_oom();
	struct tt_gcs_call c = {.method = "DELETE", .url = url, .what = what};
	if (rc == 0)
		rc = tt_gcs_call(g, &c, &resp);
	/* Gone already (or, after a retry, deleted by the first attempt). */
	if (rc == 0 && resp.status == 404)
		rc = tt_gcs_check_bucket(g);
	else if (rc == 0 && resp.status / 100 != 2)
		rc = tt_gcs_fail(g, what, &resp);
	tt_http_response_free(&resp);
	free(name);
	free(what);
	free(url);
	return rc;
}
