/* History walks on a git store: every commit reachable from a set of tips
 * (each_commit), and every distinct file under one directory across those
 * commits (history_files, behind gc and verify --all-history), or the same
 * walk telling also which commit holds which files (history_trees, behind
 * export).
 *
 * history_files reads as little as the answer needs. A commit whose tree at
 * the directory was already read is skipped after reading the few trees on
 * the way down; inside the directory, a subtree or a file already met at
 * the same path (same object id, so the same content) is not read again. So
 * a walk over N commits of a dataset whose commits each change one manifest
 * reads each manifest blob once, not N times, and never hashes anything:
 * git's object ids already say what is the same. With a cache file
 * (git_walk_cache.h), what one walk read the next one finds there: a
 * commit's tree at the directory, and the trees and blobs under it.
 *
 * Everything here works on 20-byte ids and a source (git_walk.h) that reads
 * raw objects and lists the commits; it knows neither libgit2 nor the
 * native reader. */
#include "util/fail.h"
#include "vcs/git_path.h"
#include "vcs/git_walk.h"
#include "vcs/git_walk_cache.h"

#include <tether/backend.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The walk over commits                                               */
/* ------------------------------------------------------------------ */

struct id_walk {
	int (*cb)(void *ud, const char *id);
	void *ud;
};

static int pass_hex(void *ud, const unsigned char id[20], const unsigned char *tree)
{
	struct id_walk *w = ud;
	char hex[41];

	(void)tree;
	tt_goid_hex(id, hex);
	return w->cb(w->ud, hex);
}

int tt_walk_each_commit(const struct tt_walk_src *src, int (*cb)(void *ud, const char *id), void *ud)
{
	struct id_walk w = {cb, ud};

	return src->commits(src->ud, pass_hex, &w);
}

/* ------------------------------------------------------------------ */
/* What a walk has read: (object id, path) pairs                       */
/* ------------------------------------------------------------------ */

struct seen_slot {
	unsigned char id[20];
	char *path; /* NULL: an empty slot */
};

/* Open addressing, linear probing, at most half full. */
struct seen_set {
	struct seen_slot *slots;
	size_t cap, count;
};

static uint64_t seen_hash(const unsigned char id[20], const char *path)
{
	uint64_t h;

	memcpy(&h, id, sizeof h); /* an object id is already a uniform digest */
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

static struct seen_slot *seen_find(const struct seen_set *s, const unsigned char id[20], const char *path)
{
	size_t mask = s->cap - 1;

	for (size_t i = seen_hash(id, path) & mask;; i = (i + 1) & mask) {
		struct seen_slot *slot = &s->slots[i];
		if (!slot->path || (memcmp(slot->id, id, 20) == 0 && strcmp(slot->path, path) == 0))
			return slot;
	}
}

static int seen_grow(struct seen_set *s)
{
	struct seen_set bigger = {calloc(s->cap ? 2 * s->cap : 256, sizeof *bigger.slots),
	                          s->cap ? 2 * s->cap : 256, s->count};

	if (!bigger.slots)
		return tt_fail_oom();
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i].path)
			*seen_find(&bigger, s->slots[i].id, s->slots[i].path) = s->slots[i];
	free(s->slots);
	*s = bigger;
	return 0;
}

/* Record (id, path); *fresh says whether it was new. */
static int seen_add(struct seen_set *s, const unsigned char id[20], const char *path, int *fresh)
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
		return tt_fail_oom();
	memcpy(slot->id, id, 20);
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
	const struct tt_walk_src *src;
	struct walk_cache *cache; /* or NULL */
	const char *dir; /* normalised; "" is the top */
	tether_vcs_history_cb cb;                  /* history_files' */
	const struct tether_vcs_tree_walk *trees; /* or history_trees' */
	void *ud;
	struct seen_set seen;
	struct path_buf path; /* the current path relative to dir */
	int depth;            /* trees entered below dir */
	char commit[41];
	size_t commits;
};

/* An object read for the walk: raw bytes, parsed here (a commit's tree, a
 * tree's entries); `keep` holds them for the source, or is NULL when they
 * came from the cache. */
struct raw {
	const unsigned char *data;
	size_t size;
	void *keep;
	int from_source;
};

static void raw_free(const struct file_walk *w, struct raw *r)
{
	if (r->from_source)
		w->src->release(w->src->ud, r->keep);
	r->from_source = 0;
}

static int read_raw(struct file_walk *w, const unsigned char id[20], enum tt_gobj_type type, struct raw *r)
{
	enum tt_gobj_type got;
	char hex[41];
	int rc;

	memset(r, 0, sizeof *r);
	if ((rc = w->src->read(w->src->ud, id, &got, &r->data, &r->size, &r->keep)) < 0)
		return rc;
	r->from_source = 1;
	if (got != type) {
		raw_free(w, r);
		tt_goid_hex(id, hex);
		return tether_error_set(TETHER_ERROR, "object %s under %s at commit %.12s is a %s, not a %s", hex,
		                        *w->dir ? w->dir : "the top", w->commit, tt_gobj_type_name(got),
		                        tt_gobj_type_name(type));
	}
	return 0;
}

/* One entry of a raw tree: "<octal mode> <name>\0<20-byte id>". */
struct tree_entry {
	unsigned mode;
	const char *name;
	const unsigned char *id; /* points into the tree */
};

/* The entry at *pos (advanced past it): 1 when there is one, 0 at the end,
 * < 0 when the tree is malformed. */
static int next_entry(const unsigned char *udata, size_t size, size_t *pos, struct tree_entry *e)
{
	const char *data = (const char *)udata;
	size_t i = *pos;

	if (i >= size)
		return 0;
	e->mode = 0;
	while (i < size && data[i] >= '0' && data[i] <= '7' && e->mode < 01000000)
		e->mode = e->mode * 8 + (unsigned)(data[i++] - '0');
	if (i >= size || data[i] != ' ')
		return -1;
	e->name = data + ++i;
	const char *nul = memchr(e->name, '\0', size - i);
	if (!nul || (size_t)(nul - data) + 1 + 20 > size)
		return -1;
	/* A name is one path component: a crafted tree could hold "", ".",
	 * "..", or "a/../../x", which would make a path outside the dataset. */
	if (nul == e->name || strchr(e->name, '/') || strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
		return -1;
	e->id = (const unsigned char *)nul + 1;
	*pos = (size_t)(nul - data) + 1 + 20;
	return 1;
}

static int malformed_tree(const struct file_walk *w)
{
	return tether_error_set(TETHER_ERROR, "a malformed tree under %s at commit %.12s", *w->dir ? w->dir : "the top",
	                        w->commit);
}

#define MODE_TREE 0040000u
#define MODE_COMMIT 0160000u /* a submodule: no files of this repository */

/* An object under the directory: from the cache when it has it, else
 * from git (and then into the cache). */
static int read_under_dir(struct file_walk *w, const unsigned char id[20], enum tt_gobj_type type, struct raw *r)
{
	enum tt_gobj_type cached;
	memset(r, 0, sizeof *r);
	if (w->cache && (r->data = wc_object(w->cache, id, &cached, &r->size)) && cached == type)
		return 0;
	int rc = read_raw(w, id, type, r);
	if (rc == 0 && w->cache)
		wc_put_object(w->cache, id, type, r->data, r->size);
	return rc;
}

static int walk_files(struct file_walk *w, const unsigned char tree_id[20]);

/* A file: its content read when the walk meets (path, blob) first; for
 * history_trees, named by its id again each time a fresh tree holds it. */
static int visit_blob(struct file_walk *w, const unsigned char id[20], int fresh)
{
	struct raw blob;
	char hex[41];
	int rc;

	if (w->trees)
		tt_goid_hex(id, hex);
	if (!fresh)
		return w->trees ? w->trees->file(w->ud, w->path.s, hex, NULL, 0) : 0;
	if ((rc = read_under_dir(w, id, TT_GOBJ_BLOB, &blob)) < 0)
		return rc;
	if (w->trees)
		rc = w->trees->file(w->ud, w->path.s, hex, (const char *)blob.data, blob.size);
	else
		rc = w->cb(w->ud, w->commit, w->path.s, (const char *)blob.data, blob.size);
	raw_free(w, &blob);
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
	/* history_trees lists every file of a fresh tree, so it enters a
	 * subtree met before too (reading trees, not the blobs under it) */
	int enter = fresh || w->trees;
	if (rc == 0 && enter && e->mode == MODE_TREE && w->depth >= TETHER_VCS_TREE_DEPTH_MAX)
		rc = tether_error_set(TETHER_ERROR, "a tree at '%s' of commit %.12s nests deeper than %d directories: "
		                      "no object key is that deep", w->path.s, w->commit, TETHER_VCS_TREE_DEPTH_MAX);
	else if (rc == 0 && enter && e->mode == MODE_TREE) {
		w->depth++;
		rc = walk_files(w, e->id);
		w->depth--;
	} else if (rc == 0 && e->mode != MODE_TREE)
		rc = visit_blob(w, e->id, fresh);
	path_buf_pop_to(&w->path, mark);
	return rc;
}

/* Git keeps tree entries sorted as if directory names ended in '/', so a
 * depth-first walk in entry order visits paths in byte order, as
 * read_tree does. */
static int walk_files(struct file_walk *w, const unsigned char tree_id[20])
{
	struct raw tree;
	int rc = read_under_dir(w, tree_id, TT_GOBJ_TREE, &tree);
	size_t pos = 0;
	struct tree_entry e;
	int more;

	while (rc == 0 && (more = next_entry(tree.data, tree.size, &pos, &e)) != 0)
		rc = more < 0 ? malformed_tree(w) : visit_entry(w, &e);
	raw_free(w, &tree);
	return rc;
}

/* The entry `name` (len bytes) of a raw tree: 1 and *e when present. */
static int find_entry(const unsigned char *data, size_t size, const char *name, size_t len, struct tree_entry *e)
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
static int find_dir(struct file_walk *w, const unsigned char root[20], unsigned char out[20])
{
	const char *name = w->dir;
	unsigned char at[20];
	int rc = 0;

	memcpy(at, root, 20);
	while (*name && rc == 0) {
		size_t len = strcspn(name, "/");
		struct raw tree;
		struct tree_entry e;
		if ((rc = read_raw(w, at, TT_GOBJ_TREE, &tree)) < 0)
			return rc;
		int found = find_entry(tree.data, tree.size, name, len, &e);
		if (found < 0)
			rc = malformed_tree(w);
		else if (found == 0 || e.mode != MODE_TREE)
			rc = 1;
		else
			memcpy(at, e.id, 20);
		raw_free(w, &tree);
		name += len + (name[len] == '/');
	}
	if (rc == 0)
		memcpy(out, at, 20);
	return rc;
}

/* A raw commit starts "tree <40 hex>\n". */
static int commit_tree(struct file_walk *w, const unsigned char id[20], unsigned char tree[20])
{
	struct raw commit;
	int rc = read_raw(w, id, TT_GOBJ_COMMIT, &commit);

	if (rc < 0)
		return rc;
	if (commit.size < 6 + 40 || memcmp(commit.data, "tree ", 5) != 0 || commit.data[45] != '\n' ||
	    tt_goid_from_hex((const char *)commit.data + 5, tree) != 0)
		rc = tether_error_set(TETHER_ERROR, "commit %s names no tree", w->commit);
	raw_free(w, &commit);
	return rc;
}

static int is_zero(const unsigned char id[20])
{
	static const unsigned char zero[20];
	return memcmp(id, zero, 20) == 0;
}

static int visit_commit(void *ud, const unsigned char id[20], const unsigned char *tree)
{
	struct file_walk *w = ud;
	unsigned char root[20], dir_id[20];
	int fresh = 0;
	int rc;

	w->commits++;
	tt_goid_hex(id, w->commit);
	if (!w->cache || !wc_commit_dir(w->cache, id, dir_id)) {
		if (tree)
			memcpy(root, tree, 20);
		else if ((rc = commit_tree(w, id, root)) < 0)
			return rc;
		if ((rc = find_dir(w, root, dir_id)) < 0)
			return rc;
		if (rc == 1)
			memset(dir_id, 0, sizeof dir_id); /* no directory: the zero id */
		if (w->cache)
			wc_put_commit_dir(w->cache, id, dir_id);
	}
	if (is_zero(dir_id))
		return w->trees ? w->trees->commit(w->ud, w->commit, "", 0) : 0;
	/* The directory's own tree, under the empty path: seen before, every
	 * file in it has been handed over. */
	if ((rc = seen_add(&w->seen, dir_id, "", &fresh)) < 0)
		return rc;
	if (w->trees) {
		char hex[41];
		tt_goid_hex(dir_id, hex);
		if ((rc = w->trees->commit(w->ud, w->commit, hex, fresh)) != 0)
			return rc;
	}
	return fresh ? walk_files(w, dir_id) : 0;
}

int tt_walk_history(const struct tt_walk_src *src, const char *dir, const char *cache_path,
                    const struct tt_walk_wants *wants, size_t *commits)
{
	struct file_walk w = {.src = src, .cb = wants->files, .trees = wants->trees, .ud = wants->ud};
	char *norm = NULL;
	int rc = tt_git_path_normalize(dir, &norm);

	*commits = 0;
	if (rc == 0 && cache_path && !(w.cache = wc_load(cache_path, norm)))
		rc = tt_fail_oom();
	if (rc == 0) {
		w.dir = norm;
		rc = src->commits(src->ud, visit_commit, &w);
	}
	/* Only a walk that went to its end saves: one a callback stopped may
	 * not have read everything it would have. (What it did read is as
	 * true, but a complete file is simpler to trust.) */
	if (rc == 0 && w.cache)
		wc_save(w.cache);
	wc_free(w.cache);
	*commits = w.commits;
	seen_free(&w.seen);
	free(w.path.s);
	free(norm);
	return rc;
}
