/* Bearer tokens for a REST catalog: see rest_oauth2.h. */
#include "backends/iceberg/rest_oauth2.h"
#include "backends/iceberg/rest_endpoint.h"

#include <tether/backend.h>

#include "store/http/http.h"
#include "util/fail.h"
#include "util/fsutil.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct ib_rest_auth {
	const struct ib_rest_settings *s;
	struct tt_http *http;
	pthread_mutex_t lock;
	char *token;      /* the current one; the static token, or fetched */
	time_t renew_at;  /* fetched: when to fetch again; 0: never by time */
};

int ib_rest_token_parse(const char *body, size_t len, char **token, long long *expires_in)
{
	*token = NULL;
	*expires_in = -1;
	json_t *doc = json_loadb(body, len, 0, NULL);
	const char *t = json_string_value(json_object_get(doc, "access_token"));
	const char *type = json_string_value(json_object_get(doc, "token_type"));
	json_t *exp = json_object_get(doc, "expires_in");
	int rc = -1;
	/* RFC 6749: token_type is required; a bearer token is the only kind a
	 * REST catalog takes. */
	if (tt_http_token_ok(t) && (!type || strcasecmp(type, "bearer") == 0) &&
	    (!exp || (json_is_integer(exp) && json_integer_value(exp) > 0))) {
		if (exp)
			*expires_in = (long long)json_integer_value(exp);
		*token = strdup(t);
		rc = *token ? 0 : -1;
	}
	json_decref(doc);
	return rc;
}

int ib_rest_auth_new(const struct ib_rest_settings *s, struct tt_http *http, struct ib_rest_auth **out)
{
	struct ib_rest_auth *a = calloc(1, sizeof *a);
	if (!a)
		return tt_fail_oom();
	a->s = s;
	a->http = http;
	pthread_mutex_init(&a->lock, NULL);
	if (s->token && !(a->token = strdup(s->token))) {
		ib_rest_auth_free(a);
		return tt_fail_oom();
	}
	*out = a;
	return 0;
}

void ib_rest_auth_free(struct ib_rest_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a->token);
	free(a);
}

int ib_rest_auth_renewable(const struct ib_rest_auth *a)
{
	return a->s->client_secret != NULL && !a->s->token;
}

static char *form_append(char *form, const char *name, const char *value)
{
	if (!form)
		return NULL;
	char *v = tt_http_escape(value, 0);
	char *grown = v ? tt_strdupf("%s%s%s=%s", form, *form ? "&" : "", name, v) : NULL;
	free(v);
	free(form);
	return grown;
}

/* POST the client credentials to the token endpoint. */
static int fetch_token(struct ib_rest_auth *a)
{
	const struct ib_rest_settings *s = a->s;
	char *form = form_append(strdup(""), "grant_type", "client_credentials");
	if (s->client_id)
		form = form_append(form, "client_id", s->client_id);
	form = form_append(form, "client_secret", s->client_secret);
	form = form_append(form, "scope", s->scope);
	if (!form)
		return tt_fail_oom();
	struct tt_http_header hdrs[] = {{"Content-Type", "application/x-www-form-urlencoded"},
	                                {"Accept", "application/json"}};
	struct tt_http_request req = {.method = "POST",
	                              .url = s->oauth2_uri,
	                              .headers = hdrs,
	                              .n_headers = 2,
	                              .body = form,
	                              .body_len = strlen(form)};
	struct tt_http_response resp = {0};
	/* a token request changes nothing: safe to repeat on a 5xx */
	int rc = tt_http_perform_retried(a->http, &req, &resp, NULL);
	free(form);
	if (rc) {
		tt_http_response_free(&resp);
		return rc;
	}
	char why[320];
	if (resp.status != 200) {
		ib_rest_error_text(&resp, why, sizeof why);
		int code = resp.status == 400 || resp.status == 401 || resp.status == 403 ? TETHER_EAUTH
		           : tt_http_retryable(0, &resp)                                   ? TETHER_ETRANSIENT
		                                                                           : TETHER_EIO;
		rc = tether_error_set(code,
		                      "iceberg catalog '%s': POST %s: the token endpoint answered %ld (%s); check "
		                      "credential in .tether/secrets.toml",
		                      s->catalog, s->oauth2_uri, resp.status, why);
		tt_http_response_free(&resp);
		return rc;
	}
	char *token;
	long long expires_in;
	if (ib_rest_token_parse((const char *)resp.body, resp.body_len, &token, &expires_in)) {
		tt_http_response_free(&resp);
		return tether_error_set(TETHER_EAUTH,
		                        "iceberg catalog '%s': POST %s: the answer has no valid bearer access_token "
		                        "(and positive expires_in, if any)",
		                        s->catalog, s->oauth2_uri);
	}
	tt_http_response_free(&resp);
	free(a->token);
	a->token = token;
	if (expires_in > 0) {
		long long margin = expires_in / 10 < 60 ? expires_in / 10 : 60;
		a->renew_at = time(NULL) + (time_t)(expires_in - margin);
	} else {
		a->renew_at = 0;
	}
	return 0;
}

int ib_rest_auth_header(struct ib_rest_auth *a, int renew, char **out)
{
	*out = NULL;
	pthread_mutex_lock(&a->lock);
	int rc = 0;
	if (ib_rest_auth_renewable(a) &&
	    (!a->token || renew || (a->renew_at && time(NULL) >= a->renew_at)))
		rc = fetch_token(a);
	if (!rc && a->token && !(*out = tt_strdupf("Bearer %s", a->token)))
		rc = tt_fail_oom();
	pthread_mutex_unlock(&a->lock);
	return rc;
}
