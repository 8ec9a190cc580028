/* What every backend checks of its locator and its `tether add` options
 * the same way: one rule and one message each, for every kind. */
#ifndef TETHER_UTIL_BACKEND_ARGS_H
#define TETHER_UTIL_BACKEND_ARGS_H

#include <jansson.h>

/* locator[key]: absent (*out NULL), or a non-empty string; anything else
 * is TETHER_ECONFIG "<kind> locator: "<key>" must be a non-empty string". */
int tt_locator_string(const json_t *locator, const char *kind, const char *key, const char **out);
/* Every option a name of `known` (NULL-terminated), each a non-empty
 * string unless also in `flags` (NULL-terminated, may be NULL): otherwise
 * TETHER_EUSAGE naming the option and the kind. */
int tt_backend_options_check(const json_t *options, const char *kind, const char *const *known,
                         const char *const *flags);

#endif
