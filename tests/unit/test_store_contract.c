/* The store contract's own test: the local store passes it, and each
 * lying store (the local store with one promise of tether/store.h broken)
 * fails the check its lie breaks, so no check passes whatever the store
 * does. The liar is registered for scheme "liar": liar://b/PATH is the
 * local store at <scratch>/PATH, with the lie `lie` names. */
#include "check.h"

#include <tether/store.h>
#include <tether/testing.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char scratch[256];
static const char *lie = "";

static int lying(const char *name)
{
	return strcmp(lie, name) == 0;
}

static int li_open(const char *uri, const json_t *options, void **impl)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", scratch, uri + strlen("liar://b/"));
	return tether_store_open(path, options, (tether_store **)impl);
}

static void li_close(void *impl)
{
	tether_store_close(impl);
}

static int li_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
                  struct tether_store_version *version)
{
	/* Past the end: an error rather than no bytes. */
	if (lying("range-past-end") && offset > 0 && length != TETHER_STORE_TO_END) {
		int exists = 0;
		uint64_t size = 0;
		tether_store_head(impl, key, &exists, NULL, &size);
		if (exists && offset >= size)
			return tether_error_set(TETHER_EIO, "416 range not satisfiable");
	}
	return tether_store_get_range(impl, key, offset, length, data, len, version);
}

static int li_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size)
{
	int rc = tether_store_head(impl, key, exists, version, size);
	if (lying("absent-is-error") && rc == 0 && !*exists)
		return tether_error_set(TETHER_ENOTFOUND, "%s: 404", key);
	/* A token of the bytes' size alone, as a content hash of equal bytes would be. */
	if (lying("token-of-size") && rc == 0 && *exists && version && size)
		snprintf(version->token, sizeof version->token, "size-%llu", (unsigned long long)*size);
	return rc;
}

static int li_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
                  const struct tether_store_version *expect, struct tether_store_version *new_version)
{
	if (lying("if-absent-overwrites") && mode == TETHER_PUT_IF_ABSENT)
		mode = TETHER_PUT_OVERWRITE;
	if (lying("if-match-ignored") && mode == TETHER_PUT_IF_MATCH) {
		int exists = 0;
		tether_store_head(impl, key, &exists, NULL, NULL);
		if (exists)
			mode = TETHER_PUT_OVERWRITE;
	}
	if (lying("token-of-size") && mode == TETHER_PUT_IF_MATCH) {
		struct tether_store_version now;
		int exists = 0;
		uint64_t size = 0;
		tether_store_head(impl, key, &exists, &now, &size);
		char mine[64];
		snprintf(mine, sizeof mine, "size-%llu", (unsigned long long)size);
		if (!exists || strcmp(mine, expect->token) != 0)
			return tether_error_set(TETHER_EREFUSED, "%s changed", key);
		mode = TETHER_PUT_OVERWRITE;
	}
	int rc = tether_store_put(impl, key, data, len, mode, expect, new_version);
	if (lying("token-of-size") && rc == 0 && new_version)
		snprintf(new_version->token, sizeof new_version->token, "size-%zu", len);
	return rc;
}

static int li_copy(void *impl, const char *from, const char *to, const struct tether_store_version *if_match)
{
	if (lying("copy-overwrites"))
		tether_store_delete(impl, to);
	return tether_store_copy(impl, from, to, lying("copy-ignores-if-match") ? NULL : if_match);
}

static int li_del(void *impl, const char *key)
{
	int exists = 0;
	if (lying("delete-absent-errors") && tether_store_head(impl, key, &exists, NULL, NULL) == 0 && !exists)
		return tether_error_set(TETHER_ENOTFOUND, "%s: 404", key);
	return tether_store_delete(impl, key);
}

static int li_list(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                   tether_store_key_fn emit, void *ud, int *more)
{
	/* A page that says nothing of more keys after a full page. */
	tether_store_iter *it = NULL;
	int rc = tether_store_list(impl, prefix, start_after, max_keys, &it);
	size_t n = 0;
	const char *key = NULL;
	/* "start-after-inclusive": a listing that begins at start_after. */
	if (rc == 0 && lying("start-after-inclusive") && *start_after) {
		int exists = 0;
		if (tether_store_head(impl, start_after, &exists, NULL, NULL) == 0 && exists) {
			rc = emit(ud, start_after);
			n++;
		}
	}
	while (rc == 0 && n < max_keys && (rc = tether_store_next(it, &key)) == 0 && key) {
		rc = emit(ud, key);
		n++;
	}
	if (rc == 0 && n == max_keys)
		rc = tether_store_next(it, &key);
	*more = rc == 0 && n == max_keys && key != NULL && !lying("no-more-flag");
	tether_store_iter_free(it);
	return rc;
}

static int li_root_exists(void *impl, int *exists)
{
	return tether_store_root_exists(impl, exists);
}

static int li_make_root(void *impl)
{
	return tether_store_make_root(impl);
}

static int li_remove_root(void *impl)
{
	if (lying("remove-root-anyway")) {
		tether_store_iter *it = NULL;
		const char *key;
		tether_store_list(impl, "", NULL, 0, &it);
		while (tether_store_next(it, &key) == 0 && key)
			tether_store_delete(impl, key);
		tether_store_iter_free(it);
	}
	return tether_store_remove_root(impl);
}

static const struct tether_store_ops liar_ops = {
	TETHER_STORE_OPS_INIT,
	.scheme = "liar",
	.open = li_open,
	.close = li_close,
	.get = li_get,
	.head = li_head,
	.put = li_put,
	.copy = li_copy,
	.del = li_del,
	.list = li_list,
	.root_exists = li_root_exists,
	.make_root = li_make_root,
	.remove_root = li_remove_root,
};

/* Run the contract over the liar; the output in *text (malloc'd). */
static int run(const char *uri, char **text, struct tether_conformance_counts *counts)
{
	size_t n = 0;
	FILE *out = open_memstream(text, &n);
	if (!out)
		abort();
	int failed = tether_store_conformance(uri, NULL, out, counts);
	fclose(out);
	return failed;
}

/* With the lie, the check named `breaks` fails (and the run does). */
static void expect_caught(const char *the_lie, const char *breaks)
{
	lie = the_lie;
	char *text = NULL;
	struct tether_conformance_counts c;
	int failed = run("liar://b/store", &text, &c);
	char want[256];
	snprintf(want, sizeof want, "FAIL %s", breaks);
	int caught = failed > 0 && strstr(text, want) != NULL;
	if (!caught)
		fprintf(stderr, "lie %s was not caught by \"%s\":\n%s", the_lie, breaks, text);
	CHECK(caught);
	free(text);
	lie = "";
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(scratch, sizeof scratch, "%s/tether-store-contract-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(scratch))
		return 1;
	CHECK(tether_store_register(&liar_ops) == 0);

	/* Honest: the local store, directly and through the liar telling no lie. */
	char *text = NULL;
	struct tether_conformance_counts c;
	char uri[300];
	snprintf(uri, sizeof uri, "%s/direct", scratch);
	CHECK(run(uri, &text, &c) == 0);
	CHECK(c.failed == 0 && c.passed >= 18);
	CHECK(strstr(text, "ok   cleanup:") != NULL);
	free(text);
	CHECK(run("liar://b/store", &text, &c) == 0);
	CHECK(c.failed == 0 && c.passed >= 18);
	free(text);

	expect_caught("range-past-end", "get: ranges");
	expect_caught("absent-is-error", "head/stat:");
	expect_caught("token-of-size", "version: every write gives a new version token");
	expect_caught("if-absent-overwrites", "put if-absent:");
	expect_caught("if-absent-overwrites", "race: 8 writers racing put if-absent");
	expect_caught("if-match-ignored", "put if-match:");
	expect_caught("if-match-ignored", "race: 8 writers racing put if-match");
	expect_caught("copy-overwrites", "copy:");
	expect_caught("copy-ignores-if-match", "copy:");
	expect_caught("delete-absent-errors", "delete:");
	expect_caught("no-more-flag", "list: paging");
	expect_caught("start-after-inclusive", "list: start_after");
	expect_caught("remove-root-anyway", "root:");

	/* A store that cannot be opened is one failure, named. */
	CHECK(run("nosuchscheme://b/x", &text, &c) == 1);
	CHECK(strstr(text, "FAIL store: ") != NULL && c.failed == 1);
	free(text);

	/* Nothing is left where the runs worked. */
	CHECK(tether_store_canonical(scratch, NULL, &text) == 0);
	free(text);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "find '%s' -type f | grep -q .", scratch);
	int leftovers = system(cmd) == 0;
	if (leftovers) {
		snprintf(cmd, sizeof cmd, "find '%s' -type f >&2", scratch);
		if (system(cmd) != 0)
			fprintf(stderr, "(find failed)\n");
	}
	CHECK(!leftovers);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", scratch);
	CHECK_DONE();
}
