#include "util/git_error.h"

#include <tether/backend.h>

#include <git2.h>
#include <stdio.h>

int tt_git_code(int git_rc)
{
	const git_error *e = git_error_last();

	switch (git_rc) {
	case GIT_ENOTFOUND:
		return TETHER_ENOTFOUND;
	case GIT_ELOCKED:
		/* A file git locks (index.lock, a ref's .lock) is held: git does
		 * not wait, so this is a failed VCS operation (exit 1), not the
		 * lock timeout TETHER_ELOCK (exit 4) reserves for tether's locks. */
		return TETHER_ERROR;
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

int tt_git_failv(int git_rc, const char *fmt, va_list ap)
{
	const git_error *e = git_error_last();
	char what[1024];

	vsnprintf(what, sizeof what, fmt, ap);
	return tether_error_set(tt_git_code(git_rc), "%s: %s", what, e && e->message ? e->message : "libgit2 error");
}

int tt_git_fail(int git_rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = tt_git_failv(git_rc, fmt, ap);
	va_end(ap);
	return rc;
}
