/* Backends' declarations, read the one way the engine reads them: the
 * `tether add` options (struct tether_add_option, an array stepped by its
 * first entry's size so that a module built against another layout reads
 * right), the values they allow, and the [defaults] keys they make. */
#ifndef TETHER_CORE_ADD_OPTIONS_H
#define TETHER_CORE_ADD_OPTIONS_H

#include <tether/backend.h>

#include <stddef.h>

/* Entry i of b's add_options, copied into *out with the members the
 * module's layout lacks zeroed. Returns 0 past the end (or with none). */
int tt_add_option_at(const struct tether_backend *b, size_t i, struct tether_add_option *out);
/* The declared option called name: 1 with *out filled, or 0. */
int tt_add_option_find(const struct tether_backend *b, const char *name, struct tether_add_option *out);
/* Is value one of o's choices (always, for free text)? */
int tt_add_option_allows(const struct tether_add_option *o, const char *value);
/* "immutable or mutable", or with quote set "\"immutable\" or \"mutable\"". */
void tt_choices_join(const char *const *choices, int quote, char *out, size_t n);
/* Is b's table well formed: each name 1-64 of a-z 0-9 - _, given once, a
 * field that is TETHER_ADD_LOCATOR or TETHER_ADD_POLICY, a policy option
 * with choices, a default among the choices? TETHER_ERROR naming the
 * backend and the entry when not. */
int tt_add_options_check(const struct tether_backend *b);
/* The declarations as JSON: [{"name", "value_name", "help", "choices"
 * (array or null), "default" (string or null), "field" ("locator" |
 * "policy"), "defaults" (bool)}]. */
json_t *tt_add_options_json(const struct tether_backend *b);

#endif
