/* tether-vcs-git's read path without libgit2 (git_native.c), and where it
 * finds libgit2's implementation when an operation needs it. */
#ifndef TETHER_VCS_GIT_NATIVE_H
#define TETHER_VCS_GIT_NATIVE_H

#include "vcs/vcs.h"

/* The ops tether-vcs-git.so exports. */
extern const struct tether_vcs_ops tt_git_native_ops;

/* libgit2's implementation (git.c's tt_git_ops), loaded on first call:
 * git_full.c dlopens tether-vcs-libgit2.so from the directory this module
 * was loaded from; a unit test links git.c and returns it directly. NULL
 * (with the error set) when it cannot be loaded. */
const struct tether_vcs_ops *tt_git_full_ops(void);

#endif
