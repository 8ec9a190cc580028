/* Inside the byte-store layer (include/tether/store.h is its public face):
 * an open store, the registry, and the built-in local store. */
#ifndef TETHER_STORE_IMPL_H
#define TETHER_STORE_IMPL_H

#include <tether/backend.h>
#include <tether/store.h>

#include <stddef.h>

struct tether_store {
	const struct tether_store_ops *ops;
	char *uri; /* canonical */
	void *impl;
};

/* Does ops (as its implementation's size says) carry member m, set? The
 * same size rule as every plug-in struct (TETHER_STRUCT_HAS). */
#define TT_STORE_HAS(ops, m) (TETHER_STRUCT_HAS(struct tether_store_ops, (ops), m) && (ops)->m != NULL)

/* local.c: file:// and plain absolute paths. */
extern const struct tether_store_ops tt_store_local_ops;

/* registry.c: tether_store_find with the error's code. */
int tt_store_find_ops(const char *scheme, const struct tether_store_ops **out);

/* uri.c: the scheme of a URI ("file" for a local path), malloc'd
 * lowercase, or NULL when the URI names none validly. */
char *tt_store_scheme_of(const char *uri);

#endif
