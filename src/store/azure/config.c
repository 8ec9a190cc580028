/* Which account, which credentials, which endpoint: what an Azure store
 * talks to. From the store options (.tether/secrets.toml, never a
 * committed file) when they name any Azure credential, else from the
 * variables Azure's own tools read:
 *
 *   AZURE_STORAGE_CONNECTION_STRING      AccountName, AccountKey,
 *                                        BlobEndpoint, SharedAccessSignature,
 *                                        DefaultEndpointsProtocol, EndpointSuffix
 *   AZURE_STORAGE_ACCOUNT_NAME (or AZURE_STORAGE_ACCOUNT)
 *   AZURE_STORAGE_ACCOUNT_KEY (or AZURE_STORAGE_KEY)
 *   AZURE_STORAGE_SAS_TOKEN
 *
 * and, in options, connection_string, account_name, account_key and
 * sas_token the same. In either place a single value overrides the
 * connection string's. Taking one place whole, rather than a field from
 * each, keeps a key from one account from being sent with the name of
 * another. The endpoint: endpoint_url, else the connection string's
 * BlobEndpoint, else https://ACCOUNT.blob.SUFFIX. A message names the
 * option or variable at fault, never a value. */
#include "store/azure/az.h"

#include "util/fsutil.h"

#include <nettle/base64.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

static int set_string(char **dst, const char *v, size_t n)
{
	free(*dst);
	*dst = strndup(v, n);
	return *dst ? 0 : oom();
}

/* The account key, base64 as Azure shows it. */
static int set_key(struct az_config *cfg, const char *v, size_t n, const char *what)
{
	struct base64_decode_ctx ctx;
	uint8_t *key = malloc(BASE64_DECODE_LENGTH(n) + 1);
	size_t len = BASE64_DECODE_LENGTH(n) + 1;
	if (!key)
		return oom();
	base64_decode_init(&ctx);
	if (n == 0 || !base64_decode_update(&ctx, &len, key, n, v) || !base64_decode_final(&ctx) || len == 0) {
		free(key);
		return tether_error_set(TETHER_EUSAGE, "%s: the account key is not base64 (as the Azure portal shows "
		                        "it)", what);
	}
	free(cfg->key);
	cfg->key = key;
	cfg->key_len = len;
	return 0;
}

/* A SAS token, without the '?' some tools print before it. */
static int set_sas(struct az_config *cfg, const char *v, size_t n, const char *what)
{
	if (n && v[0] == '?')
		v++, n--;
	if (n == 0 || memchr(v, '#', n) || memchr(v, ' ', n))
		return tether_error_set(TETHER_EUSAGE, "%s: not a SAS token (expected sv=...&sig=...)", what);
	return set_string(&cfg->sas, v, n);
}

struct conn {
	char *protocol, *suffix, *endpoint;
};

static int segment(const char *seg, size_t n, int index, const char *what, struct az_config *cfg, struct conn *c)
{
	const char *eq = memchr(seg, '=', n);
	if (!eq || eq == seg)
		return tether_error_set(TETHER_EUSAGE, "%s: part %d of the connection string is not Key=Value", what,
		                        index);
	size_t kl = (size_t)(eq - seg), vl = n - kl - 1;
	const char *v = eq + 1;
#define IS(k) (kl == strlen(k) && strncasecmp(seg, k, kl) == 0)
	if (IS("AccountName"))
		return set_string(&cfg->account, v, vl);
	if (IS("AccountKey"))
		return set_key(cfg, v, vl, what);
	if (IS("SharedAccessSignature"))
		return set_sas(cfg, v, vl, what);
	if (IS("BlobEndpoint"))
		return set_string(&c->endpoint, v, vl);
	if (IS("EndpointSuffix"))
		return set_string(&c->suffix, v, vl);
	if (IS("DefaultEndpointsProtocol")) {
		if (!((vl == 4 && strncmp(v, "http", 4) == 0) || (vl == 5 && strncmp(v, "https", 5) == 0)))
			return tether_error_set(TETHER_EUSAGE, "%s: DefaultEndpointsProtocol must be http or https", what);
		return set_string(&c->protocol, v, vl);
	}
	/* The other services' endpoints: not the blob service's business. */
	if (IS("QueueEndpoint") || IS("TableEndpoint") || IS("FileEndpoint") || IS("DfsEndpoint") ||
	    IS("QueueSecondaryEndpoint") || IS("TableSecondaryEndpoint") || IS("FileSecondaryEndpoint") ||
	    IS("BlobSecondaryEndpoint") || IS("DfsSecondaryEndpoint"))
		return 0;
	if (IS("UseDevelopmentStorage"))
		return tether_error_set(TETHER_EUSAGE, "%s: UseDevelopmentStorage is not supported: give the "
		                        "emulator's BlobEndpoint, AccountName and AccountKey", what);
#undef IS
	return tether_error_set(TETHER_EUSAGE, "%s: unknown connection string key '%.*s'", what, (int)kl, seg);
}

/* A connection string's endpoint: BlobEndpoint, else one made from the
 * protocol, account and suffix (when it names any of them). */
static int conn_endpoint(struct az_config *cfg, struct conn *c, const char *what)
{
	if (c->endpoint) {
		cfg->endpoint = c->endpoint;
		c->endpoint = NULL;
	} else if (c->suffix || c->protocol) {
		if (!cfg->account)
			return tether_error_set(TETHER_EUSAGE, "%s: names neither BlobEndpoint nor AccountName", what);
		cfg->endpoint = tt_strdupf("%s://%s.blob.%s", c->protocol ? c->protocol : "https", cfg->account,
		                           c->suffix ? c->suffix : "core.windows.net");
		if (!cfg->endpoint)
			return oom();
	}
	/* The connection string is the user's own Azure configuration, and
	 * says which protocol it means: an http:// endpoint there is meant. */
	if (cfg->endpoint && strncmp(cfg->endpoint, "http://", 7) == 0)
		cfg->allow_http = 1;
	return 0;
}

int az_connection_string_parse(const char *s, const char *what, struct az_config *cfg)
{
	struct conn c = {0};
	int rc = 0, index = 0;
	if (!*s)
		rc = tether_error_set(TETHER_EUSAGE, "%s: the connection string is empty", what);
	for (const char *p = s; !rc && *p;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		index++;
		if (n) /* "a=1;;b=2" and a trailing ';' are Azure's own spelling */
			rc = segment(p, n, index, what, cfg, &c);
		p = end ? end + 1 : p + n;
	}
	if (!rc)
		rc = conn_endpoint(cfg, &c, what);
	free(c.protocol);
	free(c.suffix);
	free(c.endpoint);
	return rc;
}

static const char *opt(const json_t *options, const char *name)
{
	return options ? json_string_value(json_object_get(options, name)) : NULL;
}

static const char *first_env(const char *a, const char *b, const char **which)
{
	const char *v = getenv(a);
	*which = a;
	if ((!v || !*v) && b) {
		v = getenv(b);
		*which = b;
	}
	return v && *v ? v : NULL;
}

/* Credentials from the options (when they name any) or the environment. */
static int credentials(const json_t *options, struct az_config *cfg)
{
	const char *conn = opt(options, "connection_string"), *name = opt(options, "account_name"),
		   *key = opt(options, "account_key"), *sas = opt(options, "sas_token");
	const char *conn_what = "store option connection_string", *name_what = "store option account_name",
		   *key_what = "store option account_key", *sas_what = "store option sas_token";
	if (conn || name || key || sas) {
		cfg->source = ".tether/secrets.toml";
	} else {
		conn = first_env("AZURE_STORAGE_CONNECTION_STRING", NULL, &conn_what);
		name = first_env("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT", &name_what);
		key = first_env("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY", &key_what);
		sas = first_env("AZURE_STORAGE_SAS_TOKEN", NULL, &sas_what);
		cfg->source = conn || name || key || sas ? "the environment" : NULL;
	}
	int rc = conn ? az_connection_string_parse(conn, conn_what, cfg) : 0;
	if (!rc && name)
		rc = set_string(&cfg->account, name, strlen(name));
	if (!rc && key)
		rc = set_key(cfg, key, strlen(key), key_what);
	if (!rc && sas)
		rc = set_sas(cfg, sas, strlen(sas), sas_what);
	return rc;
}

/* An abfs host, ACCOUNT.dfs.SUFFIX: the account, and the blob endpoint
 * beside its Data Lake one. */
static int from_abfs_host(const char *host, struct az_config *cfg, char **endpoint)
{
	const char *dot = strchr(host, '.');
	size_t an = dot ? (size_t)(dot - host) : strlen(host);
	if (cfg->account && (strlen(cfg->account) != an || strncmp(cfg->account, host, an) != 0))
		return tether_error_set(TETHER_EUSAGE, "the URI names account '%.*s' but %s names '%s'", (int)an, host,
		                        cfg->source, cfg->account);
	if (!cfg->account && set_string(&cfg->account, host, an))
		return TETHER_EIO;
	if (dot && strncmp(dot + 1, "dfs.", 4) == 0)
		*endpoint = tt_strdupf("https://%s.blob.%s", cfg->account, dot + 5);
	else if (dot && strncmp(dot + 1, "blob.", 5) == 0)
		*endpoint = tt_strdupf("https://%s", host);
	else if (!dot)
		*endpoint = tt_strdupf("https://%s.blob.core.windows.net", cfg->account);
	else
		return tether_error_set(TETHER_EUSAGE, "'%s' is not an Azure storage host (ACCOUNT.dfs.core.windows.net)",
		                        host);
	return *endpoint ? 0 : oom();
}

/* A SAS token signs nothing with the account's name, so an endpoint and a
 * token are enough; the name (for messages) is then the endpoint's: the
 * first segment of a path-style one (an emulator's), else the first label
 * of its host. */
static int account_from_endpoint(struct az_config *cfg)
{
	const char *host = strstr(cfg->endpoint, "://");
	if (!host)
		return 0;
	host += 3;
	const char *slash = strchr(host, '/');
	const char *name = slash && slash[1] ? slash + 1 : host;
	size_t n = strcspn(name, slash && slash[1] ? "/" : ".:/");
	return n ? set_string(&cfg->account, name, n) : 0;
}

static long millis(const json_t *options, const char *name)
{
	json_t *v = options ? json_object_get(options, name) : NULL;
	return json_is_number(v) ? (long)(json_number_value(v) * 1000.0) : 0;
}

int az_config_resolve(const json_t *options, const char *abfs_host, struct az_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	int rc = credentials(options, cfg);
	char *derived = NULL;
	if (!rc && abfs_host)
		rc = from_abfs_host(abfs_host, cfg, &derived);
	const char *endpoint_url = opt(options, "endpoint_url");
	if (!rc && endpoint_url) {
		free(cfg->endpoint);
		cfg->endpoint = strdup(endpoint_url);
		cfg->allow_http = 0;
		if (!cfg->endpoint)
			rc = oom();
	}
	if (!rc && !cfg->account && cfg->endpoint && !cfg->key)
		rc = account_from_endpoint(cfg);
	if (!rc && !cfg->account)
		rc = tether_error_set(TETHER_EUSAGE, "no Azure storage account: set AZURE_STORAGE_ACCOUNT_NAME, or "
		                      "AZURE_STORAGE_CONNECTION_STRING, or account_name in .tether/secrets.toml");
	if (!rc && !cfg->endpoint) {
		cfg->endpoint = derived ? derived : tt_strdupf("https://%s.blob.core.windows.net", cfg->account);
		derived = NULL;
		if (!cfg->endpoint)
			rc = oom();
	}
	free(derived);
	if (!rc) {
		size_t n = strlen(cfg->endpoint);
		while (n && cfg->endpoint[n - 1] == '/')
			cfg->endpoint[--n] = '\0';
		if (strncmp(cfg->endpoint, "https://", 8) != 0 && strncmp(cfg->endpoint, "http://", 7) != 0)
			rc = tether_error_set(TETHER_EUSAGE, "the Azure blob endpoint must be an http(s):// URL");
		json_t *ah = options ? json_object_get(options, "allow_http") : NULL;
		if (json_is_true(ah))
			cfg->allow_http = 1;
		cfg->connect_timeout_ms = millis(options, "connect_timeout");
		cfg->timeout_ms = millis(options, "timeout");
	}
	if (rc)
		az_config_free(cfg);
	return rc;
}

void az_config_free(struct az_config *cfg)
{
	free(cfg->account);
	if (cfg->key)
		memset(cfg->key, 0, cfg->key_len);
	free(cfg->key);
	free(cfg->sas);
	free(cfg->endpoint);
	memset(cfg, 0, sizeof *cfg);
}
