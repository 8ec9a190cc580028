/* Which credentials the GCS store sends, and the token cache (auth.h). */
#include "store/gcs/auth.h"
#include "store/gcs/keyfile.h"
#include "store/gcs/token.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* A token is fetched again when less than this remains of its life. */
#define REFRESH_MARGIN 300
/* The metadata server answers at once when there is one. */
#define METADATA_CONNECT_MS 1000
#define METADATA_TIMEOUT_MS 5000
#define METADATA_ATTEMPTS 2

struct tt_gcs_auth {
	int from_metadata;            /* else from the key file */
	struct tt_gcs_keyfile key;
	char *metadata_host;
	char *source;                 /* for messages */
	char *not_found;              /* metadata: what was tried before it */
	struct tt_http *http;
	pthread_mutex_t lock;
	char *token;
	int64_t expires_at;           /* CLOCK_MONOTONIC seconds */
};

static int64_t now_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

/* "service account x@y (where)" or "authorized user (where)". */
static char *describe_key(const struct tt_gcs_keyfile *k)
{
	return k->type == TT_GCS_SERVICE_ACCOUNT ? tt_strdupf("service account %s (%s)", k->client_email, k->where)
	                                         : tt_strdupf("authorized user (%s)", k->where);
}

/* gcloud's file of Application Default Credentials, or NULL. */
static char *gcloud_adc_path(void)
{
	const char *config = getenv("CLOUDSDK_CONFIG");
	if (config && *config)
		return tt_strdupf("%s/application_default_credentials.json", config);
	const char *home = getenv("HOME");
	return home && *home ? tt_strdupf("%s/.config/gcloud/application_default_credentials.json", home) : NULL;
}

static int env_true(const char *name)
{
	const char *v = getenv(name);
	return v && (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

/* The key named by the options or the environment: 0 with *found set
 * when one was read, 0 with *found clear when none is named. */
static int find_key(const json_t *options, int emulator, struct tt_gcs_keyfile *k, int *found, char **tried)
{
	*found = 1;
	const char *text = json_string_value(json_object_get(options, "service_account_key"));
	const char *path = json_string_value(json_object_get(options, "service_account_path"));
	if (text && path)
		return tether_error_set(TETHER_EUSAGE, "the store options service_account_key and service_account_path "
		                        "both name a key: give one");
	if (text)
		return tt_gcs_keyfile_parse(text, "the store option service_account_key", k);
	if (path)
		return tt_gcs_keyfile_read(path, "the store option service_account_path's file", k);
	*found = 0;
	if (emulator)
		return 0;
	const char *env = getenv("GOOGLE_APPLICATION_CREDENTIALS");
	if (env && *env) {
		*found = 1;
		return tt_gcs_keyfile_read(env, "GOOGLE_APPLICATION_CREDENTIALS file", k);
	}
	char *adc = gcloud_adc_path();
	if (adc && tt_exists(adc)) {
		*found = 1;
		int rc = tt_gcs_keyfile_read(adc, "gcloud's credentials file", k);
		free(adc);
		return rc;
	}
	*tried = tt_strdupf("no service_account_key or service_account_path store option, "
	                    "GOOGLE_APPLICATION_CREDENTIALS unset, no %s", adc ? adc : "gcloud credentials file (no HOME)");
	free(adc);
	return *tried ? 0 : tt_fail_oom();
}

static int new_client(const struct tt_http_options *store, int metadata, struct tt_http **out)
{
	struct tt_http_options o = *store;
	/* A token_uri over plain http was allowed by the key file's check
	 * (loopback only); the metadata server speaks only http. */
	o.allow_http = 1;
	if (metadata) {
		o.connect_timeout_ms = METADATA_CONNECT_MS;
		o.timeout_ms = METADATA_TIMEOUT_MS;
		o.max_attempts = METADATA_ATTEMPTS;
	}
	return tt_http_new(&o, out);
}

int tt_gcs_auth_new(const json_t *options, int emulator, const struct tt_http_options *http,
                    struct tt_gcs_auth **out)
{
	*out = NULL;
	struct tt_gcs_auth *a = calloc(1, sizeof *a);
	if (!a)
		return tt_fail_oom();
	pthread_mutex_init(&a->lock, NULL);
	int found;
	int rc = find_key(options, emulator, &a->key, &found, &a->not_found);
	if (rc == 0 && !found && emulator) {
		tt_gcs_auth_free(a);
		return 0;
	}
	if (rc == 0 && found)
		rc = (a->source = describe_key(&a->key)) ? 0 : tt_fail_oom();
	else if (rc == 0 && env_true("NO_GCE_CHECK"))
		rc = tether_error_set(TETHER_EAUTH, "no GCS credentials: %s, and NO_GCE_CHECK turns the metadata "
		                      "server off", a->not_found);
	else if (rc == 0) {
		const char *host = getenv("GCE_METADATA_HOST");
		a->from_metadata = 1;
		a->metadata_host = strdup(host && *host ? host : "metadata.google.internal");
		a->source = a->metadata_host ? tt_strdupf("the GCE metadata server at %s", a->metadata_host) : NULL;
		rc = a->source ? 0 : tt_fail_oom();
	}
	if (rc == 0)
		rc = new_client(http, a->from_metadata, &a->http);
	if (rc) {
		tt_gcs_auth_free(a);
		return rc;
	}
	*out = a;
	return 0;
}

/* Fetch a token from the source; the lock is held. */
static int fetch(struct tt_gcs_auth *a)
{
	struct tt_gcs_token t;
	int64_t asked = now_monotonic();
	int rc = a->from_metadata ? tt_gcs_token_from_metadata(a->http, a->metadata_host, &t)
	                          : tt_gcs_token_from_key(a->http, &a->key, &t);
	if (rc && a->from_metadata) {
		/* The last place looked: the message says what was tried first. */
		char why[768];
		snprintf(why, sizeof why, "%s", tether_error_last());
		return tether_error_set(TETHER_EAUTH, "no GCS credentials: %s; %s", a->not_found, why);
	}
	if (rc)
		return rc;
	free(a->token);
	a->token = t.access_token;
	a->expires_at = asked + t.expires_in;
	return 0;
}

int tt_gcs_auth_token(struct tt_gcs_auth *a, int renew, char **token)
{
	pthread_mutex_lock(&a->lock);
	int rc = 0;
	if (renew || !a->token || a->expires_at - now_monotonic() < REFRESH_MARGIN)
		rc = fetch(a);
	if (rc == 0 && !(*token = strdup(a->token)))
		rc = tt_fail_oom();
	pthread_mutex_unlock(&a->lock);
	return rc;
}

const char *tt_gcs_auth_source(const struct tt_gcs_auth *a)
{
	return a->source;
}

void tt_gcs_auth_free(struct tt_gcs_auth *a)
{
	if (!a)
		return;
	tt_gcs_keyfile_clear(&a->key);
	tt_http_free(a->http);
	pthread_mutex_destroy(&a->lock);
	free(a->metadata_host);
	free(a->source);
	free(a->not_found);
	free(a->token);
	free(a);
}
