/* Where the GCS store's requests go, and the URLs of the JSON API.
 *
 * The endpoint: the store option endpoint_url (the most specific setting,
 * per URI prefix in secrets.toml), else STORAGE_EMULATOR_HOST as Google's
 * client libraries read it ("host:port", plain http, or a URL with its
 * scheme), else https://storage.googleapis.com. */
#include "store/gcs/gcs.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

#define GOOGLE_ENDPOINT "https://storage.googleapis.com"

int tt_gcs_endpoint(const json_t *options, char **base, int *emulator)
{
	const char *opt = json_string_value(json_object_get(options, "endpoint_url"));
	const char *env = getenv("STORAGE_EMULATOR_HOST");
	*emulator = !opt && env && *env;
	if (opt)
		*base = strdup(opt);
	else if (*emulator)
		*base = strstr(env, "://") ? strdup(env) : tt_strdupf("http://%s", env);
	else
		*base = strdup(GOOGLE_ENDPOINT);
	if (!*base)
		return tt_fail_oom();
	for (size_t n = strlen(*base); n && (*base)[n - 1] == '/'; n--)
		(*base)[n - 1] = '\0';
	if (strncmp(*base, "http://", 7) != 0 && strncmp(*base, "https://", 8) != 0) {
		int rc = tether_error_set(TETHER_EUSAGE, "the GCS endpoint %s (%s) is not an http:// or https:// URL",
		                          *base, opt ? "store option endpoint_url" : "STORAGE_EMULATOR_HOST");
		free(*base);
		*base = NULL;
		return rc;
	}
	return 0;
}

char *tt_gcs_object_name(const struct tt_gcs *g, const char *key)
{
	return tt_strdupf("%s%s", g->root, key);
}

char *tt_gcs_object_url(const struct tt_gcs *g, const char *name, const char *suffix)
{
	char *b = tt_http_escape(g->bucket, 0), *o = tt_http_escape(name, 0), *url = NULL;
	if (b && o)
		url = tt_strdupf("%s/storage/v1/b/%s/o/%s%s", g->base, b, o, suffix);
	free(b);
	free(o);
	return url;
}

char *tt_gcs_what(const struct tt_gcs *g, const char *name)
{
	return tt_strdupf("gs://%s/%s", g->bucket, name);
}
