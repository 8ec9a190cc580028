/* Plans: what a store-writing command (commit, new, gc) is about to do,
 * computed before it writes anything. --dry-run prints the plan, --plan FILE
 * saves it, --from-plan FILE re-checks its preconditions and performs
 * exactly its actions. Every command builds its plan on the same path it
 * executes, so a plan and a direct run cannot disagree.
 *
 *   {"tether_plan": 1, "op": "commit" | "new" | "gc",
 *    "dataset": "<32 hex>", "created": "2024-05-01T12:34:56Z",
 *    "preconditions": {...}, "actions": [...], ...the op's own fields}
 *
 * A plan holds committed data only (states, keys, identities, pin ids),
 * never anything from .tether/secrets.toml. */
#ifndef TETHER_CORE_PLAN_H
#define TETHER_CORE_PLAN_H

#include "core/repo.h"

#define TT_PLAN_VERSION 1

/* A fresh plan of `op` for this dataset, with empty preconditions and
 * actions. */
json_t *tt_plan_new(const struct tether_repo *repo, const char *op);
/* Refuse options that cannot go together (TETHER_EUSAGE). */
int tt_plan_check_opts(const char *plan_out, const json_t *from_plan);
/* The start a planned, store-writing command (drop, restore, pull, undo)
 * shares, each step only when the ones before passed: tt_plan_check_opts;
 * with --from-plan, `args_error` (the message when the caller also gave
 * arguments the plan names, else NULL) is refused (TETHER_EUSAGE) and the
 * plan must be op's (tt_plan_check_header); the config holds no secret;
 * the VCS opens; the repository lock is taken into the two locks, which
 * the caller initialised to {-1} and releases with tt_repo_unlock
 * whatever this returned. */
int tt_plan_command_lock(struct tether_repo *repo, const char *op, const char *plan_out, const json_t *from_plan,
                         const char *from_plan_file, const char *args_error, struct tt_lock *checkout,
                         struct tt_lock *shared);
/* Refuse a plan that is not a version-1 plan of `op` for this dataset
 * (TETHER_EREFUSED), or that is malformed (TETHER_EUSAGE): its frame, and
 * every field of it the op reads (tt_plan_check_fields). `file` (may be
 * NULL) names the plan in messages. */
int tt_plan_check_header(const struct tether_repo *repo, const json_t *plan, const char *op, const char *file);
/* plan_fields.c: every key, pin id, listing hash, kind, commit id and
 * branch name the plan of `op` holds is one tether would have written;
 * else TETHER_EUSAGE, "malformed plan FILE: FIELD: why". */
int tt_plan_check_fields(const struct tether_repo *repo, const json_t *plan, const char *op, const char *file);
/* The planned preconditions / actions; never NULL after the header check. */
json_t *tt_plan_preconditions(const json_t *plan);
json_t *tt_plan_actions(const json_t *plan);

/* SHA-256 hex of a value's canonical JSON. */
void tt_plan_digest(const json_t *value, char hex[65]);
/* Where a ref stands: `what` ("HEAD", "branch main") must still be at
 * `planned` (a commit id, or "" for none). */
int tt_plan_check_ref(const char *what, const char *planned, const char *now);
/* Objects preconditions: arrays of {key, state, manifest?} sorted by key.
 * Names the first object added, removed, or whose manifest or state moved. */
int tt_plan_check_objects(const json_t *planned, const json_t *fresh);
/* Per-object actions: the fresh ones must be exactly the planned ones. */
int tt_plan_check_actions(const char *op, const json_t *planned, const json_t *fresh);

/* Save the plan to `path` atomically, as indented JSON. */
int tt_plan_save(const json_t *plan, const char *path);
/* Add "dry_run", and "plan" / "plan_file" when the run only planned, to a
 * command's report. */
void tt_plan_report(json_t *report, const json_t *plan, int dry_run, const char *plan_out);

#endif
