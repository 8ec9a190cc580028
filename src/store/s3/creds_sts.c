/* STS, for temporary credentials (creds_impl.h): AssumeRole, signed with
 * SigV4 by the HTTP client (service "sts"), and AssumeRoleWithWebIdentity,
 * unsigned (the web identity token is the proof). Both are a form POST
 * whose answer is XML: <Credentials> on success, <Error><Code> else. */
#include "store/s3/creds_impl.h"

#include "format/xml.h"
#include "store/http/http.h"
#include "util/fsutil.h"

#include <tether/backend.h> /* tether_error_set */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A web identity token is a JWT of a few KiB. */
#define TOKEN_FILE_MAX (64u << 10)

struct form {
	char *text;
	size_t len;
};

/* Append "&name=value" (value percent-encoded) to the form. */
static int form_add(struct form *f, const char *name, const char *value)
{
	if (!value)
		return 0;
	char *v = tt_http_escape(value, 0);
	char *more = v ? tt_strdupf("%s%s%s=%s", f->text ? f->text : "", f->text ? "&" : "", name, v) : NULL;
	free(v);
	if (!more)
		return tether_error_set(TETHER_EIO, "out of memory");
	tt_aws_free_secret(f->text);
	f->text = more;
	f->len = strlen(more);
	return 0;
}

/* It may carry a web identity token. */
static void form_free(struct form *f)
{
	tt_aws_free_secret(f->text);
}

/* The <Error> of an STS answer as "Code: Message", or "" when it has none. */
static void sts_error(const struct tt_http_response *resp, char *out, size_t n)
{
	out[0] = '\0';
	char err[256];
	struct tt_xml_doc *doc = tt_xml_parse((const char *)resp->body, resp->body_len, "STS error", err, sizeof err);
	if (!doc)
		return;
	const struct tt_xml_node *e = tt_xml_child(tt_xml_root(doc), "Error");
	const char *code = e ? tt_xml_child_text(e, "Code") : NULL;
	const char *msg = e ? tt_xml_child_text(e, "Message") : NULL;
	tt_aws_server_words(out, n, code, msg);
	tt_xml_free(doc);
}

/* POST the form to STS and read <RESULT><Credentials>. */
static int sts_call(struct tt_http *h, const struct tt_aws_source *s, const char *action, const struct form *f,
                    const struct tt_aws_creds *signer, struct tt_aws_creds *out)
{
	char what[512];
	snprintf(what, sizeof what, "%s: STS %s at %s", s->name, action, s->sts_endpoint);

	/* The payload's hash: libcurl 7.88 signs with whatever the caller
	 * declares here (http.h). */
	char hash[65];
	tether_sha256_hex(f->text, f->len, hash);

	struct tt_http_header headers[3] = {
	    {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
	    {"x-amz-content-sha256", hash},
	};
	size_t n_headers = 2;
	if (signer && signer->session_token)
		headers[n_headers++] = (struct tt_http_header){"x-amz-security-token", signer->session_token};
	char sigv4[160];
	snprintf(sigv4, sizeof sigv4, "aws:amz:%s:sts", s->region);
	struct tt_http_request req = {
	    .method = "POST",
	    .url = s->sts_endpoint,
	    .headers = headers,
	    .n_headers = n_headers,
	    .body = f->text,
	    .body_len = f->len,
	    .aws_sigv4 = signer ? sigv4 : NULL,
	    .access_key_id = signer ? signer->access_key_id : NULL,
	    .secret_access_key = signer ? signer->secret_access_key : NULL,
	    .max_body = 1 << 20,
	};
	struct tt_http_response resp;
	int rc = tt_aws_http_call(h, &req, what, &resp);
	if (rc != 0)
		return rc;
	if (resp.status != 200) {
		char code[512];
		sts_error(&resp, code, sizeof code);
		long status = resp.status;
		tt_http_response_free(&resp);
		return tether_error_set(status >= 500 || status == 429 ? TETHER_ETRANSIENT : TETHER_EAUTH,
		                        "%s: HTTP %ld%s", what, status, code);
	}
	char err[512];
	struct tt_xml_doc *doc = tt_xml_parse((const char *)resp.body, resp.body_len, what, err, sizeof err);
	tt_http_response_free(&resp);
	if (!doc)
		return tether_error_set(TETHER_EAUTH, "%s", err);
	char result[64];
	snprintf(result, sizeof result, "%sResult", action);
	const struct tt_xml_node *c = tt_xml_child(tt_xml_child(tt_xml_root(doc), result), "Credentials");
	if (!c) {
		tt_xml_free(doc);
		return tether_error_set(TETHER_EAUTH, "%s: the answer has no %s/Credentials", what, result);
	}
	rc = tt_aws_creds_from(what, tt_xml_child_text(c, "AccessKeyId"), tt_xml_child_text(c, "SecretAccessKey"),
	                       tt_xml_child_text(c, "SessionToken"), tt_xml_child_text(c, "Expiration"), out);
	tt_xml_free(doc);
	if (rc == 0)
		out->source = s->name;
	return rc;
}

/* The parameters both actions share. */
static int common_form(const struct tt_aws_source *s, const char *action, struct form *f)
{
	int rc = form_add(f, "Action", action);
	if (rc == 0)
		rc = form_add(f, "RoleArn", s->role_arn);
	if (rc == 0)
		rc = form_add(f, "RoleSessionName", s->session_name);
	if (rc == 0)
		rc = form_add(f, "DurationSeconds", s->duration);
	if (rc == 0)
		rc = form_add(f, "Version", "2011-06-15");
	return rc;
}

int tt_aws_sts_assume_role(struct tt_http *h, const struct tt_aws_source *s, const struct tt_aws_creds *base,
                           struct tt_aws_creds *out)
{
	struct form f = {NULL, 0};
	int rc = common_form(s, "AssumeRole", &f);
	if (rc == 0)
		rc = form_add(&f, "ExternalId", s->external_id);
	if (rc == 0)
		rc = sts_call(h, s, "AssumeRole", &f, base, out);
	form_free(&f);
	return rc;
}

int tt_aws_sts_web_identity(struct tt_http *h, const struct tt_aws_source *s, struct tt_aws_creds *out)
{
	/* Read at every fetch: the platform (EKS, GitHub Actions) rotates it. */
	char *token = tt_aws_read_token(s->name, s->token_file, TOKEN_FILE_MAX);
	if (!token)
		return TETHER_EAUTH;
	int rc = 0;
	struct form f = {NULL, 0};
	if (rc == 0)
		rc = common_form(s, "AssumeRoleWithWebIdentity", &f);
	if (rc == 0)
		rc = form_add(&f, "WebIdentityToken", token);
	tt_aws_free_secret(token);
	if (rc == 0)
		rc = sts_call(h, s, "AssumeRoleWithWebIdentity", &f, NULL, out);
	form_free(&f);
	return rc;
}
