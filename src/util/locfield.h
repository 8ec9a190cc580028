/* What every backend's make_locator and locator reader check the same way,
 * said once: an optional string member of a locator, and the options of
 * `tether add` a kind takes. Part of tether-modutil (meson.build). */
#ifndef TETHER_UTIL_LOCFIELD_H
#define TETHER_UTIL_LOCFIELD_H

#include <jansson.h>

/* The locator's member `key`: *out NULL when absent, else a non-empty
 * string, or TETHER_ECONFIG "<kind> locator: "<key>" must be a non-empty
 * string". */
int tt_locator_string(const json_t *locator, const char *kind, const char *key, const char **out);

/* `tether add` options: every key one of `strings` (a non-empty string
 * each) or of `others` (any value; NULL: none), both NULL-terminated;
 * TETHER_EUSAGE naming the option and the kind otherwise. */
int tt_check_add_options(const json_t *options, const char *kind, const char *const *strings,
                         const char *const *others);

#endif
