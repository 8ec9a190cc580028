#ifndef TETHER_CORE_HISTORY_H
#define TETHER_CORE_HISTORY_H

#include "core/engine.h"
#include "core/manifest.h"

struct tt_history {
	json_t *pins;             /* {pin id: true}: every pin any manifest names */
	json_t *records;          /* {canonical {kind, locator, policy, state, pin_ref}:
	                           *   {kind, locator, policy, state, pin_ref, pin, keys, commit}} */
	json_t *working_listings; /* {listing hash: true} named by the working manifests */
	size_t commits;           /* commits walked */
	size_t manifests_read;    /* distinct manifest blobs parsed */
	struct tt_manifest_set working; /* the working copy's manifests, as the walk read them */
};

/* Walk the working copy and every commit reachable from any ref. */
int tt_history_collect(struct tether_repo *repo, struct tt_history *h);
void tt_history_free(struct tt_history *h);

/* Where the VCS's history walks keep their cache for the dataset (see
 * history_files), or NULL when the repository has no shared directory:
 * beside the journal, where only the VCS and tether write, so a clone
 * cannot bring a cache along that would steer gc. malloc'd. */
char *tt_history_cache_path(const struct tether_repo *repo);

#endif
