/* The history walks of tether-vcs-git without libgit2: git_history.c's walk
 * over the native reader (gitodb.c) and commit walk (gitrevwalk.c). */
#ifndef TETHER_VCS_GIT_NATIVE_WALK_H
#define TETHER_VCS_GIT_NATIVE_WALK_H

#include "vcs/gitodb.h"
#include "vcs/gitrefs.h"
#include "vcs/git_walk.h"
#include "vcs/vcs.h"

/* tether_vcs_ops.each_commit, history_files and history_trees (from
 * every ref: tips NULL), or *to_libgit2 = 1 and 0
 * (nothing handed over) when libgit2 must walk this repository. */
int tt_native_each_commit(const struct tt_grepo *r, struct tt_godb *db, int (*cb)(void *ud, const char *id),
                          void *ud, int *to_libgit2);
int tt_native_history(const struct tt_grepo *r, struct tt_godb *db, const char *dir, const char *cache_path,
                      const struct tt_walk_wants *wants, size_t *commits, int *to_libgit2);

#endif
