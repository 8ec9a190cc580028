/* The VCS interface: everything the engine asks of the enclosing repository.
 *
 * It is VCS-neutral: git (tether-vcs-git.so) and jj (tether-vcs-jj.so). An
 * implementation is a const struct tether_vcs_ops in a module
 * (tether-vcs-<name>.so) that exports `tether_vcs_module`, loaded with
 * dlopen on first use, so a command that never touches history never loads
 * libgit2. The engine loads the one whose marker is nearest the dataset
 * walking up: .jj or .git, and jj when both are at one level (colocated).
 *
 * jj: reads go straight to jj's git store with libgit2 (jj's commit ids
 * are git's); revsets and writes go through the jj command line, found as
 * $TETHER_JJ or `jj` on PATH (TETHER_ECONFIG when there is none). The
 * engine's "HEAD" is the last committed state, which is jj's @-: @ is the
 * working-copy commit, holding what is not committed yet. Notes marked
 * "jj:" below say where jj differs.
 *
 * Every function returns 0 or a negative TETHER_E* code with the message set
 * through tether_error_set(). Revisions are strings in the VCS's own syntax
 * ("HEAD", "main~2", an abbreviated id); commit ids come back as full hex.
 * Paths are relative to the checkout top, '/'-separated, "" being the top
 * itself; absolute paths, ".." and ".git" (and, for jj, ".jj") are refused
 * with TETHER_EUSAGE.
 * A handle (struct tether_vcs) is used by one thread at a time. */
#ifndef TETHER_VCS_H
#define TETHER_VCS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The version of struct tether_vcs_ops. It continues the numbers of the
 * `int abi` member it had before it carried a size (2 added the streams);
 * 3 is version and size themselves; 4 added rewrite_files, containing_refs and
 * abandon (history surgery); 5 commits_info and list_refs (export); 6 history_trees (export's walk).
 * Members are appended only, each with a
 * version bump; the engine reads one a module may lack through
 * TT_VCS_GET, and refuses a module newer than itself (docs/BACKENDS.md,
 * "Versions and sizes"). */
#define TETHER_VCS_OPS_VERSION 6
#define TETHER_VCS_OPS_INIT .version = TETHER_VCS_OPS_VERSION, .size = (uint32_t)sizeof(struct tether_vcs_ops)
/* Member m of ops, or NULL when the module's struct ends before it. */
#define TT_VCS_GET(ops, m)                                                                                    \
	((size_t)(ops)->size >= offsetof(struct tether_vcs_ops, m) + sizeof((ops)->m) ? (ops)->m : 0)
/* No struct of a version the engine reads is shorter than version 3's. */
#define TT_VCS_OPS_V3_SIZE (offsetof(struct tether_vcs_ops, close_stream) + sizeof(void (*)(void)))

/* How deep read_tree and history_files follow trees below the directory
 * they walk. A tree is the clone's content, and each walker recurses once
 * per level, so a crafted chain of nested trees must end in an error, not
 * a stack overflow. No object key can nest deeper: a key is at most 200
 * bytes, two per level at the least. */
#define TETHER_VCS_TREE_DEPTH_MAX 128

struct tether_vcs; /* an open repository, owned by the implementation */
struct tether_vcs_stream; /* a file being read piece by piece */

/* Called once per file by read_tree; return non-zero to stop the walk (that
 * value is returned by read_tree). */
typedef int (*tether_vcs_file_cb)(void *ud, const char *path, const char *data, size_t len);

/* Called by rewrite_files for a file it may rewrite: set *out (malloc'd)
 * and *outlen to its new bytes, or leave *out NULL to keep it. Non-zero
 * stops the rewrite, which then changes nothing. */
typedef int (*tether_vcs_rewrite_cb)(void *ud, const char *path, const char *data, size_t len, char **out,
                                     size_t *outlen);

/* Called by history_files once per distinct file: `commit` is the first
 * commit of the walk that holds it. Non-zero stops the walk, as above. */
typedef int (*tether_vcs_history_cb)(void *ud, const char *commit, const char *path,
                                     const char *data, size_t len);

/* What history_trees tells. Non-zero from either stops the walk and is
 * returned. */
struct tether_vcs_tree_walk {
	/* Commit `commit` of the walk holds tree `tree` (40 hex) at the
	 * directory, or "" when it holds none. fresh: the walk meets that
	 * tree for the first time, and its files follow. */
	int (*commit)(void *ud, const char *commit, const char *tree, int fresh);
	/* A file of the fresh tree just named, in path order: `path`
	 * relative to the directory, `blob` its object id (40 hex), and its
	 * content the first time the walk meets (path, blob), else data NULL
	 * (the caller had it before). */
	int (*file)(void *ud, const char *path, const char *blob, const char *data, size_t len);
};

struct tether_vcs_ops {
	uint32_t version; /* TETHER_VCS_OPS_INIT */
	uint32_t size;
	const char *name; /* "git" */

	/* Open the repository enclosing start_dir (worktrees included). Sets
	 * *workdir to the checkout's top directory (absolute, realpath'd, no
	 * trailing slash) and *common_dir to the directory all checkouts of the
	 * repository share (for the repository lock). TETHER_ENOREPO when there
	 * is none, or when it is bare (no checkout). workdir and common_dir may
	 * be NULL when not wanted; the caller frees them.
	 * jj: the workspace root (the nearest directory holding .jj) and the
	 * repository directory every workspace shares (.jj/repo, or where the
	 * .jj/repo file of a `jj workspace add` workspace points). Never starts
	 * jj. */
	int (*open)(const char *start_dir, struct tether_vcs **out, char **workdir,
	            char **common_dir);
	void (*close)(struct tether_vcs *);

	/* Resolve a revision to a commit id (40 hex + NUL). TETHER_ENOTFOUND
	 * (naming the revision) when it does not resolve; an unborn HEAD also
	 * gives TETHER_ENOTFOUND.
	 * jj: rev is a revset (`jj log -r REV`, without snapshotting) that must
	 * name exactly one commit: none is TETHER_ENOTFOUND, several or a
	 * malformed revset TETHER_EUSAGE. The git spellings the engine uses are
	 * translated: "HEAD" is "@-", "HEAD~N" and "HEAD^" go back N (1) more
	 * parents ("@-" followed by N more "-"; "HEAD^2", a parent by number,
	 * has no jj spelling: TETHER_EUSAGE), "refs/heads/NAME" is exactly the
	 * bookmark NAME and "refs/tags/NAME" the tag, and a full commit id with
	 * git's suffixes ("<id>^", "<id>~2") is resolved in the store. jj's
	 * root commit holds nothing: naming it (a HEAD with no commits yet) is
	 * TETHER_ENOTFOUND. */
	int (*resolve)(struct tether_vcs *, const char *rev, char id[41]);

	/* Read the file at `path` (relative to the checkout top) in commit `id`
	 * (normally a full id from resolve; any revision is accepted).
	 * TETHER_ENOTFOUND when absent or not a file. *data is malloc'd
	 * (NUL-terminated, len excludes it; len may be NULL). A symlink reads as
	 * its target. */
	int (*read_file)(struct tether_vcs *, const char *id, const char *path, char **data,
	                 size_t *len);

	/* Every file under directory `dir` (relative to the checkout top, no
	 * trailing slash) in commit `id`, recursively, in path order; `path`
	 * passed to cb is relative to `dir`. A missing dir calls cb never and
	 * returns 0. Trees and blobs are cached by object id across calls. */
	int (*read_tree)(struct tether_vcs *, const char *id, const char *dir,
	                 tether_vcs_file_cb cb, void *ud);

	/* Commits reachable from `rev` (first-parent not required: all parents,
	 * in time order newest first) that changed anything under `path` (a
	 * directory or file relative to the checkout top; NULL for all commits),
	 * at most max (0 = all). Array of {"id", "short", "author", "email",
	 * "time" (unix seconds), "summary", "message"}. rev NULL means HEAD.
	 * As in git log: a merge counts only when `path` differs from every
	 * parent; a root commit counts when `path` exists in it. "time" is the
	 * author's; "short" is git's unique abbreviation; "message" is the full
	 * message as stored (normally ending with a newline). */
	int (*log)(struct tether_vcs *, const char *rev, const char *path, int max,
	           json_t **commits);

	/* Commit exactly these paths (relative to the checkout top; files that
	 * no longer exist in the working tree are recorded as deleted; a path
	 * may name a directory, meaning everything under it) with `message`,
	 * on top of HEAD (or as the root commit on an unborn branch), and
	 * advance the current branch. The user's other staged and unstaged
	 * changes stay exactly as they were: the index gets these paths
	 * updated, nothing else. Author/committer from the repository's config
	 * (GIT_AUTHOR_* / GIT_COMMITTER_* environment variables honoured). A
	 * commit whose tree equals HEAD's tree is not made: *id is set to ""
	 * and 0 returned. An error returned with *id set means the commit was
	 * made and stands, and a later step failed (git: the index could not
	 * be updated; jj: @- is no longer the change committed): the caller
	 * must not undo what the commit names. With *id "" the commit was not
	 * made.
	 * Every file under the paths is committed, except tether's temporary
	 * files (a name matching TT_TEMP_GLOB, util/tempname.h: "*.tmp.*[0-9]"),
	 * which are treated as absent wherever they are: no ignore rule applies,
	 * since the caller names exactly what belongs (a user's "*.toml"
	 * pattern must not drop a manifest). The executable bit and symlinks are recorded (core.fileMode and
	 * core.symlinks honoured) and clean filters such as core.autocrlf are
	 * applied; submodule entries under the paths are left as they are. The
	 * message is cleaned up as by `git commit` (TETHER_EUSAGE when empty).
	 * TETHER_EREFUSED while a merge, rebase, cherry-pick, revert or am is in
	 * progress, or when the branch moved meanwhile; TETHER_ECONFIG (with a
	 * hint) when no identity is configured. No hooks run; nothing is
	 * signed.
	 * jj: `jj commit -m MESSAGE -- PATHS` (each path a quoted root-file: or
	 * root: fileset, so glob characters are literal), after `jj file track
	 * --include-ignored` of the paths (ignore rules and jj's size limit for
	 * new files do not apply). The changes @ holds under the paths become
	 * the commit -- the change that was @, now @- -- and everything else
	 * the working copy holds stays in the new @. Made only when @ changes
	 * something under the paths (else *id = ""). As jj commit, it moves no
	 * bookmark: a bookmark on @ stays on its change and so names the new
	 * commit (switch_to puts new ones there). Identity from jj's config
	 * (JJ_USER / JJ_EMAIL honoured). jj has no operation in progress to
	 * refuse; a stale working copy is TETHER_EREFUSED (hint: `jj workspace
	 * update-stale`). */
	int (*commit_paths)(struct tether_vcs *, const char *const *paths, size_t npaths,
	                    const char *message, char id[41]);

	/* The current branch's short name (*name malloc'd), or NULL when HEAD
	 * is detached. On an unborn branch, the name HEAD points at.
	 * jj: a bookmark on @ (the one the next commit carries), else one on
	 * @-, else the workspace's name when it is not "default", else NULL. */
	int (*current_branch)(struct tether_vcs *, char **name);

	/* Every commit reachable from any ref (branches, tags, remotes, HEAD,
	 * and whatever else lives under refs/), each once: cb(ud, id). A
	 * non-zero return from cb stops the walk and is returned. History
	 * walks (gc, verify --all-history) stand on this.
	 * jj: every visible commit: the ancestors of `visible_heads() |
	 * bookmarks() | tags() | remote_bookmarks()` (every workspace's @
	 * included), not the commits jj keeps under refs/jj/keep after `jj
	 * abandon` or `jj squash`: to tether those are gone, and so are the pins
	 * only they named. */
	int (*each_commit)(struct tether_vcs *, int (*cb)(void *ud, const char *id), void *ud);

	/* The object id of the tree at `dir` in commit `id` (40 hex), or ""
	 * when there is none: lets a history walk skip a directory it has
	 * already read at another commit. */
	int (*tree_id)(struct tether_vcs *, const char *id, const char *dir, char tree[41]);

	/* Move the checkout to `rev` (NULL: stay on the current commit), as
	 * `git switch` does: with new_branch, create that branch at rev and
	 * check it out (refused when it exists); else a rev naming a local
	 * branch checks the branch out, and any other rev detaches HEAD.
	 * Uncommitted changes are carried when they do not conflict, and the
	 * move is refused (TETHER_EREFUSED, naming a path) when they do;
	 * nothing is half-done.
	 * jj: `jj new REV`, as a jj user expects of `tether new REV`: a new,
	 * empty working-copy commit on top of rev; what the working copy held
	 * stays in the change it was in (never carried, never refused). With
	 * new_branch, a bookmark by that name is created on the new @ (refused
	 * beforehand when it exists or is no valid git branch name), so the
	 * next commit carries it forward as a git branch moves with its
	 * commits. NULL rev and new_branch: nothing happens. */
	int (*switch_to)(struct tether_vcs *, const char *rev, const char *new_branch);

	/* Is `path` (relative to the checkout top) tracked: in the index or in
	 * HEAD's tree? A directory is tracked when a file under it is.
	 * jj: in @'s tree as last snapshotted (asking does not snapshot) or in
	 * @-'s. */
	int (*is_tracked)(struct tether_vcs *, const char *path, int *tracked);

	/* The live bookmarks: every local branch's short name, as a JSON array
	 * of strings (order unspecified). gc --prune-workspaces calls a working
	 * branch tether.ws.<dataset8>.<bookmark> dead when its bookmark is not
	 * here. Appended last so the offsets above stay as they were.
	 * jj: the present local bookmarks (`jj bookmark list` without remote
	 * entries; a conflicted bookmark is still live, a deleted one that
	 * only a remote still tracks is not), asked of jj itself rather than
	 * read from refs/heads in jj's git store, which lags behind jj's view
	 * until jj exports (and is not there at all for a bookmark jj has
	 * never exported). */
	int (*list_bookmarks)(struct tether_vcs *, json_t **names);

	/* Every distinct file under directory `dir` (as read_tree) across the
	 * commits each_commit visits, each (path, content) pair once, with the
	 * first commit of the walk that holds it: the history walk behind gc
	 * and verify --all-history. A commit whose tree at `dir` was already
	 * read is skipped, and a subtree or file already met at the same path
	 * is not read again, so the cost follows the number of distinct
	 * files, not commits. *commits is the number of commits walked (also
	 * when cb stops the walk). cache_path (or NULL) names a file where the
	 * walk keeps what it read, keyed by object id, for the next walk of the
	 * same directory: a commit's tree there and the objects under it. It
	 * is only an accelerator (a missing or damaged file is read around and
	 * replaced), and must live where nothing but tether writes: gc acts on
	 * what the walk reads.
	 * jj: over the visible commits, as each_commit. */
	int (*history_files)(struct tether_vcs *, const char *dir, const char *cache_path,
	                     tether_vcs_history_cb cb, void *ud, size_t *commits);

	/* Where the checkout stands now, as an opaque value for return_to
	 * (*pos is the caller's): git's branch HEAD names, or the commit a
	 * detached HEAD is at; TETHER_ENOTFOUND on an unborn HEAD.
	 * jj: the operation the repository is at, after the working copy is
	 * snapshotted (so what it held is in that operation). */
	int (*position)(struct tether_vcs *, json_t **pos);

	/* Undo a switch_to made since `position` gave `pos`: the checkout goes
	 * back there as switch_to would move it (uncommitted changes carried
	 * back; refused, TETHER_EREFUSED, when they conflict), and a branch
	 * that switch_to created (created_branch, or NULL) is deleted again.
	 * jj: `jj op restore` of that operation, which takes back the new
	 * change and any bookmark made on it. */
	int (*return_to)(struct tether_vcs *, const json_t *pos, const char *created_branch);

	/* read_file piece by piece, for a file too big to hold whole (a
	 * listing of a million files, which diff merges as it reads): open
	 * gives a stream, each read fills buf with up to cap bytes (*got 0 at
	 * the end), close frees it. The content is checked as read_file
	 * checks it, by the end at the latest: the read that reaches the end
	 * fails when it does not match, so a caller acts only on a stream it
	 * read to its end. open and close are called on the handle's thread;
	 * the reads of two streams may run on two threads at once. NULL: the
	 * engine reads the file whole with read_file. Appended last (ABI 2). */
	int (*open_stream)(struct tether_vcs *, const char *id, const char *path, struct tether_vcs_stream **s);
	int (*read_stream)(struct tether_vcs_stream *, char *buf, size_t cap, size_t *got);
	void (*close_stream)(struct tether_vcs_stream *);

	/* Rewrite the current branch's history so that every file under
	 * `paths` (each a file or a directory, relative to `dir`, itself
	 * relative to the checkout top, "" the top) is what cb makes of it,
	 * at every commit reachable from the branch's head: the behind
	 * `upgrade --all-history`. Commits are re-created, oldest first, with
	 * the same author, committer, message and parents (rewritten parents
	 * replaced), and with only those files' blobs changed; a commit whose
	 * files cb keeps and whose parents stay is kept as it is. cb sees each
	 * distinct blob once, and a commit whose tree at `dir` was met before
	 * costs a lookup, so the work follows what changed under `dir`.
	 * Signatures on rewritten commits (gpgsig) are dropped: they would no
	 * longer verify.
	 * *report: {"branch" (the full ref name), "head" (its commit now),
	 * "commits": [{"id", "new" (null on a dry run), "summary"}] (the
	 * commits re-created, oldest first), "remote": [{"id", "ref"}] (those
	 * of them some refs/remotes/ ref reaches, with one such ref)}.
	 * expect_head NULL: a dry run that writes nothing, not even objects.
	 * Otherwise the new objects are written and the branch moved from
	 * expect_head to the new head (TETHER_EREFUSED when it is no longer
	 * there: nothing moved), "head" then being the new one; index entries
	 * holding a blob the rewrite replaced take the replacement, the
	 * working tree is left alone. A detached HEAD is TETHER_EREFUSED; an
	 * unborn branch has nothing to rewrite ("head" null). NULL: the VCS cannot rewrite its history for
	 * tether (jj: jj keeps its own record of every commit, and a rewrite
	 * of its git store behind it would leave the old commits visible to
	 * jj beside the new ones). Appended (version 4). */
	int (*rewrite_files)(struct tether_vcs *, const char *dir, const char *const *paths, size_t npaths,
	                     tether_vcs_rewrite_cb cb, void *ud, const char *expect_head, json_t **report);

	/* The refs other than the current branch (and HEAD) whose history
	 * holds commit `id` (a full id): local branches, remote-tracking
	 * branches and tags, as [{"ref": its name, "remote": bool}] with
	 * "remote" true for one that says the commit was pushed ("origin/main").
	 * abandon and undo refuse a commit someone else may already have.
	 * jj: bookmarks other than the current one, remote bookmarks (not the
	 * @git ones of a colocated repository) and tags on `id::`, named
	 * "feat", "main@origin", "v1". Appended (version 4). */
	int (*containing_refs)(struct tether_vcs *, const char *id, json_t **refs);

	/* Drop commit `id` from the current branch's history: its descendants
	 * on the branch (first parents from HEAD down to it) are re-created
	 * onto its parent, the branch is moved to the new tip on the condition
	 * that HEAD is still `expect_head` (TETHER_EREFUSED when it moved), and
	 * the checkout follows it; *new_head is the new tip. `own` (nown paths,
	 * relative to the checkout top) are the caller's snapshots: where a
	 * descendant changes one of them that `id` changed too, the
	 * descendant's version is taken whole (a dataset manifest records a
	 * whole state; the later one stands). Refused (TETHER_EREFUSED,
	 * nothing written) when the working tree has uncommitted changes to
	 * tracked files, when HEAD is detached or an operation (a merge, a
	 * rebase) is in progress, when `id` is not on the branch's first-parent
	 * line or that line holds a merge commit between HEAD and `id`, when
	 * `id` is the first commit (nothing to rebase onto), and when a
	 * descendant changes a path `id` changed outside `own` (the rebase
	 * would conflict). With check_only, every refusal is checked and
	 * nothing is written (*new_head ""). The ref moves in one step, so a
	 * process killed part-way leaves the branch either where it was or at
	 * the new tip; commits it made before are unreachable, never seen.
	 * jj: `jj abandon`, after the same checks from the working-copy commit
	 * @ down (snapshotted first): the work @ holds is carried along, as jj
	 * does, unless it changes a path `id` changed (refused, where jj would
	 * leave @ conflicted); a first commit (a child of jj's root) is refused
	 * as on git: it is where the dataset's files began. jj rebases every
	 * descendant, @ included; then each descendant that wins an `own` path
	 * gets its version back (`jj restore --from` its old commit), and the
	 * new tip is the new @-. */
	int (*abandon)(struct tether_vcs *, const char *id, const char *expect_head, int check_only,
	               const char *const *own, size_t nown, char new_head[41]);

	/* Every bookmark the checkout stands on, as a JSON array of names
	 * (*names the caller's): git: the branch HEAD names (none when
	 * detached); jj: each bookmark on @, then each on @- (current_branch
	 * picks one of them). The stale-workspace check asks whether the
	 * workspace's bookmark is among them, so a second bookmark on jj's
	 * change is no disagreement. Appended (version 4); NULL in older
	 * modules: the engine compares current_branch alone. */
	int (*checkout_bookmarks)(struct tether_vcs *, json_t **names);

	/* What `tether export` tells of commits: for each of ids[0..n) (full
	 * ids), in that order, {"id", "parents": [full ids, in order],
	 * "author", "email", "time" (author's, unix seconds), "tz" (author's
	 * offset in minutes), "committer", "committer_email",
	 * "commit_time", "message" (as stored)}; jj adds "change_id".
	 * TETHER_ENOTFOUND naming an id that is no commit. Appended
	 * (version 5); NULL in older modules: export is refused. */
	int (*commits_info)(struct tether_vcs *, const char *const *ids, size_t n, json_t **infos);

	/* The repository's named refs and the commits they name, as
	 * [{"name", "type", "commit"}]: git: "branch" (refs/heads, short
	 * name), "remote" (refs/remotes, "origin/main"; a remote's HEAD left
	 * out), "tag" (refs/tags, peeled to its commit; a tag of no commit left
	 * out). jj: "bookmark" (local), "remote" ("main@origin"; not a
	 * colocated repository's @git entries), "tag". Sorted by type, then
	 * name. Appended (version 5). */
	int (*list_refs)(struct tether_vcs *, json_t **refs);

	/* history_files' walk (the same reading of each distinct tree and
	 * file once, the same cache), telling also which commit holds which
	 * files, through `cb` (struct tether_vcs_tree_walk): the batched walk
	 * behind export. Over the commits reachable from tips[0..ntips) (full
	 * ids), or, tips NULL, those each_commit visits; each once, in the
	 * walk's order. *commits: the commits walked. Appended (version 6);
	 * NULL in older modules: export is refused. */
	int (*history_trees)(struct tether_vcs *, const char *const *tips, size_t ntips, const char *dir,
	                     const char *cache_path, const struct tether_vcs_tree_walk *cb, void *ud,
	                     size_t *commits);
};

/* A VCS module exports this. */
typedef const struct tether_vcs_ops *const tether_vcs_module_t[];

#endif
