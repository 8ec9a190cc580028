/* tether_path_resolve, libtether's exported face of tt_path_resolve. Kept
 * out of fsutil.c, which is in tether-modutil: that library is compiled
 * without TETHER_BUILDING, so all it defines stays hidden, and a module's
 * copy of the helpers never exports (or interposes) libtether's API. */
#include "util/fsutil.h"

#include <tether/backend.h>

char *tether_path_resolve(const char *path, const char *cwd)
{
	return tt_path_resolve(path, cwd ? cwd : ".");
}
