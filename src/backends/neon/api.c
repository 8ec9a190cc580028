/* Reaching Neon's control plane. api_url and the name of the variable that
 * holds the key come only from the object's [objects."<key>"] table of
 * .tether/secrets.toml (defaults: Neon's API v2 and NEON_API_KEY), never
 * from a manifest: a clone cannot point tether, and the key it sends, at a
 * server of its choice.
 *
 * Neon answers 423 while another operation runs on the project, 429 when
 * rate-limited and 503 when busy; none of those did anything, so every
 * request, a POST too, is made again after a backoff for about a minute.
 * A dropped connection is retried only for GET and DELETE: a POST may have
 * landed, and its caller reads back what happened. An answer that lists
 * operations is complete only when they are: each is polled until it
 * finishes. */
#include "backends/neon/neon.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_SECONDS 60.0
#define OPERATION_SECONDS 600.0

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *secret_string(const struct tether_bctx *ctx, const char *key)
{
	return ctx ? json_string_value(json_object_get(ctx->secrets, key)) : NULL;
}

int neon_connect(const struct tether_bctx *ctx, const struct neon_loc *loc, struct neon_conn *c)
{
	memset(c, 0, sizeof *c);
	c->project = loc->project_id;
	c->key = ctx && ctx->key ? ctx->key : "?";
	c->session = ctx ? ctx->session : NULL;
	c->protected_pins = json_is_true(ctx ? json_object_get(ctx->secrets, "protected_pins") : NULL);
	const char *api = secret_string(ctx, "api_url");
	if (!api)
		api = NEON_DEFAULT_API;
	if (strncmp(api, "https://", 8) != 0 && !(strncmp(api, "http://", 7) == 0 && tt_http_loopback_url(api)))
		return tether_error_set(TETHER_ECONFIG, "neon object %s: api_url '%s' in .tether/secrets.toml is not an "
		                                        "https:// URL (plain http only to this machine)", c->key, api);
	const char *var = secret_string(ctx, "api_key_env");
	if (!var)
		var = "NEON_API_KEY";
	const char *key = getenv(var);
	if (!key || !*key)
		return tether_error_set(TETHER_ECONFIG, "neon object %s: no Neon API key: set %s (or name another variable "
		                                        "with api_key_env in [objects.\"%s\"] of .tether/secrets.toml)",
		                        c->key, var, c->key);
	size_t n = strlen(api);
	while (n && api[n - 1] == '/')
		n--;
	c->api = tt_strdupf("%.*s", (int)n, api);
	c->auth = tt_strdupf("Bearer %s", key);
	if (!c->api || !c->auth) {
		neon_disconnect(c);
		return tt_fail_oom();
	}
	int rc = tt_http_shared_or_new(c->session ? c->session->http : NULL, api, strncmp(api, "http://", 7) == 0,
	                               120000, &c->http, &c->own_http);
	if (rc)
		neon_disconnect(c);
	return rc;
}

void neon_disconnect(struct neon_conn *c)
{
	if (c->own_http)
		tt_http_free(c->http);
	free(c->api);
	if (c->auth) {
		memset(c->auth, 0, strlen(c->auth));
		free(c->auth);
	}
	memset(c, 0, sizeof *c);
}

int neon_begin(const struct tether_bctx *ctx, const json_t *locator, struct neon_loc *loc, struct neon_conn *c)
{
	memset(c, 0, sizeof *c);
	int rc = neon_read_locator(locator, loc);
	return rc ? rc : neon_connect(ctx, loc, c);
}

char *neon_esc(const char *s)
{
	return tt_http_escape(s, 0);
}

static int error_code(long status)
{
	switch (status) {
	case 401:
	case 403:
		return TETHER_EAUTH;
	case 404:
		return TETHER_ENOTFOUND;
	case 409:
	case 412:
		return TETHER_EREFUSED;
	case 400:
	case 422:
		return TETHER_EREFUSED;
	case 423:
	case 429:
	case 500:
	case 502:
	case 503:
	case 504:
		return TETHER_ETRANSIENT;
	default:
		return TETHER_EIO;
	}
}

static int neon_busy(long status)
{
	return status == 423 || status == 429 || status == 503;
}

static int wait_operations(struct neon_conn *c, const json_t *answer);

int neon_request(struct neon_conn *c, const char *method, const char *path, const json_t *body,
                 const long *ok_statuses, long *status, json_t **out)
{
	json_t *answer = NULL;
	*status = 0;
	if (out)
		*out = NULL;
	char *url = tt_strdupf("%s%s", c->api, path);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (!url || (body && !text)) {
		free(url);
		free(text);
		return tt_fail_oom();
	}
	struct tt_http_header headers[3] = {
		{"Accept", "application/json"}, {"Content-Type", "application/json"}, {"Authorization", c->auth}};
	struct tt_http_request req = {
		.method = method,
		.url = url,
		.headers = headers,
		.n_headers = 3,
		.body = text,
		.body_len = text ? strlen(text) : 0,
	};
	int repeatable = strcmp(method, "POST") != 0;
	/* Anything but a read may change the branches: the list is read anew. */
	if (strcmp(method, "GET") != 0 && c->session) {
		pthread_mutex_lock(&c->session->branches_mu);
		json_decref(c->session->branches);
		c->session->branches = NULL;
		pthread_mutex_unlock(&c->session->branches_mu);
	}
	double deadline = now_s() + RETRY_SECONDS;
	struct tt_http_response resp = {0};
	int rc;
	for (int attempt = 1;; attempt++) {
		tt_http_response_free(&resp);
		memset(&resp, 0, sizeof resp);
		rc = tt_http_perform(c->http, &req, &resp);
		int again = rc == 0 ? neon_busy(resp.status) : (rc == TETHER_ETRANSIENT && repeatable);
		if (!again || now_s() >= deadline)
			break;
		if ((rc = tt_http_backoff(attempt < 6 ? attempt : 6)) != 0)
			break;
	}
	if (rc) {
		rc = tether_error_set(rc, "neon object %s: Neon project %s: %s", c->key, c->project, tether_error_last());
		goto done;
	}
	*status = resp.status;
	int ok = resp.status >= 200 && resp.status < 300;
	for (const long *s = ok_statuses; !ok && s && *s; s++)
		ok = resp.status == *s;
	if (!ok) {
		char *msg = tt_http_error_message(&resp);
		char *q = strchr(path, '?');
		rc = tether_error_set(error_code(resp.status), "neon object %s: Neon project %s: %s %.*s: %ld %s", c->key,
		                      c->project, method, q ? (int)(q - path) : (int)strlen(path), path, resp.status,
		                      msg ? msg : "");
		if (resp.status == 401 || resp.status == 403)
			tether_error_set_hint("the key comes from the variable api_key_env names in [objects.\"<key>\"] of "
			                      ".tether/secrets.toml (default NEON_API_KEY)");
		free(msg);
		goto done;
	}
	if (resp.status >= 200 && resp.status < 300 && resp.body_len) {
		json_error_t je;
		answer = json_loadb((const char *)resp.body, resp.body_len, 0, &je);
		if (!answer)
			rc = tether_error_set(TETHER_EIO, "neon object %s: Neon project %s: %s %s: the answer is not JSON: %s",
			                      c->key, c->project, method, path, je.text);
		else
			rc = wait_operations(c, answer);
	}
done:
	tt_http_response_free(&resp);
	free(url);
	free(text);
	if (rc == 0 && out)
		*out = answer;
	else
		json_decref(answer);
	return rc;
}

static int finished(const char *status)
{
	return status && (strcmp(status, "finished") == 0 || strcmp(status, "skipped") == 0);
}

static int failed(const char *status)
{
	return status && (strcmp(status, "failed") == 0 || strcmp(status, "error") == 0 ||
	                  strcmp(status, "cancelled") == 0 || strcmp(status, "cancelling") == 0);
}

/* Poll each operation the answer lists until it finishes. */
static int wait_operations(struct neon_conn *c, const json_t *answer)
{
	json_t *ops = json_object_get(answer, "operations");
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op) {
		const char *id = json_string_value(json_object_get(op, "id"));
		const char *st = json_string_value(json_object_get(op, "status"));
		double deadline = now_s() + OPERATION_SECONDS;
		json_t *cur = NULL;
		for (int round = 1; id && !finished(st); round++) {
			if (failed(st)) {
				const char *err = json_string_value(json_object_get(cur ? json_object_get(cur, "operation") : op,
				                                                    "error"));
				json_decref(cur);
				return tether_error_set(TETHER_EIO, "neon object %s: Neon project %s: operation %s %s: %s", c->key,
				                        c->project, id, st, err ? err : "(no error given)");
			}
			if (now_s() >= deadline) {
				json_decref(cur);
				return tether_error_set(TETHER_ETRANSIENT, "neon object %s: Neon project %s: operation %s still %s "
				                                           "after %.0f s", c->key, c->project, id, st,
				                        OPERATION_SECONDS);
			}
			struct timespec ts = {0, (round < 10 ? round : 10) * 50000000L};
			nanosleep(&ts, NULL);
			char *e = neon_esc(id), *p = neon_esc(c->project);
			char *path = e && p ? tt_strdupf("/projects/%s/operations/%s", p, e) : NULL;
			free(e);
			free(p);
			if (!path) {
				json_decref(cur);
				return tt_fail_oom();
			}
			json_decref(cur);
			cur = NULL;
			long status;
			/* Operations never list operations of their own. */
			int rc = neon_request(c, "GET", path, NULL, NULL, &status, &cur);
			free(path);
			if (rc) {
				json_decref(cur);
				return rc;
			}
			st = json_string_value(json_object_get(json_object_get(cur, "operation"), "status"));
			if (!st) {
				json_decref(cur);
				return tether_error_set(TETHER_EIO, "neon object %s: Neon project %s: operation %s has no status",
				                        c->key, c->project, id);
			}
		}
		json_decref(cur);
	}
	return 0;
}

int neon_list_branches(struct neon_conn *c, json_t **branches)
{
	*branches = NULL;
	struct neon_session *s = c->session;
	if (s) {
		pthread_mutex_lock(&s->branches_mu);
		*branches = s->branches ? json_deep_copy(s->branches) : NULL;
		pthread_mutex_unlock(&s->branches_mu);
		if (*branches)
			return 0;
	}
	char *p = neon_esc(c->project);
	char *path = p ? tt_strdupf("/projects/%s/branches", p) : NULL;
	free(p);
	if (!path)
		return tt_fail_oom();
	long status;
	json_t *j = NULL;
	int rc = neon_request(c, "GET", path, NULL, NULL, &status, &j);
	free(path);
	if (rc == TETHER_ENOTFOUND)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s (no such Neon project, or the key cannot see it)",
		                      tether_error_last());
	json_t *list = json_object_get(j, "branches");
	if (rc == 0 && !json_is_array(list))
		rc = tether_error_set(TETHER_EIO, "neon object %s: Neon project %s: the branch list has no branches",
		                      c->key, c->project);
	if (rc == 0)
		*branches = json_incref(list);
	if (rc == 0 && s) {
		pthread_mutex_lock(&s->branches_mu);
		json_decref(s->branches);
		s->branches = json_deep_copy(list);
		pthread_mutex_unlock(&s->branches_mu);
	}
	json_decref(j);
	return rc;
}

json_t *neon_find_branch(const json_t *branches, const char *name)
{
	size_t i;
	json_t *b;
	json_array_foreach(branches, i, b) {
		const char *n = json_string_value(json_object_get(b, "name"));
		if (n && strcmp(n, name) == 0 && json_is_string(json_object_get(b, "id")))
			return json_incref(b);
	}
	return NULL;
}

int neon_branch_by_name(struct neon_conn *c, const char *name, json_t **branch)
{
	json_t *all = NULL;
	int rc = neon_list_branches(c, &all);
	*branch = rc == 0 ? neon_find_branch(all, name) : NULL;
	json_decref(all);
	return rc;
}

json_t *neon_children(const json_t *branches, const char *id)
{
	json_t *out = json_array();
	size_t i;
	json_t *b;
	json_array_foreach(branches, i, b) {
		const char *parent = json_string_value(json_object_get(b, "parent_id"));
		if (out && parent && strcmp(parent, id) == 0)
			json_array_append(out, json_object_get(b, "name"));
	}
	return out;
}

int neon_session_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session)
{
	(void)identity;
	*session = NULL;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	struct neon_session *s = calloc(1, sizeof *s);
	if (!s || !(s->endpoints = json_object()) || pthread_mutex_init(&s->mu, NULL) != 0) {
		if (s)
			json_decref(s->endpoints);
		free(s);
		neon_disconnect(&c);
		return tt_fail_oom();
	}
	if (pthread_mutex_init(&s->branches_mu, NULL) != 0) {
		pthread_mutex_destroy(&s->mu);
		json_decref(s->endpoints);
		free(s);
		neon_disconnect(&c);
		return tt_fail_oom();
	}
	s->http = c.http;
	c.own_http = 0;
	neon_disconnect(&c);
	*session = s;
	return 0;
}

void neon_session_close(const struct tether_bctx *ctx, void *session)
{
	(void)ctx;
	struct neon_session *s = session;
	if (!s)
		return;
	tt_http_free(s->http);
	json_decref(s->endpoints);
	json_decref(s->branches);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->branches_mu);
	free(s);
}
