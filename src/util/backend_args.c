/* Locator members and add options, checked alike for every backend. */
#include "util/backend_args.h"

#include <tether/backend.h>

#include <string.h>

int tt_locator_string(const json_t *locator, const char *kind, const char *key, const char **out)
{
	json_t *v = json_object_get(locator, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || !*json_string_value(v))
		return tether_error_set(TETHER_ECONFIG, "%s locator: \"%s\" must be a non-empty string", kind, key);
	*out = json_string_value(v);
	return 0;
}

static int listed(const char *const *names, const char *name)
{
	for (size_t i = 0; names && names[i]; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

int tt_backend_options_check(const json_t *options, const char *kind, const char *const *known,
                         const char *const *flags)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)options, k, v) {
		if (!listed(known, k))
			return tether_error_set(TETHER_EUSAGE, "unknown option '--%s' for kind %s", k, kind);
		if (!listed(flags, k) && (!json_is_string(v) || !*json_string_value(v)))
			return tether_error_set(TETHER_EUSAGE, "--%s for kind %s takes a non-empty string", k, kind);
	}
	return 0;
}
