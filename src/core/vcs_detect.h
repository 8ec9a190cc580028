/* Which VCS holds a dataset, where its shared state may live, and the
 * VCS-specific command a hint gives (the one place that names git and jj). */
#ifndef TETHER_CORE_VCS_DETECT_H
#define TETHER_CORE_VCS_DETECT_H

#include "vcs/vcs.h"

/* The VCS module for the dataset at root (realpath'd) and the directory to
 * open it from (malloc'd): the nearest .jj or .git walking up wins, jj when
 * both are at one level, but a .jj that the enclosing git repository
 * tracks (committed content) is not jj's and is passed over. */
int tt_vcs_detect(const char *root, const struct tether_vcs_ops **ops, char **start);

/* Refuse (TETHER_EREFUSED) a shared directory (tether.lock, the journal,
 * the walk cache) that lies inside the checkout anywhere but under its
 * top-level .git or .jj: that would be content a clone brings. */
int tt_vcs_check_shared_dir(const char *workdir, const char *common_dir);

/* The shell command that untracks a file the VCS of `ops` tracks and
 * commits the removal (malloc'd): `path` absolute, `vcs_rel` relative to
 * the repository's top. Both steps, since is_tracked reads the last commit
 * too (git: HEAD; jj: @-), which carries the file until a commit removes
 * it; after them the next command runs. */
char *tt_vcs_untrack_command(const struct tether_vcs_ops *ops, const char *path, const char *vcs_rel);

#endif
