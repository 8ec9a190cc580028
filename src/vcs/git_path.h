/* Paths relative to a git checkout's top, as every git read operation
 * takes them (shared by git.c on libgit2 and git_native.c without it). */
#ifndef TETHER_VCS_GIT_PATH_H
#define TETHER_VCS_GIT_PATH_H

/* Normalise: no "." components, no repeated or trailing slashes; "" is the
 * top itself. Absolute paths, ".." and anything inside .git are refused
 * (TETHER_EUSAGE): they would reach outside the checkout or into the
 * repository's own files. *out is malloc'd. */
int tt_git_path_normalize(const char *in, char **out);

#include <stddef.h>

/* A growable path for recursive walks, '/'-separated: push a component
 * (its length before the push is the mark to pop back to). */
struct path_buf {
	char *s;
	size_t len, cap;
};
int path_buf_push(struct path_buf *pb, const char *name);
void path_buf_pop_to(struct path_buf *pb, size_t mark);

#endif
