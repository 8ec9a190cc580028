/* The one validator for what tether reads from committed or on-disk
 * documents (manifests at any revision, history walks, the headview cache,
 * workspace.toml, journal entries, plans): object keys, pin ids, refs and
 * strings. Every reader calls these before a value is used as a path, a
 * ref or a C string. */
#ifndef TETHER_CORE_VALIDATE_H
#define TETHER_CORE_VALIDATE_H

#include <jansson.h>

/* Is `key` a valid object key? Path-like segments of [A-Za-z0-9._-],
 * separated by single '/', none empty, none starting with '.', at most 200
 * bytes (TT_KEY_MAX). Sets a TETHER_EUSAGE error naming the key when not. */
#define TT_KEY_MAX 200
int tt_key_check(const char *key);

/* A key read from a document (a JSON string whose length must match its
 * C string): TETHER_ECONFIG naming `where` when it is not a valid key. */
int tt_key_check_in(const json_t *key, const char *where);

/* "<dataset8>.<hash16>", lower-case hex: TETHER_ECONFIG naming `where`. */
int tt_pin_id_check(const char *pin, const char *where);

/* Every string and object key in `v`, at any depth, is a C string: no
 * NUL byte inside (jansson strings may hold one; the C string made from it
 * would stop there, so "HEAD\u0000x" would act as "HEAD"). TETHER_ECONFIG
 * naming `where` and the field. */
int tt_strings_check(const json_t *v, const char *where);

#endif
