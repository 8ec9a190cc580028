/* gc --prune-workspaces: the working branches of workspaces that are gone.
 * A working branch tether.ws.<dataset8>.<bookmark> is dead when its
 * bookmark is no live bookmark of the VCS (nor this checkout's, nor one
 * kept by name); gc deletes a dead one whose head some pin holds, and
 * unpinned ones (or any in a BRANCH_IS_STORAGE store) only when forced. */
#ifndef TETHER_CORE_PRUNE_H
#define TETHER_CORE_PRUNE_H

#include "core/history.h"

/* Every dead working branch of every store in `stores` (gc_stores.h),
 * appended to `out` as {kind, identity, store, ref, branch, head, pinned,
 * action, reason, done}. A store only the journal names that cannot be
 * listed goes to `skipped`. */
int tt_prune_find(struct tether_repo *repo, const struct tt_history *h, const json_t *stores,
                  const struct tether_gc_opts *opts, json_t *out, json_t *skipped);
/* Does a pin hold `head`: is it the state of a pinned record (same kind
 * and identity as `store`, {"kind", "identity"}) among the walk's? */
int tt_prune_head_pinned(struct tether_repo *repo, const struct tt_history *h, const json_t *store,
                         const struct tether_backend *b, const json_t *head);
/* Delete the ones whose action is "delete"; failures go to `errors`. */
void tt_prune_apply(struct tether_repo *repo, json_t *prune, json_t *errors);
/* The report's rows: the candidates without their stores and refs. New reference. */
json_t *tt_prune_report(const json_t *prune);

#endif
