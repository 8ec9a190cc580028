/* Store options: what each key means, and which may be committed.
 *
 * A store is handed a JSON object of options (endpoint, region, keys,
 * addressing). They come from .tether/secrets.toml ([uris."<prefix>"]
 * and [objects."<key>"]), which is never committed, and a few from
 * committed files (a locator's storage_options): only those that say
 * nothing secret and cannot send a request elsewhere. An endpoint or a
 * profile committed by a clone would point this checkout's credentials
 * at a server the clone chose, so those are refused there. */
#include "store/options.h"

#include <tether/backend.h> /* tether_error_set */
#include <tether/store.h>

#include <stdio.h>
#include <string.h>

enum opt_type { OPT_STRING, OPT_BOOL, OPT_SECONDS, OPT_CONDITIONAL_PUT };

static const struct {
	const char *name;
	enum opt_type type;
	int committable;
} OPTIONS[] = {
	{"endpoint_url", OPT_STRING, 0},
	{"region", OPT_STRING, 1},
	{"profile", OPT_STRING, 0},
	{"role_arn", OPT_STRING, 0},
	{"access_key_id", OPT_STRING, 0},
	{"secret_access_key", OPT_STRING, 0},
	{"session_token", OPT_STRING, 0},
	{"allow_http", OPT_BOOL, 1},
	{"force_path_style", OPT_BOOL, 0},
	{"virtual_hosted_style_request", OPT_BOOL, 1},
	{"conditional_put", OPT_CONDITIONAL_PUT, 1},
	{"connect_timeout", OPT_SECONDS, 0},
	{"timeout", OPT_SECONDS, 0},
	/* GCS: a Google JSON key (service_account or authorized_user), as
	 * text or as the path of its file. */
	{"service_account_key", OPT_STRING, 0},
	{"service_account_path", OPT_STRING, 0},
	/* Azure Blob (src/store/azure/config.c): what Azure's tools read from
	 * AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY,
	 * AZURE_STORAGE_SAS_TOKEN and AZURE_STORAGE_CONNECTION_STRING. */
	{"account_name", OPT_STRING, 0},
	{"account_key", OPT_STRING, 0},
	{"sas_token", OPT_STRING, 0},
	{"connection_string", OPT_STRING, 0},
	/* Database servers ([uris."mysql://host:port"], read by the Dolt
	 * backend): the login, given or named by environment variable. No
	 * byte store reads them. */
	{"user", OPT_STRING, 0},
	{"password", OPT_STRING, 0},
	{"user_env", OPT_STRING, 0},
	{"password_env", OPT_STRING, 0},
};
#define N_OPTIONS (sizeof OPTIONS / sizeof OPTIONS[0])

const char *const tether_store_option_names[] = {
	"endpoint_url", "region", "profile", "role_arn", "access_key_id", "secret_access_key", "session_token",
	"allow_http", "force_path_style", "virtual_hosted_style_request", "conditional_put", "connect_timeout",
	"timeout", "service_account_key", "service_account_path", "account_name", "account_key", "sas_token",
	"connection_string", "user", "password", "user_env", "password_env", NULL,
};

static int find(const char *key)
{
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (strcmp(OPTIONS[i].name, key) == 0)
			return (int)i;
	return -1;
}

static void list_names(char *out, size_t n, int committed_only)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < N_OPTIONS && o < n; i++)
		if (!committed_only || OPTIONS[i].committable)
			o += (size_t)snprintf(out + o, n - o, "%s%s", o ? ", " : "", OPTIONS[i].name);
}

int tt_store_option_check(const char *key, const json_t *v, char *why, size_t n)
{
	int i = find(key);
	if (i < 0) {
		char names[512];
		list_names(names, sizeof names, 0);
		snprintf(why, n, "unknown store option '%s' (allowed: %s)", key, names);
		return -1;
	}
	const char *s = json_string_value(v);
	switch (OPTIONS[i].type) {
	case OPT_STRING:
		if (!s || !*s)
			return snprintf(why, n, "%s must be a non-empty string", key), -1;
		break;
	case OPT_BOOL:
		if (!json_is_boolean(v))
			return snprintf(why, n, "%s must be true or false", key), -1;
		break;
	case OPT_SECONDS:
		if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 86400)
			return snprintf(why, n, "%s must be a number of seconds, more than 0 and at most 86400", key), -1;
		break;
	case OPT_CONDITIONAL_PUT:
		if (!s || (strcmp(s, "etag") != 0 && strcmp(s, "disabled") != 0))
			return snprintf(why, n, "%s must be \"etag\" or \"disabled\"", key), -1;
		break;
	}
	return 0;
}

int tt_store_option_committable(const char *key)
{
	int i = find(key);
	return i >= 0 && OPTIONS[i].committable;
}

int tether_store_check_committed_options(const json_t *opts, const char *where)
{
	if (!opts)
		return 0;
	if (!json_is_object(opts))
		return tether_error_set(TETHER_ECONFIG, "%s: storage_options must be a table", where);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)opts, k, v) {
		char why[768];
		if (tt_store_option_check(k, v, why, sizeof why) != 0)
			return tether_error_set(TETHER_ECONFIG, "%s: storage_options: %s", where, why);
		if (!tt_store_option_committable(k)) {
			char names[256];
			list_names(names, sizeof names, 1);
			return tether_error_set(TETHER_EREFUSED,
			                        "%s: storage_options.%s must not be committed (committed: only %s); it "
			                        "goes in .tether/secrets.toml, [uris.\"<prefix>\"] or [objects.\"<key>\"]",
			                        where, k, names);
		}
	}
	return 0;
}
