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
 * git's object ids already say what is the same. With a cache file
 * (git_walk_cache.h), what one walk read the next one finds there: a
 * commit's tree at the directory, and the trees and blobs under it. */
#include "util/git_error.h"
#include "vcs/git_store.h"
#include "vcs/git_walk_cache.h"

#include <tether/backend.h>

#include <git2.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
		return tt_git_fail(rc, "cannot walk the history");
	if (!tips) {
		rc = git_revwalk_push_glob(walk, "refs/*");
		/* An unborn HEAD adds nothing (and libgit2 reports it as an error). */
		if (rc == 0 && git_repository_head_unborn(repo) != 1)
			rc = git_revwalk_push_head(walk);
		if (rc < 0) {
			git_revwalk_free(walk);
			return tt_git_fail(rc, "cannot walk the history from every ref");
		}
	}
	for (size_t i = 0; tips && i < ntips; i++) {
		git_oid oid;
		rc = git_oid_fromstr(&oid, tips[i]);
		if (rc == 0)
			rc = git_revwalk_push(walk, &oid);
		if (rc < 0) {
			git_revwalk_free(walk);
			return tt_git_fail(rc, "cannot walk the history from %s", tips[i]);
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
	return rc == GIT_ITEROVER ? 0 : tt_git_fail(rc, "cannot walk the history");
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
	git_odb *odb;
	struct walk_cache *cache; /* or NULL */
	const char *dir; /* normalised; "" is the top */
	tether_vcs_history_cb cb;
	void *ud;
	struct seen_set seen;
	struct path_buf path; /* the current path relative to dir */
	int depth;            /* trees entered below dir */
	char commit[GIT_OID_HEXSZ + 1];
	size_t commits;
};

/* Objects are read raw through the object database and parsed here: a
 * walk needs a commit's tree and a tree's entries, not libgit2's parsed
 * objects (a parsed tree allocates every entry and goes through the
 * repository's object cache; the raw one is one buffer). */
static int read_raw(struct file_walk *w, const git_oid *id, git_object_t type, git_odb_object **out)
{
	char hex[GIT_OID_HEXSZ + 1];
	int rc = git_odb_read(out, w->odb, id);

	if (rc < 0)
		return tt_git_fail(rc, "cannot read object %s of %s at commit %.12s", git_oid_tostr(hex, sizeof hex, id),
		                *w->dir ? w->dir : "the top", w->commit);
	if (git_odb_object_type(*out) != type) {
		git_object_t got = git_odb_object_type(*out);
		git_odb_object_free(*out);
		*out = NULL;
		return tether_error_set(TETHER_ERROR, "object %s is a %s, not a %s", git_oid_tostr(hex, sizeof hex, id),
		                        git_object_type2string(got), git_object_type2string(type));
	}
	return 0;
}

/* One entry of a raw tree: "<octal mode> <name>\0<20-byte id>". */
struct tree_entry {
	unsigned mode;
	const char *name;
	const git_oid *id; /* points into the tree: git_oid is its 20 bytes */
};

/* The entry at *pos (advanced past it): 1 when there is one, 0 at the end,
 * < 0 when the tree is malformed. */
static int next_entry(const char *data, size_t size, size_t *pos, struct tree_entry *e)
{
	size_t i = *pos;

	if (i >= size)
		return 0;
	e->mode = 0;
	while (i < size && data[i] >= '0' && data[i] <= '7')
		e->mode = e->mode * 8 + (unsigned)(data[i++] - '0');
	if (i >= size || data[i] != ' ')
		return -1;
	e->name = data + ++i;
	const char *nul = memchr(e->name, '\0', size - i);
	if (!nul || (size_t)(nul - data) + 1 + GIT_OID_RAWSZ > size)
		return -1;
	/* A name is one path component: a crafted tree could hold "", ".",
	 * "..", or "a/../../x", which would make a path outside the dataset. */
	if (nul == e->name || strchr(e->name, '/') || strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
		return -1;
	e->id = (const git_oid *)(const void *)(nul + 1);
	*pos = (size_t)(nul - data) + 1 + GIT_OID_RAWSZ;
	return 1;
}

static int malformed_tree(const struct file_walk *w)
{
	return tether_error_set(TETHER_ERROR, "a malformed tree under %s at commit %.12s", *w->dir ? w->dir : "the top",
	                        w->commit);
}

#define MODE_TREE 0040000u
#define MODE_COMMIT 0160000u /* a submodule: no files of this repository */

/* Append "/name" (or "name" at the top) to the current path; *mark is the
 * length to pop back to. */

/* An object under the directory: from the cache when it has it, else
 * from git (and then into the cache). */
struct raw {
	const char *data;
	size_t size;
	git_odb_object *obj; /* read from git: freed with raw_free */
};

static int read_under_dir(struct file_walk *w, const git_oid *id, git_object_t type, struct raw *r)
{
	git_object_t cached;
	memset(r, 0, sizeof *r);
	if (w->cache && (r->data = wc_object(w->cache, id, &cached, &r->size)) && cached == type)
		return 0;
	int rc = read_raw(w, id, type, &r->obj);
	if (rc < 0)
		return rc;
	r->data = git_odb_object_data(r->obj);
	r->size = git_odb_object_size(r->obj);
	if (w->cache)
		wc_put_object(w->cache, id, r->obj);
	return 0;
}

static void raw_free(struct raw *r)
{
	git_odb_object_free(r->obj);
}

static int walk_files(struct file_walk *w, const git_oid *tree_id);

static int visit_blob(struct file_walk *w, const git_oid *id)
{
	struct raw blob;
	int rc = read_under_dir(w, id, GIT_OBJECT_BLOB, &blob);

	if (rc < 0)
		return rc;
	rc = w->cb(w->ud, w->commit, w->path.s, blob.data, blob.size);
	raw_free(&blob);
	return rc;
}

static int visit_entry(struct file_walk *w, const struct tree_entry *e)
{
	size_t mark;
	int fresh = 0;
	int rc;

	if (e->mode == MODE_COMMIT)
		return 0;
	mark = w->path.len;
	if ((rc = path_buf_push(&w->path, e->name)) < 0)
		return rc;
	rc = seen_add(&w->seen, e->id, w->path.s, &fresh);
	if (rc == 0 && fresh && e->mode == MODE_TREE && w->depth >= TETHER_VCS_TREE_DEPTH_MAX)
		rc = tether_error_set(TETHER_ERROR, "a tree at '%s' of commit %.12s nests deeper than %d directories: "
		                      "no object key is that deep", w->path.s, w->commit, TETHER_VCS_TREE_DEPTH_MAX);
	else if (rc == 0 && fresh && e->mode == MODE_TREE) {
		w->depth++;
		rc = walk_files(w, e->id);
		w->depth--;
	} else if (rc == 0 && fresh)
		rc = visit_blob(w, e->id);
	path_buf_pop_to(&w->path, mark);
	return rc;
}

/* Git keeps tree entries sorted as if directory names ended in '/', so a
 * depth-first walk in entry order visits paths in byte order, as
 * read_tree does. */
static int walk_files(struct file_walk *w, const git_oid *tree_id)
{
	struct raw tree;
	int rc = read_under_dir(w, tree_id, GIT_OBJECT_TREE, &tree);
	size_t pos = 0;
	struct tree_entry e;
	int more;

	while (rc == 0 && (more = next_entry(tree.data, tree.size, &pos, &e)) != 0)
		rc = more < 0 ? malformed_tree(w) : visit_entry(w, &e);
	raw_free(&tree);
	return rc;
}

/* The entry `name` (len bytes) of a raw tree: 1 and *e when present. */
static int find_entry(const char *data, size_t size, const char *name, size_t len, struct tree_entry *e)
{
	size_t pos = 0;
	int more;

	while ((more = next_entry(data, size, &pos, e)) > 0)
		if (strncmp(e->name, name, len) == 0 && e->name[len] == '\0')
			return 1;
	return more;
}

/* The id of the tree at w->dir in tree `root`: 0 when found, 1 when the
 * commit has no such directory. */
static int find_dir(struct file_walk *w, const git_oid *root, git_oid *out)
{
	const char *name = w->dir;
	git_oid at;
	int rc = 0;

	git_oid_cpy(&at, root);
	while (*name && rc == 0) {
		size_t len = strcspn(name, "/");
		git_odb_object *tree = NULL;
		struct tree_entry e;
		if ((rc = read_raw(w, &at, GIT_OBJECT_TREE, &tree)) < 0)
			return rc;
		int found = find_entry(git_odb_object_data(tree), git_odb_object_size(tree), name, len, &e);
		if (found < 0)
			rc = malformed_tree(w);
		else if (found == 0 || e.mode != MODE_TREE)
			rc = 1;
		else
			git_oid_cpy(&at, e.id);
		git_odb_object_free(tree);
		name += len + (name[len] == '/');
	}
	if (rc == 0)
		git_oid_cpy(out, &at);
	return rc;
}

/* A raw commit starts "tree <40 hex>\n". */
static int commit_tree(struct file_walk *w, const git_oid *id, git_oid *tree)
{
	git_odb_object *commit = NULL;
	int rc = read_raw(w, id, GIT_OBJECT_COMMIT, &commit);
	const char *data = rc == 0 ? git_odb_object_data(commit) : NULL;

	if (rc < 0)
		return rc;
	if (git_odb_object_size(commit) < 5 + GIT_OID_HEXSZ || strncmp(data, "tree ", 5) != 0 ||
	    git_oid_fromstrn(tree, data + 5, GIT_OID_HEXSZ) < 0)
		rc = tether_error_set(TETHER_ERROR, "commit %s names no tree", w->commit);
	git_odb_object_free(commit);
	return rc;
}

static int visit_commit(void *ud, const git_oid *id)
{
	struct file_walk *w = ud;
	git_oid root, dir_id;
	int fresh = 0;
	int rc;

	w->commits++;
	git_oid_tostr(w->commit, sizeof w->commit, id);
	if (!w->cache || !wc_commit_dir(w->cache, id, &dir_id)) {
		if ((rc = commit_tree(w, id, &root)) < 0)
			return rc;
		if ((rc = find_dir(w, &root, &dir_id)) < 0)
			return rc;
		if (rc == 1)
			memset(&dir_id, 0, sizeof dir_id); /* no directory: the zero id */
		if (w->cache)
			wc_put_commit_dir(w->cache, id, &dir_id);
	}
	if (git_oid_is_zero(&dir_id))
		return 0;
	/* The directory's own tree, under the empty path: seen before, every
	 * file in it has been handed over. */
	if ((rc = seen_add(&w->seen, &dir_id, "", &fresh)) < 0 || !fresh)
		return rc;
	return walk_files(w, &dir_id);
}

int tt_git_store_history_files(struct tether_vcs *v, const char *const *tips, size_t ntips,
                               const char *dir, const char *cache_path, tether_vcs_history_cb cb, void *ud,
                               size_t *commits)
{
	struct file_walk w = {.cb = cb, .ud = ud};
	char *norm = NULL;
	git_revwalk *walk = NULL;
	int rc = tt_git_normalize_path(dir, &norm);

	*commits = 0;
	if (rc == 0 && (rc = git_repository_odb(&w.odb, tt_git_store_repository(v))) < 0)
		rc = tt_git_fail(rc, "cannot open the object database");
	if (rc == 0)
		rc = start_walk(v, tips, ntips, &walk);
	if (rc == 0 && cache_path && !(w.cache = wc_load(cache_path, norm)))
		rc = fail_oom();
	if (rc == 0) {
		w.dir = norm;
		rc = run_walk(walk, visit_commit, &w);
	} else {
		git_revwalk_free(walk);
	}
	/* Only a walk that went to its end saves: one a callback stopped may
	 * not have read everything it would have. (What it did read is as
	 * true, but a complete file is simpler to trust.) */
	if (rc == 0 && w.cache)
		wc_save(w.cache);
	wc_free(w.cache);
	*commits = w.commits;
	git_odb_free(w.odb);
	seen_free(&w.seen);
	free(w.path.s);
	free(norm);
	return rc;
}
