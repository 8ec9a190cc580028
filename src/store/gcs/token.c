/* Asking a token endpoint for an access token (token.h). The answer is
 * checked before its token goes into an Authorization header: printable
 * ASCII without spaces (no header can be smuggled in), a positive
 * lifetime. */
#include "store/gcs/token.h"
#include "store/gcs/gcs.h"
#include "store/gcs/jwt.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The answer of a token endpoint; `what` names it in messages. */
static int read_answer(const struct tt_http_response *resp, const char *what, struct tt_gcs_token *out)
{
	if (resp->status != 200)
		return tt_gcs_status_error(what, resp, NULL,
		                           resp->status == 400 || resp->status == 401 || resp->status == 403 ? TETHER_EAUTH
		                                                                                             : 0);
	json_t *body;
	int rc = tt_gcs_json_body(resp, what, &body);
	if (rc)
		return rc;
	const char *token = json_string_value(json_object_get(body, "access_token"));
	json_t *expires = json_object_get(body, "expires_in");
	if (!tt_http_token_ok(token) || !json_is_integer(expires) || json_integer_value(expires) <= 0)
		rc = tether_error_set(TETHER_EAUTH, "%s: the answer has no valid access_token and expires_in", what);
	else if (!(out->access_token = strdup(token)))
		rc = tt_fail_oom();
	else
		out->expires_in = (int64_t)json_integer_value(expires);
	json_decref(body);
	return rc;
}

static int post_form(struct tt_http *h, const char *url, const char *form, const char *what, struct tt_gcs_token *out)
{
	struct tt_http_header hdr = {"Content-Type", "application/x-www-form-urlencoded"};
	struct tt_http_request req = {
		.method = "POST", .url = url, .headers = &hdr, .n_headers = 1, .body = form, .body_len = strlen(form)};
	struct tt_http_response resp;
	int rc = tt_http_perform_retried(h, &req, &resp, NULL);
	if (rc == 0)
		rc = read_answer(&resp, what, out);
	tt_http_response_free(&resp);
	return rc;
}

/* "a=<escaped>&b=<escaped>..." of n name/value pairs, malloc'd. */
static char *form_of(const char *const *pairs, size_t n)
{
	char *form = strdup("");
	for (size_t i = 0; form && i < n; i++) {
		char *v = tt_http_escape(pairs[2 * i + 1], 0);
		char *grown = v ? tt_strdupf("%s%s%s=%s", form, i ? "&" : "", pairs[2 * i], v) : NULL;
		free(v);
		free(form);
		form = grown;
	}
	return form;
}

static int service_account_form(const struct tt_gcs_keyfile *k, char **form)
{
	struct tt_jwt_claims claims = {
		.key_id = k->private_key_id,
		.issuer = k->client_email,
		.scope = TT_GCS_SCOPE,
		.audience = k->token_uri,
		.issued_at = (int64_t)time(NULL),
	};
	char *jwt, why[160];
	if (tt_jwt_sign_rs256(&k->key, &claims, &jwt, why, sizeof why) != 0)
		return tether_error_set(TETHER_EAUTH, "%s: cannot sign the token request: %s", k->where, why);
	const char *pairs[] = {"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion", jwt};
	*form = form_of(pairs, 2);
	free(jwt);
	return *form ? 0 : tt_fail_oom();
}

static int refresh_form(const struct tt_gcs_keyfile *k, char **form)
{
	const char *pairs[] = {"grant_type",    "refresh_token",  "client_id",     k->client_id,
	                       "client_secret", k->client_secret, "refresh_token", k->refresh_token};
	*form = form_of(pairs, 4);
	return *form ? 0 : tt_fail_oom();
}

int tt_gcs_token_from_key(struct tt_http *h, const struct tt_gcs_keyfile *k, struct tt_gcs_token *out)
{
	memset(out, 0, sizeof *out);
	char *form;
	int rc = k->type == TT_GCS_SERVICE_ACCOUNT ? service_account_form(k, &form) : refresh_form(k, &form);
	if (rc)
		return rc;
	char *what = tt_strdupf("the GCS token endpoint %s (%s)", k->token_uri, k->where);
	rc = what ? post_form(h, k->token_uri, form, what, out) : tt_fail_oom();
	free(what);
	free(form);
	return rc;
}

int tt_gcs_token_from_metadata(struct tt_http *h, const char *host, struct tt_gcs_token *out)
{
	memset(out, 0, sizeof *out);
	char *url = tt_strdupf("http://%s/computeMetadata/v1/instance/service-accounts/default/token", host);
	char *what = tt_strdupf("the GCE metadata server at %s", host);
	if (!url || !what) {
		free(url);
		free(what);
		return tt_fail_oom();
	}
	struct tt_http_header hdr = {"Metadata-Flavor", "Google"};
	struct tt_http_request req = {.method = "GET", .url = url, .headers = &hdr, .n_headers = 1};
	struct tt_http_response resp;
	int rc = tt_http_perform_retried(h, &req, &resp, NULL);
	const char *flavor = rc == 0 ? tt_http_header(&resp, "Metadata-Flavor") : NULL;
	if (rc) {
		char why[512];
		snprintf(why, sizeof why, "%s", tether_error_last());
		rc = tether_error_set(TETHER_EAUTH, "%s: unreachable (%s)", what, why);
	}
	else if (resp.status == 200 && (!flavor || strcmp(flavor, "Google") != 0))
		/* Something answers there, but not a metadata server. */
		rc = tether_error_set(TETHER_EAUTH, "%s: the answer lacks Metadata-Flavor: Google", what);
	else
		rc = read_answer(&resp, what, out);
	tt_http_response_free(&resp);
	free(url);
	free(what);
	return rc;
}
