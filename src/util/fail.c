/* See fail.h. */
#include "util/fail.h"

#include <tether/backend.h>

#include <errno.h>
#include <string.h>

int tt_fail_oom(void)
{
	return tether_error_set(TETHER_ERROR, "out of memory");
}

int tt_fail_errno(const char *what, const char *path)
{
	return tether_error_set(TETHER_EIO, "%s '%s': %s", what, path, strerror(errno));
}
