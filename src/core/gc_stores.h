/* The stores gc visits, each with every locator that names it.
 *
 * A store is one (kind, identity). Keys on one store may name it with
 * locators that differ beyond the identity: one with a remote to push pins
 * to, one without, one with a working ref merged in, one whose key has a
 * secret remote. A pin lives wherever any of them put it, so gc releases
 * it (and prunes a working branch) through every one of them.
 *
 * The stores come from everything that can have made a pin of this
 * dataset: the manifests of the working copy and of every reachable
 * commit, the working refs of .tether/workspace.toml, and every entry of
 * the journal, open or closed (each names the store of every pin a commit
 * made, so a store only unreachable commits named is still visited).
 *
 *   {"<cjson {kind, identity}>": {
 *      "kind", "identity",
 *      "locator": the first of "locators",
 *      "locators": [{"locator", "key"?}],   key: whose secrets apply
 *      "in_history": bool }}                named by a manifest, not only the journal
 *
 * "locators" is ordered so that one that carries more comes first: those
 * with secrets first, then by the number of members (a locator that holds
 * another and more, such as a remote, is always before it), then by
 * canonical JSON. So a pin is released on a remote before the local
 * reference that lets gc find it again goes. */
#ifndef TETHER_CORE_GC_STORES_H
#define TETHER_CORE_GC_STORES_H

#include "core/history.h"

/* Fill `stores` (an empty object). A store only the journal names whose
 * identity cannot be read (its system is gone) is noted in `skipped` as
 * {"store", "reason"} rather than failing gc. */
int tt_gc_stores_collect(struct tether_repo *repo, const struct tt_history *h, json_t *stores, json_t *skipped);
/* The backend context for one of a store's "locators" entries. */
void tt_gc_store_bctx(struct tether_repo *repo, const json_t *store, const json_t *entry, struct tether_bctx *ctx);
/* Note in gc's `skipped` that the store `name` could not be visited, and
 * why (once per store). */
void tt_gc_skip_store(json_t *skipped, const char *name, const char *reason);
/* A short name for messages: "git store {"path":"/x"}". malloc'd. */
char *tt_gc_store_name(const json_t *store);

#endif
