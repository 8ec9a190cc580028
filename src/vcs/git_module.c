/* tether-vcs-libgit2's export: libgit2's implementation of the VCS
 * interface, which tether-vcs-git.so (git_native.c) loads when an operation
 * needs it. Apart from git.c so that tether-vcs-jj, which links git.c for
 * its read side, exports only its own module. */
#include "vcs/git_store.h"

#include <tether/backend.h>

TETHER_API tether_vcs_module_t tether_vcs_module = { &tt_git_ops, NULL };
