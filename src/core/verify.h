/* The verification behind `verify --all-history` for other commands: a
 * list of recorded states checked as verify checks them, batched per store
 * (verify_many), so that `status` with [verify] on_status opens each store
 * and lists its refs once. */
#ifndef TETHER_CORE_VERIFY_H
#define TETHER_CORE_VERIFY_H

#include "core/repo.h"

#include <jansson.h>
#include <stddef.h>

/* records[i] is a recorded state in history.h's shape ({kind, locator,
 * policy, state, pin_ref, pin, keys, commit}); results[i] receives
 * {key, keys, commit, pin, ok, detail} (and "deep" with deep). Borrowed
 * records; the results are the caller's. Runs on the worker pool. */
void tt_verify_records(struct tether_repo *repo, json_t *const *records, size_t n, int deep, json_t **results);

#endif
