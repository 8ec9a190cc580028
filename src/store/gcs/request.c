/* Every request of the GCS store: the bearer token, the retries, and the
 * one-line error a failure becomes ("gs://b/k: HTTP 403 forbidden: <the
 * server's message>"). */
#include "store/gcs/gcs.h"
#include "store/gcs/auth.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADERS 8

int tt_gcs_call(struct tt_gcs *g, const struct tt_gcs_call *c, struct tt_http_response *resp)
{
	if (c->n_headers + 1 > MAX_HEADERS)
		return tether_error_set(TETHER_EIO, "%s: too many request headers", c->what);
	/* A token the server refuses (401) may have been revoked early: one
	 * more attempt with a token fetched anew, as Google's clients do. */
	for (int renew = 0;; renew = 1) {
		struct tt_http_header headers[MAX_HEADERS];
		size_t n = 0;
		char *bearer = NULL;
		if (g->auth) {
			char *token;
			int rc = tt_gcs_auth_token(g->auth, renew, &token);
			if (rc) {
				char why[1024];
				snprintf(why, sizeof why, "%s", tether_error_last());
				return tether_error_set(rc, "%s: %s", c->what, why);
			}
			bearer = tt_strdupf("Bearer %s", token);
			free(token);
			if (!bearer)
				return tt_fail_oom();
			headers[n++] = (struct tt_http_header){"Authorization", bearer};
		}
		for (size_t i = 0; i < c->n_headers; i++)
			headers[n++] = c->headers[i];
		struct tt_http_request req = {
			.method = c->method,
			.url = c->url,
			.headers = headers,
			.n_headers = n,
			.body = c->body,
			.body_len = c->body_len,
		};
		int rc = tt_http_perform_retried(g->http, &req, resp, c->attempts);
		free(bearer);
		if (rc) {
			/* No answer (refused, reset, timed out): the client's message
			 * names the URL; the object goes in front. */
			char why[1024];
			snprintf(why, sizeof why, "%s", tether_error_last());
			return tether_error_set(rc, "%s: %s", c->what, why);
		}
		if (resp->status != 401 || !g->auth || renew)
			return 0;
		tt_http_response_free(resp);
	}
}

/* The server's words, fit for a one-line message: control characters
 * become spaces and the text is cut at n - 1 bytes. */
static void one_line(const char *s, char *out, size_t n)
{
	size_t o = 0;
	for (; s && *s && o + 1 < n; s++)
		out[o++] = iscntrl((unsigned char)*s) ? ' ' : *s;
	out[o] = '\0';
}

/* " reason: message" from a JSON API error body, or "" when the body is
 * none (a 416's XML, an HTML error page). */
static void server_said(const struct tt_http_response *resp, char *out, size_t n)
{
	out[0] = '\0';
	json_t *body = resp->body_len ? json_loadb((const char *)resp->body, resp->body_len, 0, NULL) : NULL;
	json_t *err = json_object_get(body, "error");
	const char *message = json_string_value(json_object_get(err, "message"));
	const char *reason = json_string_value(json_object_get(json_array_get(json_object_get(err, "errors"), 0),
	                                                       "reason"));
	if (!message && json_is_string(err)) /* OAuth's {"error": "invalid_grant", ...} */
		reason = json_string_value(err), message = json_string_value(json_object_get(body, "error_description"));
	char r[64] = "", m[300] = "";
	one_line(reason, r, sizeof r);
	one_line(message, m, sizeof m);
	snprintf(out, n, "%s%s%s%s", *r ? " " : "", r, *m ? ": " : "", m);
	json_decref(body);
}

int tt_gcs_status_error(const char *what, const struct tt_http_response *resp, const char *extra, int code)
{
	long st = resp->status;
	code = code                                    ? code
	       : st == 401 || st == 403              ? TETHER_EAUTH
	           : st == 404                         ? TETHER_ENOTFOUND
	           : st == 412                         ? TETHER_EREFUSED
	           : st == 429 || (st >= 500 && st < 600) ? TETHER_ETRANSIENT
	                                               : TETHER_EIO;
	char said[400];
	server_said(resp, said, sizeof said);
	return tether_error_set(code, "%s: HTTP %ld%s%s", what, st, said, extra ? extra : "");
}

int tt_gcs_fail(struct tt_gcs *g, const char *what, const struct tt_http_response *resp)
{
	if (resp->status == 404) {
		int rc = tt_gcs_check_bucket(g);
		if (rc)
			return rc;
	}
	char extra[300] = "";
	if (resp->status == 401 || resp->status == 403)
		snprintf(extra, sizeof extra, " (credentials: %s)", g->auth ? tt_gcs_auth_source(g->auth) : "none");
	return tt_gcs_status_error(what, resp, extra, 0);
}

int tt_gcs_json_body(const struct tt_http_response *resp, const char *what, json_t **out)
{
	*out = json_loadb((const char *)resp->body, resp->body_len, 0, NULL);
	if (json_is_object(*out))
		return 0;
	json_decref(*out);
	*out = NULL;
	return tether_error_set(TETHER_EIO, "%s: the server's answer (HTTP %ld) is not a JSON object", what,
	                        resp->status);
}

int tt_gcs_bucket_exists(struct tt_gcs *g, int *exists)
{
	pthread_mutex_lock(&g->lock);
	int seen = g->bucket_seen;
	pthread_mutex_unlock(&g->lock);
	*exists = 1;
	if (seen)
		return 0;
	char *b = tt_http_escape(g->bucket, 0);
	char *url = b ? tt_strdupf("%s/storage/v1/b/%s?fields=name", g->base, b) : NULL;
	char *what = tt_strdupf("gs://%s", g->bucket);
	free(b);
	if (!url || !what) {
		free(url);
		free(what);
		return tt_fail_oom();
	}
	struct tt_http_response resp;
	struct tt_gcs_call c = {.method = "GET", .url = url, .what = what};
	int rc = tt_gcs_call(g, &c, &resp);
	if (rc == 0) {
		if (resp.status == 404)
			*exists = 0;
		/* A key that may read objects but not the bucket's metadata gets
		 * a 403 here: then the bucket cannot be told apart, and is taken
		 * to exist (the object's own answer stands). */
		else if (resp.status / 100 == 2 || resp.status == 401 || resp.status == 403) {
			pthread_mutex_lock(&g->lock);
			g->bucket_seen = 1;
			pthread_mutex_unlock(&g->lock);
		} else
			rc = tt_gcs_status_error(what, &resp, NULL, 0);
	}
	tt_http_response_free(&resp);
	free(url);
	free(what);
	return rc;
}

int tt_gcs_check_bucket(struct tt_gcs *g)
{
	int exists;
	int rc = tt_gcs_bucket_exists(g, &exists);
	if (rc == 0 && !exists)
		rc = tether_error_set(TETHER_ENOTFOUND, "gs://%s: the bucket does not exist (HTTP 404 at %s)", g->bucket,
		                      g->base);
	return rc;
}
