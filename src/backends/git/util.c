/* The git backend's small helpers: libgit2 start-up, errors, strings and
 * paths. Local copies, because a module sees only libtether's TETHER_API
 * functions. */
#include "backends/git/gitbe.h"
#include "util/git_error.h"

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
		return tt_git_fail(libgit2_init_rc, "cannot initialise libgit2");
	return 0;
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

/* The same resolution as every local locator: libtether's. */
char *gb_path_resolve(const char *path, const char *cwd)
{
	return tether_path_resolve(path, cwd);
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
		return tt_git_fail(-1, "cannot parse sha %s", sha);
	return 0;
}

/* The remote URL of this object in .tether/secrets.toml, or NULL. */
const char *gb_secret_remote(const struct tether_bctx *ctx)
{
	const char *url = ctx ? json_string_value(json_object_get(ctx->secrets, "remote")) : NULL;

	return url && *url ? url : NULL;
}

/* Delete a reference if it is there: a tag pin or a working branch. */
int gb_delete_ref(const struct gb_obj *o, const char *refname)
{
	git_reference *ref = NULL;
	int rc = git_reference_lookup(&ref, o->repo, refname);

	if (rc == GIT_ENOTFOUND)
		return 0;
	if (rc == 0)
		rc = git_reference_delete(ref);
	git_reference_free(ref);
	return rc < 0 ? tt_git_fail(rc, "git repository %s: cannot delete %s", o->path, refname) : 0;
}
