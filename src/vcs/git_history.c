/* History walks on a git store: every commit reachable from a set of tips
 * (each_commit), and every distinct file under one directory across those
 * commits (history_files, behind gc and verify --all-history).
 *
 * history_files reads as little as the answer needs. A commit whose tree at
 * the directory was already read is skipped after reading the few trees on
 * the way down; inside the directory, a subtree or a file already met at
 * the same path (same object id, so the same content) is not read again. So
 * a walk over N commits of a dataset whose commits each change one manifest
 * reads each manifest blob once, not N times, and never hashes anything:
 * git's object ids already say what is the same. */
#include "util/git_error.h"
#include "vcs/git_store.h"

#include <tether/backend.h>

#include <git2.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int fail_git(int git_rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_git(int git_rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = tt_git_failv(git_rc, fmt, ap);
	va_end(ap);
	return rc;
}

static int fail_oom(void)
{
	return tether_error_set(TETHER_ERROR, "out of memory");
}

/* ------------------------------------------------------------------ */
/* The walk over commits                                               */
/* ------------------------------------------------------------------ */

/* tips NULL: every ref (branches, tags, remotes, everything under refs/)
 * and HEAD; else exactly those commits. */
static int start_walk(struct tether_vcs *v, const char *const *tips, size_t ntips, git_revwalk **out)
{
	git_repository *repo = tt_git_store_repository(v);
	git_revwalk *walk;
	int rc = git_revwalk_new(&walk, repo);

	if (rc < 0)
		return fail_git(rc, "cannot walk the history");
	if (!tips) {
		rc = git_revwalk_push_glob(walk, "refs/*");
		/* An unborn HEAD adds nothing (and libgit2 reports it as an error). */
		if (rc == 0 && git_repository_head_unborn(repo) != 1)
			rc = git_revwalk_push_head(walk);
		if (rc < 0) {
			git_revwalk_free(walk);
			return fail_git(rc, "cannot walk the history from every ref");
		}
	}
	for (size_t i = 0; tips && i < ntips; i++) {
		git_oid oid;
		rc = git_oid_fromstr(&oid, tips[i]);
		if (rc == 0)
			rc = git_revwalk_push(walk, &oid);
		if (rc < 0) {
			git_revwalk_free(walk);
			return fail_git(rc, "cannot walk the history from %s", tips[i]);
		}
	}
	*out = walk;
	return 0;
}

/* Hand every commit of the walk to cb(ud, oid); frees the walk. A non-zero
 * return from cb stops the walk and is returned. */
static int run_walk(git_revwalk *walk, int (*cb)(void *ud, const git_oid *id), void *ud)
{
	git_oid oid;
	int rc = 0, stop = 0;

	while (!stop && (rc = git_revwalk_next(&oid, walk)) == 0)
		stop = cb(ud, &oid);
	git_revwalk_free(walk);
	if (stop)
		return stop;
	return rc == GIT_ITEROVER ? 0 : fail_git(rc, "cannot walk the history");
}

struct id_walk {
	int (*cb)(void *ud, const char *id);
	void *ud;
};

static int pass_hex(void *ud, const git_oid *id)
{
	struct id_walk *w = ud;
	char hex[GIT_OID_HEXSZ + 1];

	git_oid_tostr(hex, sizeof hex, id);
	return w->cb(w->ud, hex);
}

int tt_git_store_walk_from(struct tether_vcs *v, const char *const *tips, size_t ntips,
                           int (*cb)(void *ud, const char *id), void *ud)
{
	struct id_walk w = {cb, ud};
	git_revwalk *walk;
	int rc = start_walk(v, tips, ntips, &walk);

	return rc < 0 ? rc : run_walk(walk, pass_hex, &w);
}

/* ------------------------------------------------------------------ */
/* What a walk has read: (object id, path) pairs                       */
/* ------------------------------------------------------------------ */

struct seen_slot {
	git_oid id;
	char *path; /* NULL: an empty slot */
};

/* Open addressing, linear probing, at most half full. */
struct seen_set {
	struct seen_slot *slots;
	size_t cap, count;
};

static uint64_t seen_hash(const git_oid *id, const char *path)
{
	uint64_t h;

	memcpy(&h, id->id, sizeof h); /* an object id is already a uniform digest */
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

static struct seen_slot *seen_find(const struct seen_set *s, const git_oid *id, const char *path)
{
	size_t mask = s->cap - 1;

	for (size_t i = seen_hash(id, path) & mask;; i = (i + 1) & mask) {
		struct seen_slot *slot = &s->slots[i];
		if (!slot->path || (git_oid_equal(&slot->id, id) && strcmp(slot->path, path) == 0))
			return slot;
	}
}

static int seen_grow(struct seen_set *s)
{
	struct seen_set bigger = {calloc(s->cap ? 2 * s->cap : 256, sizeof *bigger.slots),
	                          s->cap ? 2 * s->cap : 256, s->count};

	if (!bigger.slots)
		return fail_oom();
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i].path)
			*seen_find(&bigger, &s->slots[i].id, s->slots[i].path) = s->slots[i];
	free(s->slots);
	*s = bigger;
	return 0;
}

/* Record (id, path); *fresh says whether it was new. */
static int seen_add(struct seen_set *s, const git_oid *id, const char *path, int *fresh)
{
	int rc = 2 * (s->count + 1) > s->cap ? seen_grow(s) : 0;
	struct seen_slot *slot;

	if (rc < 0)
		return rc;
	slot = seen_find(s, id, path);
	*fresh = slot->path == NULL;
	if (!*fresh)
		return 0;
	if (!(slot->path = strdup(path)))
		return fail_oom();
	git_oid_cpy(&slot->id, id);
	s->count++;
	return 0;
}

static void seen_free(struct seen_set *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i].path);
	free(s->slots);
}

/* ------------------------------------------------------------------ */
/* history_files                                                       */
/* ------------------------------------------------------------------ */

struct file_walk {
	git_repository *repo;
	const char *dir; /* normalised; "" is the top */
	tether_vcs_history_cb cb;
	void *ud;
	struct seen_set seen;
	char *path; /* the current path relative to dir */
	size_t path_len, path_cap;
	char commit[GIT_OID_HEXSZ + 1];
	size_t commits;
};

/* Append "/name" (or "name" at the top) to the current path; returns the
 * length to pop back to. */
static int path_push(struct file_walk *w, const char *name, size_t *mark)
{
	size_t n = strlen(name), need = w->path_len + 1 + n + 1;

	*mark = w->path_len;
	if (need > w->path_cap) {
		size_t cap = w->path_cap ? w->path_cap : 256;
		while (cap < need)
			cap *= 2;
		char *grown = realloc(w->path, cap);
		if (!grown)
			return fail_oom();
		w->path = grown;
		w->path_cap = cap;
	}
	if (w->path_len)
		w->path[w->path_len++] = '/';
	memcpy(w->path + w->path_len, name, n + 1);
	w->path_len += n;
	return 0;
}

static void path_pop(struct file_walk *w, size_t mark)
{
	w->path_len = mark;
	w->path[mark] = '\0';
}

static int walk_files(struct file_walk *w, const git_oid *tree_id);

static int visit_blob(struct file_walk *w, const git_oid *id)
{
	git_blob *blob = NULL;
	int rc = git_blob_lookup(&blob, w->repo, id);

	if (rc < 0)
		return fail_git(rc, "cannot read %s/%s at commit %.12s", w->dir, w->path, w->commit);
	rc = w->cb(w->ud, w->commit, w->path, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
	git_blob_free(blob);
	return rc;
}

static int visit_entry(struct file_walk *w, const git_tree_entry *e)
{
	git_object_t type = git_tree_entry_type(e);
	size_t mark;
	int fresh = 0;
	int rc;

	if (type != GIT_OBJECT_TREE && type != GIT_OBJECT_BLOB)
		return 0; /* a submodule holds no files of this repository */
	if ((rc = path_push(w, git_tree_entry_name(e), &mark)) < 0)
		return rc;
	rc = seen_add(&w->seen, git_tree_entry_id(e), w->path, &fresh);
	if (rc == 0 && fresh)
		rc = type == GIT_OBJECT_TREE ? walk_files(w, git_tree_entry_id(e))
		                             : visit_blob(w, git_tree_entry_id(e));
	path_pop(w, mark);
	return rc;
}

/* Git keeps tree entries sorted as if directory names ended in '/', so a
 * depth-first walk in entry order visits paths in byte order, as
 * read_tree does. */
static int walk_files(struct file_walk *w, const git_oid *tree_id)
{
	git_tree *tree = NULL;
	int rc = git_tree_lookup(&tree, w->repo, tree_id);

	if (rc < 0)
		return fail_git(rc, "cannot read a tree of %s at commit %.12s", w->dir, w->commit);
	for (size_t i = 0, n = git_tree_entrycount(tree); rc == 0 && i < n; i++)
		rc = visit_entry(w, git_tree_entry_byindex(tree, i));
	git_tree_free(tree);
	return rc;
}

/* The id of the tree at w->dir in `root`: 0 when found, 1 when the commit
 * has no such directory. */
static int find_dir(struct file_walk *w, const git_oid *root, git_oid *out)
{
	const char *name = w->dir;
	git_oid at;
	int rc = 0;

	git_oid_cpy(&at, root);
	while (*name && rc == 0) {
		const char *slash = strchr(name, '/');
		size_t len = slash ? (size_t)(slash - name) : strlen(name);
		char part[len + 1];
		git_tree *tree = NULL;

		memcpy(part, name, len);
		part[len] = '\0';
		if ((rc = git_tree_lookup(&tree, w->repo, &at)) < 0)
			return fail_git(rc, "cannot read a tree of commit %.12s", w->commit);
		const git_tree_entry *e = git_tree_entry_byname(tree, part);
		if (!e || git_tree_entry_type(e) != GIT_OBJECT_TREE)
			rc = 1;
		else
			git_oid_cpy(&at, git_tree_entry_id(e));
		git_tree_free(tree);
		name = slash ? slash + 1 : name + len;
	}
	if (rc == 0)
		git_oid_cpy(out, &at);
	return rc;
}

static int visit_commit(void *ud, const git_oid *id)
{
	struct file_walk *w = ud;
	git_commit *commit = NULL;
	git_oid dir_id;
	int fresh = 0;
	int rc;

	w->commits++;
	git_oid_tostr(w->commit, sizeof w->commit, id);
	if ((rc = git_commit_lookup(&commit, w->repo, id)) < 0)
		return fail_git(rc, "cannot read commit %s", w->commit);
	rc = find_dir(w, git_commit_tree_id(commit), &dir_id);
	git_commit_free(commit);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	/* The directory's own tree, under the empty path: seen before, every
	 * file in it has been handed over. */
	if ((rc = seen_add(&w->seen, &dir_id, "", &fresh)) < 0 || !fresh)
		return rc;
	return walk_files(w, &dir_id);
}

int tt_git_store_history_files(struct tether_vcs *v, const char *const *tips, size_t ntips,
                               const char *dir, tether_vcs_history_cb cb, void *ud, size_t *commits)
{
	struct file_walk w = {.repo = tt_git_store_repository(v), .cb = cb, .ud = ud};
	char *norm = NULL;
	git_revwalk *walk = NULL;
	int rc = tt_git_normalize_path(dir, &norm);

	*commits = 0;
	if (rc == 0)
		rc = start_walk(v, tips, ntips, &walk);
	if (rc == 0) {
		w.dir = norm;
		rc = run_walk(walk, visit_commit, &w);
	}
	*commits = w.commits;
	seen_free(&w.seen);
	free(w.path);
	free(norm);
	return rc;
}
