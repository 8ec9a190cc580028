/* One request to the Blob service: the URL of a container or blob, the
 * headers every request carries (x-ms-date, x-ms-version, SharedKey's
 * Authorization or a SAS token in the query), signed anew for each
 * attempt (the date is part of the signature), retried as the shared
 * client decides; and an answer that is not a success turned into a
 * TETHER_E* error whose one line names the az URI, the HTTP status and
 * Azure's error code. */
#include "store/azure/az.h"

#include "format/xml.h"
#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_HEADERS 16

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

char *az_uri_of(const struct az_store *s, const char *key)
{
	return key ? tt_strdupf("%s/%s", s->uri, key) : strdup(s->uri);
}

/* The endpoint's path ("/devstoreaccount1" for a path-style emulator,
 * "" for an account's own host). */
static const char *endpoint_path(const char *endpoint)
{
	const char *host = strstr(endpoint, "://");
	const char *slash = host ? strchr(host + 3, '/') : NULL;
	return slash ? slash : "";
}

/* The URL path of the container or of key under the root, encoded as
 * sent (and as signed). */
static char *url_path(const struct az_store *s, const char *key)
{
	if (!key)
		return tt_strdupf("%s/%s", endpoint_path(s->cfg.endpoint), s->container);
	char *name = tt_strdupf("%s%s", s->prefix, key);
	char *esc = name ? tt_http_escape(name, 1) : NULL;
	char *path = esc ? tt_strdupf("%s/%s/%s", endpoint_path(s->cfg.endpoint), s->container, esc) : NULL;
	free(name);
	free(esc);
	return path;
}

static char *origin(const char *endpoint)
{
	size_t n = strlen(endpoint) - strlen(endpoint_path(endpoint));
	return strndup(endpoint, n);
}

char *az_blob_url(const struct az_store *s, const char *key)
{
	char *o = origin(s->cfg.endpoint), *path = url_path(s, key);
	char *url = o && path ? tt_strdupf("%s%s", o, path) : NULL;
	free(o);
	free(path);
	return url;
}

/* RFC 1123's date, in English whatever the locale. */
static void http_date(char *out, size_t n)
{
	static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
	static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	snprintf(out, n, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
	         tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* One attempt, signed now. */
static int attempt(struct az_store *s, const struct az_request *r, const char *url, const char *path,
                   const char *query, struct tt_http_response *resp)
{
	struct tt_http_header h[MAX_HEADERS];
	char date[64], signature[64];
	size_t n = 0;
	if (r->n_headers > MAX_HEADERS - 4)
		return tether_error_set(TETHER_EIO, "azure: too many headers");
	int has_type = 0;
	for (size_t i = 0; i < r->n_headers; i++) {
		h[n++] = r->headers[i];
		has_type |= strcasecmp(r->headers[i].name, "Content-Type") == 0;
	}
	/* A body always goes with a Content-Type (the client would add one),
	 * named here so that it is signed. */
	if (!has_type && (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0))
		h[n++] = (struct tt_http_header){"Content-Type", "application/octet-stream"};
	http_date(date, sizeof date);
	h[n++] = (struct tt_http_header){"x-ms-date", date};
	h[n++] = (struct tt_http_header){"x-ms-version", AZ_API_VERSION};
	char *auth = NULL;
	if (s->cfg.key) {
		char *sts = az_string_to_sign(r->method, s->cfg.account, path, query, h, n, r->body_len);
		if (!sts)
			return oom();
		az_sign(s->cfg.key, s->cfg.key_len, sts, signature);
		free(sts);
		auth = tt_strdupf("SharedKey %s:%s", s->cfg.account, signature);
		if (!auth)
			return oom();
		h[n++] = (struct tt_http_header){"Authorization", auth};
	}
	struct tt_http_request req = {
		.method = r->method, .url = url, .headers = h, .n_headers = n, .body = r->body, .body_len = r->body_len,
	};
	int rc = tt_http_perform(s->http, &req, resp);
	free(auth);
	return rc;
}

int az_perform(struct az_store *s, const struct az_request *r, struct tt_http_response *resp)
{
	memset(resp, 0, sizeof *resp);
	char *path = url_path(s, r->key), *o = origin(s->cfg.endpoint);
	const char *q = r->query ? r->query : "";
	/* With SharedKey the SAS token is not needed; without a key it is
	 * the whole authorisation, in the query. */
	const char *sas = !s->cfg.key && s->cfg.sas ? s->cfg.sas : "";
	char *url = path && o ? tt_strdupf("%s%s%s%s%s%s", o, path, *q || *sas ? "?" : "", q, *q && *sas ? "&" : "",
	                                   sas)
	                      : NULL;
	int rc = url ? 0 : oom();
	int max = tt_http_options(s->http)->max_attempts;
	for (int i = 1; !rc; i++) {
		rc = attempt(s, r, url, path, q, resp);
		if (i >= max || !tt_http_retryable(rc, resp))
			break;
		tt_http_response_free(resp);
		memset(resp, 0, sizeof *resp);
		rc = tt_http_backoff(i);
	}
	if (rc && rc != TETHER_ECANCELLED) {
		char *uri = az_uri_of(s, r->key), *why = strdup(tether_error_last());
		rc = tether_error_set(rc, "%s: %s", uri ? uri : s->uri, why ? why : "");
		free(uri);
		free(why);
	}
	free(url);
	free(path);
	free(o);
	return rc;
}

const char *az_error_code(const struct tt_http_response *resp, char *buf, size_t n)
{
	const char *code = tt_http_header(resp, "x-ms-error-code");
	if (code && *code)
		return code;
	buf[0] = '\0';
	if (resp->body_len) {
		char err[256];
		struct tt_xml_doc *doc = tt_xml_parse((const char *)resp->body, resp->body_len, "error", err, sizeof err);
		const char *c = doc ? tt_xml_child_text(tt_xml_root(doc), "Code") : NULL;
		if (c)
			snprintf(buf, n, "%s", c);
		tt_xml_free(doc);
	}
	return buf;
}

/* The first line of the XML body's <Message> (Azure appends RequestId
 * and Time on lines of their own), into buf. */
static const char *error_message(const struct tt_http_response *resp, char *buf, size_t n)
{
	buf[0] = '\0';
	if (!resp->body_len)
		return buf;
	char err[256];
	struct tt_xml_doc *doc = tt_xml_parse((const char *)resp->body, resp->body_len, "error", err, sizeof err);
	const char *m = doc ? tt_xml_child_text(tt_xml_root(doc), "Message") : NULL;
	if (m)
		snprintf(buf, n, "%.*s", (int)strcspn(m, "\r\n"), m);
	tt_xml_free(doc);
	return buf;
}

/* The TETHER_E* code of an error answer other than a refusal of the
 * credentials or a missing container. */
static int error_of(long status, const char *code)
{
	if (status == 404)
		return TETHER_ENOTFOUND;
	/* A failed precondition; not any other conflict (409 BlobArchived). */
	if (status == 412 || (status == 409 && strcmp(code, "BlobAlreadyExists") == 0))
		return TETHER_EREFUSED;
	if (status == 429 || status == 500 || status == 502 || status == 503 || status == 504)
		return TETHER_ETRANSIENT;
	return TETHER_EIO;
}

int az_fail(const struct az_store *s, const char *op, const char *key, const struct tt_http_response *resp)
{
	char cbuf[128], mbuf[256];
	const char *code = az_error_code(resp, cbuf, sizeof cbuf);
	const char *msg = error_message(resp, mbuf, sizeof mbuf);
	char *uri = az_uri_of(s, key);
	const char *u = uri ? uri : s->uri;
	long st = resp->status;
	int rc;
	if (st == 404 && strcmp(code, "ContainerNotFound") == 0)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: %s: container '%s' not found in account '%s' (HTTP 404 "
		                      "ContainerNotFound)", u, op, s->container, s->cfg.account);
	else if (st == 401 || st == 403)
		rc = tether_error_set(TETHER_EAUTH, "%s: %s: HTTP %ld %s: %s (%s%s)", u, op, st, *code ? code : "(no code)",
		                      *msg ? msg : "refused",
		                      s->cfg.key   ? "signed with the account key from "
		                      : s->cfg.sas ? "with the SAS token from "
		                                   : "an anonymous request: no account key or SAS token found",
		                      s->cfg.key || s->cfg.sas ? s->cfg.source : "");
	else
		rc = tether_error_set(error_of(st, code), "%s: %s: HTTP %ld %s%s%s", u, op, st, *code ? code : "(no code)",
		                      *msg ? ": " : "", msg);
	free(uri);
	return rc;
}

void az_version_from_etag(const char *etag, struct tether_store_version *v)
{
	if (!etag || !*etag)
		snprintf(v->token, sizeof v->token, "%s", "");
	else if (etag[0] == '"')
		snprintf(v->token, sizeof v->token, "%s", etag);
	else
		snprintf(v->token, sizeof v->token, "\"%s\"", etag);
}
