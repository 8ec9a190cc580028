/* An object resource of the JSON API as the store interface says it. The
 * generation names the object's content (a new one for every write, kept
 * by a metadata change), so it is both the version token conditional
 * writes compare (ifGenerationMatch) and the version id a versioned
 * bucket reads back (generation=). */
#include "store/gcs/gcs.h"

#include <tether/backend.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The API writes int64 and uint64 values as decimal strings. */
static int decimal(const json_t *v, uint64_t *out)
{
	const char *s = json_string_value(v);
	if (!s || !*s || strlen(s) > 20 || strspn(s, "0123456789") != strlen(s))
		return -1;
	errno = 0;
	unsigned long long n = strtoull(s, NULL, 10);
	if (errno)
		return -1;
	*out = n;
	return 0;
}

int tt_gcs_is_generation(const char *s)
{
	return s && *s && strlen(s) <= 20 && strspn(s, "0123456789") == strlen(s);
}

int tt_gcs_object_stat(const json_t *obj, const char *what, struct tether_store_stat *st)
{
	memset(st, 0, sizeof *st);
	uint64_t size, generation;
	if (decimal(json_object_get(obj, "size"), &size) || decimal(json_object_get(obj, "generation"), &generation))
		return tether_error_set(TETHER_EIO, "%s: the server's object resource has no valid size and generation",
		                        what);
	st->exists = 1;
	st->size = size;
	snprintf(st->version.token, sizeof st->version.token, "%llu", (unsigned long long)generation);
	snprintf(st->version_id, sizeof st->version_id, "%llu", (unsigned long long)generation);
	/* A noncurrent version of a versioned bucket carries the time it was
	 * replaced or deleted. */
	st->is_latest = json_object_get(obj, "timeDeleted") == NULL;
	return 0;
}
