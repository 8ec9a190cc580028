/* The read side of tether-vcs-git, shared with tether-vcs-jj.
 *
 * A jj repository keeps its commits in a git store (the .git of a
 * colocated workspace, or .jj/repo/store/git), so everything the engine
 * reads (files, trees, logs, history walks) is the same libgit2 code for
 * both. The jj module opens the store at its exact git directory and uses
 * a git handle as its own, hanging its jj-specific state off the handle's
 * owner slot; it calls the read operations through tt_git_ops.
 *
 * Internal to the two modules: nothing here is exported from either .so. */
#ifndef TETHER_VCS_GIT_STORE_H
#define TETHER_VCS_GIT_STORE_H

#include "vcs/git_path.h"
#include "vcs/vcs.h"

#include <git2.h>

#include <stddef.h>

/* The git implementation; tether-vcs-git.so exports it as its module. */
extern const struct tether_vcs_ops tt_git_ops;

/* Open the git repository at exactly `gitdir` (no upward search; a bare
 * store is fine) for reading. `workdir` is the checkout it belongs to
 * (absolute); tt_git_ops' write operations must not be used on such a
 * handle, its reads all may. Close it with tt_git_ops.close. */
int tt_git_store_open(const char *gitdir, const char *workdir, struct tether_vcs **out);

/* Attach the opener's own state to a handle: close calls free_owner(owner)
 * (when non-NULL) before it frees the handle. */
void tt_git_store_set_owner(struct tether_vcs *v, void *owner, void (*free_owner)(void *));
void *tt_git_store_owner(const struct tether_vcs *v);

/* The repository a handle reads. */
git_repository *tt_git_store_repository(struct tether_vcs *v);


/* git_history.c. Every commit reachable from the given tips (full ids),
 * each once, in the order of a history walk: cb(ud, id), as
 * tether_vcs_ops.each_commit. tips NULL: from every ref and HEAD. */
int tt_git_store_walk_from(struct tether_vcs *v, const char *const *tips, size_t ntips,
                           int (*cb)(void *ud, const char *id), void *ud);

/* tether_vcs_ops.history_files or history_trees (git_walk.h's wants) over
 * the commits tt_git_store_walk_from visits from the same tips. */
struct tt_walk_wants;
int tt_git_store_history(struct tether_vcs *v, const char *const *tips, size_t ntips, const char *dir,
                         const char *cache_path, const struct tt_walk_wants *wants, size_t *commits);

/* git_rewrite.c: tether_vcs_ops.rewrite_files on libgit2. */
int tt_git_rewrite_files(struct tether_vcs *v, const char *dir, const char *const *paths, size_t npaths,
                         tether_vcs_rewrite_cb cb, void *ud, const char *expect_head, json_t **report);

/* Is `path` (normalised) a file or a directory in commit `id` (a full id)? */
int tt_git_store_has_path(struct tether_vcs *v, const char *id, const char *path, int *present);

/* A path relative to the checkout top, normalised as every operation of
 * tt_git_ops does (no ".", no repeated or trailing '/'; absolute paths,
 * ".." and ".git" refused with TETHER_EUSAGE). *out is malloc'd. */
int tt_git_normalize_path(const char *in, char **out);

/* git_abandon.c: tether_vcs_ops.containing_refs and .abandon on libgit2,
 * and abandon's checks of the history alone (first-parent line from
 * `head` down to `id`, no merge, no descendant touching what `id` touched
 * outside `own`; allow_root: `id` may be a first commit), which jj shares:
 * *fixups lists the descendants whose version of an `own` path must win,
 * [{"commit", "paths"}], oldest first. */
int tt_git_containing_refs(struct tether_vcs *v, const char *id, json_t **refs);
int tt_git_abandon(struct tether_vcs *v, const char *id, const char *expect_head, int check_only,
                   const char *const *own, size_t nown, char new_head[41]);
int tt_git_abandon_check(struct tether_vcs *v, const char *head, const char *id, int allow_root,
                         const char *const *own, size_t nown, json_t **fixups);

/* A string a commit holds as JSON text: as it is when UTF-8, else with
 * every byte >= 0x80 as '?' (git does not require UTF-8). */
json_t *tt_git_json_text(const char *s);

/* git_export.c: tether_vcs_ops.commits_info and .list_refs on libgit2;
 * tt_vcs_refs_sort puts list_refs' answer in its order (type, name). */
int tt_git_commits_info(struct tether_vcs *v, const char *const *ids, size_t n, json_t **infos);
int tt_git_list_refs(struct tether_vcs *v, json_t **refs);
int tt_vcs_refs_sort(json_t *refs);

#endif
