/* The order of list_refs' answer (vcs.h): by type, then name. Shared by
 * every git module (tether-git-common), native and libgit2 alike. */
#ifndef TETHER_VCS_VCS_REFS_H
#define TETHER_VCS_VCS_REFS_H

/* A qsort comparator of two (json_t *const *) {"type", "name", ...}. */
int tt_vcs_refs_order(const void *a, const void *b);

#endif
