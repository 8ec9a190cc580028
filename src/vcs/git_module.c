/* tether-vcs-git's export. Apart from git.c so that tether-vcs-jj, which
 * links git.c for its read side, exports only its own module. */
#include "vcs/git_store.h"

#include <tether/backend.h>

TETHER_API tether_vcs_module_t tether_vcs_module = { &tt_git_ops, NULL };
