/* tether-store-az.so: the Azure Blob store, loaded the first time an
 * az://, abfs:// or abfss:// URI is opened.
 *
 *   az://CONTAINER/PATH                                  the account from
 *                                                        the configuration
 *   abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH  (Hadoop's form)
 *
 * One module serves the three schemes: the build links
 * tether-store-abfs.so and tether-store-abfss.so to this file, so the
 * loader, which looks for tether-store-<scheme>.so, finds it by either
 * name (and registers all three the first time). abfs names the Data
 * Lake endpoint of the account; tether speaks the Blob API, which an
 * account with a hierarchical namespace serves too, at its blob endpoint. */
#include "store/azure/az.h"

#include "util/fsutil.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

/* Azure's rule for a container's name: 3-63 lowercase letters, digits
 * and single hyphens, starting and ending with a letter or digit. */
static int container_ok(const char *c, size_t n)
{
	if (n < 3 || n > 63 || c[0] == '-' || c[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)c[i]) || isdigit((unsigned char)c[i]) ||
		      (c[i] == '-' && c[i + 1] != '-')))
			return 0;
	return 1;
}

/* The container, the root's prefix ("" or "PATH/") and, for abfs, the
 * host, from a canonical URI. */
static int parse_uri(const char *uri, struct az_store *s, char **abfs_host)
{
	*abfs_host = NULL;
	const char *rest = strstr(uri, "://") + 3;
	int abfs = strncmp(uri, "abfs", 4) == 0;
	const char *slash = strchr(rest, '/');
	size_t alen = slash ? (size_t)(slash - rest) : strlen(rest);
	const char *at = abfs ? memchr(rest, '@', alen) : NULL;
	if (abfs && (!at || at == rest || (size_t)(at - rest) + 1 == alen))
		return tether_error_set(TETHER_EUSAGE, "store URI '%s': expected %.*s://CONTAINER@ACCOUNT.dfs.core."
		                        "windows.net/PATH", uri, (int)(strstr(uri, "://") - uri), uri);
	size_t clen = at ? (size_t)(at - rest) : alen;
	if (!container_ok(rest, clen))
		return tether_error_set(TETHER_EUSAGE, "store URI '%s': '%.*s' is not an Azure container name (3-63 "
		                        "lowercase letters, digits and single hyphens)", uri, (int)clen, rest);
	s->container = strndup(rest, clen);
	s->prefix = slash ? tt_strdupf("%s/", slash + 1) : strdup("");
	if (at)
		*abfs_host = strndup(at + 1, alen - clen - 1);
	if (!s->container || !s->prefix || (at && !*abfs_host))
		return oom();
	return 0;
}

static void az_close(void *impl)
{
	struct az_store *s = impl;
	if (!s)
		return;
	tt_http_free(s->http);
	az_config_free(&s->cfg);
	pthread_mutex_destroy(&s->resume_lock);
	az_resume_free(s->resume);
	free(s->container);
	free(s->prefix);
	free(s->uri);
	free(s);
}

static int az_open(const char *uri, const json_t *options, void **impl)
{
	*impl = NULL;
	struct az_store *s = calloc(1, sizeof *s);
	if (!s)
		return oom();
	pthread_mutex_init(&s->resume_lock, NULL);
	char *host = NULL;
	int rc = (s->uri = strdup(uri)) ? parse_uri(uri, s, &host) : oom();
	if (!rc) {
		rc = az_config_resolve(options, host, &s->cfg);
		if (rc) {
			char *why = strdup(tether_error_last());
			rc = tether_error_set(rc, "%s: %s", uri, why ? why : "");
			free(why);
		}
	}
	free(host);
	if (!rc) {
		struct tt_http_options o = {
			.connect_timeout_ms = s->cfg.connect_timeout_ms,
			.timeout_ms = s->cfg.timeout_ms,
			.allow_http = s->cfg.allow_http,
		};
		rc = tt_http_new(&o, &s->http);
	}
	if (!rc && !s->cfg.allow_http && strncmp(s->cfg.endpoint, "http://", 7) == 0)
		rc = tether_error_set(TETHER_EUSAGE, "%s: the endpoint %s is plain http://: set allow_http = true "
		                      "for it in .tether/secrets.toml", uri, s->cfg.endpoint);
	if (rc) {
		az_close(s);
		return rc;
	}
	*impl = s;
	return 0;
}

#define AZ_OPS(name)                                                                                          \
	{                                                                                                     \
		TETHER_STORE_OPS_INIT, .scheme = name, .flags = TETHER_STORE_ATOMIC_CAS | TETHER_STORE_VERSION_IDS, \
		.open = az_open, .close = az_close, .get = az_get, .head = az_head, .put = az_put,            \
		.copy = az_copy, .del = az_delete, .list = az_list, .root_exists = az_root_exists,           \
		.make_root = az_make_root, .remove_root = az_remove_root, .stat = az_stat,                   \
		.get_version = az_get_version, .list_stat = az_list_stat,                                    \
		.list_versions = az_list_versions,                                                           \
	}

static const struct tether_store_ops az_ops = AZ_OPS("az");
static const struct tether_store_ops abfs_ops = AZ_OPS("abfs");
static const struct tether_store_ops abfss_ops = AZ_OPS("abfss");

TETHER_API tether_store_module_t tether_store_module = {&az_ops, &abfs_ops, &abfss_ops, NULL};
