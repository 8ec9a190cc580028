/* tether-vcs-git's export: the read path without libgit2 (git_native.c). */
#include "vcs/git_native.h"

#include <tether/backend.h>

TETHER_API tether_vcs_module_t tether_vcs_module = { &tt_git_native_ops, NULL };
