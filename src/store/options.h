/* Store options: the names and types a store's open may be handed
 * (docs/BACKENDS.md "Store options"), and which of them a committed file
 * may carry. One list, so that secrets.toml, a committed locator and the
 * stores agree on what a key means. */
#ifndef TT_STORE_OPTIONS_H
#define TT_STORE_OPTIONS_H

#include <jansson.h>
#include <stddef.h>

/* 0 when `key` = `v` is a store option of the right type; otherwise -1
 * with why (e.g. "unknown store option 'x' (allowed: ...)" or
 * "allow_http must be true or false") in why[n]. */
int tt_store_option_check(const char *key, const json_t *v, char *why, size_t n);
/* May a committed file (tether.toml, a manifest) carry `key`? */
int tt_store_option_committable(const char *key);

#endif
