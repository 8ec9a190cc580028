/* The conformance harness for dirsnap: how to make a fresh store, change
 * a branch, read a fork, and throw the store away. The suite does the rest.
 *
 *   cc -std=c17 -shared -fPIC harness.c $(pkg-config --cflags tether) -o harness.so
 *   tether-conformance dirsnap --harness ./harness.so
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <tether/testing.h>

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Every write appends a line no earlier write did. */
static unsigned long writes;

static const char *string_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int append(const char *store, const char *branch, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/branches/%s", store, branch);
	FILE *f = fopen(path, "a");
	int ok = f && fputs(text, f) >= 0;
	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : tether_error_set(TETHER_EIO, "cannot write %s", path);
}

static int new_object(void *ud, json_t **locator)
{
	(void)ud;
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], branches[PATH_MAX + 16];
	snprintf(dir, sizeof dir, "%s/dirsnap-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return tether_error_set(TETHER_EIO, "cannot make a store under %s", tmp && *tmp ? tmp : "/tmp");
	snprintf(branches, sizeof branches, "%s/branches", dir);
	if (mkdir(branches, 0755) != 0)
		return tether_error_set(TETHER_EIO, "cannot make %s", branches);
	int rc = append(dir, "main", "created\n");
	if (!rc)
		*locator = json_pack("{s:s, s:s}", "path", dir, "branch", "main");
	return rc;
}

static int mutate(void *ud, const json_t *locator, const json_t *working_ref)
{
	(void)ud;
	char line[64];
	snprintf(line, sizeof line, "write %lu\n", ++writes);
	const char *branch = string_of(working_ref ? working_ref : locator, "branch");
	return append(string_of(locator, "path"), branch ? branch : "main", line);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static void cleanup(void *ud, const json_t *locator)
{
	(void)ud;
	nftw(string_of(locator, "path"), remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

TETHER_API const struct tether_harness *tether_harness_entry(void)
{
	static const struct tether_harness harness = {
		TETHER_HARNESS_INIT,
		.backend = NULL, /* the runner finds kind dirsnap on TETHER_MODULE_PATH */
		.new_object = new_object,
		.mutate = mutate,
		.cleanup = cleanup,
	};
	return &harness;
}
