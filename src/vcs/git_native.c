/* tether-vcs-git: the VCS interface for git, reading without libgit2.
 *
 * Commands that only read history (log, diff, status's comparison with
 * HEAD, the manifests of a commit) are served here, on gitodb.c (loose
 * objects and packs, every object hash-checked) and gitrefs.c (refs,
 * packed-refs, worktrees). libgit2 -- whose Debian build, with mbedTLS,
 * parses the whole CA bundle when it initialises, and pulls in some twenty
 * libraries -- is loaded only when an operation needs it: writes
 * (commit_paths, switch_to, return_to), the index (is_tracked),
 * list_bookmarks, a history walk (each_commit, history_files, which
 * git_native_walk.c serves) over refs libgit2 might list otherwise
 * (gitrefs.h, tt_gref_each_as_libgit2) or from a HEAD it cannot peel,
 * a revision in syntax this reader does not parse, a log that meets a merge
 * (git's topological-and-time order is libgit2's job), any error (so its
 * wording stays libgit2's), and a repository layout gitrefs.h lists as not
 * read here. The libgit2 implementation is the module tether-vcs-libgit2.so
 * (git.c), found beside this one; it is opened on the same checkout on first
 * need and every later call of those kinds goes to it.
 *
 * Network operations never happen in this module: push and fetch live in
 * the git backend, on libgit2, with its certificate checks untouched. */
#include "util/fail.h"
#include "util/jsonsort.h"
#include "vcs/git_native.h"
#include "vcs/git_native_walk.h"
#include "vcs/git_path.h"
#include "vcs/gitodb.h"
#include "vcs/gitrefs.h"
#include "vcs/gitstream.h"
#include "vcs/vcs_refs.h"

#include <tether/backend.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct tether_vcs {
	struct tt_grepo repo; /* unset when only libgit2 reads this one */
	struct tt_godb *odb;
	const struct tether_vcs_ops *full_ops;
	struct tether_vcs *full; /* libgit2's handle, opened on first need */
};

/* libgit2's handle for this checkout, opened now if it is not yet. */
static int full(struct tether_vcs *v)
{
	if (v->full)
		return 0;
	if (!v->full_ops && !(v->full_ops = tt_git_full_ops()))
		return tether_error_set(TETHER_ERROR, "cannot load tether-vcs-libgit2.so");
	return v->full_ops->open(v->repo.workdir, &v->full, NULL, NULL);
}

#define FORWARD(v, call)                                                                            \
	do {                                                                                        \
		int frc_ = full(v);                                                                 \
		return frc_ < 0 ? frc_ : (v)->full_ops->call;                                       \
	} while (0)

static int native_open(const char *start_dir, struct tether_vcs **out, char **workdir, char **common_dir)
{
	struct tether_vcs *v = calloc(1, sizeof *v);
	struct stat st;
	int rc;

	if (!v)
		return tt_fail_oom();
	if (!start_dir)
		start_dir = ".";
	rc = stat(start_dir, &st) < 0 ? 1 : tt_grepo_find(start_dir, &v->repo);
	if (rc == 0) {
		char *objects = malloc(strlen(v->repo.commondir) + 9);
		if (!objects)
			rc = tt_fail_oom();
		else {
			sprintf(objects, "%s/objects", v->repo.commondir);
			rc = tt_godb_open(objects, &v->odb);
			free(objects);
			if (rc < 0) {
				tt_grepo_clear(&v->repo);
				rc = 1; /* libgit2 decides about a pack this reader refuses */
			}
		}
	}
	if (rc < 0) {
		free(v);
		return rc;
	}
	if (rc == 1) {
		/* libgit2 opens it (or says why it cannot) and reads everything */
		if (!(v->full_ops = tt_git_full_ops())) {
			free(v);
			return tether_error_set(TETHER_ERROR, "cannot load tether-vcs-libgit2.so");
		}
		rc = v->full_ops->open(start_dir, &v->full, workdir, common_dir);
		if (rc < 0) {
			free(v);
			return rc;
		}
		*out = v;
		return 0;
	}
	if (workdir && !(*workdir = strdup(v->repo.workdir)))
		goto nomem;
	if (common_dir && !(*common_dir = realpath(v->repo.commondir, NULL))) {
		if (workdir) {
			free(*workdir);
			*workdir = NULL;
		}
		goto nomem;
	}
	*out = v;
	return 0;
nomem:
	tt_godb_free(v->odb);
	tt_grepo_clear(&v->repo);
	free(v);
	return tt_fail_oom();
}

static void native_close(struct tether_vcs *v)
{
	if (!v)
		return;
	if (v->full)
		v->full_ops->close(v->full);
	tt_godb_free(v->odb);
	tt_grepo_clear(&v->repo);
	free(v);
}

/* Native reads work only on a handle this reader opened. */
static int native(const struct tether_vcs *v)
{
	return v->odb != NULL;
}

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

struct obj {
	enum tt_gobj_type type;
	unsigned char *data;
	size_t len;
};

/* 0, or 1 when the object is absent or not of `want` (libgit2 words it). */
static int read_obj(struct tether_vcs *v, const unsigned char id[20], enum tt_gobj_type want, struct obj *o)
{
	int rc = tt_godb_read(v->odb, id, &o->type, &o->data, &o->len);
	if (rc == TETHER_ENOTFOUND)
		return 1;
	if (rc < 0)
		return rc;
	if (o->type != want) {
		free(o->data);
		o->data = NULL;
		return 1;
	}
	return 0;
}

/* A commit's headers: tree, parents, author. */
struct commit_info {
	unsigned char tree[20];
	unsigned char parents[2][20];
	unsigned nparents; /* 2 means two or more */
	const char *author;     /* the author line's value, up to author_len */
	size_t author_len;
	const char *message; /* after the blank line, leading newlines skipped */
};

static int parse_commit(const struct obj *o, struct commit_info *c)
{
	const char *p = (const char *)o->data, *end = p + o->len;

	memset(c, 0, sizeof *c);
	if (o->len < 46 || memcmp(p, "tree ", 5) != 0 || p[45] != '\n' || tt_goid_from_hex(p + 5, c->tree) < 0)
		return 1;
	p += 46;
	while (p + 48 <= end && memcmp(p, "parent ", 7) == 0 && p[47] == '\n') {
		if (c->nparents < 2 && tt_goid_from_hex(p + 7, c->parents[c->nparents]) < 0)
			return 1;
		if (c->nparents < 2)
			c->nparents++;
		else
			c->nparents = 2;
		p += 48;
	}
	while (p < end && *p != '\n') {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return 1;
		if (!c->author && (size_t)(nl - p) > 7 && memcmp(p, "author ", 7) == 0) {
			c->author = p + 7;
			c->author_len = (size_t)(nl - p - 7);
		}
		p = nl + 1;
	}
	if (!c->author || p >= end)
		return 1;
	p++;
	while (p < end && *p == '\n')
		p++;
	c->message = p;
	return 0;
}

/* A tree entry by name; 0 found, 1 absent, < 0 damage. */
struct entry {
	unsigned mode;
	unsigned char id[20];
	const char *name;
};

static int next_entry(const unsigned char **q, const unsigned char *end, struct entry *e)
{
	const unsigned char *p = *q;
	unsigned mode = 0;
	if (p >= end)
		return 1;
	while (p < end && *p >= '0' && *p <= '7' && mode < 01000000)
		mode = mode * 8 + (unsigned)(*p++ - '0');
	if (p >= end || *p != ' ' || p == *q)
		return -1;
	p++;
	const unsigned char *nul = memchr(p, '\0', (size_t)(end - p));
	if (!nul || nul == p || end - nul < 21)
		return -1;
	e->mode = mode;
	e->name = (const char *)p;
	memcpy(e->id, nul + 1, 20);
	*q = nul + 21;
	return 0;
}

#define MODE_TREE 040000u
#define MODE_COMMIT 0160000u

static int bad_tree(const unsigned char id[20])
{
	char hex[41];
	tt_goid_hex(id, hex);
	return tether_error_set(TETHER_ERROR, "damaged git tree %s", hex);
}

/* Find `path` under the tree `root`: 0 with *e (name not kept), 1 absent,
 * 2 when an object is missing (libgit2 words that), < 0 damage. */
static int find_entry(struct tether_vcs *v, const unsigned char root[20], const char *path, struct entry *e)
{
	unsigned char at[20];
	memcpy(at, root, 20);
	if (!*path) {
		memcpy(e->id, root, 20);
		e->mode = MODE_TREE;
		return 0;
	}
	for (const char *name = path;;) {
		const char *slash = strchr(name, '/');
		size_t n = slash ? (size_t)(slash - name) : strlen(name);
		struct obj o;
		int rc = read_obj(v, at, TT_GOBJ_TREE, &o), found = 0;
		if (rc)
			return rc < 0 ? rc : 2;
		const unsigned char *q = o.data, *end = o.data + o.len;
		while ((rc = next_entry(&q, end, e)) == 0)
			if (strlen(e->name) == n && memcmp(e->name, name, n) == 0) {
				found = 1;
				break;
			}
		free(o.data);
		if (rc < 0)
			return bad_tree(at);
		if (!found)
			return 1;
		e->name = NULL;
		if (!slash)
			return 0;
		if (e->mode != MODE_TREE)
			return 1;
		memcpy(at, e->id, 20);
		name = slash + 1;
	}
}

/* ------------------------------------------------------------------ */
/* Revisions                                                           */
/* ------------------------------------------------------------------ */

/* Peel `id` to a commit (through annotated tags): 0, or 1 (libgit2 decides). */
static int peel_commit(struct tether_vcs *v, unsigned char id[20])
{
	for (int depth = 0; depth < 16; depth++) {
		struct obj o;
		int rc = tt_godb_read(v->odb, id, &o.type, &o.data, &o.len);
		if (rc == TETHER_ENOTFOUND)
			return 1;
		if (rc < 0)
			return rc;
		if (o.type == TT_GOBJ_COMMIT) {
			free(o.data);
			return 0;
		}
		rc = o.type == TT_GOBJ_TAG && o.len > 48 && memcmp(o.data, "object ", 7) == 0 && o.data[47] == '\n'
		         ? tt_goid_from_hex((const char *)o.data + 7, id)
		         : -1;
		free(o.data);
		if (rc < 0)
			return 1;
	}
	return 1;
}

static int all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return 0;
	return 1;
}

/* The object a revision's base (no ~ or ^) names, as libgit2's revparse
 * tries: a full id, then refs as git's dwim rules, then an unambiguous
 * abbreviated id. 1: not found here (libgit2 decides). */
static int resolve_base(struct tether_vcs *v, const char *base, unsigned char id[20])
{
	static const char *const rules[] = { "%s", "refs/%s", "refs/tags/%s", "refs/heads/%s",
		                             "refs/remotes/%s", "refs/remotes/%s/HEAD" };
	size_t n = strlen(base);
	char name[1024];
	int rc;

	if (strcmp(base, "@") == 0)
		base = "HEAD";
	if (n == 40 && all_hex(base, 40))
		return tt_goid_from_hex(base, id) == 0 ? 0 : 1;
	if (n == 0 || n > 900)
		return 1;
	for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
		/* git's first rule takes only HEAD-like names at the top */
		if (i == 0 && strchr(base, '/') == NULL && strcmp(base, "HEAD") != 0 &&
		    strcmp(base, "FETCH_HEAD") != 0 && strcmp(base, "ORIG_HEAD") != 0)
			continue;
		snprintf(name, sizeof name, rules[i], base);
		if ((rc = tt_gref_resolve(&v->repo, name, id, NULL)) <= 0)
			return rc;
	}
	if (n >= 4 && all_hex(base, n)) {
		int count;
		if ((rc = tt_godb_prefix(v->odb, base, n, id, &count)) < 0)
			return rc;
		return count == 1 ? 0 : 1;
	}
	return 1;
}

/* rev = base, then any of "~N", "~", "^", "^N" (N <= 2 for ^). 1: libgit2. */
static int resolve_native(struct tether_vcs *v, const char *rev, unsigned char id[20])
{
	size_t blen = strcspn(rev, "~^");
	char base[1024];
	int rc;

	if (blen >= sizeof base || (strpbrk(rev, ":{}@ ") && strcmp(rev, "@") != 0))
		return 1;
	memcpy(base, rev, blen);
	base[blen] = '\0';
	if ((rc = resolve_base(v, base, id)) != 0 || (rc = peel_commit(v, id)) != 0)
		return rc;
	for (const char *p = rev + blen; *p;) {
		char op = *p++;
		char *endp;
		unsigned long k = 1;
		if (*p >= '0' && *p <= '9') {
			errno = 0;
			k = strtoul(p, &endp, 10);
			if (errno || k > 100000)
				return 1;
			p = endp;
		}
		if (op == '^' && k > 2)
			return 1;
		unsigned long steps = op == '~' ? k : 1, which = op == '^' ? k : 1;
		if (op == '^' && k == 0)
			continue; /* ^0: the commit itself */
		for (unsigned long s = 0; s < steps; s++) {
			struct obj o;
			struct commit_info c;
			if ((rc = read_obj(v, id, TT_GOBJ_COMMIT, &o)) != 0)
				return rc;
			rc = parse_commit(&o, &c);
			/* no such parent: libgit2's revparse says "not found" too,
			 * and tether's engine asks this of every root commit */
			if (rc == 0 && c.nparents < which)
				rc = tether_error_set(TETHER_ENOTFOUND, "unknown revision '%s'", rev);
			else if (rc == 0 && which == 2 && c.nparents > 2)
				rc = 1;
			if (rc == 0)
				memcpy(id, c.parents[which - 1], 20);
			free(o.data);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int native_resolve(struct tether_vcs *v, const char *rev, char id[41])
{
	unsigned char raw[20];
	int rc = native(v) && rev && *rev ? resolve_native(v, rev, raw) : 1;
	if (rc < 0)
		return rc;
	if (rc == 0) {
		tt_goid_hex(raw, id);
		return 0;
	}
	FORWARD(v, resolve(v->full, rev, id));
}

/* The tree of commit `id`: 0, 1 (libgit2 decides), < 0. */
static int commit_tree_of(struct tether_vcs *v, const char *id, unsigned char tree[20])
{
	unsigned char raw[20];
	struct obj o;
	struct commit_info c;
	int rc = id ? resolve_native(v, id, raw) : 1;
	if (rc != 0)
		return rc;
	if ((rc = read_obj(v, raw, TT_GOBJ_COMMIT, &o)) != 0)
		return rc;
	rc = parse_commit(&o, &c);
	if (rc == 0)
		memcpy(tree, c.tree, 20);
	free(o.data);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Files and trees                                                     */
/* ------------------------------------------------------------------ */

/* The entry of file `path` in commit `id`: 0, 1 when libgit2 must answer
 * (not read natively, absent, or not a file: libgit2's path says so in
 * its words), < 0 on damage. */
static int file_entry(struct tether_vcs *v, const char *id, const char *path, struct entry *e)
{
	unsigned char tree[20];
	char *norm = NULL;
	int rc = native(v) ? tt_git_path_normalize(path, &norm) : 1;

	if (rc == 0)
		rc = commit_tree_of(v, id, tree);
	if (rc == 0)
		rc = find_entry(v, tree, norm, e);
	if (rc == 0 && (e->mode == MODE_TREE || e->mode == MODE_COMMIT))
		rc = 1;
	free(norm);
	return rc;
}

static int native_read_file(struct tether_vcs *v, const char *id, const char *path, char **data, size_t *len)
{
	struct entry e;
	struct obj o;
	int rc = file_entry(v, id, path, &e);

	if (rc == 0 && (rc = read_obj(v, e.id, TT_GOBJ_BLOB, &o)) == 0) {
		*data = (char *)o.data;
		if (len)
			*len = o.len;
	}
	if (rc <= 0)
		return rc;
	FORWARD(v, read_file(v->full, id, path, data, len));
}

/* A file read piece by piece: a git object stream, or (when libgit2 had
 * to read it) the whole file, handed out from memory. */
struct tether_vcs_stream {
	struct tt_gstream *g;
	char *whole;
	size_t len, at;
};

static int native_open_stream(struct tether_vcs *v, const char *id, const char *path, struct tether_vcs_stream **out)
{
	struct entry e;
	struct tether_vcs_stream *s = calloc(1, sizeof *s);
	int rc = s ? file_entry(v, id, path, &e) : tt_fail_oom();
	enum tt_gobj_type type;
	size_t size;

	*out = NULL;
	if (rc == 0 && (rc = tt_gstream_open(v->odb, e.id, &type, &size, &s->g)) == 0 && type != TT_GOBJ_BLOB) {
		tt_gstream_close(s->g);
		s->g = NULL;
		rc = 1;
	}
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		rc = 1;
	}
	/* anything this reader does not answer: read_file's answer, whole */
	if (rc == 1)
		rc = native_read_file(v, id, path, &s->whole, &s->len);
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int native_read_stream(struct tether_vcs_stream *s, char *buf, size_t cap, size_t *got)
{
	if (s->g)
		return tt_gstream_read(s->g, (unsigned char *)buf, cap, got);
	size_t n = s->len - s->at < cap ? s->len - s->at : cap;
	memcpy(buf, s->whole + s->at, n);
	s->at += n;
	*got = n;
	return 0;
}

static void native_close_stream(struct tether_vcs_stream *s)
{
	if (!s)
		return;
	tt_gstream_close(s->g);
	free(s->whole);
	free(s);
}

struct walk {
	struct tether_vcs *v;
	tether_vcs_file_cb cb;
	void *ud;
	struct path_buf path; /* relative to the walked directory */
	int depth;            /* trees entered below the walked directory */
};

/* Git sorts tree entries as if directory names ended in '/', so a
 * depth-first walk in entry order gives full paths in byte order. Returns
 * cb's non-zero value, or < 0 (a missing object met mid-walk is an error
 * here: files were already handed on, so libgit2 cannot take over). */
static int walk_tree(struct walk *w, const unsigned char id[20])
{
	struct obj o;
	int rc = read_obj(w->v, id, TT_GOBJ_TREE, &o);
	char hex[41];
	if (rc == 1) {
		tt_goid_hex(id, hex);
		return tether_error_set(TETHER_ERROR, "git tree %s is missing", hex);
	}
	if (rc)
		return rc;
	const unsigned char *q = o.data, *end = o.data + o.len;
	struct entry e;
	for (;;) {
		int more = next_entry(&q, end, &e);
		if (more) {
			rc = more < 0 ? bad_tree(id) : 0;
			break;
		}
		size_t mark = w->path.len;
		if ((rc = path_buf_push(&w->path, e.name)) < 0)
			break;
		if (e.mode == MODE_TREE && w->depth >= TETHER_VCS_TREE_DEPTH_MAX) {
			rc = tether_error_set(TETHER_ERROR, "git tree at '%s' nests deeper than %d directories: no object "
			                      "key is that deep", w->path.s, TETHER_VCS_TREE_DEPTH_MAX);
		} else if (e.mode == MODE_TREE) {
			w->depth++;
			rc = walk_tree(w, e.id);
			w->depth--;
		} else if (e.mode != MODE_COMMIT) {
			struct obj b;
			int r = read_obj(w->v, e.id, TT_GOBJ_BLOB, &b);
			if (r == 0) {
				rc = w->cb(w->ud, w->path.s, (const char *)b.data, b.len);
				free(b.data);
			} else if (r == 1) {
				tt_goid_hex(e.id, hex);
				rc = tether_error_set(TETHER_ERROR, "git blob %s at '%s' is missing", hex, w->path.s);
			} else {
				rc = r;
			}
		}
		path_buf_pop_to(&w->path, mark);
		if (rc)
			break;
	}
	free(o.data);
	return rc;
}

static int native_read_tree(struct tether_vcs *v, const char *id, const char *dir, tether_vcs_file_cb cb,
                            void *ud)
{
	unsigned char tree[20];
	struct entry e;
	char *norm = NULL;
	int rc;

	if (!native(v))
		FORWARD(v, read_tree(v->full, id, dir, cb, ud));
	if ((rc = tt_git_path_normalize(dir, &norm)) < 0)
		return rc;
	rc = commit_tree_of(v, id, tree);
	if (rc == 0) {
		rc = find_entry(v, tree, norm, &e);
		if (rc == 1 || (rc == 0 && e.mode != MODE_TREE)) {
			free(norm);
			return 0; /* a missing directory holds no files */
		}
	}
	if (rc == 0) {
		struct walk w = { .v = v, .cb = cb, .ud = ud };
		rc = walk_tree(&w, e.id);
		free(w.path.s);
		free(norm);
		return rc;
	}
	free(norm);
	if (rc < 0)
		return rc;
	FORWARD(v, read_tree(v->full, id, dir, cb, ud));
}

static int native_tree_id(struct tether_vcs *v, const char *id, const char *dir, char tree[41])
{
	unsigned char root[20];
	struct entry e;
	char *norm = NULL;
	int rc;

	if (!native(v))
		FORWARD(v, tree_id(v->full, id, dir, tree));
	if ((rc = tt_git_path_normalize(dir, &norm)) < 0)
		return rc;
	tree[0] = '\0';
	rc = commit_tree_of(v, id, root);
	if (rc == 0) {
		int found = find_entry(v, root, norm, &e);
		if (found < 0)
			rc = found;
		else if (found == 2)
			rc = 1;
		else if (found == 0 && e.mode == MODE_TREE)
			tt_goid_hex(e.id, tree);
	}
	free(norm);
	if (rc <= 0)
		return rc;
	FORWARD(v, tree_id(v->full, id, dir, tree));
}

static int native_current_branch(struct tether_vcs *v, char **name)
{
	unsigned char id[20];
	char *sym = NULL;
	int rc;

	if (!native(v))
		FORWARD(v, current_branch(v->full, name));
	rc = tt_gref_resolve(&v->repo, "HEAD", id, &sym);
	if (rc < 0)
		return rc;
	if (!sym) {
		*name = NULL;
		if (rc == 1)
			FORWARD(v, current_branch(v->full, name));
		return 0;
	}
	/* A symbolic HEAD names the branch even before its first commit. */
	const char *target = strncmp(sym, "refs/heads/", 11) == 0 ? sym + 11 : sym;
	*name = strdup(target);
	free(sym);
	return *name ? 0 : tt_fail_oom();
}

/* ------------------------------------------------------------------ */
/* log                                                                 */
/* ------------------------------------------------------------------ */

/* A JSON string from text git stored, which need not be UTF-8: bytes that
 * do not make valid UTF-8 become '?' (as git.c does). */
static json_t *json_text_n(const char *s, size_t n)
{
	json_t *j = json_stringn(s, n);
	if (j)
		return j;
	char *copy = malloc(n + 1);
	if (!copy)
		return NULL;
	for (size_t i = 0; i < n; i++)
		copy[i] = (unsigned char)s[i] >= 0x80 || s[i] == '\0' ? '?' : s[i];
	j = json_stringn(copy, n);
	free(copy);
	return j;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* libgit2's git_commit_summary: the first paragraph, every run of
 * whitespace holding a newline collapsed to one space. */
static json_t *summary_of(const char *msg, size_t n)
{
	char *out = malloc(n + 1);
	size_t o = 0;
	const char *space = NULL;
	int space_nl = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n && msg[i]; i++) {
		char c = msg[i];
		if (c == '\n') {
			if (i + 1 >= n || msg[i + 1] == '\n' || !msg[i + 1])
				break;
			size_t k = i + 1;
			while (k < n && msg[k] && msg[k] != '\n' && is_space(msg[k]))
				k++;
			if (k >= n || !msg[k] || msg[k] == '\n')
				break;
		}
		if (is_space(c)) {
			if (!space) {
				space = msg + i;
				space_nl = 0;
			}
			space_nl |= c == '\n';
		} else {
			if (space) {
				if (space_nl)
					out[o++] = ' ';
				else {
					memcpy(out + o, space, (size_t)(msg + i - space));
					o += (size_t)(msg + i - space);
				}
				space = NULL;
			}
			out[o++] = c;
		}
	}
	json_t *j = json_text_n(out, o);
	free(out);
	return j;
}

/* The shortest abbreviation, from 7 digits, that names only this object. */
static int short_id(struct tether_vcs *v, const unsigned char id[20], char out[41])
{
	char hex[41];
	tt_goid_hex(id, hex);
	for (size_t n = 7; n <= 40; n++) {
		unsigned char one[20];
		int count, rc = tt_godb_prefix(v->odb, hex, n, one, &count);
		if (rc < 0)
			return rc;
		if (count <= 1) {
			memcpy(out, hex, n);
			out[n] = '\0';
			return 0;
		}
	}
	memcpy(out, hex, 41);
	return 0;
}

/* The author line "Name <email> time zone": 1 when it is not of that form
 * (libgit2 reads the commit then). */
static int parse_author(const struct commit_info *c, json_t *o)
{
	const char *a = c->author, *end = a + c->author_len;
	const char *lt = memchr(a, '<', c->author_len);
	const char *gt = lt ? memchr(lt, '>', (size_t)(end - lt)) : NULL;
	if (!gt)
		return 1;
	const char *ns = a, *ne = lt;
	while (ns < ne && is_space(*ns))
		ns++;
	while (ne > ns && is_space(ne[-1]))
		ne--;
	const char *es = lt + 1, *ee = gt;
	while (es < ee && is_space(*es))
		es++;
	while (ee > es && is_space(ee[-1]))
		ee--;
	const char *t = gt + 1;
	while (t < end && *t == ' ')
		t++;
	long long when = 0;
	if (t >= end || *t < '0' || *t > '9')
		return 1;
	while (t < end && *t >= '0' && *t <= '9') {
		if (when > (INT64_MAX - 9) / 10)
			return 1;
		when = when * 10 + (*t++ - '0');
	}
	int bad = json_object_set_new(o, "author", json_text_n(ns, (size_t)(ne - ns))) < 0;
	bad = bad || json_object_set_new(o, "email", json_text_n(es, (size_t)(ee - es))) < 0;
	bad = bad || json_object_set_new(o, "time", json_integer(when)) < 0;
	return bad ? tt_fail_oom() : 0;
}

static int commit_json(struct tether_vcs *v, const unsigned char id[20], const struct obj *obj,
                       const struct commit_info *c, json_t **out)
{
	char hex[41], abbrev[41];
	json_t *o = json_object();
	int rc;
	if (!o)
		return tt_fail_oom();
	tt_goid_hex(id, hex);
	size_t mlen = obj->len - (size_t)((const unsigned char *)c->message - obj->data);
	if ((rc = short_id(v, id, abbrev)) < 0 || (rc = parse_author(c, o)) != 0) {
		json_decref(o);
		return rc;
	}
	int bad = json_object_set_new(o, "id", json_string(hex)) < 0;
	bad = bad || json_object_set_new(o, "short", json_string(abbrev)) < 0;
	bad = bad || json_object_set_new(o, "summary", summary_of(c->message, mlen)) < 0;
	bad = bad || json_object_set_new(o, "message", json_text_n(c->message, strnlen(c->message, mlen))) < 0;
	if (bad) {
		json_decref(o);
		return tt_fail_oom();
	}
	*out = o;
	return 0;
}

/* What `path` is in a commit's tree: 0 present (*e), 1 absent, 2 missing object. */
static int entry_at(struct tether_vcs *v, const unsigned char commit[20], const char *path, struct entry *e,
                    unsigned char tree_out[20])
{
	struct obj o;
	struct commit_info c;
	int rc = read_obj(v, commit, TT_GOBJ_COMMIT, &o);
	if (rc)
		return rc < 0 ? rc : 2;
	rc = parse_commit(&o, &c) ? 2 : 0;
	free(o.data);
	if (rc)
		return rc;
	if (tree_out)
		memcpy(tree_out, c.tree, 20);
	return find_entry(v, c.tree, path, e);
}

/* A linear history, newest first: the only order this reader produces. The
 * first merge met (or anything else unusual) returns 1 and libgit2 walks. */
static int log_linear(struct tether_vcs *v, const unsigned char tip[20], const char *path, int max, json_t *out)
{
	unsigned char at[20];
	memcpy(at, tip, 20);
	for (;;) {
		if (max > 0 && (int)json_array_size(out) >= max)
			return 0;
		struct obj o;
		struct commit_info c;
		int rc = read_obj(v, at, TT_GOBJ_COMMIT, &o);
		if (rc)
			return rc < 0 ? rc : 1;
		if (parse_commit(&o, &c) || c.nparents > 1) {
			free(o.data);
			return 1;
		}
		int changed = 1;
		if (path) {
			struct entry mine, theirs;
			int a = find_entry(v, c.tree, path, &mine), b = 1;
			if (a == 0 || a == 1) {
				b = c.nparents ? entry_at(v, c.parents[0], path, &theirs, NULL) : 1;
				if (b != 0 && b != 1)
					a = b;
			}
			if (a < 0 || a == 2) {
				free(o.data);
				return a < 0 ? a : 1;
			}
			if (c.nparents == 0)
				changed = a == 0;
			else
				changed = !(a == b && (a == 1 || (mine.mode == theirs.mode &&
				                                  memcmp(mine.id, theirs.id, 20) == 0)));
		}
		if (changed) {
			json_t *j = NULL;
			rc = commit_json(v, at, &o, &c, &j);
			if (rc == 0 && json_array_append_new(out, j) < 0)
				rc = tt_fail_oom();
			if (rc) {
				free(o.data);
				return rc;
			}
		}
		int more = c.nparents == 1;
		if (more)
			memcpy(at, c.parents[0], 20);
		free(o.data);
		if (!more)
			return 0;
	}
}

static int native_log(struct tether_vcs *v, const char *rev, const char *path, int max, json_t **commits)
{
	unsigned char tip[20];
	char *norm = NULL;
	int rc;

	if (!native(v))
		FORWARD(v, log(v->full, rev, path, max, commits));
	if (path && (rc = tt_git_path_normalize(path, &norm)) < 0)
		return rc;
	rc = resolve_native(v, rev ? rev : "HEAD", tip);
	json_t *out = rc == 0 ? json_array() : NULL;
	if (rc == 0 && !out)
		rc = tt_fail_oom();
	if (rc == 0)
		rc = log_linear(v, tip, norm, max, out);
	free(norm);
	if (rc == 0) {
		*commits = out;
		return 0;
	}
	json_decref(out);
	if (rc < 0)
		return rc;
	FORWARD(v, log(v->full, rev, path, max, commits));
}

/* ------------------------------------------------------------------ */
/* What libgit2 does                                                   */
/* ------------------------------------------------------------------ */

static int native_commit_paths(struct tether_vcs *v, const char *const *paths, size_t npaths,
                               const char *message, char id[41])
{
	FORWARD(v, commit_paths(v->full, paths, npaths, message, id));
}

static int native_is_tracked(struct tether_vcs *v, const char *path, int *tracked)
{
	FORWARD(v, is_tracked(v->full, path, tracked));
}

static int native_each_commit(struct tether_vcs *v, int (*cb)(void *ud, const char *id), void *ud)
{
	int to_libgit2 = 1, rc = native(v) ? tt_native_each_commit(&v->repo, v->odb, cb, ud, &to_libgit2) : 0;
	if (rc < 0 || !to_libgit2)
		return rc;
	FORWARD(v, each_commit(v->full, cb, ud));
}

static int native_switch_to(struct tether_vcs *v, const char *rev, const char *new_branch)
{
	FORWARD(v, switch_to(v->full, rev, new_branch));
}

static int native_rewrite_files(struct tether_vcs *v, const char *dir, const char *const *paths, size_t npaths,
                                tether_vcs_rewrite_cb cb, void *ud, const char *expect_head, json_t **report)
{
	FORWARD(v, rewrite_files(v->full, dir, paths, npaths, cb, ud, expect_head, report));
}

static int native_list_bookmarks(struct tether_vcs *v, json_t **names)
{
	FORWARD(v, list_bookmarks(v->full, names));
}

static int native_history_files(struct tether_vcs *v, const char *dir, const char *cache_path,
                                tether_vcs_history_cb cb, void *ud, size_t *commits)
{
	int to_libgit2 = 1,
	    rc = native(v) ? tt_native_history(&v->repo, v->odb, dir, cache_path,
	                                       &(struct tt_walk_wants){.files = cb, .ud = ud}, commits, &to_libgit2)
	                   : 0;
	if (rc < 0 || !to_libgit2)
		return rc;
	FORWARD(v, history_files(v->full, dir, cache_path, cb, ud, commits));
}

/* From every ref natively; from given tips, libgit2's walk (the native
 * commit walk starts only from every ref). */
static int native_history_trees(struct tether_vcs *v, const char *const *tips, size_t ntips, const char *dir,
                                const char *cache_path, const struct tether_vcs_tree_walk *cb, void *ud,
                                size_t *commits)
{
	int to_libgit2 = 1,
	    rc = native(v) && !tips
	             ? tt_native_history(&v->repo, v->odb, dir, cache_path,
	                                 &(struct tt_walk_wants){.trees = cb, .ud = ud}, commits, &to_libgit2)
	             : 0;
	if (rc < 0 || !to_libgit2)
		return rc;
	FORWARD(v, history_trees(v->full, tips, ntips, dir, cache_path, cb, ud, commits));
}

static int native_position(struct tether_vcs *v, json_t **pos)
{
	FORWARD(v, position(v->full, pos));
}

static int native_return_to(struct tether_vcs *v, const json_t *pos, const char *created_branch)
{
	FORWARD(v, return_to(v->full, pos, created_branch));
}

static int native_containing_refs(struct tether_vcs *v, const char *id, json_t **refs)
{
	FORWARD(v, containing_refs(v->full, id, refs));
}

static int native_abandon(struct tether_vcs *v, const char *id, const char *expect_head, int check_only,
                          const char *const *own, size_t nown, char new_head[41])
{
	FORWARD(v, abandon(v->full, id, expect_head, check_only, own, nown, new_head));
}

/* ------------------------------------------------------------------ */
/* export: commits_info, list_refs                                     */
/* ------------------------------------------------------------------ */

/* A signature "Name <email> time [+-]hhmm", as libgit2 reads a plain one:
 * name and email trimmed of spaces. 1 for any other shape (libgit2 reads
 * the commits then, and words what it finds). */
static int parse_signature(const char *a, size_t len, json_t *o, const char *name_key, const char *email_key,
                           const char *time_key, const char *tz_key)
{
	const char *end = a + len, *lt = memchr(a, '<', len), *gt = lt ? memchr(lt, '>', (size_t)(end - lt)) : NULL;
	if (!gt || memchr(gt + 1, '<', (size_t)(end - gt - 1)) || memchr(gt + 1, '>', (size_t)(end - gt - 1)))
		return 1;
	const char *ns = a, *ne = lt, *es = lt + 1, *ee = gt;
	while (ns < ne && is_space(*ns))
		ns++;
	while (ne > ns && is_space(ne[-1]))
		ne--;
	while (es < ee && is_space(*es))
		es++;
	while (ee > es && is_space(ee[-1]))
		ee--;
	const char *t = gt + 1;
	if (t >= end || *t++ != ' ' || t >= end || *t < '0' || *t > '9')
		return 1;
	long long when = 0;
	while (t < end && *t >= '0' && *t <= '9') {
		if (when > (INT64_MAX - 9) / 10)
			return 1;
		when = when * 10 + (*t++ - '0');
	}
	if (end - t != 6 || t[0] != ' ' || (t[1] != '+' && t[1] != '-'))
		return 1;
	for (int i = 2; i < 6; i++)
		if (t[i] < '0' || t[i] > '9')
			return 1;
	int hours = (t[2] - '0') * 10 + (t[3] - '0'), minutes = (t[4] - '0') * 10 + (t[5] - '0');
	if (hours > 14 || minutes > 59)
		return 1;
	int tz = (t[1] == '-' ? -1 : 1) * (hours * 60 + minutes);
	int bad = json_object_set_new(o, name_key, json_text_n(ns, (size_t)(ne - ns))) < 0;
	bad = bad || json_object_set_new(o, email_key, json_text_n(es, (size_t)(ee - es))) < 0;
	bad = bad || json_object_set_new(o, time_key, json_integer(when)) < 0;
	bad = bad || (tz_key && json_object_set_new(o, tz_key, json_integer(tz)) < 0);
	return bad ? tt_fail_oom() : 0;
}

/* One commit's facts (vcs.h, commits_info): 0, 1 when libgit2 must read
 * it (absent here, or of a shape this reader leaves to libgit2), < 0. */
static int native_commit_info(struct tether_vcs *v, const char *hex, json_t *out)
{
	unsigned char id[20];
	struct obj o;
	if (strlen(hex) != 40 || tt_goid_from_hex(hex, id) < 0)
		return 1;
	int rc = read_obj(v, id, TT_GOBJ_COMMIT, &o);
	if (rc)
		return rc;
	const char *p = (const char *)o.data, *end = p + o.len;
	json_t *info = json_pack("{s:s, s:[]}", "id", hex, "parents");
	rc = o.len < 46 || memcmp(p, "tree ", 5) != 0 || p[45] != '\n' ? 1 : 0;
	p += 46;
	while (!rc && end - p >= 48 && memcmp(p, "parent ", 7) == 0 && p[47] == '\n') {
		if (!all_hex(p + 7, 40))
			rc = 1;
		else
			json_array_append_new(json_object_get(info, "parents"), json_stringn(p + 7, 40));
		p += 48;
	}
	int authors = 0, committers = 0;
	while (!rc && p < end && *p != '\n') {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			rc = 1;
			break;
		}
		size_t n = (size_t)(nl - p);
		if (n > 7 && memcmp(p, "author ", 7) == 0 && !authors++)
			rc = parse_signature(p + 7, n - 7, info, "author", "email", "time", "tz");
		else if (n > 10 && memcmp(p, "committer ", 10) == 0 && !committers++)
			rc = parse_signature(p + 10, n - 10, info, "committer", "committer_email", "commit_time", NULL);
		p = nl + 1;
	}
	if (!rc && (authors != 1 || committers != 1 || p >= end))
		rc = 1;
	if (!rc) {
		p++;
		while (p < end && *p == '\n')
			p++;
		/* libgit2's message is a C string: it ends at a NUL */
		json_t *msg = json_text_n(p, strnlen(p, (size_t)(end - p)));
		rc = msg && json_object_set_new(info, "message", msg) == 0 ? 0 : tt_fail_oom();
	}
	if (!rc)
		json_array_append(out, info);
	json_decref(info);
	free(o.data);
	return rc;
}

static int native_commits_info(struct tether_vcs *v, const char *const *ids, size_t n, json_t **infos)
{
	json_t *out = native(v) ? json_array() : NULL;
	int rc = out ? 0 : 1;
	for (size_t i = 0; !rc && i < n; i++)
		rc = native_commit_info(v, ids[i], out);
	if (rc == 0) {
		*infos = out;
		return 0;
	}
	json_decref(out);
	if (rc < 0)
		return rc;
	FORWARD(v, commits_info(v->full, ids, n, infos));
}

struct refs_walk {
	struct tether_vcs *v;
	json_t *out;
};

static const struct {
	const char *prefix, *type;
} export_ref_kinds[] = {
	{ "refs/heads/", "branch" },
	{ "refs/remotes/", "remote" },
	{ "refs/tags/", "tag" },
};

/* One ref as libgit2's iterator lists it: kept when it is a branch, a
 * remote-tracking branch (not a remote's HEAD) or a tag that peels to a
 * commit; 1 (libgit2 decides) when this reader cannot peel it. */
static int on_export_ref(void *ud, const char *name, const unsigned char id[20], const unsigned char *peeled,
                         int symbolic)
{
	struct refs_walk *w = ud;
	const char *type = NULL;
	size_t skip = 0, len = strlen(name);
	(void)symbolic;
	for (size_t k = 0; k < sizeof export_ref_kinds / sizeof export_ref_kinds[0]; k++)
		if (strncmp(name, export_ref_kinds[k].prefix, strlen(export_ref_kinds[k].prefix)) == 0) {
			type = export_ref_kinds[k].type;
			skip = strlen(export_ref_kinds[k].prefix);
		}
	if (!type || (strcmp(type, "remote") == 0 && len > 5 && strcmp(name + len - 5, "/HEAD") == 0))
		return 0;
	unsigned char target[20];
	memcpy(target, peeled ? peeled : id, 20);
	struct obj o;
	int rc = tt_godb_read(w->v->odb, target, &o.type, &o.data, &o.len);
	if (rc == TETHER_ENOTFOUND)
		return 1;
	if (rc < 0)
		return rc;
	enum tt_gobj_type t = o.type;
	free(o.data);
	if (t == TT_GOBJ_TAG && (rc = peel_commit(w->v, target)) != 0)
		return rc;
	if (t != TT_GOBJ_COMMIT && t != TT_GOBJ_TAG)
		return 0; /* a tag of a tree or blob names no commit */
	char hex[41];
	tt_goid_hex(target, hex);
	json_t *name_text = json_text_n(name + skip, len - skip);
	if (!name_text || json_array_append_new(w->out, json_pack("{s:o, s:s, s:s}", "name", name_text, "type", type,
	                                                          "commit", hex)) < 0)
		return tt_fail_oom();
	return 0;
}

static int native_list_refs(struct tether_vcs *v, json_t **refs)
{
	struct refs_walk w = { v, native(v) ? json_array() : NULL };
	int rc = w.out ? tt_gref_each_as_libgit2(&v->repo, "refs/", on_export_ref, &w) : 1;
	if (rc == 0) {
		tt_json_array_sort(w.out, tt_vcs_refs_order);
		*refs = w.out;
		return 0;
	}
	json_decref(w.out);
	if (rc < 0)
		return rc;
	FORWARD(v, list_refs(v->full, refs));
}

/* git's checkout stands on one branch at most: the one HEAD names. */
static int native_checkout_bookmarks(struct tether_vcs *v, json_t **names)
{
	char *name = NULL;
	int rc = native_current_branch(v, &name);
	*names = rc ? NULL : json_array();
	if (!rc && name)
		json_array_append_new(*names, json_string(name));
	free(name);
	return rc;
}

const struct tether_vcs_ops tt_git_native_ops = {
	TETHER_VCS_OPS_INIT,
	.name = "git",
	.open = native_open,
	.close = native_close,
	.resolve = native_resolve,
	.read_file = native_read_file,
	.open_stream = native_open_stream,
	.read_stream = native_read_stream,
	.close_stream = native_close_stream,
	.read_tree = native_read_tree,
	.log = native_log,
	.commit_paths = native_commit_paths,
	.current_branch = native_current_branch,
	.is_tracked = native_is_tracked,
	.each_commit = native_each_commit,
	.tree_id = native_tree_id,
	.switch_to = native_switch_to,
	.list_bookmarks = native_list_bookmarks,
	.checkout_bookmarks = native_checkout_bookmarks,
	.history_files = native_history_files,
	.history_trees = native_history_trees,
	.position = native_position,
	.return_to = native_return_to,
	.rewrite_files = native_rewrite_files,
	.containing_refs = native_containing_refs,
	.abandon = native_abandon,
	.commits_info = native_commits_info,
	.list_refs = native_list_refs,
};
