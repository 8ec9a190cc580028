/* What a byte-store implementation provides (store.c dispatches to it). */
#ifndef TETHER_STORE_IMPL_H
#define TETHER_STORE_IMPL_H

#include "store/store.h"

/* Versioned as every plug-in struct is (docs/BACKENDS.md, "Versions and
 * sizes"): version and size first, members appended only, each time with
 * a version bump, and a member a store may lack read through
 * TT_STORE_OPS_GET. */
#define TT_STORE_OPS_VERSION 1
#define TT_STORE_OPS_INIT .version = TT_STORE_OPS_VERSION, .size = (uint32_t)sizeof(struct tt_store_ops)
#define TT_STORE_OPS_GET(ops, m)                                                                              \
	((size_t)(ops)->size >= offsetof(struct tt_store_ops, m) + sizeof((ops)->m) ? (ops)->m : 0)

struct tt_store_ops {
	uint32_t version; /* TT_STORE_OPS_INIT */
	uint32_t size;
	int atomic_cas;
	int (*get)(struct tt_store *, const char *key, uint8_t **data, size_t *len,
	           struct tt_version *version);
	int (*head)(struct tt_store *, const char *key, int *exists, struct tt_version *version,
	            uint64_t *size);
	int (*put)(struct tt_store *, const char *key, const void *data, size_t len,
	           enum tt_put_mode mode, const struct tt_version *expect,
	           struct tt_version *new_version);
	int (*copy)(struct tt_store *, const char *from, const char *to,
	            const struct tt_version *if_match);
	int (*del)(struct tt_store *, const char *key);
	int (*list)(struct tt_store *, const char *prefix, size_t max_keys, json_t *keys);
	int (*root_exists)(struct tt_store *, int *exists);
	int (*make_root)(struct tt_store *);
	int (*remove_root)(struct tt_store *);
	void (*close)(struct tt_store *);
};

struct tt_store {
	const struct tt_store_ops *ops;
	char *uri;
	void *impl;
};

/* A name ending in '#' and digits: the staging file of a write in
 * progress (Icechunk's local storage names them so, and so do we), never
 * listed and never a key. */
int tt_store_is_staging_name(const char *name);

/* local.c */
int tt_store_local_open(const char *path, struct tt_store *s);

#endif
