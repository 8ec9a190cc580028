/* The git backend's small helpers: libgit2 start-up, errors, strings and
 * paths. Local copies, because a module sees only libtether's TETHER_API
 * functions. */
#include "backends/git/gitbe.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t libgit2_once = PTHREAD_ONCE_INIT;
static int libgit2_init_rc;

static void libgit2_init_once(void)
{
	libgit2_init_rc = git_libgit2_init();
}

/* libgit2's globals are set up once per process and never torn down: the
 * module stays loaded (a test may call git_libgit2_shutdown itself). */
int gb_libgit2_ready(void)
{
	pthread_once(&libgit2_once, libgit2_init_once);
	if (libgit2_init_rc < 0)
		return gb_fail_git(libgit2_init_rc, "cannot initialise libgit2");
	return 0;
}

static int code_for(int git_rc)
{
	const git_error *e = git_error_last();

	switch (git_rc) {
	case GIT_ENOTFOUND:
		return TETHER_ENOTFOUND;
	case GIT_ELOCKED:
		return TETHER_ELOCK;
	case GIT_EEXISTS:
	case GIT_EMODIFIED:
	case GIT_ECONFLICT:
	case GIT_EUNMERGED:
	case GIT_ENONFASTFORWARD:
	case GIT_EOWNER:
		return TETHER_EREFUSED;
	default:
		break;
	}
	if (e && e->klass == GIT_ERROR_OS)
		return TETHER_EIO;
	return TETHER_ERROR;
}

/* Report a libgit2 failure: our context, then libgit2's own explanation. */
int gb_fail_git(int git_rc, const char *fmt, ...)
{
	const git_error *e = git_error_last();
	char what[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return tether_error_set(code_for(git_rc), "%s: %s", what,
	                        e && e->message ? e->message : "libgit2 error");
}

int gb_fail_oom(void)
{
	return tether_error_set(TETHER_ERROR, "out of memory");
}

char *gb_strdupf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* Lexically normalise an absolute path: no ".", "..", doubled or trailing
 * slashes. */
static char *normalize(const char *path)
{
	char *out = malloc(strlen(path) + 2);
	size_t o = 0;
	const char *p = path;

	if (!out)
		return NULL;
	while (*p) {
		while (*p == '/')
			p++;
		const char *seg = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - seg);
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			continue;
		}
		out[o++] = '/';
		memcpy(out + o, seg, n);
		o += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

/* realpath() the longest existing prefix and append the rest, so a path
 * that does not exist yet still resolves through symlinked parents. */
static char *resolve_existing_prefix(char *path)
{
	size_t n = strlen(path);

	for (size_t cut = n; cut > 0; cut--) {
		if (cut != n && path[cut] != '/')
			continue;
		char saved = path[cut], real[PATH_MAX];
		path[cut] = '\0';
		char *r = realpath(path, real);
		path[cut] = saved;
		if (r) {
			char *joined = gb_strdupf("%s%s", strcmp(real, "/") == 0 ? "" : real, path + cut);
			char *norm = joined ? normalize(joined) : NULL;
			free(joined);
			return norm;
		}
	}
	return strdup(path);
}

/* As libtether's tt_path_resolve: absolute against cwd, a leading "~"
 * expanded, "file://" folded, normalised, symlinks of the existing part
 * resolved. NULL only when out of memory. */
char *gb_path_resolve(const char *path, const char *cwd)
{
	char *abs, *norm, *resolved;

	if (strncmp(path, "file://", 7) == 0)
		path += 7;
	if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
		const char *home = getenv("HOME");
		abs = gb_strdupf("%s%s", home ? home : "/", path + 1);
	} else if (path[0] == '/') {
		abs = strdup(path);
	} else {
		abs = gb_strdupf("%s/%s", cwd ? cwd : ".", path);
	}
	norm = abs ? normalize(abs) : NULL;
	free(abs);
	resolved = norm ? resolve_existing_prefix(norm) : NULL;
	free(norm);
	return resolved;
}

static int is_at_or_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return 1;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Is one of two absolute paths the other, or inside it? */
int gb_paths_overlap(const char *a, const char *b)
{
	return is_at_or_under(a, b) || is_at_or_under(b, a);
}

/* A committed `remote` must be the name of a configured remote. Anything
 * that reads as a URL, an scp-style address or a path is not one: those
 * go in .tether/secrets.toml, which is never committed. */
int gb_looks_like_url(const char *remote)
{
	return strstr(remote, "://") || strchr(remote, ':') || strchr(remote, '\\') ||
	       remote[0] == '/' || remote[0] == '.' || remote[0] == '~';
}

const char *gb_hex(const git_oid *id, char buf[GB_HEX_SIZE])
{
	return git_oid_tostr(buf, GB_HEX_SIZE, id);
}

static int is_full_hex(const char *s)
{
	size_t i;

	for (i = 0; i < GIT_OID_HEXSZ; i++)
		if (!s[i] || !strchr("0123456789abcdefABCDEF", s[i]))
			return 0;
	return s[i] == '\0';
}

/* holder["sha"] as an object id; `what` names the holder in the message. */
int gb_parse_sha(const json_t *holder, const char *what, git_oid *out)
{
	const char *sha = json_string_value(json_object_get(holder, "sha"));

	if (!sha || !is_full_hex(sha))
		return tether_error_set(TETHER_ECONFIG, "the %s has no valid \"sha\" (40 hex digits)", what);
	if (git_oid_fromstr(out, sha) < 0)
		return gb_fail_git(-1, "cannot parse sha %s", sha);
	return 0;
}

/* The remote URL of this object in .tether/secrets.toml, or NULL. */
const char *gb_secret_remote(const struct tether_bctx *ctx)
{
	const char *url = ctx ? json_string_value(json_object_get(ctx->secrets, "remote")) : NULL;

	return url && *url ? url : NULL;
}
