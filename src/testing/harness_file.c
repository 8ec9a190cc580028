/* The harness for `file`: each system is a fresh directory under $TMPDIR
 * holding one file; a mutate adds another. The directory is the object,
 * so fingerprints carry listings and diffs compare them. */
#include "testing/harnesses.h"

#include "testing/suite.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long writes;

char *tt_harness_mkdtemp(const char *prefix)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	size_t n = strlen(tmp) + strlen(prefix) + 16;
	char *dir = malloc(n);
	if (!dir)
		return NULL;
	snprintf(dir, n, "%s/%s-XXXXXX", tmp, prefix);
	if (!mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

int tt_harness_scratch_child(const char *prefix, const char *name, char *out, size_t len)
{
	char *dir = tt_harness_mkdtemp(prefix);
	char real[PATH_MAX];
	if (!dir)
		return tether_error_set(TETHER_EIO, "cannot make a scratch directory");
	int ok = realpath(dir, real) != NULL;
	free(dir);
	if (!ok)
		return tether_error_set(TETHER_EIO, "cannot resolve a scratch directory");
	if ((size_t)snprintf(out, len, "%s/%s", real, name) >= len)
		return tether_error_set(TETHER_EIO, "scratch path too long");
	return 0;
}

int tt_harness_write(const char *dir, const char *name, const char *text, int exclusive)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return tether_error_set(TETHER_EIO, "path too long: %s/%s", dir, name);
	FILE *f = fopen(path, exclusive ? "wx" : "w");
	int ok = f && fputs(text, f) >= 0;
	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : tether_error_set(TETHER_EIO, "cannot write %s", path);
}

void tt_harness_remove_parent(void *ud, const json_t *locator)
{
	(void)ud;
	const char *path = json_string_value(json_object_get(locator, "uri"));
	char copy[PATH_MAX];
	if (!path || strlen(path) >= sizeof copy)
		return;
	strcpy(copy, path);
	conf_rmtree(dirname(copy));
}

static int new_object(void *ud, json_t **locator)
{
	(void)ud;
	char *dir = tt_harness_mkdtemp("tether-conformance-file");
	char real[PATH_MAX];
	if (!dir)
		return tether_error_set(TETHER_EIO, "cannot make a scratch directory");
	/* The locator holds the resolved path, as file's make_locator stores it. */
	int rc = realpath(dir, real) ? tt_harness_write(real, "a.txt", "a\n", 0) : tether_error_set(TETHER_EIO, "realpath %s", dir);
	free(dir);
	if (!rc)
		*locator = json_pack("{s:s}", "uri", real);
	return rc;
}

static int mutate(void *ud, const json_t *locator, const json_t *working_ref)
{
	(void)ud;
	(void)working_ref; /* file has no forks */
	char name[32], text[32];
	snprintf(name, sizeof name, "m%lu.txt", ++writes);
	snprintf(text, sizeof text, "%lu\n", writes);
	return tt_harness_write(json_string_value(json_object_get(locator, "uri")), name, text, 0);
}

static void cleanup(void *ud, const json_t *locator)
{
	(void)ud;
	const char *dir = json_string_value(json_object_get(locator, "uri"));
	if (dir)
		conf_rmtree(dir);
}

const struct tether_harness *tt_harness_file(void)
{
	static const struct tether_harness h = {
		TETHER_HARNESS_INIT,
		.new_object = new_object,
		.mutate = mutate,
		.cleanup = cleanup,
	};
	return &h;
}
