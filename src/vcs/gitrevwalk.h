/* The commit walk of tether-vcs-git without libgit2: every commit reachable
 * from every ref and HEAD, in the order libgit2 1.5's git_revwalk gives
 * with no sort flags (what gc and verify --all-history walk, and what
 * tether-vcs-libgit2 walks, so both modules answer alike).
 *
 * That order (libgit2's revwalk.c, prepare_walk and get_revision): the tips
 * in the order they were pushed (the refs as libgit2's iterator lists them,
 * tt_gref_each_as_libgit2, then HEAD), a commit pushed twice counting at its
 * last push; then, repeatedly, the first commit of the list is taken and
 * each of its parents not yet met, in parent order, is inserted before the
 * first commit of the list with an older committer time (after every one
 * as old or newer). Annotated tags are peeled to their commit; a ref to
 * anything else, or to an object that is not there, is skipped, as
 * git_revwalk_push_glob skips it.
 *
 * Commits are parsed with bounds checks; a commit that is damaged (no tree
 * line, a committer line libgit2 would refuse, a parent that is not a
 * commit or not there) is an error naming it. Internal to tether-vcs-git. */
#ifndef TETHER_VCS_GITREVWALK_H
#define TETHER_VCS_GITREVWALK_H

#include "vcs/gitodb.h"
#include "vcs/gitrefs.h"

#include <stddef.h>
#include <stdint.h>

/* What the walk needs of a raw commit. Parent i's hex id is at
 * parent_hex + 48 * i (each "parent <hex>\n" line is 48 bytes). */
struct tt_gcommit {
	unsigned char tree[20];
	const char *parent_hex;
	size_t nparents;
	int64_t time; /* the committer's, seconds since the epoch */
};

/* Parse the raw commit data[0..len): 0, or -1 with *why (a static
 * phrase) when it is malformed. Reads nothing outside the buffer. */
int tt_gcommit_parse(const unsigned char *data, size_t len, struct tt_gcommit *c, const char **why);

/* The commits of the walk from every ref and HEAD: 0 with *ids (malloc'd,
 * *n records of 40 bytes: each commit's id, then its tree's, which the
 * walk has read already; NULL when none), 1 when libgit2 must walk
 * this repository (its refs are ones tt_gref_each_as_libgit2 leaves to
 * libgit2, or HEAD is damaged or names no commit), < 0 on damage. */
int tt_grevwalk_all(const struct tt_grepo *r, struct tt_godb *db, unsigned char **ids, size_t *n);

#endif
