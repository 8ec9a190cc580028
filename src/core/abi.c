/* Checking the version and size of a struct from code built apart from the
 * engine (abi.h). */
#include "core/abi.h"

#include <stdio.h>
#include <string.h>

static int refuse(int code, const char *what, const char *origin, const char *fmt, uint32_t a, uint32_t b)
{
	char why[256];
	snprintf(why, sizeof why, fmt, a, b);
	if (origin)
		return tether_error_set(code, "module %s: %s %s", origin, what, why);
	return tether_error_set(code, "%s %s", what, why);
}

static int check(int code, const char *what, const char *origin, uint32_t version, uint32_t size,
                 uint32_t oldest, uint32_t newest, size_t min_size, size_t max_size)
{
	if (version > newest)
		return refuse(code, what, origin,
		              "is version %u, newer than this tether's version %u: rebuild it against this "
		              "tether's headers, or upgrade tether", version, newest);
	if (version < oldest)
		return refuse(code, what, origin,
		              "is version %u, older than the oldest this tether reads (%u): rebuild it against "
		              "this tether's headers (is it initialised with its *_INIT macro?)", version, oldest);
	if (size < min_size || size > max_size)
		return refuse(code, what, origin,
		              "has size %u, which no version up to %u has: is it initialised with its *_INIT "
		              "macro?", size, newest);
	return 0;
}

int tt_abi_check(const char *what, const char *origin, uint32_t version, uint32_t size, uint32_t oldest,
                 uint32_t newest, size_t min_size, size_t max_size)
{
	return check(TETHER_ERROR, what, origin, version, size, oldest, newest, min_size, max_size);
}

int tt_abi_copy_opts(const char *what, const void *in, uint32_t newest, void *out, size_t out_size)
{
	memset(out, 0, out_size);
	if (!in)
		return 0;
	/* version and size come first in every option struct. */
	struct head {
		uint32_t version;
		uint32_t size;
	} h;
	memcpy(&h, in, sizeof h);
	int rc = check(TETHER_EUSAGE, what, NULL, h.version, h.size, 1, newest, sizeof h, out_size);
	if (rc)
		return rc;
	memcpy(out, in, h.size);
	return 0;
}
