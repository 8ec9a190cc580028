/* For test_vcs_git_native: libgit2's implementation linked in, where the
 * module loads tether-vcs-libgit2.so (src/vcs/git_full.c). */
#include "vcs/git_native.h"
#include "vcs/git_store.h"

const struct tether_vcs_ops *tt_git_full_ops(void)
{
	return &tt_git_ops;
}
