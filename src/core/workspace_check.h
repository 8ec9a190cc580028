/* Is the workspace current? jj's working-copy model: .tether/workspace.toml
 * records the bookmark (and commit) `tether new` put this checkout on, and
 * the checkout can move without tether (a plain `git checkout feat`, `jj
 * edit`, a crash after the move). Then the working refs it names are
 * another bookmark's, and a write through them would land on the wrong
 * branches without a word: such a workspace is stale until `tether new`
 * (or `tether new --adopt`) reconciles it. */
#ifndef TETHER_CORE_WORKSPACE_CHECK_H
#define TETHER_CORE_WORKSPACE_CHECK_H

#include "core/repo.h"

/* Where the workspace and the checkout stand: {"saved": "present" |
 * "missing", "bookmark", "head" (recorded, or null), "checkout":
 * {"bookmark", "head"}, "trunk", "on_trunk", "stale", "reason"?}. A
 * bookmark is compared by name, so a commit on it (or jj's working-copy
 * commit moving on) is no disagreement; a checkout without a bookmark (HEAD
 * detached, or no jj bookmark on @ or @-) agrees while it is at or after
 * the recorded commit. */
int tt_workspace_position(struct tether_repo *repo, const json_t *ws, json_t **report);
/* The revision `tether new REV` goes back to the workspace with: its
 * bookmark, or the recorded commit for a detached one (borrowed from
 * position, tt_workspace_position's report). */
const char *tt_workspace_return_rev(const json_t *position);
/* TETHER_EREFUSED, naming both sides and the fix, when the workspace is
 * stale; `what` is the refused write ("commit", "open for writing").
 * Refuses a workspace.toml the VCS tracks first (tt_repo_check_secrets). */
int tt_workspace_refuse_stale(struct tether_repo *repo, const char *what);

#endif
