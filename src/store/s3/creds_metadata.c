/* The metadata services (creds_impl.h): the ECS container credentials
 * endpoint (one GET, a JSON answer, an Authorization token when the
 * platform gives one) and EC2 instance metadata, IMDSv2 only (a PUT for a
 * session token, then the role's name and its credentials, each GET
 * carrying the token): IMDSv1's tokenless GETs are what a server-side
 * request forgery reaches, so tether never falls back to them. */
#include "store/s3/creds_impl.h"

#include "store/http/http.h"
#include "util/fsutil.h"

#include <tether/backend.h> /* tether_error_set */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AUTH_TOKEN_FILE_MAX (16u << 10)

/* "HTTP 401 code: message" from a JSON error answer when it has one. */
static int status_error(const char *what, const char *url, const struct tt_http_response *resp)
{
	json_t *j = json_loadb((const char *)resp->body, resp->body_len, 0, NULL);
	const char *code = json_string_value(json_object_get(j, "code"));
	if (!code)
		code = json_string_value(json_object_get(j, "Code"));
	const char *msg = json_string_value(json_object_get(j, "message"));
	if (!msg)
		msg = json_string_value(json_object_get(j, "Message"));
	char words[512];
	tt_aws_server_words(words, sizeof words, code, msg);
	int rc = tether_error_set(resp->status >= 500 || resp->status == 429 ? TETHER_ETRANSIENT : TETHER_EAUTH,
	                          "%s: GET %s: HTTP %ld%s", what, url, resp->status, words);
	json_decref(j);
	return rc;
}

/* The credentials in a JSON answer (ECS's and IMDS's share the names). */
static int creds_from_json(const char *what, const struct tt_http_response *resp, struct tt_aws_creds *out)
{
	json_error_t jerr;
	json_t *j = json_loadb((const char *)resp->body, resp->body_len, 0, &jerr);
	/* Where it broke, not jansson's text, which quotes the bytes near the
	 * fault: they may be a secret. */
	if (!j)
		return tether_error_set(TETHER_EAUTH, "%s: the answer is not JSON (at line %d, column %d)", what,
		                        jerr.line, jerr.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return tether_error_set(TETHER_EAUTH, "%s: the answer is not a JSON object", what);
	}
	const char *code = json_string_value(json_object_get(j, "Code"));
	int rc;
	if (code && strcmp(code, "Success") != 0) {
		char words[160];
		tt_aws_server_words(words, sizeof words, code, NULL);
		rc = tether_error_set(TETHER_EAUTH, "%s: the answer's Code is%s", what, words);
	} else {
		rc = tt_aws_creds_from(what, json_string_value(json_object_get(j, "AccessKeyId")),
		                       json_string_value(json_object_get(j, "SecretAccessKey")),
		                       json_string_value(json_object_get(j, "Token")),
		                       json_string_value(json_object_get(j, "Expiration")), out);
	}
	json_decref(j);
	return rc;
}

/* A header value must not end the header early. */
static int header_safe(const char *v)
{
	for (; *v; v++)
		if (*v == '\r' || *v == '\n')
			return 0;
	return 1;
}

int tt_aws_ecs_fetch(struct tt_http *h, const struct tt_aws_source *s, struct tt_aws_creds *out)
{
	char what[600];
	snprintf(what, sizeof what, "%s", s->name);
	char *token = NULL;
	if (s->auth_token_file) {
		/* Read at every fetch: EKS Pod Identity rotates it. */
		if (!(token = tt_aws_read_token(what, s->auth_token_file, AUTH_TOKEN_FILE_MAX)))
			return TETHER_EAUTH;
	} else if (s->auth_token) {
		token = strdup(s->auth_token);
		if (!token)
			return tether_error_set(TETHER_EIO, "out of memory");
	}
	if (token && !header_safe(token)) {
		tt_aws_free_secret(token);
		return tether_error_set(TETHER_EAUTH, "%s: the authorization token holds a line break", what);
	}
	struct tt_http_header auth = {"Authorization", token};
	struct tt_http_request req = {
	    .method = "GET",
	    .url = s->url,
	    .headers = token ? &auth : NULL,
	    .n_headers = token ? 1 : 0,
	    .max_body = 64 << 10,
	};
	struct tt_http_response resp;
	int rc = tt_aws_http_call(h, &req, what, &resp);
	tt_aws_free_secret(token);
	if (rc != 0)
		return rc;
	char named[1200];
	snprintf(named, sizeof named, "%s: GET %s", what, s->url);
	rc = resp.status == 200 ? creds_from_json(named, &resp, out) : status_error(what, s->url, &resp);
	tt_http_response_free(&resp);
	if (rc == 0)
		out->source = s->name;
	return rc;
}

/* A 2xx answer of one IMDS request, or the error naming it. */
static int imds_call(struct tt_http *h, const struct tt_aws_source *s, const char *method, const char *path,
                     const struct tt_http_header *header, struct tt_http_response *resp)
{
	char *url = tt_strdupf("%s%s", s->url, path);
	if (!url)
		return tether_error_set(TETHER_EIO, "out of memory");
	struct tt_http_request req = {
	    .method = method,
	    .url = url,
	    .headers = header,
	    .n_headers = 1,
	    .max_body = 64 << 10,
	};
	int rc = tt_aws_http_call(h, &req, s->name, resp);
	if (rc == 0 && resp->status / 100 != 2) {
		rc = tether_error_set(resp->status >= 500 ? TETHER_ETRANSIENT : TETHER_EAUTH, "%s: %s %s: HTTP %ld%s",
		                      s->name, method, url, resp->status,
		                      resp->status == 404 && strstr(path, "security-credentials")
		                          ? " (no IAM role attached to this instance)"
		                          : "");
		tt_http_response_free(resp);
	}
	free(url);
	return rc;
}

int tt_aws_imds_fetch(struct tt_http *h, const struct tt_aws_source *s, struct tt_aws_creds *out)
{
	/* The session token lives as long as a refresh needs it. */
	struct tt_http_header ttl = {"X-aws-ec2-metadata-token-ttl-seconds", "300"};
	struct tt_http_response resp;
	int rc = imds_call(h, s, "PUT", "/latest/api/token", &ttl, &resp);
	if (rc != 0)
		return rc;
	char *token = strndup((const char *)resp.body, resp.body_len);
	tt_http_response_free(&resp);
	if (!token)
		return tether_error_set(TETHER_EIO, "out of memory");
	if (!*token || !header_safe(token)) {
		tt_aws_free_secret(token);
		return tether_error_set(TETHER_EAUTH, "%s: PUT %s/latest/api/token: the answer is not a token", s->name,
		                        s->url);
	}
	struct tt_http_header auth = {"X-aws-ec2-metadata-token", token};
	const char *list = "/latest/meta-data/iam/security-credentials/";
	rc = imds_call(h, s, "GET", list, &auth, &resp);
	char role[256] = "";
	if (rc == 0) {
		/* One role per instance profile: the first line. */
		size_t n = 0;
		while (n < resp.body_len && n < sizeof role - 1 && resp.body[n] != '\n' && resp.body[n] != '\r')
			n++;
		memcpy(role, resp.body, n);
		role[n] = '\0';
		tt_http_response_free(&resp);
		int ok = n > 0;
		for (size_t i = 0; i < n; i++)
			ok &= isalnum((unsigned char)role[i]) || strchr("+=,.@_-", role[i]) != NULL;
		if (!ok)
			rc = tether_error_set(TETHER_EAUTH, "%s: GET %s%s: the answer is not a role name", s->name, s->url,
			                      list);
	}
	if (rc == 0) {
		char path[320];
		snprintf(path, sizeof path, "%s%s", list, role);
		rc = imds_call(h, s, "GET", path, &auth, &resp);
		if (rc == 0) {
			char what[1200];
			snprintf(what, sizeof what, "%s: GET %s%s", s->name, s->url, path);
			rc = creds_from_json(what, &resp, out);
			tt_http_response_free(&resp);
		}
	}
	tt_aws_free_secret(token);
	if (rc == 0)
		out->source = s->name;
	return rc;
}

/* The host of an absolute URL, without brackets or port. */
static int url_host(const char *url, char *host, size_t n)
{
	const char *p = strstr(url, "://");
	if (!p)
		return -1;
	p += 3;
	const char *at = p + strcspn(p, "/?#");
	const char *cred = memchr(p, '@', (size_t)(at - p));
	if (cred)
		return -1; /* user:password@ has no place here */
	const char *e;
	if (*p == '[') {
		e = memchr(p, ']', (size_t)(at - p));
		if (!e)
			return -1;
		p++;
	} else {
		e = p + strcspn(p, ":/?#");
	}
	if (e <= p || (size_t)(e - p) >= n)
		return -1;
	memcpy(host, p, (size_t)(e - p));
	host[e - p] = '\0';
	return 0;
}

int tt_aws_ecs_url_allowed(const char *url)
{
	if (strncasecmp(url, "https://", 8) == 0)
		return 1;
	if (strncasecmp(url, "http://", 7) != 0)
		return 0;
	char host[256];
	if (url_host(url, host, sizeof host) != 0)
		return 0;
	if (strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 || strcmp(host, "169.254.170.2") == 0 ||
	    strcmp(host, "169.254.170.23") == 0 || strcasecmp(host, "fd00:ec2::23") == 0)
		return 1;
	/* 127.0.0.0/8, as four plain decimal numbers: curl reads "0177" as
	 * octal, so a leading zero could name another address. */
	const char *q = host;
	for (int part = 0; part < 4; part++) {
		unsigned v = 0;
		const char *start = q;
		while (isdigit((unsigned char)*q) && q - start < 3)
			v = v * 10 + (unsigned)(*q++ - '0');
		if (q == start || (q - start > 1 && *start == '0') || v > 255 || (part == 0 && v != 127))
			return 0;
		if (part < 3 && *q++ != '.')
			return 0;
	}
	return *q == '\0';
}
