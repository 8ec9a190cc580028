/* tether-store-gs.so: the GCS store's ops, and opening gs://BUCKET[/PREFIX]
 * (gcs.h says which file does what). Loaded by the engine the first time
 * a gs:// URI is opened, so libcurl is mapped only then. */
#include "store/gcs/gcs.h"
#include "store/gcs/auth.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static int bucket_name_ok(const char *b, size_t n)
{
	/* Cloud Storage's rule, roughly: 3 to 222 of a-z 0-9 - _ . */
	if (n < 3 || n > 222)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-' || b[i] == '_' ||
		      b[i] == '.'))
			return 0;
	return 1;
}

static long millis(const json_t *options, const char *name)
{
	const json_t *v = json_object_get(options, name);
	return json_is_number(v) ? (long)(json_number_value(v) * 1000) : 0;
}

static void gcs_close(void *impl)
{
	struct tt_gcs *g = impl;
	if (!g)
		return;
	tt_gcs_auth_free(g->auth);
	tt_http_free(g->http);
	pthread_mutex_destroy(&g->lock);
	free(g->uri);
	free(g->bucket);
	free(g->root);
	free(g->base);
	free(g);
}

static int gcs_open(const char *uri, const json_t *options, void **impl)
{
	if (strncmp(uri, "gs://", 5) != 0)
		return tether_error_set(TETHER_EUSAGE, "%s: not a gs:// URI", uri);
	const char *bucket = uri + 5, *slash = strchr(bucket, '/');
	size_t bl = slash ? (size_t)(slash - bucket) : strlen(bucket);
	if (!bucket_name_ok(bucket, bl))
		return tether_error_set(TETHER_EUSAGE, "%s: \"%.*s\" is not a GCS bucket name (3 to 222 of a-z, 0-9, "
		                        "'-', '_', '.')", uri, (int)bl, bucket);
	struct tt_gcs *g = calloc(1, sizeof *g);
	if (!g)
		return tt_fail_oom();
	pthread_mutex_init(&g->lock, NULL);
	g->uri = strdup(uri);
	g->bucket = strndup(bucket, bl);
	g->root = slash && slash[1] ? tt_strdupf("%s/", slash + 1) : strdup("");
	int emulator = 0, rc = 0;
	if (!g->uri || !g->bucket || !g->root)
		rc = tt_fail_oom();
	if (rc == 0)
		rc = tt_gcs_endpoint(options, &g->base, &emulator);
	struct tt_http_options http = {
		.connect_timeout_ms = millis(options, "connect_timeout"),
		.timeout_ms = millis(options, "timeout"),
		.allow_http = emulator || json_is_true(json_object_get(options, "allow_http")),
	};
	/* Refused here, before a token is asked for on its behalf. */
	if (rc == 0 && !http.allow_http && strncmp(g->base, "http://", 7) == 0)
		rc = tether_error_set(TETHER_EUSAGE, "the endpoint %s is plain http: set the store option allow_http "
		                      "to use it", g->base);
	if (rc == 0)
		rc = tt_http_new(&http, &g->http);
	if (rc == 0)
		rc = tt_gcs_auth_new(options, emulator, tt_http_options(g->http), &g->auth);
	if (rc) {
		/* Messages from the layers below name a file or endpoint; the
		 * store's URI goes in front. */
		char why[1024];
		snprintf(why, sizeof why, "%s", tether_error_last());
		gcs_close(g);
		return tether_error_set(rc, "%s: %s", uri, why);
	}
	*impl = g;
	return 0;
}

static const struct tether_store_ops gcs_ops = {
	TETHER_STORE_OPS_INIT,
	.scheme = "gs",
	.flags = TETHER_STORE_ATOMIC_CAS | TETHER_STORE_VERSION_IDS,
	.open = gcs_open,
	.close = gcs_close,
	.get = tt_gcs_get,
	.head = tt_gcs_head,
	.put = tt_gcs_put,
	.del = tt_gcs_del,
	.list = tt_gcs_list,
	.root_exists = tt_gcs_root_exists,
	.make_root = tt_gcs_make_root,
	.remove_root = tt_gcs_remove_root,
	.stat = tt_gcs_stat,
	.get_version = tt_gcs_get_version,
	.list_stat = tt_gcs_list_stat,
	.list_versions = tt_gcs_list_versions,
};

TETHER_API tether_store_module_t tether_store_module = {&gcs_ops, NULL};
