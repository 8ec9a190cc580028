/* See gitrefs.h. Refs: a loose file (40 hex, or "ref: <name>") in the
 * checkout's git directory for HEAD and the per-worktree refs, in the
 * common directory for the rest, then packed-refs in the common
 * directory (git's Documentation/gitrepository-layout.txt). */
#include "util/fail.h"
#include "util/fsutil.h"
#include "vcs/gitrefs.h"
#include "vcs/gitodb.h"

#include <tether/backend.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The whole of a small file, NUL-terminated; NULL (errno set) on failure. */
static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);
	if (s) {
		memcpy(s, a, la);
		s[la] = '/';
		memcpy(s + la + 1, b, lb + 1);
	}
	return s;
}

static int exists(const char *dir, const char *name)
{
	char *p = join(dir, name);
	struct stat st;
	int ok = p && lstat(p, &st) == 0;
	free(p);
	return ok;
}

static char *trim(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* A config this reader would read differently from libgit2? Any line that
 * could move the work tree, make the repository bare, change the object
 * format or pull in another file. */
static int config_needs_libgit2(const char *path)
{
	char *text = tt_read_small(path, 1 << 20), *save = NULL;
	int hard = 0;

	if (!text)
		return errno != ENOENT;
	for (char *line = strtok_r(text, "\n", &save); line && !hard; line = strtok_r(NULL, "\n", &save)) {
		char *l = trim(line);
		for (char *c = l; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		if (strstr(l, "worktree") || strncmp(l, "[extensions", 11) == 0 || strncmp(l, "[include", 8) == 0)
			hard = 1;
		if (strncmp(l, "bare", 4) == 0 && (strstr(l, "true") || strstr(l, "yes") || strstr(l, "on") ||
		                                   strchr(l, '1')))
			hard = 1;
	}
	free(text);
	return hard;
}

/* Is `dir` (realpath'd) at or above one of GIT_CEILING_DIRECTORIES? */
static int at_or_above_ceiling(const char *dir)
{
	const char *env = getenv("GIT_CEILING_DIRECTORIES");
	if (!env || !*env)
		return 0;
	char *copy = strdup(env), *save = NULL;
	int hit = !copy;
	size_t n = strlen(dir);
	for (char *c = copy ? strtok_r(copy, ":", &save) : NULL; c && !hit; c = strtok_r(NULL, ":", &save)) {
		char real[PATH_MAX];
		const char *ceil = realpath(c, real) ? real : c;
		hit = strncmp(ceil, dir, n) == 0 && (ceil[n] == '\0' || ceil[n] == '/' || n == 1);
	}
	free(copy);
	return hit;
}

/* The git directory a ".git" file names (relative to the file's directory). */
static char *gitdir_from_file(const char *dir, const char *file)
{
	char *text = tt_read_small(file, 1 << 16), *out = NULL;
	if (text && strncmp(text, "gitdir:", 7) == 0) {
		char *target = trim(text + 7);
		char *p = target[0] == '/' ? strdup(target) : join(dir, target);
		out = p ? realpath(p, NULL) : NULL;
		free(p);
	}
	free(text);
	return out;
}

static int looks_like_gitdir(const char *d)
{
	return exists(d, "HEAD") && (exists(d, "objects") || exists(d, "commondir"));
}

void tt_grepo_clear(struct tt_grepo *r)
{
	free(r->workdir);
	free(r->gitdir);
	free(r->commondir);
	memset(r, 0, sizeof *r);
}

int tt_grepo_find(const char *start_dir, struct tt_grepo *r)
{
	char cur[PATH_MAX];
	struct stat st;
	dev_t dev;

	memset(r, 0, sizeof *r);
	if (!realpath(start_dir, cur) || stat(cur, &st) < 0 || strstr(cur, "/.git"))
		return 1;
	dev = st.st_dev;
	for (;;) {
		/* libgit2 takes a directory that is itself a git directory (a bare
		 * repository, or one committed as content) before any .git: that is
		 * its call, with its refusals */
		if (looks_like_gitdir(cur))
			return 1;
		char *dotgit = join(cur, ".git");
		if (!dotgit)
			return tt_fail_oom();
		if (lstat(dotgit, &st) == 0) {
			if (S_ISDIR(st.st_mode) && looks_like_gitdir(dotgit))
				r->gitdir = realpath(dotgit, NULL);
			else if (S_ISREG(st.st_mode))
				r->gitdir = gitdir_from_file(cur, dotgit);
			free(dotgit);
			if (!r->gitdir || at_or_above_ceiling(cur))
				return 1;
			break;
		}
		free(dotgit);
		char *slash = strrchr(cur, '/');
		if (!slash || slash == cur || at_or_above_ceiling(cur))
			return 1;
		*slash = '\0';
		if (stat(cur, &st) < 0 || st.st_dev != dev)
			return 1;
	}
	if (!(r->workdir = strdup(cur)))
		return tt_fail_oom();
	char *cpath = join(r->gitdir, "commondir"), *ctext = cpath ? tt_read_small(cpath, 1 << 16) : NULL;
	free(cpath);
	if (ctext) {
		char *t = trim(ctext), *p = t[0] == '/' ? strdup(t) : join(r->gitdir, t);
		r->commondir = p ? realpath(p, NULL) : NULL;
		free(p);
		free(ctext);
	} else {
		r->commondir = strdup(r->gitdir);
	}
	int hard = !r->commondir || !looks_like_gitdir(r->gitdir) || !exists(r->commondir, "objects");
	if (!hard) {
		char *cfg = join(r->commondir, "config");
		hard = !cfg || config_needs_libgit2(cfg) || stat(r->commondir, &st) < 0 || st.st_uid != geteuid() ||
		       exists(r->commondir, "objects/info/alternates") || exists(r->commondir, "shallow") ||
		       exists(r->commondir, "info/grafts") || exists(r->gitdir, "config.worktree");
		free(cfg);
	}
	if (hard) {
		tt_grepo_clear(r);
		return 1;
	}
	return 0;
}

static int per_worktree(const char *name)
{
	return strcmp(name, "HEAD") == 0 || strncmp(name, "refs/worktree/", 14) == 0 ||
	       strncmp(name, "refs/bisect/", 12) == 0 || strncmp(name, "refs/rewritten/", 15) == 0 ||
	       !strchr(name, '/');
}

static int valid_name(const char *name)
{
	if (!*name || name[0] == '/' || strstr(name, "..") || strstr(name, "//") || strstr(name, "/.") ||
	    name[0] == '.')
		return 0;
	for (const char *c = name; *c; c++)
		if ((unsigned char)*c < 0x20 || strchr(" ~^:?*[\\", *c))
			return 0;
	return 1;
}

/* packed-refs: "<hex> <name>" lines, a "#" header, "^<hex>" peeled lines
 * each after the ref it peels. Any other line is damage, whichever ref is
 * looked up: git and libgit2 refuse the whole file too, and a reader that
 * skipped what it cannot parse would answer "no such ref" for a ref the
 * damaged line may have held. Each ref goes to fn(ud, name, id, peeled)
 * once its peeled line (or its absence) is known; a non-zero return stops
 * the parse and is returned. 0 when the file is absent. */
typedef int (*packed_fn)(void *ud, const char *name, const unsigned char id[20], const unsigned char *peeled);

static int packed_each(const struct tt_grepo *r, packed_fn fn, void *ud)
{
	char *path = join(r->commondir, "packed-refs"), *text = path ? tt_read_small(path, 256u << 20) : NULL;
	int rc = 0;
	const char *pending = NULL; /* the ref whose "^" line may follow */
	unsigned char id[20], peeled[20];
	if (!text) {
		free(path);
		return 0;
	}
	size_t lineno = 0;
	for (char *line = text; line && *line && rc == 0; lineno++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		size_t ll = strlen(line);
		if (ll && line[ll - 1] == '\r')
			line[--ll] = '\0';
		int ok = 1;
		if (line[0] == '^') {
			ok = pending && ll == 41 && tt_goid_from_hex(line + 1, peeled) == 0;
			if (ok)
				rc = fn(ud, pending, id, peeled);
			pending = NULL;
		} else {
			if (pending)
				rc = fn(ud, pending, id, NULL);
			pending = NULL;
			if (rc == 0 && line[0] != '#') { /* "#": the "# pack-refs with:" header */
				ok = ll > 41 && line[40] == ' ' && tt_goid_from_hex(line, id) == 0;
				pending = line + 41;
			}
		}
		if (!ok)
			rc = tether_error_set(TETHER_ERROR, "damaged %s line %zu: not a packed ref", path, lineno + 1);
		line = nl ? nl + 1 : NULL;
	}
	if (rc == 0 && pending)
		rc = fn(ud, pending, id, NULL);
	free(path);
	free(text);
	return rc;
}

struct packed_find {
	const char *name;
	unsigned char *id;
	int found;
};

static int packed_match(void *ud, const char *name, const unsigned char id[20], const unsigned char *peeled)
{
	struct packed_find *f = ud;
	(void)peeled;
	if (!f->found && strcmp(name, f->name) == 0) {
		memcpy(f->id, id, 20);
		f->found = 1;
	}
	return 0; /* read on: a damaged line later refuses the file */
}

static int packed_lookup(const struct tt_grepo *r, const char *name, unsigned char id[20])
{
	struct packed_find f = {name, id, 0};
	int rc = packed_each(r, packed_match, &f);
	return rc < 0 ? rc : f.found ? 0 : 1;
}

int tt_gref_resolve(const struct tt_grepo *r, const char *name, unsigned char id[20], char **symref)
{
	char *owned = NULL;
	const char *first = name;
	int rc = 1, depth;

	if (symref)
		*symref = NULL;
	for (depth = 0; depth < 10; depth++) {
		if (!valid_name(name)) {
			rc = 1;
			break;
		}
		char *path = join(per_worktree(name) ? r->gitdir : r->commondir, name);
		char *text = path ? tt_read_small(path, 4096) : NULL;
		int missing = !text && (errno == ENOENT || errno == ENOTDIR || errno == EISDIR);
		free(path);
		if (!text && !missing) {
			rc = tether_error_set(TETHER_EIO, "cannot read the git ref %s", name);
			break;
		}
		if (!text) {
			rc = packed_lookup(r, name, id);
			break;
		}
		char *t = trim(text);
		if (strncmp(t, "ref:", 4) == 0) {
			char *target = strdup(trim(t + 4));
			free(text);
			if (!target) {
				rc = tt_fail_oom();
				break;
			}
			if (symref && depth == 0 && !(*symref = strdup(target))) {
				free(target);
				rc = tt_fail_oom();
				break;
			}
			free(owned);
			name = owned = target;
			continue;
		}
		rc = strlen(t) == 40 && tt_goid_from_hex(t, id) == 0
		         ? 0
		         : tether_error_set(TETHER_ERROR, "damaged git ref %s in %s", name, r->gitdir);
		free(text);
		break;
	}
	if (depth == 10)
		rc = tether_error_set(TETHER_ERROR, "symbolic ref loop (or a chain over 10 deep) at the git ref %s in %s",
		                      first, r->gitdir);
	free(owned);
	if (rc != 0 && symref && rc < 0) {
		free(*symref);
		*symref = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Every ref under a prefix                                            */
/* ------------------------------------------------------------------ */

struct ref_item {
	char *name;
	unsigned char id[20], peeled[20];
	int has_peeled, loose, symbolic;
};

struct ref_list {
	struct ref_item *v;
	size_t n, cap;
	const char *prefix;
	size_t prefix_len;
	/* as_libgit2: a ref this reader would skip or refuse, which libgit2
	 * might list, sets doubt instead (the caller then asks libgit2). */
	int as_libgit2, doubt;
};

static int list_add(struct ref_list *l, const char *name, const unsigned char id[20], const unsigned char *peeled,
                    int loose, int symbolic)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct ref_item *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return tt_fail_oom();
		l->v = v;
		l->cap = cap;
	}
	struct ref_item *it = &l->v[l->n];
	memset(it, 0, sizeof *it);
	if (!(it->name = strdup(name)))
		return tt_fail_oom();
	memcpy(it->id, id, 20);
	if (peeled) {
		memcpy(it->peeled, peeled, 20);
		it->has_peeled = 1;
	}
	it->loose = loose;
	it->symbolic = symbolic;
	l->n++;
	return 0;
}

static int packed_collect(void *ud, const char *name, const unsigned char id[20], const unsigned char *peeled)
{
	struct ref_list *l = ud;
	if (strncmp(name, l->prefix, l->prefix_len) != 0)
		return 0;
	if (!valid_name(name)) {
		l->doubt = 1;
		return 0;
	}
	return list_add(l, name, id, peeled, 0, 0);
}

/* The loose refs in `base`/`rel` (a directory, "refs/..."), recursively. A
 * name git would not write (a "*.lock" file of a writer at work, a name
 * with forbidden characters) is skipped, as git skips it. */
static int loose_collect(const struct tt_grepo *r, const char *base, const char *rel, struct ref_list *l,
                         int depth)
{
	char *dir = join(base, rel);
	DIR *d = dir ? opendir(dir) : NULL;
	int rc = 0;

	if (!dir)
		return tt_fail_oom();
	if (!d) {
		int e = errno;
		free(dir);
		return e == ENOENT || e == ENOTDIR ? 0 : tether_error_set(TETHER_EIO, "cannot list the git refs in %s/%s",
		                                                           base, rel);
	}
	if (depth > 64) {
		closedir(d);
		free(dir);
		return tether_error_set(TETHER_ERROR, "git refs nest deeper than 64 directories in %s", base);
	}
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		const char *n = de->d_name;
		size_t nl = strlen(n);
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || (nl >= 5 && strcmp(n + nl - 5, ".lock") == 0))
			continue;
		if (n[0] == '.') {
			l->doubt = 1; /* git skips it; libgit2 1.5's iterator lists it */
			continue;
		}
		char *name = join(rel, n);
		char *path = name ? join(base, name) : NULL;
		struct stat st;
		if (!path) {
			free(name);
			rc = tt_fail_oom();
			break;
		}
		if (lstat(path, &st) < 0) {
			/* gone since the listing: a ref being deleted */
		} else if (S_ISDIR(st.st_mode)) {
			/* A directory only matters when the prefix can lie inside it. */
			size_t k = strlen(name);
			if (strncmp(name, l->prefix, k < l->prefix_len ? k : l->prefix_len) == 0)
				rc = loose_collect(r, base, name, l, depth + 1);
		} else if (strncmp(name, l->prefix, l->prefix_len) != 0) {
			/* outside the prefix */
		} else if (!S_ISREG(st.st_mode) || !valid_name(name)) {
			l->doubt = 1; /* a symlink, a name git would not write */
		} else {
			char *text = tt_read_small(path, 4096);
			char *t = text ? trim(text) : NULL;
			unsigned char id[20];
			if (!text) {
				if (errno != ENOENT)
					rc = tether_error_set(TETHER_EIO, "cannot read the git ref %s", name);
			} else if (strncmp(t, "ref:", 4) == 0) {
				int got = tt_gref_resolve(r, name, id, NULL);
				/* A symbolic ref to nothing names no commit: git skips it too. */
				if (got == 0)
					rc = list_add(l, name, id, NULL, 1, 1);
				else if (got < 0 && l->as_libgit2)
					l->doubt = 1;
				else if (got < 0)
					rc = got;
				else
					l->doubt = 1; /* libgit2 refuses the walk over it */
			} else if (strlen(t) == 40 && tt_goid_from_hex(t, id) == 0) {
				rc = list_add(l, name, id, NULL, 1, 0);
			} else if (l->as_libgit2) {
				l->doubt = 1; /* libgit2's iterator skips it, and lists a packed one it hid */
			} else {
				rc = tether_error_set(TETHER_ERROR, "damaged git ref %s in %s", name, base);
			}
			free(text);
		}
		free(path);
		free(name);
	}
	closedir(d);
	free(dir);
	return rc;
}

static int by_name_loose_first(const void *pa, const void *pb)
{
	const struct ref_item *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);
	return c ? c : b->loose - a->loose;
}

/* Does the config set core.ignorecase or core.precomposeunicode? libgit2
 * then lists loose refs in another order. Read coarsely: any mention of
 * either key with a true-looking value counts. */
static int config_folds_names(const struct tt_grepo *r)
{
	char *path = join(r->commondir, "config"), *text = path ? tt_read_small(path, 1 << 20) : NULL, *save = NULL;
	int folds = 0;
	for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line && !folds; line = strtok_r(NULL, "\n", &save)) {
		for (char *c = line; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		folds = (strstr(line, "ignorecase") || strstr(line, "precomposeunicode")) &&
		        (strstr(line, "true") || strstr(line, "yes") || strstr(line, "on") || strchr(line, '1'));
	}
	free(text);
	free(path);
	return folds;
}

static int each_ref(const struct tt_grepo *r, const char *prefix, int as_libgit2, tt_gref_cb cb,
                    tt_gref_where_cb where_cb, void *ud)
{
	struct ref_list l = {.prefix = prefix, .prefix_len = strlen(prefix), .as_libgit2 = as_libgit2};
	int rc = strncmp(prefix, "refs/", 5) == 0 ? 0 : tether_error_set(TETHER_ERROR, "not a ref prefix: %s", prefix);

	if (rc == 0)
		rc = loose_collect(r, r->commondir, "refs", &l, 0);
	/* A linked worktree keeps its own refs/worktree and refs/bisect
	 * (which libgit2 1.5's iterator does not list). */
	if (rc == 0 && !as_libgit2 && strcmp(r->gitdir, r->commondir) != 0) {
		static const char *const own[] = {"refs/worktree", "refs/bisect", "refs/rewritten"};
		for (size_t i = 0; i < sizeof own / sizeof *own && rc == 0; i++)
			rc = loose_collect(r, r->gitdir, own[i], &l, 1);
	}
	if (rc == 0)
		rc = packed_each(r, packed_collect, &l);
	if (rc == 0 && as_libgit2 && (l.doubt || config_folds_names(r)))
		rc = 1;
	if (rc == 0 && l.n)
		qsort(l.v, l.n, sizeof *l.v, by_name_loose_first);
	/* Byte order of name; as libgit2, every loose ref first, then the
	 * packed ones that no loose one hides. */
	for (int pass = 0; pass < (as_libgit2 ? 2 : 1) && rc == 0; pass++) {
		for (size_t i = 0; i < l.n && rc == 0; i++) {
			const struct ref_item *it = &l.v[i];
			if (i && strcmp(it->name, l.v[i - 1].name) == 0)
				continue; /* a packed ref a loose one of the same name hides */
			if (as_libgit2 && it->loose != (pass == 0))
				continue;
			const unsigned char *peeled = it->has_peeled ? it->peeled : NULL;
			rc = where_cb ? where_cb(ud, it->name, it->id, peeled, it->symbolic, it->loose)
			              : cb(ud, it->name, it->id, peeled, it->symbolic);
		}
	}
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i].name);
	free(l.v);
	return rc;
}

int tt_gref_each(const struct tt_grepo *r, const char *prefix, tt_gref_cb cb, void *ud)
{
	return each_ref(r, prefix, 0, cb, NULL, ud);
}

int tt_gref_each_where(const struct tt_grepo *r, const char *prefix, tt_gref_where_cb cb, void *ud)
{
	return each_ref(r, prefix, 0, NULL, cb, ud);
}

int tt_gref_each_as_libgit2(const struct tt_grepo *r, const char *prefix, tt_gref_cb cb, void *ud)
{
	return each_ref(r, prefix, 1, cb, NULL, ud);
}
