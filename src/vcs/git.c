/* tether-vcs-git: the VCS interface (vcs.h) on libgit2.
 *
 * Built as the module tether-vcs-git.so and loaded with dlopen the first
 * time the engine needs the repository, so commands that never touch
 * history never pay for libgit2.
 *
 * A handle wraps one git_repository and a small cache of trees and blobs
 * keyed by object id: a history walk reads the same manifests at hundreds
 * of commits and most of them are the very same objects. A handle is used
 * by one thread at a time.
 *
 * commit_paths is the delicate part: it must commit exactly the dataset's
 * paths and leave everything else the user has staged or changed alone. It
 * builds the new tree in a private in-memory index (HEAD's tree with only
 * the named paths replaced from the working tree), commits that, and then
 * touches the repository's index for the named paths only.
 *
 * The read side is shared with tether-vcs-jj (git_store.h): a jj
 * repository's commits live in a git store. The module's export is in
 * git_module.c, so that jj's module can link this file beside its own. */
#include "util/fail.h"
#include "util/git_error.h"
#include "util/tempname.h"
#include "vcs/vcs.h"
#include "vcs/git_store.h"
#include "vcs/git_walk.h"
#include "vcs/git_path.h"

#include <tether/backend.h>

#include <git2.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* libgit2 initialisation                                              */
/* ------------------------------------------------------------------ */

static pthread_once_t libgit2_once = PTHREAD_ONCE_INIT;
static int libgit2_init_rc;

static void libgit2_init_once(void)
{
	libgit2_init_rc = git_libgit2_init();
}

/* libgit2's globals are set up once per process; the module is never
 * unloaded, so they are never torn down (a test may call
 * git_libgit2_shutdown itself). */
static int ensure_libgit2(void)
{
	pthread_once(&libgit2_once, libgit2_init_once);
	if (libgit2_init_rc < 0)
		return tt_git_fail(libgit2_init_rc, "cannot initialise libgit2");
	return 0;
}

/* ------------------------------------------------------------------ */
/* The object cache: trees and blobs by id, least recently used out    */
/* ------------------------------------------------------------------ */

#define CACHE_BUCKETS 1024 /* a power of two */
#define CACHE_MAX_ENTRIES 4096
#define CACHE_MAX_BYTES ((size_t)32 << 20)
/* Bigger blobs are data, not manifests: reading them again is cheaper
 * than letting one of them push every manifest out. */
#define CACHE_MAX_OBJECT_BYTES ((size_t)1 << 20)

struct cached_object {
	git_object *obj; /* a reference of its own */
	size_t bytes;
	struct cached_object *next_in_bucket;
	struct cached_object *newer, *older;
};

struct object_cache {
	struct cached_object *buckets[CACHE_BUCKETS];
	struct cached_object *newest, *oldest;
	size_t count, bytes;
};

static size_t cache_bucket_of(const git_oid *id)
{
	/* An object id is a cryptographic digest: its first bytes are already
	 * uniformly distributed. */
	return ((size_t)id->id[0] << 8 | id->id[1]) & (CACHE_BUCKETS - 1);
}

/* Roughly what an object costs to keep: its content for a blob, its parsed
 * entries for a tree. Only used to bound the total. */
static size_t cache_object_bytes(const git_object *obj)
{
	if (git_object_type(obj) == GIT_OBJECT_BLOB)
		return (size_t)git_blob_rawsize((const git_blob *)obj);
	if (git_object_type(obj) == GIT_OBJECT_TREE)
		return git_tree_entrycount((const git_tree *)obj) * 96;
	return 256;
}

static void cache_unlink_lru(struct object_cache *c, struct cached_object *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void cache_push_newest(struct object_cache *c, struct cached_object *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	c->newest = e;
	if (!c->oldest)
		c->oldest = e;
}

static struct cached_object *cache_find(struct object_cache *c, const git_oid *id)
{
	struct cached_object *e = c->buckets[cache_bucket_of(id)];

	for (; e; e = e->next_in_bucket)
		if (git_oid_equal(git_object_id(e->obj), id))
			return e;
	return NULL;
}

static void cache_remove(struct object_cache *c, struct cached_object *victim)
{
	struct cached_object **link = &c->buckets[cache_bucket_of(git_object_id(victim->obj))];

	while (*link != victim)
		link = &(*link)->next_in_bucket;
	*link = victim->next_in_bucket;
	cache_unlink_lru(c, victim);
	c->count--;
	c->bytes -= victim->bytes;
	git_object_free(victim->obj);
	free(victim);
}

/* Keep a reference to obj. Failing to cache is never an error: the caller
 * still has its own reference. */
static void cache_insert(struct object_cache *c, git_object *obj)
{
	size_t bytes = cache_object_bytes(obj);
	struct cached_object *e;

	if (bytes > CACHE_MAX_OBJECT_BYTES)
		return;
	while (c->oldest && (c->count >= CACHE_MAX_ENTRIES || c->bytes + bytes > CACHE_MAX_BYTES))
		cache_remove(c, c->oldest);
	e = calloc(1, sizeof *e);
	if (!e)
		return;
	if (git_object_dup(&e->obj, obj) < 0) {
		free(e);
		return;
	}
	e->bytes = bytes;
	size_t b = cache_bucket_of(git_object_id(obj));
	e->next_in_bucket = c->buckets[b];
	c->buckets[b] = e;
	cache_push_newest(c, e);
	c->count++;
	c->bytes += bytes;
}

static void cache_clear(struct object_cache *c)
{
	while (c->oldest)
		cache_remove(c, c->oldest);
}

/* ------------------------------------------------------------------ */
/* The handle                                                          */
/* ------------------------------------------------------------------ */

struct tether_vcs {
	git_repository *repo;
	char *workdir; /* realpath'd, no trailing slash */
	struct object_cache cache;
	void *owner; /* the jj module's state on a handle it opened */
	void (*free_owner)(void *);
};

static const char *git_type_name(git_object_t type)
{
	return git_object_type2string(type);
}

/* An object through the cache. The caller owns the reference it gets. */
static int lookup_object(struct tether_vcs *v, const git_oid *id, git_object_t type,
                         git_object **out)
{
	struct cached_object *hit = cache_find(&v->cache, id);
	char hex[GIT_OID_HEXSZ + 1];
	int rc;

	if (hit) {
		if (type != GIT_OBJECT_ANY && git_object_type(hit->obj) != type)
			return tether_error_set(TETHER_ERROR, "object %s is a %s, not a %s",
			                        git_oid_tostr(hex, sizeof hex, id),
			                        git_type_name(git_object_type(hit->obj)),
			                        git_type_name(type));
		cache_unlink_lru(&v->cache, hit);
		cache_push_newest(&v->cache, hit);
		if (git_object_dup(out, hit->obj) < 0)
			return tt_fail_oom();
		return 0;
	}
	rc = git_object_lookup(out, v->repo, id, type);
	if (rc < 0)
		return tt_git_fail(rc, "cannot read object %s", git_oid_tostr(hex, sizeof hex, id));
	cache_insert(&v->cache, *out);
	return 0;
}

static int lookup_tree(struct tether_vcs *v, const git_oid *id, git_tree **out)
{
	return lookup_object(v, id, GIT_OBJECT_TREE, (git_object **)out);
}

static int lookup_blob(struct tether_vcs *v, const git_oid *id, git_blob **out)
{
	return lookup_object(v, id, GIT_OBJECT_BLOB, (git_object **)out);
}

/* ------------------------------------------------------------------ */
/* Paths                                                               */
/* ------------------------------------------------------------------ */

/* git_path.c, shared with the libgit2-free read path (git_native.c). */
static int normalize_path(const char *in, char **out)
{
	return tt_git_path_normalize(in, out);
}

/* Is `path` the directory or file `prefix`, or inside it? "" holds all. */
static int path_is_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (n == 0)
		return 1;
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static char *path_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *s;

	if (b == 0)
		return strdup(dir);
	if (a == 0)
		return strdup(name);
	s = malloc(a + 1 + b + 1);
	if (!s)
		return NULL;
	memcpy(s, dir, a);
	s[a] = '/';
	memcpy(s + a + 1, name, b + 1);
	return s;
}

/* ------------------------------------------------------------------ */
/* open / close                                                        */
/* ------------------------------------------------------------------ */

static int set_outputs_for_open(struct tether_vcs *v, char **workdir, char **common_dir)
{
	char *common = realpath(git_repository_commondir(v->repo), NULL);

	if (!common)
		return tt_fail_errno("cannot resolve", git_repository_commondir(v->repo));
	if (workdir) {
		*workdir = strdup(v->workdir);
		if (!*workdir) {
			free(common);
			return tt_fail_oom();
		}
	}
	if (common_dir)
		*common_dir = common;
	else
		free(common);
	return 0;
}

static void git_close(struct tether_vcs *v)
{
	if (!v)
		return;
	if (v->free_owner)
		v->free_owner(v->owner);
	cache_clear(&v->cache);
	git_repository_free(v->repo);
	free(v->workdir);
	free(v);
}

static int open_repository(const char *start_dir, git_repository **repo)
{
	/* GIT_CEILING_DIRECTORIES bounds the upward search as it does for git. */
	int rc = git_repository_open_ext(repo, start_dir, 0, getenv("GIT_CEILING_DIRECTORIES"));

	if (rc == GIT_ENOTFOUND)
		return tether_error_set(TETHER_ENOREPO, "not inside a git repository: %s", start_dir);
	if (rc < 0)
		return tt_git_fail(rc, "cannot open the git repository enclosing %s", start_dir);
	if (git_repository_is_bare(*repo)) {
		const char *where = git_repository_path(*repo);
		int err = tether_error_set(TETHER_ENOREPO,
		                           "%s is a bare git repository: tether needs a checkout "
		                           "with a working tree",
		                           where);
		/* `git init` there would not help: the repository exists, it only
		 * has no files checked out for tether.toml to sit among. */
		tether_error_set_hint("work in a checkout of it: `git clone %s DIR` (or `git --git-dir=%s "
		                      "worktree add DIR`), then run tether in DIR",
		                      where, where);
		git_repository_free(*repo);
		*repo = NULL;
		return err;
	}
	return 0;
}

static int git_open(const char *start_dir, struct tether_vcs **out, char **workdir,
                    char **common_dir)
{
	struct tether_vcs *v;
	struct stat st;
	int rc;

	if ((rc = ensure_libgit2()) < 0)
		return rc;
	if (!start_dir)
		start_dir = ".";
	if (stat(start_dir, &st) < 0)
		return tt_fail_errno("cannot open", start_dir);
	v = calloc(1, sizeof *v);
	if (!v)
		return tt_fail_oom();
	if ((rc = open_repository(start_dir, &v->repo)) < 0) {
		free(v);
		return rc;
	}
	v->workdir = realpath(git_repository_workdir(v->repo), NULL);
	if (!v->workdir) {
		rc = tt_fail_errno("cannot resolve", git_repository_workdir(v->repo));
		git_close(v);
		return rc;
	}
	if ((rc = set_outputs_for_open(v, workdir, common_dir)) < 0) {
		git_close(v);
		return rc;
	}
	*out = v;
	return 0;
}

/* jj's store: the git directory is known exactly, and may be bare (a
 * non-colocated jj repository keeps it under .jj/repo/store/git). */
int tt_git_store_open(const char *gitdir, const char *workdir, struct tether_vcs **out)
{
	unsigned flags = GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE;
	struct tether_vcs *v;
	int rc;

	if ((rc = ensure_libgit2()) < 0)
		return rc;
	v = calloc(1, sizeof *v);
	if (!v)
		return tt_fail_oom();
	rc = git_repository_open_ext(&v->repo, gitdir, flags, NULL);
	if (rc < 0) {
		rc = tt_git_fail(rc, "cannot open the git store %s", gitdir);
		free(v);
		return rc;
	}
	v->workdir = strdup(workdir);
	if (!v->workdir) {
		git_close(v);
		return tt_fail_oom();
	}
	*out = v;
	return 0;
}

void tt_git_store_set_owner(struct tether_vcs *v, void *owner, void (*free_owner)(void *))
{
	v->owner = owner;
	v->free_owner = free_owner;
}

void *tt_git_store_owner(const struct tether_vcs *v)
{
	return v->owner;
}

git_repository *tt_git_store_repository(struct tether_vcs *v)
{
	return v->repo;
}

int tt_git_normalize_path(const char *in, char **out)
{
	return normalize_path(in, out);
}

/* ------------------------------------------------------------------ */
/* Revisions                                                           */
/* ------------------------------------------------------------------ */

static int names_head(const char *rev)
{
	return strcmp(rev, "@") == 0 || strncmp(rev, "HEAD", 4) == 0;
}

static int explain_unresolved(struct tether_vcs *v, const char *rev, int git_rc)
{
	if (names_head(rev) && git_repository_head_unborn(v->repo) == 1)
		return tether_error_set(TETHER_ENOTFOUND, "HEAD has no commits yet");
	switch (git_rc) {
	case GIT_EAMBIGUOUS:
		return tether_error_set(TETHER_ENOTFOUND, "ambiguous revision '%s'", rev);
	case GIT_ENOTFOUND:
	case GIT_EINVALIDSPEC:
		return tether_error_set(TETHER_ENOTFOUND, "unknown revision '%s'", rev);
	default:
		return tt_git_fail(git_rc, "cannot resolve revision '%s'", rev);
	}
}

/* The commit a revision names; messages name the revision. */
static int lookup_commit_rev(struct tether_vcs *v, const char *rev, git_commit **out)
{
	git_object *obj = NULL, *peeled = NULL;
	int rc;

	if (!rev || !*rev)
		return tether_error_set(TETHER_EUSAGE, "no revision given");
	rc = git_revparse_single(&obj, v->repo, rev);
	if (rc < 0)
		return explain_unresolved(v, rev, rc);
	rc = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
	git_object_free(obj);
	if (rc < 0)
		return tether_error_set(TETHER_ENOTFOUND, "revision '%s' is not a commit", rev);
	*out = (git_commit *)peeled;
	return 0;
}

static int is_full_hex_id(const char *s)
{
	size_t i;

	for (i = 0; i < GIT_OID_HEXSZ; i++)
		if (!s[i] || !strchr("0123456789abcdefABCDEF", s[i]))
			return 0;
	return s[i] == '\0';
}

/* The tree of commit `id`: a full id (the fast, common case: the engine
 * passes what resolve returned) or any revision. */
static int commit_tree(struct tether_vcs *v, const char *id, git_tree **out)
{
	git_commit *commit = NULL;
	git_oid oid;
	int rc;

	if (id && is_full_hex_id(id)) {
		git_oid_fromstr(&oid, id);
		rc = git_commit_lookup(&commit, v->repo, &oid);
		if (rc == GIT_ENOTFOUND)
			return tether_error_set(TETHER_ENOTFOUND, "unknown commit '%s'", id);
		if (rc < 0)
			return tt_git_fail(rc, "cannot read commit %s", id);
	} else if ((rc = lookup_commit_rev(v, id, &commit)) < 0) {
		return rc;
	}
	rc = lookup_tree(v, git_commit_tree_id(commit), out);
	git_commit_free(commit);
	return rc;
}

static int git_resolve(struct tether_vcs *v, const char *rev, char id[41])
{
	git_commit *commit = NULL;
	int rc = lookup_commit_rev(v, rev, &commit);

	if (rc < 0)
		return rc;
	git_oid_tostr(id, 41, git_commit_id(commit));
	git_commit_free(commit);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reading trees                                                       */
/* ------------------------------------------------------------------ */

struct entry_info {
	git_oid id;
	git_filemode_t mode;
};

/* Find `path` under `root` through the cache (git_tree_entry_bypath would
 * parse every tree on the way again at every commit of a history walk).
 * Returns 0 with *info when present, 1 when absent, < 0 on error. */
static int find_entry(struct tether_vcs *v, git_tree *root, const char *path,
                      struct entry_info *info)
{
	git_tree *tree = root, *owned = NULL;
	char *copy, *name;
	int rc = 1;

	if (!*path) {
		git_oid_cpy(&info->id, git_tree_id(root));
		info->mode = GIT_FILEMODE_TREE;
		return 0;
	}
	copy = strdup(path);
	if (!copy)
		return tt_fail_oom();
	for (name = copy;;) {
		char *slash = strchr(name, '/');
		const git_tree_entry *e;

		if (slash)
			*slash = '\0';
		e = git_tree_entry_byname(tree, name);
		if (!e)
			break;
		if (!slash) {
			git_oid_cpy(&info->id, git_tree_entry_id(e));
			info->mode = git_tree_entry_filemode(e);
			rc = 0;
			break;
		}
		if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
			break;
		git_tree *next;
		if ((rc = lookup_tree(v, git_tree_entry_id(e), &next)) < 0)
			break;
		rc = 1;
		git_tree_free(owned);
		tree = owned = next;
		name = slash + 1;
	}
	git_tree_free(owned);
	free(copy);
	return rc;
}

static int copy_blob(const git_blob *blob, char **data, size_t *len)
{
	size_t n = (size_t)git_blob_rawsize(blob);
	char *buf = malloc(n + 1);

	if (!buf)
		return tt_fail_oom();
	memcpy(buf, git_blob_rawcontent(blob), n);
	buf[n] = '\0';
	*data = buf;
	if (len)
		*len = n;
	return 0;
}

static int read_file_in_tree(struct tether_vcs *v, git_tree *root, const char *id,
                             const char *path, char **data, size_t *len)
{
	struct entry_info info;
	git_blob *blob = NULL;
	int rc = find_entry(v, root, path, &info);

	if (rc < 0)
		return rc;
	if (rc == 1)
		return tether_error_set(TETHER_ENOTFOUND, "'%s' does not exist in commit %.12s", path,
		                        id);
	if (info.mode == GIT_FILEMODE_TREE || info.mode == GIT_FILEMODE_COMMIT)
		return tether_error_set(TETHER_ENOTFOUND, "'%s' is not a file in commit %.12s", path,
		                        id);
	if ((rc = lookup_blob(v, &info.id, &blob)) < 0)
		return rc;
	rc = copy_blob(blob, data, len);
	git_blob_free(blob);
	return rc;
}

static int git_read_file(struct tether_vcs *v, const char *id, const char *path, char **data,
                         size_t *len)
{
	git_tree *root = NULL;
	char *norm = NULL;
	int rc;

	if ((rc = normalize_path(path, &norm)) < 0)
		return rc;
	if ((rc = commit_tree(v, id, &root)) == 0) {
		rc = read_file_in_tree(v, root, id, norm, data, len);
		git_tree_free(root);
	}
	free(norm);
	return rc;
}

struct tree_walk {
	struct tether_vcs *v;
	tether_vcs_file_cb cb;
	void *ud;
	struct path_buf path; /* relative to the walked directory */
	int depth;            /* trees entered below it */
};

static int walk_tree(struct tree_walk *w, const git_tree *tree);

static int walk_blob(struct tree_walk *w, const git_oid *id)
{
	git_blob *blob = NULL;
	int rc = lookup_blob(w->v, id, &blob);

	if (rc < 0)
		return rc;
	rc = w->cb(w->ud, w->path.s, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
	git_blob_free(blob);
	return rc;
}

static int walk_subtree(struct tree_walk *w, const git_oid *id)
{
	git_tree *sub = NULL;
	int rc;

	if (w->depth >= TETHER_VCS_TREE_DEPTH_MAX)
		return tether_error_set(TETHER_ERROR, "git tree at '%s' nests deeper than %d directories: no object "
		                        "key is that deep", w->path.s, TETHER_VCS_TREE_DEPTH_MAX);
	if ((rc = lookup_tree(w->v, id, &sub)) < 0)
		return rc;
	w->depth++;
	rc = walk_tree(w, sub);
	w->depth--;
	git_tree_free(sub);
	return rc;
}

/* Git keeps tree entries sorted as if directory names ended in '/', so a
 * depth-first walk in entry order visits full paths in byte order. */
static int walk_tree(struct tree_walk *w, const git_tree *tree)
{
	size_t i, n = git_tree_entrycount(tree);

	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		size_t mark = w->path.len;
		int rc = path_buf_push(&w->path, git_tree_entry_name(e));

		if (rc == 0) {
			if (git_tree_entry_type(e) == GIT_OBJECT_TREE)
				rc = walk_subtree(w, git_tree_entry_id(e));
			else if (git_tree_entry_type(e) == GIT_OBJECT_BLOB)
				rc = walk_blob(w, git_tree_entry_id(e));
			/* submodules (commit entries) hold no files of this repository */
		}
		path_buf_pop_to(&w->path, mark);
		if (rc)
			return rc;
	}
	return 0;
}

static int walk_dir_in_tree(struct tree_walk *w, git_tree *root, const char *dir)
{
	struct entry_info info;
	int rc = find_entry(w->v, root, dir, &info);

	if (rc < 0)
		return rc;
	if (rc == 1 || info.mode != GIT_FILEMODE_TREE)
		return 0; /* a missing directory holds no files */
	return walk_subtree(w, &info.id);
}

static int git_read_tree(struct tether_vcs *v, const char *id, const char *dir,
                         tether_vcs_file_cb cb, void *ud)
{
	struct tree_walk w = { .v = v, .cb = cb, .ud = ud };
	git_tree *root = NULL;
	char *norm = NULL;
	int rc;

	if ((rc = normalize_path(dir, &norm)) < 0)
		return rc;
	if ((rc = commit_tree(v, id, &root)) == 0) {
		rc = walk_dir_in_tree(&w, root, norm);
		git_tree_free(root);
	}
	free(w.path.s);
	free(norm);
	return rc;
}

/* ------------------------------------------------------------------ */
/* log                                                                 */
/* ------------------------------------------------------------------ */

/* What `path` is in a commit: its entry, or absent. */
static int entry_in_commit(struct tether_vcs *v, const git_commit *commit, const char *path,
                           struct entry_info *info, int *present)
{
	git_tree *root = NULL;
	int rc = lookup_tree(v, git_commit_tree_id(commit), &root);

	if (rc < 0)
		return rc;
	rc = find_entry(v, root, path, info);
	git_tree_free(root);
	if (rc < 0)
		return rc;
	*present = rc == 0;
	return 0;
}

static int same_entry(int present_a, const struct entry_info *a, int present_b,
                      const struct entry_info *b)
{
	if (!present_a || !present_b)
		return present_a == present_b;
	return a->mode == b->mode && git_oid_equal(&a->id, &b->id);
}

/* Did `commit` change `path`? As git log does by default: a commit counts
 * when `path` differs from every parent (a merge that took one side's
 * version unchanged did not change it); a root commit counts when `path`
 * exists in it. Entry ids settle it without any diff: a tree's id covers
 * everything under it. */
static int commit_changes_path(struct tether_vcs *v, git_commit *commit, const char *path,
                               int *changed)
{
	unsigned i, nparents = git_commit_parentcount(commit);
	struct entry_info mine, theirs;
	int present, parent_present, rc;

	if ((rc = entry_in_commit(v, commit, path, &mine, &present)) < 0)
		return rc;
	*changed = nparents == 0 ? present : 1;
	for (i = 0; i < nparents && *changed; i++) {
		git_commit *parent = NULL;

		rc = git_commit_parent(&parent, commit, i);
		if (rc < 0)
			return tt_git_fail(rc, "cannot read a parent of a commit");
		rc = entry_in_commit(v, parent, path, &theirs, &parent_present);
		git_commit_free(parent);
		if (rc < 0)
			return rc;
		if (same_entry(present, &mine, parent_present, &theirs))
			*changed = 0;
	}
	return 0;
}

/* A JSON string from text git stored, which need not be UTF-8 (old commits
 * in other encodings): bytes that do not make valid UTF-8 become '?'. */
json_t *tt_git_json_text(const char *s)
{
	json_t *j;
	char *copy;
	size_t i;

	if (!s)
		s = "";
	j = json_string(s);
	if (j)
		return j;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (i = 0; copy[i]; i++)
		if ((unsigned char)copy[i] >= 0x80)
			copy[i] = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

static json_t *commit_to_json(git_commit *commit)
{
	const git_signature *author = git_commit_author(commit);
	git_buf short_id = GIT_BUF_INIT;
	char hex[GIT_OID_HEXSZ + 1];
	json_t *o = json_object();
	int bad = !o;

	git_oid_tostr(hex, sizeof hex, git_commit_id(commit));
	if (git_object_short_id(&short_id, (const git_object *)commit) < 0)
		bad = 1;
	bad = bad || json_object_set_new(o, "id", json_string(hex)) < 0;
	bad = bad || json_object_set_new(o, "short", json_string(short_id.ptr)) < 0;
	bad = bad || json_object_set_new(o, "author", tt_git_json_text(author->name)) < 0;
	bad = bad || json_object_set_new(o, "email", tt_git_json_text(author->email)) < 0;
	bad = bad || json_object_set_new(o, "time", json_integer(author->when.time)) < 0;
	bad = bad || json_object_set_new(o, "summary", tt_git_json_text(git_commit_summary(commit))) < 0;
	bad = bad || json_object_set_new(o, "message", tt_git_json_text(git_commit_message(commit))) < 0;
	git_buf_dispose(&short_id);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int log_one(struct tether_vcs *v, const git_oid *id, const char *path, json_t *out)
{
	git_commit *commit = NULL;
	int changed = 1;
	int rc = git_commit_lookup(&commit, v->repo, id);

	if (rc < 0)
		return tt_git_fail(rc, "cannot read a commit");
	if (path)
		rc = commit_changes_path(v, commit, path, &changed);
	if (rc == 0 && changed && json_array_append_new(out, commit_to_json(commit)) < 0)
		rc = tt_fail_oom();
	git_commit_free(commit);
	return rc;
}

static int walk_log(struct tether_vcs *v, git_revwalk *walk, const char *path, int max,
                    json_t *out)
{
	git_oid id;
	int rc;

	while (max <= 0 || (int)json_array_size(out) < max) {
		rc = git_revwalk_next(&id, walk);
		if (rc == GIT_ITEROVER)
			return 0;
		if (rc < 0)
			return tt_git_fail(rc, "cannot walk the history");
		if ((rc = log_one(v, &id, path, out)) < 0)
			return rc;
	}
	return 0;
}

static int start_revwalk(struct tether_vcs *v, const char *rev, git_revwalk **out)
{
	git_commit *tip = NULL;
	int rc = lookup_commit_rev(v, rev, &tip);

	if (rc < 0)
		return rc;
	rc = git_revwalk_new(out, v->repo);
	if (rc == 0)
		rc = git_revwalk_sorting(*out, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
	if (rc == 0)
		rc = git_revwalk_push(*out, git_commit_id(tip));
	git_commit_free(tip);
	if (rc < 0) {
		git_revwalk_free(*out);
		return tt_git_fail(rc, "cannot walk the history of '%s'", rev);
	}
	return 0;
}

static int git_log(struct tether_vcs *v, const char *rev, const char *path, int max,
                   json_t **commits)
{
	git_revwalk *walk;
	char *norm = NULL;
	json_t *out;
	int rc;

	if (path && (rc = normalize_path(path, &norm)) < 0)
		return rc;
	if ((rc = start_revwalk(v, rev ? rev : "HEAD", &walk)) < 0) {
		free(norm);
		return rc;
	}
	out = json_array();
	rc = out ? walk_log(v, walk, norm, max, out) : tt_fail_oom();
	git_revwalk_free(walk);
	free(norm);
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	*commits = out;
	return 0;
}

/* ------------------------------------------------------------------ */
/* commit_paths                                                        */
/* ------------------------------------------------------------------ */

struct commit_job {
	struct tether_vcs *v;
	git_repository *repo;
	char **paths; /* normalised */
	size_t npaths;
	git_commit *head; /* NULL on an unborn branch */
	git_tree *base;   /* HEAD's tree, NULL on an unborn branch */
	git_index *staged; /* in memory: the tree being built */
	git_index *real;   /* the repository's index, .git/index */
	int trust_filemode; /* core.fileMode */
	int trust_symlinks; /* core.symlinks */
};

static void commit_job_free(struct commit_job *j)
{
	size_t i;

	for (i = 0; i < j->npaths; i++)
		free(j->paths[i]);
	free(j->paths);
	git_commit_free(j->head);
	git_tree_free(j->base);
	git_index_free(j->staged);
	git_index_free(j->real);
}

static const char *repository_state_name(int state)
{
	switch (state) {
	case GIT_REPOSITORY_STATE_MERGE:
		return "a merge";
	case GIT_REPOSITORY_STATE_REVERT:
	case GIT_REPOSITORY_STATE_REVERT_SEQUENCE:
		return "a revert";
	case GIT_REPOSITORY_STATE_CHERRYPICK:
	case GIT_REPOSITORY_STATE_CHERRYPICK_SEQUENCE:
		return "a cherry-pick";
	case GIT_REPOSITORY_STATE_REBASE:
	case GIT_REPOSITORY_STATE_REBASE_INTERACTIVE:
	case GIT_REPOSITORY_STATE_REBASE_MERGE:
		return "a rebase";
	default:
		return "a git am";
	}
}

/* A commit in the middle of a merge would silently drop the merge's other
 * parent, and one in the middle of a rebase would land in the wrong place.
 * A bisect only checks commits out: committing then is harmless. */
static int refuse_unfinished_operation(git_repository *repo)
{
	int state = git_repository_state(repo);

	if (state == GIT_REPOSITORY_STATE_NONE || state == GIT_REPOSITORY_STATE_BISECT)
		return 0;
	return tether_error_set(TETHER_EREFUSED,
	                        "%s is in progress in this repository; finish or abort it first",
	                        repository_state_name(state));
}

static int config_flag(git_repository *repo, const char *name, int fallback, int *value)
{
	git_config *cfg;
	int rc = git_repository_config_snapshot(&cfg, repo);

	if (rc < 0)
		return tt_git_fail(rc, "cannot read the repository's configuration");
	rc = git_config_get_bool(value, cfg, name);
	git_config_free(cfg);
	if (rc == GIT_ENOTFOUND) {
		*value = fallback;
		return 0;
	}
	if (rc < 0)
		return tt_git_fail(rc, "cannot read %s", name);
	return 0;
}

static int load_head(struct commit_job *j)
{
	git_reference *head;
	int rc = git_repository_head(&head, j->repo);

	if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND)
		return 0; /* the first commit on this branch */
	if (rc < 0)
		return tt_git_fail(rc, "cannot read HEAD");
	rc = git_reference_peel((git_object **)&j->head, head, GIT_OBJECT_COMMIT);
	git_reference_free(head);
	if (rc < 0)
		return tt_git_fail(rc, "HEAD does not point at a commit");
	return lookup_tree(j->v, git_commit_tree_id(j->head), &j->base);
}

/* The repository's index, re-read from disk: another git command may have
 * changed it since this handle last looked. */
static int load_real_index(git_repository *repo, git_index **out)
{
	int rc = git_repository_index(out, repo);

	if (rc < 0)
		return tt_git_fail(rc, "cannot open the repository's index");
	rc = git_index_read(*out, 1);
	if (rc < 0)
		return tt_git_fail(rc, "cannot read the repository's index");
	return 0;
}

static int prepare_indexes(struct commit_job *j)
{
	int rc = git_index_new(&j->staged);

	if (rc < 0)
		return tt_git_fail(rc, "cannot create an index");
	if (j->base && (rc = git_index_read_tree(j->staged, j->base)) < 0)
		return tt_git_fail(rc, "cannot read HEAD's tree");
	return load_real_index(j->repo, &j->real);
}

static int normalize_paths(struct commit_job *j, const char *const *paths, size_t n)
{
	size_t i;
	int rc;

	if (n == 0)
		return tether_error_set(TETHER_EUSAGE, "no paths to commit");
	j->paths = calloc(n, sizeof *j->paths);
	if (!j->paths)
		return tt_fail_oom();
	for (i = 0; i < n; i++) {
		if ((rc = normalize_path(paths[i], &j->paths[i])) < 0)
			return rc;
		j->npaths++;
	}
	return 0;
}

static int start_commit_job(struct commit_job *j, struct tether_vcs *v,
                            const char *const *paths, size_t npaths)
{
	int rc;

	j->v = v;
	j->repo = v->repo;
	if ((rc = refuse_unfinished_operation(j->repo)) < 0 ||
	    (rc = normalize_paths(j, paths, npaths)) < 0 ||
	    (rc = config_flag(j->repo, "core.filemode", 1, &j->trust_filemode)) < 0 ||
	    (rc = config_flag(j->repo, "core.symlinks", 1, &j->trust_symlinks)) < 0 ||
	    (rc = load_head(j)) < 0)
		return rc;
	return prepare_indexes(j);
}

static int is_directory(const char *workdir, const char *path)
{
	char *full = path_join(workdir, path);
	struct stat st;
	int dir = full && lstat(full, &st) == 0 && S_ISDIR(st.st_mode);

	free(full);
	return dir;
}

/* Where the entries at or below `path` start in `index` (its end when
 * none). Entries are sorted, but "data-x" and "data.txt" sort between "data"
 * and "data/...": walk on with next_under, which skips those and stops at
 * the first entry without the prefix. */
static size_t index_range_start(git_index *index, const char *path)
{
	size_t pos = 0;

	if (*path && git_index_find_prefix(&pos, index, path) != 0)
		return git_index_entrycount(index);
	return pos;
}

/* The next entry at or after *pos that is at or below `path`, or NULL. */
static const git_index_entry *next_under(git_index *index, size_t *pos, const char *path)
{
	size_t n = strlen(path);

	for (; *pos < git_index_entrycount(index); (*pos)++) {
		const git_index_entry *e = git_index_get_byindex(index, *pos);

		if (strncmp(e->path, path, n) != 0)
			return NULL;
		if (path_is_under(e->path, path))
			return e;
	}
	return NULL;
}

/* Submodules and other embedded repositories under a dataset path are not
 * the dataset's: their entries are left exactly as they are, in the commit
 * and in the index, as long as their directory is still there. */
static int leave_alone(const struct commit_job *j, const git_index_entry *e)
{
	return e->mode == GIT_FILEMODE_COMMIT && is_directory(j->v->workdir, e->path);
}

/* Remove from `index` every entry at or below `path`, in every stage,
 * except the ones to leave alone. */
static int index_remove_under(const struct commit_job *j, git_index *index, const char *path)
{
	size_t pos = index_range_start(index, path);
	const git_index_entry *e;
	char *victim;
	int rc;

	while ((e = next_under(index, &pos, path))) {
		if (leave_alone(j, e)) {
			pos++;
			continue;
		}
		/* Removal frees the entry and moves the next one to pos. */
		victim = strdup(e->path);
		if (!victim)
			return tt_fail_oom();
		rc = git_index_remove(index, victim, git_index_entry_stage(e));
		free(victim);
		if (rc < 0)
			return tt_git_fail(rc, "cannot update the index");
	}
	return 0;
}

/* The mode git would record: the executable bit decides between 644 and
 * 755; where core.fileMode or core.symlinks say the file system cannot be
 * trusted, the mode HEAD has is kept. */
static git_filemode_t worktree_mode(struct commit_job *j, const char *path, const struct stat *st)
{
	struct entry_info before;
	int known = j->base && find_entry(j->v, j->base, path, &before) == 0;

	if (S_ISLNK(st->st_mode))
		return GIT_FILEMODE_LINK;
	if (!j->trust_symlinks && known && before.mode == GIT_FILEMODE_LINK)
		return GIT_FILEMODE_LINK;
	if (!j->trust_filemode)
		return known && before.mode == GIT_FILEMODE_BLOB_EXECUTABLE
		               ? GIT_FILEMODE_BLOB_EXECUTABLE
		               : GIT_FILEMODE_BLOB;
	return st->st_mode & S_IXUSR ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
}

/* The stat data lets git tell later that the file is unchanged without
 * reading it. */
static void fill_stat(git_index_entry *e, const struct stat *st)
{
	e->ctime.seconds = (int32_t)st->st_ctim.tv_sec;
	e->ctime.nanoseconds = (uint32_t)st->st_ctim.tv_nsec;
	e->mtime.seconds = (int32_t)st->st_mtim.tv_sec;
	e->mtime.nanoseconds = (uint32_t)st->st_mtim.tv_nsec;
	e->dev = (uint32_t)st->st_dev;
	e->ino = (uint32_t)st->st_ino;
	e->uid = (uint32_t)st->st_uid;
	e->gid = (uint32_t)st->st_gid;
	e->file_size = (uint32_t)st->st_size;
}

static int stage_file(struct commit_job *j, const char *path, const struct stat *st)
{
	git_index_entry e;
	int rc;

	memset(&e, 0, sizeof e);
	/* From the working tree through the repository's filters (autocrlf,
	 * .gitattributes), as `git add` would; a symlink becomes its target. */
	rc = git_blob_create_from_workdir(&e.id, j->repo, path);
	if (rc < 0)
		return tt_git_fail(rc, "cannot store '%s'", path);
	fill_stat(&e, st);
	e.mode = worktree_mode(j, path, st);
	e.path = path;
	rc = git_index_add(j->staged, &e);
	if (rc < 0)
		return tt_git_fail(rc, "cannot stage '%s'", path);
	return 0;
}

static int stage_worktree_path(struct commit_job *j, struct path_buf *path);

static int is_embedded_repository(const char *full)
{
	char *dotgit = path_join(full, ".git");
	struct stat st;
	int found = dotgit && lstat(dotgit, &st) == 0;

	free(dotgit);
	return found;
}

static int stage_directory_entries(struct commit_job *j, struct path_buf *path, DIR *dir)
{
	struct dirent *d;
	int rc = 0;

	while (rc == 0 && (d = readdir(dir))) {
		size_t mark = path->len;

		/* A temporary file (tt_write_file_atomic's, left by a killed
		 * process, or being written) is never content: as if absent. */
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0 ||
		    strcmp(d->d_name, ".git") == 0 || tt_is_temp_name(d->d_name))
			continue;
		rc = path_buf_push(path, d->d_name);
		if (rc == 0)
			rc = stage_worktree_path(j, path);
		path_buf_pop_to(path, mark);
	}
	return rc;
}

static int stage_directory(struct commit_job *j, struct path_buf *path, const char *full)
{
	DIR *dir;
	int rc;

	/* An embedded repository (a submodule's checkout) is not ours; its
	 * entry, if any, was left in place. The checkout top has .git too. */
	if (path->len && is_embedded_repository(full))
		return 0;
	dir = opendir(full);
	if (!dir)
		return tt_fail_errno("cannot read directory", full);
	rc = stage_directory_entries(j, path, dir);
	closedir(dir);
	return rc;
}

/* Stage whatever the working tree has at `path`: nothing when it is gone,
 * a file, a symlink, or a directory's files recursively. No ignore rule
 * applies: the caller names exactly what belongs in the commit, and a
 * user's "*.toml" or "data/" pattern must not silently drop part of it. */
static int stage_worktree_path(struct commit_job *j, struct path_buf *path)
{
	char *full = path_join(j->v->workdir, path->s ? path->s : "");
	struct stat st;
	int rc = 0;

	if (!full)
		return tt_fail_oom();
	if (lstat(full, &st) < 0) {
		rc = errno == ENOENT || errno == ENOTDIR ? 0 : tt_fail_errno("cannot read", full);
		free(full);
		return rc;
	}
	if (S_ISDIR(st.st_mode))
		rc = stage_directory(j, path, full);
	else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
		rc = stage_file(j, path->s, &st);
	/* sockets, fifos and devices cannot be committed */
	free(full);
	return rc;
}

/* git refuses "data/x" when "data" is a symbolic link: the file is not in
 * this checkout at that path at all. */
static int refuse_path_beyond_symlink(const struct commit_job *j, const char *path)
{
	char *full = path_join(j->v->workdir, path);
	size_t top = strlen(j->v->workdir) + 1;
	char *slash;
	struct stat st;
	int rc = 0, gone = 0;

	if (!full)
		return tt_fail_oom();
	for (slash = strchr(full + top, '/'); slash && !gone && rc == 0;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (lstat(full, &st) < 0)
			gone = 1; /* the rest is gone with it: the path is deleted */
		else if (S_ISLNK(st.st_mode))
			rc = tether_error_set(TETHER_EREFUSED, "'%s' is beyond a symbolic link", path);
		*slash = '/';
	}
	free(full);
	return rc;
}

static int stage_named_path(struct commit_job *j, const char *path)
{
	struct path_buf pb = { 0 };
	int rc;

	if ((rc = refuse_path_beyond_symlink(j, path)) < 0)
		return rc;
	if ((rc = index_remove_under(j, j->staged, path)) < 0)
		return rc;
	if ((rc = path_buf_push(&pb, path)) == 0)
		rc = stage_worktree_path(j, &pb);
	free(pb.s);
	return rc;
}

static int build_tree(struct commit_job *j, git_oid *tree_id)
{
	size_t i;
	int rc;

	for (i = 0; i < j->npaths; i++)
		if ((rc = stage_named_path(j, j->paths[i])) < 0)
			return rc;
	rc = git_index_write_tree_to(tree_id, j->staged, j->repo);
	if (rc < 0)
		return tt_git_fail(rc, "cannot write the new tree");
	return 0;
}

static int tree_is_unchanged(const struct commit_job *j, const git_oid *tree_id)
{
	if (j->base)
		return git_oid_equal(tree_id, git_tree_id(j->base));
	return git_index_entrycount(j->staged) == 0;
}

/* --- identity --- */

/* A date as git takes it in GIT_AUTHOR_DATE: "<unix seconds> <+hhmm>"
 * (optionally "@"-prefixed) or ISO 8601 "YYYY-MM-DD[T ]HH:MM:SS" with an
 * optional "Z" or "+hh[:]mm" (local time without one). */
static int parse_zone(const char *s, int *minutes)
{
	int sign, hh, mm;

	while (*s == ' ')
		s++;
	if (*s == 'Z' && s[1] == '\0') {
		*minutes = 0;
		return 1;
	}
	if (*s != '+' && *s != '-')
		return 0;
	sign = *s == '-' ? -1 : 1;
	if (sscanf(s + 1, "%2d:%2d", &hh, &mm) != 2 && sscanf(s + 1, "%2d%2d", &hh, &mm) != 2)
		return 0;
	*minutes = sign * (hh * 60 + mm);
	return 1;
}

static int parse_unix_date(const char *s, git_time_t *when, int *offset)
{
	char *end;
	long long secs;

	if (*s == '@')
		s++;
	errno = 0;
	secs = strtoll(s, &end, 10);
	if (errno || end == s || (*end != ' ' && *end != '\0'))
		return 0;
	*when = (git_time_t)secs;
	*offset = 0;
	return *end == '\0' || parse_zone(end, offset);
}

static int parse_iso_date(const char *s, git_time_t *when, int *offset)
{
	struct tm tm;
	int consumed = 0;

	memset(&tm, 0, sizeof tm);
	if (sscanf(s, "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	           &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 || !consumed)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	if (s[consumed] == '\0') {
		tm.tm_isdst = -1;
		*when = (git_time_t)mktime(&tm);
		*offset = (int)(tm.tm_gmtoff / 60);
		return 1;
	}
	if (!parse_zone(s + consumed, offset))
		return 0;
	*when = (git_time_t)timegm(&tm) - (git_time_t)*offset * 60;
	return 1;
}

static int make_signature_at(const char *who, const char *name, const char *email,
                             git_signature **out)
{
	char var[32];
	const char *date;
	git_time_t when;
	int offset, rc;

	snprintf(var, sizeof var, "GIT_%s_DATE", who);
	date = getenv(var);
	if (!date || !*date)
		rc = git_signature_now(out, name, email);
	else if (parse_unix_date(date, &when, &offset) || parse_iso_date(date, &when, &offset))
		rc = git_signature_new(out, name, email, when, offset);
	else
		return tether_error_set(TETHER_EUSAGE,
		                        "cannot parse %s='%s' (use \"<unix seconds> +hhmm\" or "
		                        "ISO 8601)",
		                        var, date);
	if (rc < 0)
		return tt_git_fail(rc, "invalid identity '%s <%s>'", name, email);
	return 0;
}

/* A setting from the environment, else the role's own config key
 * (author.name), else the user's (user.name). */
static const char *identity_part(git_config *cfg, const char *who, const char *role,
                                 const char *part)
{
	char key[64];
	const char *value = NULL;
	char var[32];
	int i;

	snprintf(var, sizeof var, "GIT_%s_%s", who, part[0] == 'n' ? "NAME" : "EMAIL");
	if ((value = getenv(var)))
		return value;
	const char *sections[] = { role, "user" };
	for (i = 0; i < 2; i++) {
		snprintf(key, sizeof key, "%s.%s", sections[i], part);
		if (git_config_get_string(&value, cfg, key) == 0)
			return value;
	}
	return part[0] == 'e' ? getenv("EMAIL") : NULL;
}

static int missing_identity(void)
{
	int rc = tether_error_set(TETHER_ECONFIG,
	                          "git does not know who you are: set user.name and user.email "
	                          "to commit");
	tether_error_set_hint("git config --global user.name \"Your Name\" && "
	                      "git config --global user.email you@example.com");
	return rc;
}

/* Author or committer, as git picks them (libgit2's git_signature_default
 * reads only the config, not GIT_AUTHOR_* and friends). */
static int make_signature(git_repository *repo, const char *who, const char *role,
                          git_signature **out)
{
	git_config *cfg;
	const char *name, *email;
	int rc = git_repository_config_snapshot(&cfg, repo);

	if (rc < 0)
		return tt_git_fail(rc, "cannot read the repository's configuration");
	name = identity_part(cfg, who, role, "name");
	email = identity_part(cfg, who, role, "email");
	if (!name || !*name || !email)
		rc = missing_identity();
	else
		rc = make_signature_at(who, name, email, out);
	git_config_free(cfg);
	return rc;
}

/* --- the commit --- */

static int clean_message(const char *message, git_buf *out)
{
	int rc;

	if (!message)
		return tether_error_set(TETHER_EUSAGE, "no commit message");
	/* As `git commit --cleanup=whitespace`: trailing spaces and blank lines
	 * go, the message ends with a newline. */
	rc = git_message_prettify(out, message, 0, '#');
	if (rc < 0)
		return tt_git_fail(rc, "cannot prepare the commit message");
	if (out->size == 0)
		return tether_error_set(TETHER_EUSAGE, "the commit message is empty");
	return 0;
}

static int create_commit(struct commit_job *j, const git_oid *tree_id, git_oid *commit_id,
                         const char *message)
{
	git_signature *author = NULL, *committer = NULL;
	git_buf msg = GIT_BUF_INIT;
	git_tree *tree = NULL;
	const git_commit *parents[1] = { j->head };
	int rc;

	if ((rc = clean_message(message, &msg)) < 0 ||
	    (rc = make_signature(j->repo, "AUTHOR", "author", &author)) < 0 ||
	    (rc = make_signature(j->repo, "COMMITTER", "committer", &committer)) < 0 ||
	    (rc = lookup_tree(j->v, tree_id, &tree)) < 0)
		goto done;
	/* Updating "HEAD" moves the current branch, or creates it on an unborn
	 * one, and fails if the branch moved since HEAD was read: a concurrent
	 * commit is never overwritten. */
	rc = git_commit_create(commit_id, j->repo, "HEAD", author, committer, NULL, msg.ptr, tree,
	                       j->head ? 1 : 0, parents);
	if (rc < 0)
		rc = tt_git_fail(rc, "cannot commit");
done:
	git_tree_free(tree);
	git_signature_free(author);
	git_signature_free(committer);
	git_buf_dispose(&msg);
	return rc;
}

/* --- the repository's index, for the named paths only --- */

static int same_index_entry(const git_index_entry *a, const git_index_entry *b)
{
	return strcmp(a->path, b->path) == 0 &&
	       git_index_entry_stage(a) == git_index_entry_stage(b) && a->mode == b->mode &&
	       git_oid_equal(&a->id, &b->id);
}

/* Does the repository's index already hold, under `path`, exactly what
 * was committed? */
static int index_matches_commit(struct commit_job *j, const char *path)
{
	size_t a = index_range_start(j->real, path);
	size_t b = index_range_start(j->staged, path);
	const git_index_entry *ea, *eb;

	for (;; a++, b++) {
		ea = next_under(j->real, &a, path);
		eb = next_under(j->staged, &b, path);
		if (!ea || !eb)
			return !ea && !eb;
		if (!same_index_entry(ea, eb))
			return 0;
	}
}

static int copy_committed_entries(struct commit_job *j, const char *path)
{
	size_t pos = index_range_start(j->staged, path);
	const git_index_entry *e;
	int rc;

	for (; (e = next_under(j->staged, &pos, path)); pos++) {
		if (leave_alone(j, e))
			continue;
		if ((rc = git_index_add(j->real, e)) < 0)
			return tt_git_fail(rc, "cannot update the index for '%s'", e->path);
	}
	return 0;
}

/* Make the repository's index hold, for the named paths and nothing else,
 * what was just committed, so that `git status` shows them clean while
 * every other staged or unstaged change of the user's stays as it was. */
static int sync_real_index(struct commit_job *j)
{
	size_t i;
	int differs = 0, rc;

	/* Re-read: narrow the window for a concurrent `git add` to be lost. */
	if ((rc = git_index_read(j->real, 1)) < 0)
		return tt_git_fail(rc, "cannot read the repository's index");
	for (i = 0; i < j->npaths && !differs; i++)
		differs = !index_matches_commit(j, j->paths[i]);
	if (!differs)
		return 0; /* leave the file, and its timestamp, alone */
	for (i = 0; i < j->npaths; i++) {
		if ((rc = index_remove_under(j, j->real, j->paths[i])) < 0 ||
		    (rc = copy_committed_entries(j, j->paths[i])) < 0)
			return rc;
	}
	if ((rc = git_index_write(j->real)) < 0)
		return tt_git_fail(rc, "cannot write the repository's index");
	return 0;
}

/* The commit stands; say so, or the user would commit again. */
static int explain_unsynced_index(int rc, const git_oid *commit_id)
{
	char hex[GIT_OID_HEXSZ + 1], why[512];

	snprintf(why, sizeof why, "%s", tether_error_last());
	return tether_error_set(rc,
	                        "committed %s, but the index could not be updated (%s); "
	                        "`git status` will show the committed paths as changed",
	                        git_oid_tostr(hex, sizeof hex, commit_id), why);
}

static int git_commit_paths(struct tether_vcs *v, const char *const *paths, size_t npaths,
                            const char *message, char id[41])
{
	struct commit_job j = { 0 };
	git_oid tree_id, commit_id;
	int committed = 0;
	int rc = start_commit_job(&j, v, paths, npaths);

	id[0] = '\0';
	if (rc == 0)
		rc = build_tree(&j, &tree_id);
	if (rc == 0 && !tree_is_unchanged(&j, &tree_id)) {
		rc = create_commit(&j, &tree_id, &commit_id, message);
		committed = rc == 0;
	}
	/* From here the commit stands: its id goes back with any error. */
	if (committed)
		git_oid_tostr(id, 41, &commit_id);
	if (rc == 0 && (rc = sync_real_index(&j)) < 0 && committed)
		rc = explain_unsynced_index(rc, &commit_id);
	commit_job_free(&j);
	return rc;
}

/* ------------------------------------------------------------------ */
/* current_branch / is_tracked                                         */
/* ------------------------------------------------------------------ */

static int git_current_branch(struct tether_vcs *v, char **name)
{
	git_reference *head;
	const char *target;
	int rc = git_reference_lookup(&head, v->repo, "HEAD");

	if (rc < 0)
		return tt_git_fail(rc, "cannot read HEAD");
	/* A symbolic HEAD names the branch even before its first commit. */
	if (git_reference_type(head) != GIT_REFERENCE_SYMBOLIC) {
		git_reference_free(head);
		*name = NULL;
		return 0;
	}
	target = git_reference_symbolic_target(head);
	if (strncmp(target, "refs/heads/", 11) == 0)
		target += 11;
	*name = strdup(target);
	git_reference_free(head);
	return *name ? 0 : tt_fail_oom();
}

/* Local branches only: a remote-tracking branch names someone else's
 * bookmark, and a workspace follows the checkout's own branches. */
static int git_list_bookmarks(struct tether_vcs *v, json_t **names)
{
	git_branch_iterator *it = NULL;
	git_reference *ref = NULL;
	git_branch_t type;
	const char *name;
	json_t *out = json_array();
	int rc = out ? git_branch_iterator_new(&it, v->repo, GIT_BRANCH_LOCAL) : -1;

	while (rc == 0 && (rc = git_branch_next(&ref, &type, it)) == 0) {
		if (git_branch_name(&name, ref) == 0 && json_array_append_new(out, json_string(name)) < 0)
			rc = -1;
		git_reference_free(ref);
	}
	git_branch_iterator_free(it);
	if (rc == GIT_ITEROVER) {
		*names = out;
		return 0;
	}
	json_decref(out);
	return rc == -1 && !out ? tt_fail_oom() : tt_git_fail(rc, "cannot list the local branches");
}

static int tracked_in_index(git_repository *repo, const char *path, int *tracked)
{
	git_index *index;
	size_t pos;
	int rc = git_repository_index(&index, repo);

	if (rc < 0)
		return tt_git_fail(rc, "cannot open the repository's index");
	rc = git_index_read(index, 0);
	if (rc < 0) {
		git_index_free(index);
		return tt_git_fail(rc, "cannot read the repository's index");
	}
	pos = index_range_start(index, path);
	*tracked = next_under(index, &pos, path) != NULL;
	git_index_free(index);
	return 0;
}

static int tracked_in_head(struct tether_vcs *v, const char *path, int *tracked)
{
	git_commit *head = NULL;
	git_tree *root = NULL;
	struct entry_info info;
	int rc = git_revparse_single((git_object **)&head, v->repo, "HEAD^{commit}");

	*tracked = 0;
	if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH)
		return 0;
	if (rc < 0)
		return tt_git_fail(rc, "cannot read HEAD");
	rc = lookup_tree(v, git_commit_tree_id(head), &root);
	git_commit_free(head);
	if (rc < 0)
		return rc;
	rc = find_entry(v, root, path, &info);
	git_tree_free(root);
	if (rc < 0)
		return rc;
	*tracked = rc == 0; /* git has no empty trees: a directory holds files */
	return 0;
}

static int git_is_tracked(struct tether_vcs *v, const char *path, int *tracked)
{
	char *norm = NULL;
	int rc;

	if ((rc = normalize_path(path, &norm)) < 0)
		return rc;
	rc = tracked_in_index(v->repo, norm, tracked);
	if (rc == 0 && !*tracked)
		rc = tracked_in_head(v, norm, tracked);
	free(norm);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The module                                                          */
/* ------------------------------------------------------------------ */


/* ------------------------------------------------------------------ */
/* switch_to                                                           */
/* ------------------------------------------------------------------ */

/* The local branch `rev` names ("main" or "refs/heads/main"), or NULL. */
static git_reference *local_branch(git_repository *repo, const char *rev)
{
	git_reference *ref = NULL;
	if (git_branch_lookup(&ref, repo, rev, GIT_BRANCH_LOCAL) == 0)
		return ref;
	if (strncmp(rev, "refs/heads/", 11) == 0 && git_reference_lookup(&ref, repo, rev) == 0)
		return ref;
	return NULL;
}

static int checkout_commit(struct tether_vcs *v, git_commit *target)
{
	git_checkout_options co;
	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	/* SAFE: carry local changes that do not conflict, refuse the rest
	 * before touching a file. */
	co.checkout_strategy = GIT_CHECKOUT_SAFE;
	int rc = git_checkout_tree(v->repo, (const git_object *)target, &co);
	if (rc == GIT_ECONFLICT)
		return tether_error_set(TETHER_EREFUSED, "cannot move the checkout: %s",
		                        git_error_last() ? git_error_last()->message : "local changes conflict");
	return rc < 0 ? tt_git_fail(rc, "cannot check out %s", git_oid_tostr_s(git_commit_id(target))) : 0;
}

static int git_switch_to(struct tether_vcs *v, const char *rev, const char *new_branch)
{
	git_commit *target = NULL;
	git_reference *branch = NULL;
	int rc = lookup_commit_rev(v, rev ? rev : "HEAD", &target);
	if (rc < 0)
		return rc;
	if (new_branch) {
		if ((branch = local_branch(v->repo, new_branch))) {
			git_reference_free(branch);
			git_commit_free(target);
			return tether_error_set(TETHER_EREFUSED, "branch '%s' already exists", new_branch);
		}
		char full[512];
		int valid = 0;
		snprintf(full, sizeof full, "refs/heads/%s", new_branch);
		if (strlen(new_branch) < 400 && git_reference_name_is_valid(&valid, full) < 0)
			valid = 0;
		if (!valid) {
			git_commit_free(target);
			return tether_error_set(TETHER_EUSAGE, "'%s' is not a valid branch name", new_branch);
		}
	} else if (rev) {
		branch = local_branch(v->repo, rev);
	}
	rc = checkout_commit(v, target);
	if (rc == 0 && new_branch) {
		rc = git_branch_create(&branch, v->repo, new_branch, target, 0);
		if (rc < 0)
			rc = tt_git_fail(rc, "cannot create branch '%s'", new_branch);
	}
	if (rc == 0) {
		rc = branch ? git_repository_set_head(v->repo, git_reference_name(branch))
		            : rev ? git_repository_set_head_detached(v->repo, git_commit_id(target)) : 0;
		if (rc < 0)
			rc = tt_git_fail(rc, "cannot move HEAD");
	}
	git_reference_free(branch);
	git_commit_free(target);
	return rc;
}

static int git_position(struct tether_vcs *v, json_t **pos)
{
	git_reference *head = NULL;
	int rc = git_repository_head(&head, v->repo);

	*pos = NULL;
	if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND)
		return tether_error_set(TETHER_ENOTFOUND, "HEAD has no commit yet");
	if (rc < 0)
		return tt_git_fail(rc, "cannot read HEAD");
	if (git_repository_head_detached(v->repo) == 1) {
		char id[GIT_OID_HEXSZ + 1];
		git_oid_tostr(id, sizeof id, git_reference_target(head));
		*pos = json_pack("{s:s}", "commit", id);
	} else {
		*pos = json_pack("{s:s}", "branch", git_reference_name(head));
	}
	git_reference_free(head);
	return *pos ? 0 : tt_fail_oom();
}

/* The branch switch_to just created: only the ref (git_branch_delete would
 * also rewrite the config, where a new branch has no section). */
static int delete_branch(struct tether_vcs *v, const char *name)
{
	git_reference *ref = NULL;
	char full[512];
	int rc;

	snprintf(full, sizeof full, "refs/heads/%s", name);
	rc = git_reference_lookup(&ref, v->repo, full);
	if (rc == GIT_ENOTFOUND)
		return 0;
	if (rc == 0)
		rc = git_reference_delete(ref);
	git_reference_free(ref);
	return rc < 0 ? tt_git_fail(rc, "cannot delete branch '%s'", name) : 0;
}

static int git_return_to(struct tether_vcs *v, const json_t *pos, const char *created_branch)
{
	const char *branch = json_string_value(json_object_get(pos, "branch"));
	const char *commit = json_string_value(json_object_get(pos, "commit"));
	int rc;

	if (!branch && !commit)
		return tether_error_set(TETHER_ERROR, "no position to return to");
	/* A branch by its full name is checked out; a commit id detaches. */
	rc = git_switch_to(v, branch ? branch : commit, NULL);
	if (rc == 0 && created_branch)
		rc = delete_branch(v, created_branch);
	return rc;
}

/* ------------------------------------------------------------------ */
/* history walks (git_history.c)                                       */
/* ------------------------------------------------------------------ */

static int git_each_commit(struct tether_vcs *v, int (*cb)(void *ud, const char *id), void *ud)
{
	return tt_git_store_walk_from(v, NULL, 0, cb, ud);
}

static int git_history_files(struct tether_vcs *v, const char *dir, const char *cache_path,
                             tether_vcs_history_cb cb, void *ud, size_t *commits)
{
	return tt_git_store_history(v, NULL, 0, dir, cache_path, &(struct tt_walk_wants){.files = cb, .ud = ud},
	                            commits);
}

static int git_history_trees(struct tether_vcs *v, const char *const *tips, size_t ntips, const char *dir,
                             const char *cache_path, const struct tether_vcs_tree_walk *cb, void *ud,
                             size_t *commits)
{
	return tt_git_store_history(v, tips, ntips, dir, cache_path, &(struct tt_walk_wants){.trees = cb, .ud = ud},
	                            commits);
}

int tt_git_store_has_path(struct tether_vcs *v, const char *id, const char *path, int *present)
{
	git_tree *root = NULL;
	struct entry_info info;
	int rc = commit_tree(v, id, &root);
	if (rc == 0)
		rc = find_entry(v, root, path, &info);
	git_tree_free(root);
	if (rc < 0)
		return rc;
	*present = rc == 0;
	return 0;
}

static int vcs_tree_id(struct tether_vcs *v, const char *id, const char *dir, char tree[41])
{
	git_tree *root = NULL;
	char *norm = NULL;
	struct entry_info info;
	int rc = normalize_path(dir, &norm);
	tree[0] = '\0';
	if (rc == 0)
		rc = commit_tree(v, id, &root);
	if (rc == 0 && find_entry(v, root, norm, &info) == 0 && info.mode == GIT_FILEMODE_TREE)
		git_oid_tostr(tree, 41, &info.id);
	git_tree_free(root);
	free(norm);
	return rc < 0 ? rc : 0;
}

/* git's checkout stands on one branch at most: the one HEAD names. */
static int git_checkout_bookmarks(struct tether_vcs *v, json_t **names)
{
	char *name = NULL;
	int rc = git_current_branch(v, &name);
	*names = rc ? NULL : json_array();
	if (!rc && name)
		json_array_append_new(*names, json_string(name));
	free(name);
	return rc;
}

const struct tether_vcs_ops tt_git_ops = {
	TETHER_VCS_OPS_INIT,
	.name = "git",
	.open = git_open,
	.close = git_close,
	.resolve = git_resolve,
	.read_file = git_read_file,
	.read_tree = git_read_tree,
	.log = git_log,
	.commit_paths = git_commit_paths,
	.current_branch = git_current_branch,
	.is_tracked = git_is_tracked,
	.each_commit = git_each_commit,
	.tree_id = vcs_tree_id,
	.switch_to = git_switch_to,
	.list_bookmarks = git_list_bookmarks,
	.checkout_bookmarks = git_checkout_bookmarks,
	.history_files = git_history_files,
	.history_trees = git_history_trees,
	.position = git_position,
	.return_to = git_return_to,
	.rewrite_files = tt_git_rewrite_files,
	.containing_refs = tt_git_containing_refs,
	.commits_info = tt_git_commits_info,
	.list_refs = tt_git_list_refs,
	.abandon = tt_git_abandon,
};
