/* See gitrefs.h. Refs: a loose file (40 hex, or "ref: <name>") in the
 * checkout's git directory for HEAD and the per-worktree refs, in the
 * common directory for the rest, then packed-refs in the common
 * directory (git's Documentation/gitrepository-layout.txt). */
#include "vcs/gitrefs.h"
#include "vcs/gitodb.h"

#include <tether/backend.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int oom(void)
{
	return tether_error_set(TETHER_ERROR, "out of memory");
}

/* The whole of a small file, NUL-terminated; NULL (errno set) on failure. */
static char *slurp(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max &&
	    (buf = malloc((size_t)st.st_size + 1))) {
		ssize_t n = read(fd, buf, (size_t)st.st_size);
		if (n != st.st_size) {
			free(buf);
			buf = NULL;
			errno = EIO;
		} else {
			buf[n] = '\0';
		}
	} else if (!buf) {
		errno = EIO;
	}
	close(fd);
	return buf;
}

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
	char *text = slurp(path, 1 << 20), *save = NULL;
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

static char *real_dup(const char *path)
{
	char buf[PATH_MAX];
	return realpath(path, buf) ? strdup(buf) : NULL;
}

/* The git directory a ".git" file names (relative to the file's directory). */
static char *gitdir_from_file(const char *dir, const char *file)
{
	char *text = slurp(file, 1 << 16), *out = NULL;
	if (text && strncmp(text, "gitdir:", 7) == 0) {
		char *target = trim(text + 7);
		char *p = target[0] == '/' ? strdup(target) : join(dir, target);
		out = p ? real_dup(p) : NULL;
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
			return oom();
		if (lstat(dotgit, &st) == 0) {
			if (S_ISDIR(st.st_mode) && looks_like_gitdir(dotgit))
				r->gitdir = real_dup(dotgit);
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
		return oom();
	char *cpath = join(r->gitdir, "commondir"), *ctext = cpath ? slurp(cpath, 1 << 16) : NULL;
	free(cpath);
	if (ctext) {
		char *t = trim(ctext), *p = t[0] == '/' ? strdup(t) : join(r->gitdir, t);
		r->commondir = p ? real_dup(p) : NULL;
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
 * damaged line may have held. */
static int packed_lookup(const struct tt_grepo *r, const char *name, unsigned char id[20])
{
	char *path = join(r->commondir, "packed-refs"), *text = path ? slurp(path, 256u << 20) : NULL;
	int rc = 1, after_ref = 0;
	unsigned char scratch[20];
	if (!text) {
		free(path);
		return 1;
	}
	size_t n = strlen(name), lineno = 0;
	for (char *line = text; line && *line; lineno++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		size_t ll = strlen(line);
		if (ll && line[ll - 1] == '\r')
			line[--ll] = '\0';
		int ok;
		if (line[0] == '#') {
			ok = 1; /* the "# pack-refs with:" header */
			after_ref = 0;
		} else if (line[0] == '^') {
			ok = after_ref && ll == 41 && tt_goid_from_hex(line + 1, scratch) == 0;
			after_ref = 0;
		} else {
			ok = ll > 41 && line[40] == ' ' && tt_goid_from_hex(line, scratch) == 0;
			after_ref = 1;
			if (ok && rc == 1 && ll == 41 + n && memcmp(line + 41, name, n) == 0) {
				memcpy(id, scratch, 20);
				rc = 0;
			}
		}
		if (!ok) {
			rc = tether_error_set(TETHER_ERROR, "damaged %s line %zu: not a packed ref", path, lineno + 1);
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(path);
	free(text);
	return rc;
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
		char *text = path ? slurp(path, 4096) : NULL;
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
				rc = oom();
				break;
			}
			if (symref && depth == 0 && !(*symref = strdup(target))) {
				free(target);
				rc = oom();
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
