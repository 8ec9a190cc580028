/* The history walks (git_history.c) on any git object reader.
 *
 * One copy of the walk logic serves two readers: libgit2's object database
 * and revision walk (git_history_libgit2.c, for tether-vcs-libgit2 and
 * tether-vcs-jj) and the native reader (git_native_walk.c: gitodb.c and
 * gitrevwalk.c, for tether-vcs-git without libgit2). A source says how to
 * read a raw object by its 20-byte id and which commits the walk visits, in
 * order; the walk does the rest, so both answer byte for byte alike.
 * Internal to the VCS modules. */
#ifndef TETHER_VCS_GIT_WALK_H
#define TETHER_VCS_GIT_WALK_H

#include "vcs/gitodb.h"
#include "vcs/vcs.h"

#include <stddef.h>

struct tt_walk_src {
	void *ud;
	/* Object `id`: 0 with its type, bytes and a handle `keep` that holds
	 * them until release(ud, keep); < 0 with the error set (naming the
	 * object) when it cannot be read. */
	int (*read)(void *ud, const unsigned char id[20], enum tt_gobj_type *type, const unsigned char **data,
	            size_t *len, void **keep);
	void (*release)(void *ud, void *keep);
	/* Every commit of the walk, each once, in order: cb(cbud, id, tree),
	 * tree being the commit's tree id when the source read the commit
	 * already (so the walk need not read it again), else NULL. A non-zero
	 * return from cb stops the walk and is returned; < 0 with the error
	 * set when the walk cannot go on. */
	int (*commits)(void *ud, int (*cb)(void *cbud, const unsigned char id[20], const unsigned char *tree),
	               void *cbud);
};

/* tether_vcs_ops.each_commit over src's commits (hex ids). */
int tt_walk_each_commit(const struct tt_walk_src *src, int (*cb)(void *ud, const char *id), void *ud);

/* What a history walk hands over, to ud: history_files' calls (files) or
 * history_trees' (trees); one of the two is set. */
struct tt_walk_wants {
	tether_vcs_history_cb files;
	const struct tether_vcs_tree_walk *trees;
	void *ud;
};

/* tether_vcs_ops.history_files or history_trees over src's commits
 * (git_history.c). */
int tt_walk_history(const struct tt_walk_src *src, const char *dir, const char *cache_path,
                    const struct tt_walk_wants *wants, size_t *commits);

#endif
