/* What abandon and undo share: the pins a commit introduced, the refs that
 * hold a commit (and the refusal they make), and which pins no commit
 * names once history has been rewritten. */
#ifndef TETHER_CORE_SURGERY_H
#define TETHER_CORE_SURGERY_H

#include "core/engine.h"

/* The pins commit `id` records that its first parent does not (all of its
 * pins for a first commit): [{"key", "kind", "pin"}], by key. */
int tt_commit_new_pins(struct tether_repo *repo, const char *id, json_t **pins);

/* The refs other than the current branch that hold commit `id`
 * (vcs containing_refs), and, unless force, the refusal they make:
 * TETHER_EREFUSED naming them ("pushed" for a remote one) with the hint
 * `what --force`. *refs is set either way (NULL on other errors). */
int tt_refuse_published(struct tether_repo *repo, const char *id, int force, const char *what, json_t **refs);

/* Of `pins` ([{"key", "pin", ...}]), the ones no manifest in history as it
 * is now nor in the working copy names, and no unfinished journal entry
 * keeps: what the next gc releases. *orphans is a new array. */
int tt_pins_unnamed(struct tether_repo *repo, const json_t *pins, json_t **orphans);

/* The VCS's abandon (or the refusal that the module lacks it). */
int tt_vcs_abandon(struct tether_repo *repo, const char *id, const char *expect_head, int check_only,
                   char new_head[41]);

#endif
