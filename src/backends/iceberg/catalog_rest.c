/* The REST catalog: load and commit (catalog.h) as the Iceberg REST
 * catalog protocol spells them.
 *
 *   GET  {base}/v1/config?warehouse=W          once, before the first call:
 *                                              the path prefix (rest_endpoint.c)
 *   GET  {base}/v1/{prefix}/namespaces/{ns}/tables/{t}   load
 *   POST the same path {identifier, requirements, updates}   commit
 *
 * Status codes: 200 the answer; 404 TETHER_ENOTFOUND; 409 TETHER_EREFUSED
 * "refused, the head moved"; 400/422 on a commit TETHER_EREFUSED (the
 * catalog refused the change; nothing changed); 401/403/419 TETHER_EAUTH,
 * after one new token when the client-credentials flow can get one; 429
 * and 500/502/503/504 (on a commit too: see below) tried again with backoff (the HTTP client's bounded
 * loop: max_attempts, 100 ms doubling to 5 s, full jitter), then
 * TETHER_ETRANSIENT. A GET and a token request change nothing and are
 * simply repeated. A commit is never repeated blindly: after a 5xx or a
 * lost connection its outcome is unknown, so the table is loaded again
 * and rest_outcome.c judges it: applied (success), not applied with every
 * requirement holding (sent again), not applied and the head moved
 * (refused), or not judgeable (TETHER_ETRANSIENT "outcome unknown", never
 * resent). A 409 answering a resent commit is checked the same way, since
 * the first attempt may have gone in after all. */
#include "backends/iceberg/catalog_rest.h"
#include "backends/iceberg/rest_endpoint.h"
#include "backends/iceberg/rest_oauth2.h"
#include "backends/iceberg/rest_outcome.h"

#include <tether/backend.h>

#include "store/http/http.h"
#include "util/fail.h"
#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rest_catalog {
	struct ib_catalog base;
	struct ib_rest_settings s;
	struct tt_http *http;
	struct ib_rest_auth *auth;
	int configured; /* GET /v1/config done */
};

static const struct ib_catalog_ops rest_ops;

static int is_auth_status(long status)
{
	return status == 401 || status == 403 || status == 419;
}

/* One request with the catalog's credentials; on a refused token, one new
 * token and one more try. retried: repeat on 5xx/429/no answer (only for
 * what changes nothing). */
static int send_request(struct rest_catalog *c, const char *method, const char *url, const char *body,
                        int retried, struct tt_http_response *resp, int *sent)
{
	memset(resp, 0, sizeof *resp);
	for (int renew = 0;; renew++) {
		/* *sent: whether the failure, if any, is the request's own (a
		 * refused token was never applied; a token not got was never sent) */
		if (sent)
			*sent = 0;
		char *authz = NULL;
		int rc = ib_rest_auth_header(c->auth, renew, &authz);
		if (rc)
			return rc;
		if (sent)
			*sent = 1;
		struct tt_http_header hdrs[3] = {{"Accept", "application/json"},
		                                 {"Content-Type", "application/json"}};
		size_t n = body ? 2 : 1;
		if (authz)
			hdrs[n++] = (struct tt_http_header){"Authorization", authz};
		struct tt_http_request req = {.method = method,
		                              .url = url,
		                              .headers = hdrs,
		                              .n_headers = n,
		                              .body = body,
		                              .body_len = body ? strlen(body) : 0};
		rc = retried ? tt_http_perform_retried(c->http, &req, resp, NULL) : tt_http_perform(c->http, &req, resp);
		free(authz);
		if (rc || !is_auth_status(resp->status) || renew || !ib_rest_auth_renewable(c->auth))
			return rc;
		tt_http_response_free(resp);
		memset(resp, 0, sizeof *resp);
	}
}

/* The error of a non-2xx answer. `what` names the object ("table a.b",
 * "config"); for_commit: 400/422 refuse the change. */
static int status_error(struct rest_catalog *c, const char *method, const char *url, const char *what,
                        const char *ref, const struct tt_http_response *resp, int for_commit)
{
	char why[320];
	ib_rest_error_text(resp, why, sizeof why);
	const char *cat = c->s.catalog;
	long st = resp->status;
	char refpart[300] = "";
	if (ref)
		snprintf(refpart, sizeof refpart, ", ref %s", ref);
	if (st == 409)
		return tether_error_set(TETHER_EREFUSED, "iceberg catalog '%s': %s%s: refused, the head moved (409 %s)", cat,
		                        what, refpart, why);
	if (st == 404)
		return tether_error_set(TETHER_ENOTFOUND, "iceberg catalog '%s': %s: not found (%s %s: 404 %s)", cat, what,
		                        method, url, why);
	if (is_auth_status(st))
		return tether_error_set(TETHER_EAUTH,
		                        "iceberg catalog '%s': %s %s: the catalog refused the credentials (%ld %s); check "
		                        "token or credential in .tether/secrets.toml",
		                        cat, method, url, st, why);
	if (for_commit && (st == 400 || st == 422))
		return tether_error_set(TETHER_EREFUSED, "iceberg catalog '%s': %s%s: the catalog refused the change (%ld %s)",
		                        cat, what, refpart, st, why);
	int code = tt_http_retryable(0, resp) ? TETHER_ETRANSIENT : TETHER_EIO;
	return tether_error_set(code, "iceberg catalog '%s': %s %s: %ld %s%s", cat, method, url, st, why,
	                        code == TETHER_ETRANSIENT ? " (gave up after retrying)" : "");
}

static int ensure_config(struct rest_catalog *c)
{
	if (c->configured)
		return 0;
	char *url = ib_rest_config_url(&c->s);
	if (!url)
		return tt_fail_oom();
	struct tt_http_response resp;
	int rc = send_request(c, "GET", url, NULL, 1, &resp, NULL);
	if (!rc && resp.status != 200)
		rc = status_error(c, "GET", url, "config", NULL, &resp, 0);
	if (!rc) {
		json_t *cfg = json_loadb((const char *)resp.body, resp.body_len, 0, NULL);
		rc = ib_rest_settings_apply_config(&c->s, cfg);
		json_decref(cfg);
	}
	tt_http_response_free(&resp);
	free(url);
	if (!rc)
		c->configured = 1;
	return rc;
}

/* A LoadTableResult or CommitTableResponse: metadata and, optionally,
 * metadata-location. */
static int read_table_answer(struct rest_catalog *c, const char *method, const char *url,
                             const struct tt_http_response *resp, json_t **metadata, char **location)
{
	json_error_t jerr;
	json_t *doc = json_loadb((const char *)resp->body, resp->body_len, 0, &jerr);
	json_t *md = json_object_get(doc, "metadata");
	json_t *loc = json_object_get(doc, "metadata-location");
	int rc = 0;
	if (!json_is_object(md) || (loc && !json_is_null(loc) && !json_is_string(loc)))
		rc = tether_error_set(TETHER_EIO,
		                      "iceberg catalog '%s': %s %s: the answer is not a table result (%s)", c->s.catalog,
		                      method, url, doc ? "no metadata object" : jerr.text);
	if (!rc && location) {
		*location = NULL;
		if (json_is_string(loc) && !(*location = strdup(json_string_value(loc))))
			rc = tt_fail_oom();
	}
	if (!rc && metadata)
		*metadata = json_incref(md);
	json_decref(doc);
	return rc;
}

/* The table's URL and its name for messages, after the catalog's
 * config; both malloc'd on 0. */
static int table_target(struct rest_catalog *c, const char *ns, const char *table, char **url, char **what)
{
	*url = *what = NULL;
	int rc = ensure_config(c);
	if (!rc)
		rc = ib_rest_table_url(&c->s, ns, table, url);
	if (!rc && !(*what = tt_strdupf("table %s.%s", ns, table)))
		rc = tt_fail_oom();
	if (rc) {
		free(*url);
		*url = NULL;
	}
	return rc;
}

static int rest_load(struct ib_catalog *base, const char *ns, const char *table, json_t **metadata,
                     char **metadata_location)
{
	struct rest_catalog *c = (struct rest_catalog *)base;
	*metadata = NULL;
	if (metadata_location)
		*metadata_location = NULL;
	char *url, *what;
	int rc = table_target(c, ns, table, &url, &what);
	if (rc)
		return rc;
	struct tt_http_response resp;
	rc = send_request(c, "GET", url, NULL, 1, &resp, NULL);
	if (!rc && resp.status != 200)
		rc = status_error(c, "GET", url, what, NULL, &resp, 0);
	else if (!rc)
		rc = read_table_answer(c, "GET", url, &resp, metadata, metadata_location);
	tt_http_response_free(&resp);
	free(what);
	free(url);
	return rc;
}

/* After an answer that leaves the commit's outcome unknown: load the table
 * and judge. Returns 0 (applied; *metadata set when asked), 1 (send it
 * again), or an error. `status` describes the lost answer for messages. */
static int recheck(struct rest_catalog *c, const char *ns, const char *table, const char *what, const char *ref,
                   json_t *requirements, json_t *updates, const char *status, json_t **metadata)
{
	json_t *md;
	int rc = rest_load(&c->base, ns, table, &md, NULL);
	if (rc) {
		char cause[400];
		snprintf(cause, sizeof cause, "%s", tether_error_last());
		return tether_error_set(TETHER_ETRANSIENT,
		                        "iceberg catalog '%s': %s%s%s: the commit's outcome is unknown (%s) and the "
		                        "table could not be loaded to check it: %s",
		                        c->s.catalog, what, ref ? ", ref " : "", ref ? ref : "", status, cause);
	}
	enum ib_rest_outcome o = ib_rest_commit_outcome(md, requirements, updates);
	if (o == IB_REST_APPLIED) {
		if (metadata)
			*metadata = md;
		else
			json_decref(md);
		return 0;
	}
	json_decref(md);
	if (o == IB_REST_RESEND)
		return 1;
	if (o == IB_REST_MOVED)
		return tether_error_set(TETHER_EREFUSED,
		                        "iceberg catalog '%s': %s%s%s: refused, the head moved (after %s, the table no "
		                        "longer meets the commit's requirements)",
		                        c->s.catalog, what, ref ? ", ref " : "", ref ? ref : "", status);
	return tether_error_set(TETHER_ETRANSIENT,
	                        "iceberg catalog '%s': %s%s%s: the commit's outcome is unknown (%s); not sent again: "
	                        "load the table to see whether it went in",
	                        c->s.catalog, what, ref ? ", ref " : "", ref ? ref : "", status);
}

static char *commit_body(const char *ns, const char *table, json_t *requirements, json_t *updates)
{
	json_t *ident = json_pack("{s:o, s:s}", "namespace", ib_rest_namespace_levels(ns), "name", table);
	json_t *doc = ident ? json_pack("{s:o, s:O, s:O}", "identifier", ident, "requirements", requirements, "updates",
	                                updates)
	                    : NULL;
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return body;
}

static int rest_commit(struct ib_catalog *base, const char *ns, const char *table, json_t *requirements,
                       json_t *updates, json_t **metadata)
{
	struct rest_catalog *c = (struct rest_catalog *)base;
	if (metadata)
		*metadata = NULL;
	if (!json_is_array(requirements) || !json_is_array(updates))
		return tether_error_set(TETHER_EUSAGE, "iceberg catalog '%s': a commit needs arrays of requirements and updates",
		                        c->s.catalog);
	char *url, *what;
	int rc = table_target(c, ns, table, &url, &what);
	if (rc)
		return rc;
	char *body = commit_body(ns, table, requirements, updates);
	if (!body) {
		free(url);
		free(what);
		free(body);
		return tt_fail_oom();
	}
	const char *ref = ib_rest_commit_ref(requirements, updates);
	int max_attempts = tt_http_options(c->http)->max_attempts;
	int unknown = 0; /* an earlier attempt's outcome was unknown */
	for (int attempt = 1;; attempt++) {
		struct tt_http_response resp;
		int sent;
		rc = send_request(c, "POST", url, body, 0, &resp, &sent);
		char status[96];
		int lost = 0;
		if (rc == TETHER_ETRANSIENT && sent) {
			snprintf(status, sizeof status, "no answer: %.70s", tether_error_last());
			lost = 1;
		} else if (rc) {
			break;
		} else if (resp.status == 200) {
			rc = read_table_answer(c, "POST", url, &resp, metadata, NULL);
		} else if (tt_http_retryable(0, &resp)) { /* 429 and 5xx */
			snprintf(status, sizeof status, "POST answered %ld", resp.status);
			lost = 1;
		} else if (resp.status == 409 && unknown) {
			/* the attempt whose answer was lost may have gone in */
			snprintf(status, sizeof status, "409 after a lost answer");
			lost = 1;
		} else {
			rc = status_error(c, "POST", url, what, ref, &resp, 1);
		}
		if (lost) {
			int conflict = resp.status == 409;
			if (!conflict && attempt < max_attempts && (rc = tt_http_backoff(attempt)) != 0) {
				rc = tether_error_set(rc,
				                      "iceberg catalog '%s': %s%s%s: cancelled while the commit's outcome is "
				                      "unknown (%s): load the table to see whether it went in",
				                      c->s.catalog, what, ref ? ", ref " : "", ref ? ref : "", status);
				tt_http_response_free(&resp);
				break;
			}
			rc = recheck(c, ns, table, what, ref, requirements, updates, status, metadata);
			if (rc == 1 && conflict) /* not applied, yet the catalog said moved: believe it */
				rc = status_error(c, "POST", url, what, ref, &resp, 1);
			else if (rc == 1 && attempt >= max_attempts)
				rc = tether_error_set(TETHER_ETRANSIENT,
				                      "iceberg catalog '%s': %s%s%s: not committed (%s, %d attempts); nothing "
				                      "changed",
				                      c->s.catalog, what, ref ? ", ref " : "", ref ? ref : "", status, attempt);
			tt_http_response_free(&resp);
			if (rc == 1) {
				unknown = 1;
				continue;
			}
			break;
		}
		tt_http_response_free(&resp);
		break;
	}
	free(url);
	free(what);
	free(body);
	return rc;
}

static void rest_close(struct ib_catalog *base)
{
	struct rest_catalog *c = (struct rest_catalog *)base;
	if (!c)
		return;
	ib_rest_auth_free(c->auth);
	tt_http_free(c->http);
	ib_rest_settings_free(&c->s);
	free(c->base.name);
	free(c);
}

static const struct ib_catalog_ops rest_ops = {
	.type = "rest",
	.load = rest_load,
	.commit = rest_commit,
	.close = rest_close,
};

int ib_catalog_rest_open(const json_t *props, const json_t *secrets, const char *name, struct ib_catalog **out)
{
	*out = NULL;
	struct rest_catalog *c = calloc(1, sizeof *c);
	if (!c)
		return tt_fail_oom();
	c->base.ops = &rest_ops;
	int rc = ib_rest_settings_read(props, secrets, name, &c->s);
	if (rc) {
		free(c);
		return rc;
	}
	if (!(c->base.name = strdup(c->s.catalog))) {
		rest_close(&c->base);
		return tt_fail_oom();
	}
	/* bounded: a request 10 s to connect, 60 s in all; 5 attempts (the client's default) */
	struct tt_http_options hopts = {.connect_timeout_ms = 10000, .timeout_ms = 60000, .allow_http = c->s.allow_http};
	rc = tt_http_new(&hopts, &c->http);
	if (!rc)
		rc = ib_rest_auth_new(&c->s, c->http, &c->auth);
	if (rc) {
		rest_close(&c->base);
		return rc;
	}
	*out = &c->base;
	return 0;
}
