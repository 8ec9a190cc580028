/* The byte-store layer on the local filesystem: whole-object reads and
 * writes, the three put modes, conditional copies, listings that skip
 * staging files, key checks, and removing an emptied root. */
#include "check.h"
#include "store_listed.h"

#include <tether/store.h>

#include <tether/backend.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static int put(tether_store *s, const char *key, const char *text, enum tether_put_mode mode,
               const struct tether_store_version *expect)
{
	return tether_store_put(s, key, text, strlen(text), mode, expect, NULL);
}

static int get_is(tether_store *s, const char *key, const char *want)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int ok = tether_store_get(s, key, &data, &len, NULL) == 0 && len == strlen(want) && memcmp(data, want, len) == 0;
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
	tether_store *s = NULL;
	CHECK(tether_store_open("relative/path", NULL, &s) == TETHER_EUSAGE && !s);
	CHECK(tether_store_open("s3://bucket/prefix", NULL, &s) == TETHER_EUSAGE && !s);
	CHECK(strstr(tether_error_last(), "s3://") != NULL);
	char uri[300];
	snprintf(uri, sizeof uri, "file://%s/nothing-yet", root);
	CHECK(tether_store_open(uri, NULL, &s) == 0);
	int exists = 1;
	CHECK(tether_store_head(s, "repo", &exists, NULL, NULL) == 0 && !exists);
	CHECK((tether_store_flags(s) & TETHER_STORE_ATOMIC_CAS) == 0);
	tether_store_close(s);
}

static void test_put_modes(tether_store *s)
{
	struct tether_store_version v1, v2, v3;
	CHECK(put(s, "a/b/obj", "one", TETHER_PUT_IF_ABSENT, NULL) == 0);
	CHECK(get_is(s, "a/b/obj", "one"));
	CHECK(put(s, "a/b/obj", "two", TETHER_PUT_IF_ABSENT, NULL) == TETHER_EREFUSED);
	CHECK(get_is(s, "a/b/obj", "one"));
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(tether_store_get(s, "a/b/obj", &data, &len, &v1) == 0 && v1.token[0]);
	free(data);
	CHECK(tether_store_put(s, "a/b/obj", "two", 3, TETHER_PUT_IF_MATCH, &v1, &v2) == 0);
	CHECK(strcmp(v1.token, v2.token) != 0);
	CHECK(get_is(s, "a/b/obj", "two"));
	/* The version read before the last write is stale now. */
	CHECK(put(s, "a/b/obj", "three", TETHER_PUT_IF_MATCH, &v1) == TETHER_EREFUSED);
	CHECK(get_is(s, "a/b/obj", "two"));
	CHECK(put(s, "a/b/obj", "three", TETHER_PUT_IF_MATCH, NULL) == TETHER_EUSAGE);
	/* A conditional write on something absent is refused too. */
	CHECK(put(s, "a/b/missing", "x", TETHER_PUT_IF_MATCH, &v2) == TETHER_EREFUSED);
	CHECK(put(s, "a/b/obj", "four", TETHER_PUT_OVERWRITE, NULL) == 0);
	int exists = 0;
	uint64_t size = 0;
	CHECK(tether_store_head(s, "a/b/obj", &exists, &v3, &size) == 0 && exists && size == 4);
	CHECK(strcmp(v3.token, v2.token) != 0);
	CHECK(tether_store_get(s, "nope", &data, &len, NULL) == TETHER_ENOTFOUND);
	CHECK(strstr(tether_error_last(), "nope") != NULL);
	CHECK(no_staging(root));
}

static void test_copy(tether_store *s)
{
	struct tether_store_version v, stale;
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(put(s, "src", "original", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(tether_store_get(s, "src", &data, &len, &stale) == 0);
	free(data);
	CHECK(put(s, "src", "current", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(tether_store_get(s, "src", &data, &len, &v) == 0);
	free(data);
	CHECK(tether_store_copy(s, "src", "backup/one", &stale) == TETHER_EREFUSED);
	int exists = 1;
	CHECK(tether_store_head(s, "backup/one", &exists, NULL, NULL) == 0 && !exists);
	CHECK(tether_store_copy(s, "src", "backup/one", &v) == 0);
	CHECK(get_is(s, "backup/one", "current"));
	CHECK(tether_store_copy(s, "src", "backup/one", NULL) == TETHER_EREFUSED);
	/* The copy keeps its bytes when the source is replaced. */
	CHECK(put(s, "src", "replaced", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(get_is(s, "backup/one", "current"));
	CHECK(tether_store_delete(s, "backup/one") == 0 && tether_store_delete(s, "backup/one") == 0);
}

static void test_keys(tether_store *s)
{
	const char *bad[] = {"", "/abs", "../up", "a/../b", "a//b", "a/", "./a", "a\\b", "repo#123", NULL};
	for (int i = 0; bad[i]; i++) {
		uint8_t *data = NULL;
		size_t len = 0;
		CHECK(tether_store_get(s, bad[i], &data, &len, NULL) == TETHER_EUSAGE);
		CHECK(put(s, bad[i], "x", TETHER_PUT_OVERWRITE, NULL) == TETHER_EUSAGE);
	}
	/* A '#' that is not the staging suffix is an ordinary name. */
	CHECK(put(s, "refs/branch.a#b/ref.json", "x", TETHER_PUT_IF_ABSENT, NULL) == 0);
}

static int listing_is(tether_store *s, const char *prefix, const char *after, size_t page, const char *want)
{
	char *got = listed(s, prefix, after, page);
	int ok = got && strcmp(got, want) == 0;
	if (!ok)
		fprintf(stderr, "listing %s after '%s' by %zu: got '%s', want '%s'\n", prefix, after ? after : "", page,
		        got ? got : tether_error_last(), want);
	free(got);
	return ok;
}

static void test_list(tether_store *s)
{
	char staging[512];
	snprintf(staging, sizeof staging, "%s/list/obj#12345", root);
	CHECK(put(s, "list/z", "z", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "list/a", "a", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "list/m/deep", "d", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "list/m/e", "e", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "listx", "not under list/", TETHER_PUT_OVERWRITE, NULL) == 0);
	FILE *f = fopen(staging, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	const char *all = "list/a list/m/deep list/m/e list/z";
	/* Every page size, so that pages end on every key. */
	for (size_t page = 0; page <= 5; page++)
		CHECK(listing_is(s, "list", NULL, page, all));
	/* start-after: a key, a key that is not there, the last key. */
	CHECK(listing_is(s, "list", "list/a", 1, "list/m/deep list/m/e list/z"));
	CHECK(listing_is(s, "list", "list/b", 2, "list/m/deep list/m/e list/z"));
	CHECK(listing_is(s, "list", "list/m/e", 3, "list/z"));
	CHECK(listing_is(s, "list", "list/z", 1, ""));
	CHECK(listing_is(s, "list/m", NULL, 1, "list/m/deep list/m/e"));
	CHECK(listing_is(s, "absent", NULL, 0, ""));
	/* From the root: "listx" follows "list/z" ('/' sorts before 'x'), and
	 * the earlier tests' keys follow it. */
	char *rest = listed(s, "", "list/z", 1);
	CHECK(rest && strncmp(rest, "listx ", 6) == 0 && !strstr(rest, "list/"));
	free(rest);
	tether_store_iter *it = NULL;
	CHECK(tether_store_list(s, "../up", NULL, 0, &it) == TETHER_EUSAGE && !it);
	CHECK(tether_store_list(s, "list", "a//b", 0, &it) == TETHER_EUSAGE && !it);
	unlink(staging);
	CHECK(tether_store_delete(s, "listx") == 0);
}

static void test_ranged_get(tether_store *s)
{
	CHECK(put(s, "range", "0123456789", TETHER_PUT_OVERWRITE, NULL) == 0);
	struct {
		uint64_t off, len;
		const char *want;
	} cases[] = {
		{0, TETHER_STORE_TO_END, "0123456789"}, {3, 4, "3456"}, {8, 100, "89"},
		{10, 5, ""}, {1000, 1, ""}, {0, 0, ""}, {9, 1, "9"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint8_t *data = NULL;
		size_t len = 99;
		struct tether_store_version v = {{0}};
		CHECK(tether_store_get_range(s, "range", cases[i].off, cases[i].len, &data, &len, &v) == 0);
		CHECK(data != NULL && len == strlen(cases[i].want) && memcmp(data, cases[i].want, len) == 0);
		CHECK(v.token[0] != '\0');
		free(data);
	}
	uint8_t *data = (uint8_t *)"x";
	size_t len = 1;
	CHECK(tether_store_get_range(s, "absent", 0, 1, &data, &len, NULL) == TETHER_ENOTFOUND && !data && !len);
	CHECK(tether_store_delete(s, "range") == 0);
}

/* The local store keeps no versions: stat and next_stat come from the
 * engine's fallbacks (head, a stat per listed key), and a version id is
 * refused. */
static void test_stat(tether_store *s)
{
	CHECK(put(s, "st/a", "abc", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "st/b", "hello", TETHER_PUT_OVERWRITE, NULL) == 0);
	struct tether_store_stat st;
	struct tether_store_version v;
	int exists = 0;
	CHECK(tether_store_head(s, "st/a", &exists, &v, NULL) == 0 && exists);
	CHECK(tether_store_stat(s, "st/a", NULL, &st) == 0 && st.exists && st.size == 3);
	CHECK(strcmp(st.version.token, v.token) == 0 && st.version_id[0] == '\0');
	CHECK(tether_store_stat(s, "st/absent", "", &st) == 0 && !st.exists && st.size == 0);
	CHECK(tether_store_stat(s, "st/a", "v1", &st) == TETHER_EUSAGE);
	CHECK(tether_store_stat(s, "../a", NULL, &st) == TETHER_EUSAGE);
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(tether_store_get_version(s, "st/b", NULL, &data, &len, &st) == 0 && len == 5 && st.size == 5);
	CHECK(data && memcmp(data, "hello", 5) == 0 && st.exists);
	free(data);
	CHECK(tether_store_get_version(s, "st/b", "v1", &data, &len, &st) == TETHER_EUSAGE && !data);
	CHECK(tether_store_get_version(s, "st/absent", NULL, &data, &len, NULL) == TETHER_ENOTFOUND && !data);
	CHECK(tether_store_list_versions(s, "st/a", NULL, NULL) == TETHER_EUSAGE);
	for (size_t page = 1; page <= 3; page++) {
		tether_store_iter *it = NULL;
		CHECK(tether_store_list(s, "st", NULL, page, &it) == 0);
		const char *key;
		const struct tether_store_stat *ls;
		char seen[64] = "";
		while (it && tether_store_next_stat(it, &key, &ls) == 0 && key) {
			CHECK(ls && ls->exists);
			snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s=%llu ", key,
			         (unsigned long long)ls->size);
		}
		CHECK(strcmp(seen, "st/a=3 st/b=5 ") == 0);
		/* One listing, one way of reading it. */
		CHECK(it && tether_store_next(it, &key) == TETHER_ERROR);
		tether_store_iter_free(it);
	}
	CHECK(tether_store_delete(s, "st/a") == 0 && tether_store_delete(s, "st/b") == 0);
}

static void test_remove_root(void)
{
	char uri[300];
	snprintf(uri, sizeof uri, "%s/removable", root);
	tether_store *s = NULL;
	CHECK(tether_store_open(uri, NULL, &s) == 0);
	int exists = 1;
	CHECK(tether_store_root_exists(s, &exists) == 0 && !exists);
	CHECK(tether_store_make_root(s) == 0);
	CHECK(tether_store_root_exists(s, &exists) == 0 && exists); /* an empty directory is something */
	CHECK(put(s, "d/e/f", "x", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(tether_store_remove_root(s) == TETHER_EREFUSED);
	CHECK(get_is(s, "d/e/f", "x"));
	CHECK(tether_store_delete(s, "d/e/f") == 0);
	CHECK(tether_store_remove_root(s) == 0);
	struct stat st;
	CHECK(stat(uri, &st) != 0);
	tether_store_close(s);
}

int main(void)
{
	snprintf(root, sizeof root, "%s/tether-test-store-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	test_open();
	tether_store *s = NULL;
	CHECK(tether_store_open(root, NULL, &s) == 0);
	if (s) {
		test_put_modes(s);
		test_copy(s);
		test_keys(s);
		test_list(s);
		test_ranged_get(s);
		test_stat(s);
		tether_store_close(s);
	}
	test_remove_root();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	CHECK_DONE();
}
