/* .tether/workspace.toml: this checkout's own state, never committed: its
 * id, the bookmark it works on, and each object's working ref.
 *
 *   workspace_id = "3f9a0c12"
 *   bookmark = "feat"                               # what `tether new` put it on
 *   head = "<commit id>"                            # and where (commit moves it on)
 *   [working."raw/x"]
 *   ref = { branch = "tether.ws.ab12cd34.main" }   # the backend's overlay
 *   from_pin = "ab12cd34.0123456789abcdef"           # the pin it was forked off
 *   state = { ... }                                  # the state it was forked at
 *
 * A working ref is an overlay on the object's locator: merged into it, it
 * names the working branch, so the engine never needs to know what a
 * backend calls its branches. */
#ifndef TETHER_CORE_WORKSPACE_H
#define TETHER_CORE_WORKSPACE_H

#include "core/repo.h"

/* Load (or start) the workspace document. */
int tt_workspace_load(struct tether_repo *repo, json_t **ws);
int tt_workspace_save(struct tether_repo *repo, json_t *ws);
/* The workspace file's text as it is now (*text NULL when there is none),
 * and putting exactly that back (NULL: removing the file): a command that
 * fails part-way leaves the workspace as it found it. */
int tt_workspace_text(struct tether_repo *repo, char **text);
int tt_workspace_restore(struct tether_repo *repo, const char *text);
/* The bookmark and commit this workspace stands for (new, a lazy fork, and
 * each commit record them; workspace_check.c compares them with the
 * checkout). head "" or NULL: none (an unborn branch). */
void tt_workspace_set_position(json_t *ws, const char *bookmark, const char *head);
/* The working entry of `key` ({ref, from_pin, state}), or NULL. */
json_t *tt_workspace_entry(const json_t *ws, const char *key);
/* The locator with the working ref merged in (new reference). */
json_t *tt_locator_at(const json_t *locator, const json_t *working_ref);
/* tether.ws.<dataset8>.<bookmark>, with characters a ref name cannot hold
 * replaced. malloc'd. */
char *tt_working_branch_name(const struct tether_repo *repo, const char *bookmark);

#endif
