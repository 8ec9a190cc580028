/* Resolved pack entries kept for the next read (internal to the native git
 * reader). A deltified object costs its whole chain: each delta's base
 * inflated and the deltas applied, from the bottom of the chain up. A
 * history walk reads the manifests of many commits, which git packs as
 * chains against each other, so it would rebuild the same bases again and
 * again; as git keeps a delta base cache, gitpack.c keeps what it
 * resolves here, keyed by pack and offset (an entry's content never
 * changes while the pack is open), within a memory budget. Thread-safe. */
#ifndef TETHER_VCS_GITCACHE_H
#define TETHER_VCS_GITCACHE_H

#include "vcs/gitodb.h"

#include <stddef.h>
#include <stdint.h>

struct tt_gcache;

struct tt_gcache *tt_gcache_new(size_t budget);
void tt_gcache_free(struct tt_gcache *c);
/* 1 with a malloc'd copy (NUL after it) when cached, 0 when not (or out of
 * memory). */
int tt_gcache_get(struct tt_gcache *c, const void *pack, uint64_t off, enum tt_gobj_type *type,
                  unsigned char **data, size_t *len);
/* Keep a copy, unless it is more than a quarter of the budget. */
void tt_gcache_put(struct tt_gcache *c, const void *pack, uint64_t off, enum tt_gobj_type type,
                   const unsigned char *data, size_t len);

#endif
