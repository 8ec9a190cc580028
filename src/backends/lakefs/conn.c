/* Reaching lakeFS: where it is and who we are come only from the object's
 * [objects."<key>"] table of .tether/secrets.toml or from lakectl's own
 * variables (LAKECTL_SERVER_ENDPOINT_URL, LAKECTL_CREDENTIALS_ACCESS_KEY_ID,
 * LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY), never from a manifest: a clone
 * cannot point tether, and the keys it sends, at a server of its choice.
 *
 * Requests that read or delete are retried on 429, 5xx and dropped
 * connections (tt_http_perform_retried); a POST that creates or merges is
 * made once, and its caller reads back what happened. */
#include "backends/lakefs/lakefs.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <nettle/base64.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct lfs_session {
	struct tt_http *http;
};

static const char *secret_string(const struct tether_bctx *ctx, const char *key)
{
	return ctx ? json_string_value(json_object_get(ctx->secrets, key)) : NULL;
}

/* A secret given as itself, through a variable it names, or lakectl's. */
static const char *credential(const struct tether_bctx *ctx, const char *key, const char *env_key,
                              const char *lakectl_var)
{
	const char *v = secret_string(ctx, key);
	if (v)
		return v;
	const char *var = secret_string(ctx, env_key);
	if (var)
		return getenv(var);
	return getenv(lakectl_var);
}

static char *basic_auth(const char *id, const char *secret)
{
	char *plain = tt_strdupf("%s:%s", id, secret);
	if (!plain)
		return NULL;
	size_t n = strlen(plain);
	char *out = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);
	if (out) {
		base64_encode_raw(out, n, (const uint8_t *)plain);
		out[BASE64_ENCODE_RAW_LENGTH(n)] = 0;
	}
	memset(plain, 0, n);
	free(plain);
	return out;
}

int lfs_connect(const struct tether_bctx *ctx, const struct lfs_loc *loc, struct lfs_conn *c)
{
	memset(c, 0, sizeof *c);
	c->repo = loc->repository;
	const char *endpoint = secret_string(ctx, "endpoint");
	if (!endpoint)
		endpoint = getenv("LAKECTL_SERVER_ENDPOINT_URL");
	const char *key = ctx && ctx->key ? ctx->key : "?";
	if (!endpoint || !*endpoint)
		return tether_error_set(TETHER_ECONFIG, "lakefs object %s: no lakeFS endpoint: set endpoint in "
		                                        "[objects.\"%s\"] of .tether/secrets.toml, or "
		                                        "LAKECTL_SERVER_ENDPOINT_URL", key, key);
	if (strncmp(endpoint, "https://", 8) != 0 && strncmp(endpoint, "http://", 7) != 0)
		return tether_error_set(TETHER_ECONFIG, "lakefs object %s: endpoint '%s' is not an http(s) URL", key,
		                        endpoint);
	/* Plain http carries the keys in clear: only to this machine, or when
	 * secrets.toml says so. */
	int allow_http = json_is_true(ctx ? json_object_get(ctx->secrets, "allow_http") : NULL) ||
	                 (strncmp(endpoint, "http://", 7) == 0 && tt_http_loopback_url(endpoint));
	size_t n = strlen(endpoint);
	while (n && endpoint[n - 1] == '/')
		n--;
	static const char api[] = "/api/v1";
	int has_api = n >= sizeof api - 1 && strncmp(endpoint + n - (sizeof api - 1), api, sizeof api - 1) == 0;
	c->api = tt_strdupf("%.*s%s", (int)n, endpoint, has_api ? "" : api);
	const char *id = credential(ctx, "access_key_id", "access_key_id_env", "LAKECTL_CREDENTIALS_ACCESS_KEY_ID");
	const char *secret =
		credential(ctx, "secret_access_key", "secret_access_key_env", "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY");
	if (id && secret) {
		char *b64 = basic_auth(id, secret);
		c->auth = b64 ? tt_strdupf("Basic %s", b64) : NULL;
		free(b64);
		if (!c->auth) {
			lfs_disconnect(c);
			return tt_fail_oom();
		}
	}
	if (!c->api) {
		lfs_disconnect(c);
		return tt_fail_oom();
	}
	struct lfs_session *s = ctx ? ctx->session : NULL;
	int rc = tt_http_shared_or_new(s ? s->http : NULL, endpoint, allow_http, 120000, &c->http, &c->own_http);
	if (rc)
		lfs_disconnect(c);
	return rc;
}

void lfs_disconnect(struct lfs_conn *c)
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

char *lfs_esc(const char *s)
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

int lfs_request(struct lfs_conn *c, const char *method, const char *path, const json_t *body,
                const long *ok_statuses, long *status, json_t **out)
{
	if (out)
		*out = NULL;
	*status = 0;
	char *url = tt_strdupf("%s%s", c->api, path);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (!url || (body && !text)) {
		free(url);
		free(text);
		return tt_fail_oom();
	}
	struct tt_http_header headers[3] = {{"Accept", "application/json"}, {"Content-Type", "application/json"}};
	size_t nh = 2;
	if (c->auth)
		headers[nh++] = (struct tt_http_header){"Authorization", c->auth};
	struct tt_http_request req = {
		.method = method,
		.url = url,
		.headers = headers,
		.n_headers = nh,
		.body = text ? text : (body ? "" : NULL),
		.body_len = text ? strlen(text) : 0,
	};
	/* Reads and deletes are safe to repeat; a POST is made once. */
	int repeatable = strcmp(method, "POST") != 0;
	struct tt_http_response resp = {0};
	int rc = repeatable ? tt_http_perform_retried(c->http, &req, &resp, NULL) : tt_http_perform(c->http, &req, &resp);
	if (rc) {
		rc = tether_error_set(rc, "lakeFS repository %s: %s", c->repo, tether_error_last());
		goto done;
	}
	*status = resp.status;
	int ok = resp.status >= 200 && resp.status < 300;
	for (const long *s = ok_statuses; !ok && s && *s; s++)
		ok = resp.status == *s;
	if (!ok) {
		char *msg = tt_http_error_message(&resp);
		rc = tether_error_set(error_code(resp.status), "lakeFS repository %s: %s %s: %ld %s", c->repo, method, path,
		                      resp.status, msg ? msg : "");
		if (resp.status == 401 || resp.status == 403)
			tether_error_set_hint("lakeFS's keys come from the object's [objects.\"<key>\"] in .tether/secrets.toml "
			                      "(access_key_id, secret_access_key) or LAKECTL_CREDENTIALS_*");
		free(msg);
		goto done;
	}
	if (out && resp.status >= 200 && resp.status < 300 && resp.body_len) {
		const char *ct = tt_http_header(&resp, "Content-Type");
		if (ct && strncasecmp(ct, "application/json", 16) == 0) {
			json_error_t je;
			*out = json_loadb((const char *)resp.body, resp.body_len, 0, &je);
			if (!*out)
				rc = tether_error_set(TETHER_EIO, "lakeFS repository %s: %s %s: the answer is not JSON: %s", c->repo,
				                      method, path, je.text);
		}
	}
done:
	tt_http_response_free(&resp);
	free(url);
	free(text);
	return rc;
}

static int want_string(struct lfs_conn *c, const json_t *j, const char *key, const char *what, char **out)
{
	const char *v = json_string_value(json_object_get(j, key));
	if (!v || !*v)
		return tether_error_set(TETHER_EIO, "lakeFS repository %s: %s: the answer has no \"%s\"", c->repo, what, key);
	*out = strdup(v);
	return *out ? 0 : tt_fail_oom();
}

int lfs_branch_head(struct lfs_conn *c, const char *branch, char **commit)
{
	*commit = NULL;
	char *r = lfs_esc(c->repo), *b = lfs_esc(branch);
	char *path = r && b ? tt_strdupf("/repositories/%s/branches/%s", r, b) : NULL;
	free(r);
	free(b);
	if (!path)
		return tt_fail_oom();
	long status;
	json_t *ref = NULL;
	int rc = lfs_request(c, "GET", path, NULL, NULL, &status, &ref);
	if (rc == 0)
		rc = want_string(c, ref, "commit_id", path, commit);
	else if (rc == TETHER_ENOTFOUND)
		rc = tether_error_set(TETHER_ENOTFOUND, "lakeFS repository %s has no branch \"%s\" (%s)", c->repo, branch,
		                      tether_error_last());
	json_decref(ref);
	free(path);
	return rc;
}

int lfs_resolve(struct lfs_conn *c, const char *ref, char **commit)
{
	*commit = NULL;
	char *r = lfs_esc(c->repo), *e = lfs_esc(ref);
	char *tag = r && e ? tt_strdupf("/repositories/%s/tags/%s", r, e) : NULL;
	char *com = r && e ? tt_strdupf("/repositories/%s/commits/%s", r, e) : NULL;
	free(r);
	free(e);
	int rc = tag && com ? 0 : tt_fail_oom();
	long status = 0;
	json_t *j = NULL;
	static const long absent[] = {404, 0};
	if (rc == 0 && (rc = lfs_request(c, "GET", tag, NULL, absent, &status, &j)) == 0 && status != 404)
		rc = want_string(c, j, "commit_id", tag, commit);
	else if (rc == 0 && (rc = lfs_request(c, "GET", com, NULL, absent, &status, &j)) == 0) {
		if (status == 404)
			rc = tether_error_set(TETHER_ENOTFOUND, "lakeFS repository %s has no tag or commit \"%s\"", c->repo, ref);
		else
			rc = want_string(c, j, "id", com, commit);
	}
	json_decref(j);
	free(tag);
	free(com);
	return rc;
}

int lfs_branch_dirty(struct lfs_conn *c, const char *branch, const char *prefix, int *dirty)
{
	*dirty = 0;
	char *r = lfs_esc(c->repo), *b = lfs_esc(branch), *p = lfs_esc(prefix);
	char *path = r && b && p ? tt_strdupf("/repositories/%s/branches/%s/diff?amount=1&prefix=%s", r, b, p) : NULL;
	free(r);
	free(b);
	free(p);
	if (!path)
		return tt_fail_oom();
	long status;
	json_t *list = NULL;
	int rc = lfs_request(c, "GET", path, NULL, NULL, &status, &list);
	if (rc == 0 && !json_is_array(json_object_get(list, "results")))
		rc = tether_error_set(TETHER_EIO, "lakeFS repository %s: %s: the answer has no results", c->repo, path);
	if (rc == 0)
		*dirty = json_array_size(json_object_get(list, "results")) > 0;
	json_decref(list);
	free(path);
	return rc;
}

int lfs_list_all(struct lfs_conn *c, const char *path, const char *query, size_t max_items, json_t **items)
{
	*items = json_array();
	char *after = strdup("");
	int rc = *items && after ? 0 : tt_fail_oom();
	for (int page = 0; rc == 0; page++) {
		char *a = lfs_esc(after);
		char *url = a ? tt_strdupf("%s?%s%samount=1000&after=%s", path, query, *query ? "&" : "", a) : NULL;
		free(a);
		if (!url) {
			rc = tt_fail_oom();
			break;
		}
		long status;
		json_t *j = NULL;
		rc = lfs_request(c, "GET", url, NULL, NULL, &status, &j);
		json_t *results = json_object_get(j, "results"), *pag = json_object_get(j, "pagination");
		if (rc == 0 && (!json_is_array(results) || !json_is_object(pag)))
			rc = tether_error_set(TETHER_EIO, "lakeFS repository %s: %s: not a paginated list", c->repo, path);
		if (rc == 0)
			json_array_extend(*items, results);
		const char *next = json_string_value(json_object_get(pag, "next_offset"));
		int more = rc == 0 && json_is_true(json_object_get(pag, "has_more")) && next && *next &&
		           strcmp(next, after) != 0;
		if (more) {
			free(after);
			after = strdup(next);
		}
		json_decref(j);
		free(url);
		if (rc == 0 && json_array_size(*items) > max_items)
			rc = tether_error_set(TETHER_EIO, "lakeFS repository %s: %s lists more than %zu entries", c->repo, path,
			                      max_items);
		if (!more)
			break;
	}
	free(after);
	if (rc) {
		json_decref(*items);
		*items = NULL;
	}
	return rc;
}

int lfs_begin(const struct tether_bctx *ctx, const json_t *locator, struct lfs_loc *loc, struct lfs_conn *c)
{
	memset(c, 0, sizeof *c);
	int rc = lfs_read_locator(locator, loc);
	return rc ? rc : lfs_connect(ctx, loc, c);
}

int lfs_session_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session)
{
	(void)identity;
	*session = NULL;
	/* The session's client allows plain http when this first object's
	 * endpoint may use it; a later object that may not gets its own. */
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	struct lfs_session *s = calloc(1, sizeof *s);
	if (!s) {
		lfs_disconnect(&c);
		return tt_fail_oom();
	}
	s->http = c.http;
	c.own_http = 0;
	lfs_disconnect(&c);
	*session = s;
	return 0;
}

void lfs_session_close(const struct tether_bctx *ctx, void *session)
{
	(void)ctx;
	struct lfs_session *s = session;
	if (!s)
		return;
	tt_http_free(s->http);
	free(s);
}
