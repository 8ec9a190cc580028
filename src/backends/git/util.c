/* The git backend's small helpers on libgit2: start-up, ids, paths. Local copies, because a module sees only libtether's TETHER_API
 * functions. */
#include "backends/git/gitbe.h"
#include "util/git_error.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_once_t libgit2_once = PTHREAD_ONCE_INIT;
static int libgit2_init_rc;

static void libgit2_init_once(void)
{
	libgit2_init_rc = git_libgit2_init();
	/* git_signature_now asks libc for the local time zone, whose first use
	 * reads TZ and fills libc's zone state: done here, once, rather than by
	 * the first of several pins racing on several threads (ThreadSanitizer
	 * reports that race; later reads only look the state up). */
	tzset();
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

/* The same resolution as every local locator: libtether's. */
char *gb_path_resolve(const char *path, const char *cwd)
{
	return tether_path_resolve(path, cwd);
}

const char *gb_hex(const git_oid *id, char buf[GB_HEX_SIZE])
{
	return git_oid_tostr(buf, GB_HEX_SIZE, id);
}

/* holder["sha"] as an object id; `what` names the holder in the message. */
int gb_parse_sha(const json_t *holder, const char *what, git_oid *out)
{
	unsigned char raw[GB_OID_SIZE];
	int rc = gb_parse_sha20(holder, what, raw);

	if (rc == 0)
		git_oid_fromraw(out, raw);
	return rc;
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
