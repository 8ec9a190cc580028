/* A REST catalog's settings, URLs and error texts: see rest_endpoint.h. */
#include "backends/iceberg/rest_endpoint.h"

#include <tether/backend.h>

#include "store/http/http.h"
#include "util/fail.h"
#include "util/fsutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SCOPE "PRINCIPAL_ROLE:ALL"
#define ERROR_TEXT_MAX 300

static const char *const committed_keys[] = {"type", "warehouse", "name", NULL};
static const char *const secret_keys[] = {"type",   "warehouse", "name",       "uri",    "token", "credential",
                                          "scope",  "prefix",    "allow_http", "oauth2-server-uri", NULL};

static int listed(const char *key, const char *const *keys)
{
	for (; *keys; keys++)
		if (strcmp(key, *keys) == 0)
			return 1;
	return 0;
}

void ib_rest_settings_free(struct ib_rest_settings *s)
{
	free(s->catalog);
	free(s->base);
	free(s->prefix);
	free(s->warehouse);
	free(s->token);
	free(s->client_id);
	free(s->client_secret);
	free(s->scope);
	free(s->oauth2_uri);
	memset(s, 0, sizeof *s);
}

/* A string property, or TETHER_ECONFIG when it is there but not a
 * non-empty string. *out stays NULL when absent. */
static int string_prop(const json_t *obj, const char *key, const char *where, const char *catalog, char **out)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || !*json_string_value(v))
		return tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s': %s: '%s' must be a non-empty string", catalog,
		                        where, key);
	free(*out);
	*out = strdup(json_string_value(v));
	return *out ? 0 : tt_fail_oom();
}

/* Every key of obj is one of allowed, or has a '.' (a FileIO setting). */
static int check_keys(const json_t *obj, const char *const *allowed, const char *where, const char *catalog,
                      int committed)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		(void)v;
		if (listed(key, allowed) || (!committed && strchr(key, '.')))
			continue;
		if (committed && listed(key, secret_keys))
			return tether_error_set(TETHER_ECONFIG,
			                        "iceberg catalog '%s': '%s' is committed (%s); only type, warehouse and name "
			                        "may be: put it in .tether/secrets.toml",
			                        catalog, key, where);
		return tether_error_set(TETHER_ECONFIG,
		                        "iceberg catalog '%s': unknown property '%s' in %s (known: uri, token, credential, "
		                        "scope, oauth2-server-uri, prefix, warehouse, allow_http)",
		                        catalog, key, where);
	}
	return 0;
}

/* uri: http(s)://authority[/path], no user info, query or fragment (a
 * password in a URL would be logged in every message naming it). */
static int check_uri(const char *uri, const char *catalog)
{
	const char *rest = strncmp(uri, "https://", 8) == 0 ? uri + 8 : strncmp(uri, "http://", 7) == 0 ? uri + 7 : NULL;
	if (!rest || !*rest || *rest == '/')
		return tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s': uri '%s' is not an http:// or https:// URL",
		                        catalog, uri);
	size_t auth_len = strcspn(rest, "/");
	if (memchr(rest, '@', auth_len) || strpbrk(uri, "?#") || strpbrk(uri, " \t\r\n"))
		return tether_error_set(TETHER_ECONFIG,
		                        "iceberg catalog '%s': uri must be scheme://host[:port][/path], without user "
		                        "info, query, fragment or spaces",
		                        catalog);
	return 0;
}

static char *strip_slashes(const char *s)
{
	while (*s == '/')
		s++;
	size_t n = strlen(s);
	while (n && s[n - 1] == '/')
		n--;
	return strndup(s, n);
}

static int read_allow_http(const json_t *secrets, const char *catalog, int *out)
{
	json_t *v = secrets ? json_object_get(secrets, "allow_http") : NULL;
	*out = 0;
	if (!v)
		return 0;
	if (json_is_boolean(v))
		*out = json_is_true(v);
	else if (json_is_string(v) && (strcmp(json_string_value(v), "true") == 0 || strcmp(json_string_value(v), "false") == 0))
		*out = strcmp(json_string_value(v), "true") == 0;
	else
		return tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s': secrets.toml: allow_http must be true or false",
		                        catalog);
	return 0;
}

static int split_credential(struct ib_rest_settings *s, const char *credential)
{
	const char *colon = strchr(credential, ':');
	if (colon) {
		s->client_id = strndup(credential, (size_t)(colon - credential));
		s->client_secret = strdup(colon + 1);
		if (!s->client_id || !s->client_secret)
			return tt_fail_oom();
		if (!*s->client_id || !*s->client_secret)
			return tether_error_set(TETHER_ECONFIG,
			                        "iceberg catalog '%s': secrets.toml: credential must be "
			                        "'client_id:client_secret' with both parts non-empty",
			                        s->catalog);
		return 0;
	}
	s->client_secret = strdup(credential);
	return s->client_secret ? 0 : tt_fail_oom();
}

int ib_rest_settings_read(const json_t *props, const json_t *secrets, const char *name, struct ib_rest_settings *out)
{
	memset(out, 0, sizeof *out);
	if (!(out->catalog = strdup(name && *name ? name : "default")))
		return tt_fail_oom();
	const char *cat = out->catalog;
	int rc = 0;
	if (props && !json_is_object(props))
		rc = tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s': the catalog properties are not a table", cat);
	else if (secrets && !json_is_object(secrets))
		rc = tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s': secrets.toml: the catalog entry is not a table",
		                      cat);
	if (!rc && props)
		rc = check_keys(props, committed_keys, "committed catalog properties", cat, 1);
	if (!rc && secrets)
		rc = check_keys(secrets, secret_keys, ".tether/secrets.toml", cat, 0);
	char *uri = NULL, *credential = NULL, *prefix = NULL;
	if (!rc)
		rc = string_prop(props, "warehouse", "catalog properties", cat, &out->warehouse);
	if (!rc)
		rc = string_prop(secrets, "warehouse", "secrets.toml", cat, &out->warehouse);
	if (!rc)
		rc = string_prop(secrets, "uri", "secrets.toml", cat, &uri);
	if (!rc)
		rc = string_prop(secrets, "token", "secrets.toml", cat, &out->token);
	if (!rc)
		rc = string_prop(secrets, "credential", "secrets.toml", cat, &credential);
	if (!rc)
		rc = string_prop(secrets, "scope", "secrets.toml", cat, &out->scope);
	if (!rc)
		rc = string_prop(secrets, "oauth2-server-uri", "secrets.toml", cat, &out->oauth2_uri);
	if (!rc)
		rc = string_prop(secrets, "prefix", "secrets.toml", cat, &prefix);
	if (!rc)
		rc = read_allow_http(secrets, cat, &out->allow_http);
	if (!rc && !uri)
		rc = tether_error_set(TETHER_ECONFIG,
		                      "iceberg catalog '%s': no uri: a REST catalog's uri goes in .tether/secrets.toml", cat);
	if (!rc)
		rc = check_uri(uri, cat);
	if (!rc && out->oauth2_uri)
		rc = check_uri(out->oauth2_uri, cat);
	if (!rc && out->token && !tt_http_token_ok(out->token))
		rc = tether_error_set(TETHER_ECONFIG,
		                      "iceberg catalog '%s': secrets.toml: token must be printable ASCII without spaces",
		                      cat);
	if (!rc && credential)
		rc = split_credential(out, credential);
	if (!rc) {
		size_t n = strlen(uri);
		while (n && uri[n - 1] == '/')
			n--;
		out->base = strndup(uri, n);
		if (!out->scope)
			out->scope = strdup(DEFAULT_SCOPE);
		if (!out->oauth2_uri && out->base)
			out->oauth2_uri = tt_strdupf("%s/v1/oauth/tokens", out->base);
		if (prefix)
			out->prefix = strip_slashes(prefix);
		if (!out->base || !out->scope || !out->oauth2_uri || (prefix && !out->prefix))
			rc = tt_fail_oom();
	}
	free(uri);
	free(credential);
	free(prefix);
	if (rc)
		ib_rest_settings_free(out);
	return rc;
}

static int set_from(const json_t *obj, const char *key, char **slot, int strip)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return -1;
	char *copy = strip ? strip_slashes(json_string_value(v)) : strdup(json_string_value(v));
	if (!copy)
		return tt_fail_oom();
	free(*slot);
	*slot = *copy ? copy : NULL;
	if (!*copy)
		free(copy);
	return 0;
}

int ib_rest_settings_apply_config(struct ib_rest_settings *s, const json_t *config)
{
	const json_t *defaults = json_object_get(config, "defaults");
	const json_t *overrides = json_object_get(config, "overrides");
	if (!json_is_object(config) || (defaults && !json_is_object(defaults)) ||
	    (overrides && !json_is_object(overrides)))
		return tether_error_set(TETHER_EIO,
		                        "iceberg catalog '%s': GET %s/v1/config: the answer is not a config object "
		                        "{\"defaults\": {...}, \"overrides\": {...}}",
		                        s->catalog, s->base);
	/* defaults only where the client set nothing; overrides always. */
	int rc = 0;
	if (!s->prefix)
		rc = set_from(defaults, "prefix", &s->prefix, 1);
	if (!rc && !s->warehouse)
		rc = set_from(defaults, "warehouse", &s->warehouse, 0);
	if (!rc)
		rc = set_from(overrides, "prefix", &s->prefix, 1);
	if (!rc)
		rc = set_from(overrides, "warehouse", &s->warehouse, 0);
	if (rc == -1)
		rc = tether_error_set(TETHER_EIO, "iceberg catalog '%s': GET %s/v1/config: a prefix or warehouse that is not a string",
		                      s->catalog, s->base);
	return rc;
}

char *ib_rest_config_url(const struct ib_rest_settings *s)
{
	if (!s->warehouse)
		return tt_strdupf("%s/v1/config", s->base);
	char *w = tt_http_escape(s->warehouse, 0);
	char *url = w ? tt_strdupf("%s/v1/config?warehouse=%s", s->base, w) : NULL;
	free(w);
	return url;
}

char *ib_rest_namespace_path(const char *ns)
{
	size_t n = strlen(ns);
	/* each byte becomes at most 3, each '.' "%1F" */
	char *out = malloc(3 * n + 1), *o = out;
	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	const char *level = ns;
	for (;;) {
		size_t len = strcspn(level, ".");
		if (len == 0) {
			free(out);
			errno = EINVAL;
			return NULL;
		}
		char *one = strndup(level, len);
		char *enc = one ? tt_http_escape(one, 0) : NULL;
		free(one);
		if (!enc) {
			free(out);
			errno = ENOMEM;
			return NULL;
		}
		if (o != out) {
			memcpy(o, "%1F", 3);
			o += 3;
		}
		size_t el = strlen(enc);
		memcpy(o, enc, el);
		o += el;
		free(enc);
		if (!level[len])
			break;
		level += len + 1;
	}
	*o = '\0';
	return out;
}

json_t *ib_rest_namespace_levels(const char *ns)
{
	json_t *arr = json_array();
	const char *level = ns;
	while (arr) {
		size_t len = strcspn(level, ".");
		if (json_array_append_new(arr, json_stringn(level, len))) {
			json_decref(arr);
			return NULL;
		}
		if (!level[len])
			break;
		level += len + 1;
	}
	return arr;
}

int ib_rest_table_url(const struct ib_rest_settings *s, const char *ns, const char *table, char **url)
{
	*url = NULL;
	if (!ns || !*ns || !table || !*table)
		return tether_error_set(TETHER_EUSAGE, "iceberg catalog '%s': an identifier needs a namespace and a table name",
		                        s->catalog);
	char *nsp = ib_rest_namespace_path(ns);
	if (!nsp)
		return errno == ENOMEM ? tt_fail_oom()
		                       : tether_error_set(TETHER_EUSAGE, "iceberg catalog '%s': namespace '%s' has an empty level",
		                                          s->catalog, ns);
	char *t = tt_http_escape(table, 0);
	char *p = s->prefix ? tt_http_escape(s->prefix, 1) : NULL;
	if (t && (p || !s->prefix))
		*url = tt_strdupf("%s/v1/%s%snamespaces/%s/tables/%s", s->base, p ? p : "", p ? "/" : "", nsp, t);
	free(nsp);
	free(t);
	free(p);
	return *url ? 0 : tt_fail_oom();
}

/* Copy at most n-1 bytes of src into buf, control characters as ' '. */
static void one_line(char *buf, size_t n, const char *src, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 1 < n; i++) {
		unsigned char c = (unsigned char)src[i];
		buf[o++] = (c < ' ' || c == 127) ? ' ' : (char)c;
	}
	buf[o] = '\0';
}

static json_t *error_object(const struct tt_http_response *resp)
{
	if (!resp->body || !resp->body_len)
		return NULL;
	json_t *doc = json_loadb((const char *)resp->body, resp->body_len, 0, NULL);
	json_t *err = json_object_get(doc, "error");
	if (json_is_object(err)) {
		json_incref(err);
		json_decref(doc);
		return err;
	}
	json_decref(doc);
	return NULL;
}

void ib_rest_error_text(const struct tt_http_response *resp, char *buf, size_t n)
{
	size_t cap = n < ERROR_TEXT_MAX + 1 ? n : ERROR_TEXT_MAX + 1;
	if (!cap)
		return;
	json_t *err = error_object(resp);
	const char *type = json_string_value(json_object_get(err, "type"));
	const char *msg = json_string_value(json_object_get(err, "message"));
	if (err && (type || msg)) {
		char *joined = tt_strdupf("%s%s%s", type ? type : "", type && msg ? ": " : "", msg ? msg : "");
		if (joined)
			one_line(buf, cap, joined, strlen(joined));
		else
			one_line(buf, cap, "(out of memory)", 15);
		free(joined);
	} else if (resp->body && resp->body_len) {
		one_line(buf, cap, (const char *)resp->body, resp->body_len);
	} else {
		one_line(buf, cap, "(no body)", 9);
	}
	json_decref(err);
}

void ib_rest_error_type(const struct tt_http_response *resp, char *buf, size_t n)
{
	if (!n)
		return;
	json_t *err = error_object(resp);
	const char *type = json_string_value(json_object_get(err, "type"));
	one_line(buf, n, type ? type : "", type ? strlen(type) : 0);
	json_decref(err);
}
