/* Finding a git checkout and reading its refs without libgit2 (for
 * tether-vcs-git's read path, git_native.c).
 *
 * tt_grepo_find answers only when the layout is one this reader knows to
 * read exactly as libgit2 would: a .git directory or a "gitdir:" file
 * (worktrees, through commondir), found walking up from the start (no
 * directory on the way being itself a git directory) without
 * crossing a filesystem or a GIT_CEILING_DIRECTORIES entry, owned by the
 * caller, with no alternates, no shallow file or grafts, and a config
 * without core.worktree, core.bare = true, [extensions] or [include].
 * Anything else returns 1: the caller hands the repository to libgit2,
 * which then decides (and words any error). */
#ifndef TETHER_VCS_GITREFS_H
#define TETHER_VCS_GITREFS_H

struct tt_grepo {
	char *workdir;   /* realpath'd, no trailing slash */
	char *gitdir;    /* this checkout's: HEAD and per-worktree refs; realpath'd */
	char *commondir; /* shared: objects, refs, packed-refs; realpath'd */
};

/* 0 with *r filled, 1 when libgit2 must decide, < 0 on error. */
int tt_grepo_find(const char *start_dir, struct tt_grepo *r);
void tt_grepo_clear(struct tt_grepo *r);

/* Resolve ref `name` ("HEAD", "refs/heads/main"), following symbolic refs:
 * 0 with id, 1 when it does not exist (or a symbolic ref points at nothing),
 * < 0 on damage. *symref (optional, malloc'd) gets the first symbolic
 * target when `name` is symbolic, else NULL. */
int tt_gref_resolve(const struct tt_grepo *r, const char *name, unsigned char id[20], char **symref);

/* Every ref whose name starts with `prefix` (which starts "refs/"): the
 * loose refs of the common directory (and a linked worktree's own
 * refs/worktree, refs/bisect, refs/rewritten), then packed-refs, a loose
 * ref hiding a packed one of the same name, in byte order of name:
 * cb(ud, name, id, peeled, symbolic). `peeled` is packed-refs' "^" line
 * (what an annotated tag peels to) or NULL when the file does not say;
 * a symbolic ref comes with its target's id and symbolic = 1, one that
 * points at nothing is left out (as git leaves it out). A name git would
 * not write is skipped. A non-zero return from cb stops the walk and is
 * returned; damage is < 0 with the error set. */
typedef int (*tt_gref_cb)(void *ud, const char *name, const unsigned char id[20], const unsigned char *peeled,
                          int symbolic);
int tt_gref_each(const struct tt_grepo *r, const char *prefix, tt_gref_cb cb, void *ud);
/* The same, also saying where each ref was found: loose = 1 for a loose
 * ref file of the common directory (which then hides a packed one of the
 * same name), 0 for a packed-refs line. The listing already knows, so a
 * caller that needs it does not stat every ref's file again. */
typedef int (*tt_gref_where_cb)(void *ud, const char *name, const unsigned char id[20],
                                const unsigned char *peeled, int symbolic, int loose);
int tt_gref_each_where(const struct tt_grepo *r, const char *prefix, tt_gref_where_cb cb, void *ud);

/* The refs libgit2 1.5's reference iterator lists (as git_revwalk_push_glob
 * walks them), in its order: the common directory's loose refs in byte
 * order of name, then the packed refs no loose one hides (a linked
 * worktree's own refs are not listed). 1, with nothing handed over, when
 * libgit2 might list differently or refuse: a loose ref this reader skips
 * or finds damaged (a dot-file, a symlink, a name git would not write), a
 * symbolic ref to nothing, a packed ref with such a name, or a config that
 * folds names (core.ignorecase, core.precomposeunicode). */
int tt_gref_each_as_libgit2(const struct tt_grepo *r, const char *prefix, tt_gref_cb cb, void *ud);

#endif
