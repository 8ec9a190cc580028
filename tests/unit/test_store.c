/* The byte-store layer on the local filesystem: whole-object reads and
 * writes, the three put modes, conditional copies, listings that skip
 * staging files, key checks, and removing an emptied root. */
#include "check.h"

#include "store/store.h"

#include <tether/backend.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static int put(struct tt_store *s, const char *key, const char *text, enum tt_put_mode mode,
               const struct tt_version *expect)
{
	return tt_store_put(s, key, text, strlen(text), mode, expect, NULL);
}

static int get_is(struct tt_store *s, const char *key, const char *want)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int ok = tt_store_get(s, key, &data, &len, NULL) == 0 && len == strlen(want) && memcmp(data, want, len) == 0;
	free(data);
	return ok;
}

/* No file named like a staging file anywhere under dir. */
static int no_staging(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int clean = 1;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat st;
		if (strchr(e->d_name, '#'))
			clean = 0;
		else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			clean &= no_staging(path);
	}
	if (d)
		closedir(d);
	return clean;
}

static void test_open(void)
{
	struct tt_store *s = NULL;
	CHECK(tt_store_open("relative/path", NULL, &s) == TETHER_EUSAGE && !s);
	CHECK(tt_store_open("s3://bucket/prefix", NULL, &s) == TETHER_EUSAGE && !s);
	CHECK(strstr(tether_error_last(), "s3://") != NULL);
	char uri[300];
	snprintf(uri, sizeof uri, "file://%s/nothing-yet", root);
	CHECK(tt_store_open(uri, NULL, &s) == 0);
	int exists = 1;
	CHECK(tt_store_head(s, "repo", &exists, NULL, NULL) == 0 && !exists);
	CHECK(tt_store_atomic_cas(s) == 0);
	tt_store_close(s);
}

static void test_put_modes(struct tt_store *s)
{
	struct tt_version v1, v2, v3;
	CHECK(put(s, "a/b/obj", "one", TT_PUT_IF_ABSENT, NULL) == 0);
	CHECK(get_is(s, "a/b/obj", "one"));
	CHECK(put(s, "a/b/obj", "two", TT_PUT_IF_ABSENT, NULL) == TETHER_EREFUSED);
	CHECK(get_is(s, "a/b/obj", "one"));
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(tt_store_get(s, "a/b/obj", &data, &len, &v1) == 0 && v1.token[0]);
	free(data);
	CHECK(tt_store_put(s, "a/b/obj", "two", 3, TT_PUT_IF_MATCH, &v1, &v2) == 0);
	CHECK(strcmp(v1.token, v2.token) != 0);
	CHECK(get_is(s, "a/b/obj", "two"));
	/* The version read before the last write is stale now. */
	CHECK(put(s, "a/b/obj", "three", TT_PUT_IF_MATCH, &v1) == TETHER_EREFUSED);
	CHECK(get_is(s, "a/b/obj", "two"));
	CHECK(put(s, "a/b/obj", "three", TT_PUT_IF_MATCH, NULL) == TETHER_ERROR);
	/* A conditional write on something absent is refused too. */
	CHECK(put(s, "a/b/missing", "x", TT_PUT_IF_MATCH, &v2) == TETHER_EREFUSED);
	CHECK(put(s, "a/b/obj", "four", TT_PUT_OVERWRITE, NULL) == 0);
	int exists = 0;
	uint64_t size = 0;
	CHECK(tt_store_head(s, "a/b/obj", &exists, &v3, &size) == 0 && exists && size == 4);
	CHECK(strcmp(v3.token, v2.token) != 0);
	CHECK(tt_store_get(s, "nope", &data, &len, NULL) == TETHER_ENOTFOUND);
	CHECK(strstr(tether_error_last(), "nope") != NULL);
	CHECK(no_staging(root));
}

static void test_copy(struct tt_store *s)
{
	struct tt_version v, stale;
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(put(s, "src", "original", TT_PUT_OVERWRITE, NULL) == 0);
	CHECK(tt_store_get(s, "src", &data, &len, &stale) == 0);
	free(data);
	CHECK(put(s, "src", "current", TT_PUT_OVERWRITE, NULL) == 0);
	CHECK(tt_store_get(s, "src", &data, &len, &v) == 0);
	free(data);
	CHECK(tt_store_copy(s, "src", "backup/one", &stale) == TETHER_EREFUSED);
	int exists = 1;
	CHECK(tt_store_head(s, "backup/one", &exists, NULL, NULL) == 0 && !exists);
	CHECK(tt_store_copy(s, "src", "backup/one", &v) == 0);
	CHECK(get_is(s, "backup/one", "current"));
	CHECK(tt_store_copy(s, "src", "backup/one", NULL) == TETHER_EREFUSED);
	/* The copy keeps its bytes when the source is replaced. */
	CHECK(put(s, "src", "replaced", TT_PUT_OVERWRITE, NULL) == 0);
	CHECK(get_is(s, "backup/one", "current"));
	CHECK(tt_store_delete(s, "backup/one") == 0 && tt_store_delete(s, "backup/one") == 0);
}

static void test_keys(struct tt_store *s)
{
	const char *bad[] = {"", "/abs", "../up", "a/../b", "a//b", "a/", "./a", "a\\b", "repo#123", NULL};
	for (int i = 0; bad[i]; i++) {
		uint8_t *data = NULL;
		size_t len = 0;
		CHECK(tt_store_get(s, bad[i], &data, &len, NULL) == TETHER_EUSAGE);
		CHECK(put(s, bad[i], "x", TT_PUT_OVERWRITE, NULL) == TETHER_EUSAGE);
	}
	/* A '#' that is not the staging suffix is an ordinary name. */
	CHECK(put(s, "refs/branch.a#b/ref.json", "x", TT_PUT_IF_ABSENT, NULL) == 0);
}

static void test_list(struct tt_store *s)
{
	char staging[512];
	snprintf(staging, sizeof staging, "%s/list/obj#12345", root);
	CHECK(put(s, "list/z", "z", TT_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "list/a", "a", TT_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "list/m/deep", "d", TT_PUT_OVERWRITE, NULL) == 0);
	FILE *f = fopen(staging, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	json_t *keys = NULL;
	CHECK(tt_store_list(s, "list", 0, &keys) == 0);
	CHECK(json_array_size(keys) == 3);
	CHECK_STR(json_string_value(json_array_get(keys, 0)), "list/a");
	CHECK_STR(json_string_value(json_array_get(keys, 1)), "list/m/deep");
	CHECK_STR(json_string_value(json_array_get(keys, 2)), "list/z");
	json_decref(keys);
	CHECK(tt_store_list(s, "list", 1, &keys) == 0 && json_array_size(keys) == 1);
	json_decref(keys);
	CHECK(tt_store_list(s, "absent", 0, &keys) == 0 && json_array_size(keys) == 0);
	json_decref(keys);
	unlink(staging);
}

static void test_remove_root(void)
{
	char uri[300];
	snprintf(uri, sizeof uri, "%s/removable", root);
	struct tt_store *s = NULL;
	CHECK(tt_store_open(uri, NULL, &s) == 0);
	int exists = 1;
	CHECK(tt_store_root_exists(s, &exists) == 0 && !exists);
	CHECK(tt_store_make_root(s) == 0);
	CHECK(tt_store_root_exists(s, &exists) == 0 && exists); /* an empty directory is something */
	CHECK(put(s, "d/e/f", "x", TT_PUT_OVERWRITE, NULL) == 0);
	CHECK(tt_store_remove_root(s) == TETHER_EREFUSED);
	CHECK(get_is(s, "d/e/f", "x"));
	CHECK(tt_store_delete(s, "d/e/f") == 0);
	CHECK(tt_store_remove_root(s) == 0);
	struct stat st;
	CHECK(stat(uri, &st) != 0);
	tt_store_close(s);
}

int main(void)
{
	snprintf(root, sizeof root, "%s/tether-test-store-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	test_open();
	struct tt_store *s = NULL;
	CHECK(tt_store_open(root, NULL, &s) == 0);
	if (s) {
		test_put_modes(s);
		test_copy(s);
		test_keys(s);
		test_list(s);
		tt_store_close(s);
	}
	test_remove_root();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	CHECK_DONE();
}
