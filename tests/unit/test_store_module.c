/* Store modules: a scheme tether has no store for is loaded from the
 * module path as tether-store-<scheme>.so on first use, and not before;
 * the engine checks keys, pages listings and fills in what a module leaves
 * out (copy, the root) the same for it as for the built-in store; the
 * registry refuses ops it cannot use. Argument 1: the directory holding
 * tether-store-memtest.so. */
#define _GNU_SOURCE
#include "check.h"
#include "store_listed.h"

#include <tether/backend.h>
#include <tether/store.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static char module[1024];

static int module_loaded(void)
{
	void *h = dlopen(module, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		dlclose(h);
	return h != NULL;
}

static int put(tether_store *s, const char *key, const char *text, enum tether_put_mode mode,
               const struct tether_store_version *expect)
{
	return tether_store_put(s, key, text, strlen(text), mode, expect, NULL);
}

static void test_loaded_on_first_use(void)
{
	tether_store *s = NULL;
	/* Local stores never load a module. */
	CHECK(tether_store_open("/tmp/tether-store-module-test", NULL, &s) == 0);
	tether_store_close(s);
	CHECK(!module_loaded());
	CHECK(tether_store_open("memtest://Bucket/prefix/", NULL, &s) == 0);
	CHECK(module_loaded());
	if (!s)
		return;
	CHECK_STR(tether_store_uri(s), "memtest://bucket/prefix");
	CHECK((tether_store_flags(s) & TETHER_STORE_ATOMIC_CAS) != 0);
	CHECK(tether_store_find("memtest") != NULL);
	tether_store_close(s);
	/* Options reach the module, and its errors come back as they are. */
	json_t *options = json_pack("{s:b}", "refuse", 1);
	CHECK(tether_store_open("memtest://bucket/p", options, &s) == TETHER_EAUTH && !s);
	json_decref(options);
	/* A scheme with no module is a usage error naming the scheme. */
	CHECK(tether_store_open("nosuch://bucket/p", NULL, &s) == TETHER_EUSAGE && !s);
	CHECK(strstr(tether_error_last(), "nosuch://") != NULL);
}

static void test_ops(void)
{
	tether_store *s = NULL;
	CHECK(tether_store_open("memtest://bucket/ops", NULL, &s) == 0);
	if (!s)
		return;
	struct tether_store_version v1, v2;
	CHECK(put(s, "a", "one", TETHER_PUT_IF_ABSENT, NULL) == 0);
	CHECK(put(s, "a", "two", TETHER_PUT_IF_ABSENT, NULL) == TETHER_EREFUSED);
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(tether_store_get(s, "a", &data, &len, &v1) == 0 && len == 3 && memcmp(data, "one", 3) == 0);
	free(data);
	CHECK(tether_store_put(s, "a", "two", 3, TETHER_PUT_IF_MATCH, &v1, &v2) == 0);
	CHECK(put(s, "a", "three", TETHER_PUT_IF_MATCH, &v1) == TETHER_EREFUSED);
	CHECK(tether_store_get_range(s, "a", 1, 1, &data, &len, NULL) == 0 && len == 1 && data[0] == 'w');
	free(data);
	/* The engine's key checks hold for a module too. */
	CHECK(put(s, "../escape", "x", TETHER_PUT_OVERWRITE, NULL) == TETHER_EUSAGE);
	/* copy, without the module implementing it: the condition still holds. */
	CHECK(tether_store_copy(s, "a", "b", &v1) == TETHER_EREFUSED);
	CHECK(tether_store_copy(s, "a", "b", &v2) == 0);
	CHECK(tether_store_copy(s, "a", "b", NULL) == TETHER_EREFUSED);
	CHECK(tether_store_get(s, "b", &data, &len, NULL) == 0 && len == 3 && memcmp(data, "two", 3) == 0);
	free(data);
	/* Paged listing over the module's pages. */
	const char *keys[] = {"d/1", "d/2", "d/3", "d/4", "d/5", "dx", NULL};
	for (int i = 0; keys[i]; i++)
		CHECK(put(s, keys[i], "k", TETHER_PUT_OVERWRITE, NULL) == 0);
	for (size_t page = 1; page <= 6; page++) {
		char *got = listed(s, "d", NULL, page);
		CHECK(got && strcmp(got, "d/1 d/2 d/3 d/4 d/5") == 0);
		free(got);
	}
	char *got = listed(s, "d", "d/2", 2);
	CHECK(got && strcmp(got, "d/3 d/4 d/5") == 0);
	free(got);
	/* The root, by the engine's fallbacks: it exists while it holds keys. */
	int exists = 0;
	CHECK(tether_store_root_exists(s, &exists) == 0 && exists);
	CHECK(tether_store_remove_root(s) == TETHER_EREFUSED);
	tether_store_close(s);
	CHECK(tether_store_open("memtest://bucket/empty", NULL, &s) == 0);
	if (s) {
		CHECK(tether_store_make_root(s) == 0);
		CHECK(tether_store_root_exists(s, &exists) == 0 && !exists);
		CHECK(tether_store_remove_root(s) == 0);
		tether_store_close(s);
	}
}

static int collect_version(void *ud, const char *key, const struct tether_store_stat *st)
{
	(void)key;
	char *out = ud;
	size_t n = strlen(out), id = strlen(st->version_id);
	if (n + id + 3 > 256)
		return tether_error_set(TETHER_ERROR, "too many versions for the test's buffer");
	memcpy(out + n, st->version_id, id);
	strcpy(out + n + id, st->is_latest ? "* " : " ");
	return 0;
}

/* Version ids through a module that names them: stat and get at an id,
 * an id no longer kept, listings that carry each key's stat. */
static void test_versions(void)
{
	tether_store *s = NULL;
	CHECK(tether_store_open("memtest://bucket/versions", NULL, &s) == 0);
	if (!s)
		return;
	CHECK(tether_store_flags(s) & TETHER_STORE_VERSION_IDS);
	CHECK(put(s, "obj", "first", TETHER_PUT_OVERWRITE, NULL) == 0);
	struct tether_store_stat one, two, st;
	CHECK(tether_store_stat(s, "obj", NULL, &one) == 0 && one.exists && one.size == 5 && one.version_id[0]);
	CHECK(tether_store_stat(s, "obj", one.version_id, &st) == 0 && st.exists);
	CHECK(strcmp(st.version.token, one.version.token) == 0);
	CHECK(put(s, "obj", "second!", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(tether_store_stat(s, "obj", NULL, &two) == 0 && two.size == 7);
	CHECK(strcmp(two.version_id, one.version_id) != 0);
	/* memtest keeps only the latest version. */
	CHECK(tether_store_stat(s, "obj", one.version_id, &st) == TETHER_ENOTFOUND);
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(tether_store_get_version(s, "obj", two.version_id, &data, &len, &st) == 0 && len == 7);
	CHECK(data && memcmp(data, "second!", 7) == 0 && strcmp(st.version_id, two.version_id) == 0);
	free(data);
	CHECK(tether_store_get_version(s, "obj", one.version_id, &data, &len, NULL) == TETHER_ENOTFOUND && !data);
	/* A version id is printable text without spaces. */
	CHECK(tether_store_stat(s, "obj", "has space", &st) == TETHER_EUSAGE);
	CHECK(tether_store_stat(s, "obj", "tab\there", &st) == TETHER_EUSAGE);
	char versions[256] = "";
	CHECK(tether_store_list_versions(s, "obj", collect_version, versions) == 0);
	size_t idl = strlen(two.version_id);
	CHECK(strncmp(versions, two.version_id, idl) == 0 && strcmp(versions + idl, "* ") == 0);
	/* next_stat through the module's list_stat, over every page size. */
	CHECK(put(s, "p/x", "12", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "p/y", "123", TETHER_PUT_OVERWRITE, NULL) == 0);
	CHECK(put(s, "p/z", "1234", TETHER_PUT_OVERWRITE, NULL) == 0);
	for (size_t page = 1; page <= 4; page++) {
		tether_store_iter *it = NULL;
		CHECK(tether_store_list(s, "p", NULL, page, &it) == 0);
		const char *key;
		const struct tether_store_stat *ls;
		char seen[128] = "";
		while (it && tether_store_next_stat(it, &key, &ls) == 0 && key) {
			CHECK(ls->exists && ls->version_id[0] && ls->version.token[0]);
			snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s=%llu ", key,
			         (unsigned long long)ls->size);
		}
		CHECK(strcmp(seen, "p/x=2 p/y=3 p/z=4 ") == 0);
		tether_store_iter_free(it);
	}
	const char *gone[] = {"obj", "p/x", "p/y", "p/z", NULL};
	for (int i = 0; gone[i]; i++)
		CHECK(tether_store_delete(s, gone[i]) == 0);
	tether_store_close(s);
}

static int open_stub(const char *uri, const json_t *o, void **impl)
{
	(void)uri, (void)o, (void)impl;
	return TETHER_ERROR;
}
static void close_stub(void *impl)
{
	(void)impl;
}

static const struct tether_store_ops *file_ops;

/* "older:///PATH": the local store at PATH. */
static int older_open(const char *uri, const json_t *o, void **impl)
{
	return file_ops->open(uri + strlen("older://"), o, impl);
}

static int must_not_be_called(void *impl, int *exists)
{
	(void)impl, (void)exists;
	CHECK(!"a member past the ops' size was called");
	return TETHER_ERROR;
}

static void test_register(void)
{
	const struct tether_store_ops *file = tether_store_find("file");
	CHECK(file != NULL);
	if (!file)
		return;
	struct tether_store_ops ops = *file;
	ops.scheme = "file";
	CHECK(tether_store_register(&ops) == TETHER_EREFUSED); /* a duplicate */
	ops.scheme = "memtest";
	CHECK(tether_store_register(&ops) == TETHER_EREFUSED);
	ops.scheme = "Upper";
	CHECK(tether_store_register(&ops) == TETHER_ERROR);
	ops.scheme = "newer";
	ops.version = TETHER_STORE_OPS_VERSION + 1;
	CHECK(tether_store_register(&ops) == TETHER_ERROR);
	CHECK(strstr(tether_error_last(), "version") != NULL);
	ops.version = TETHER_STORE_OPS_VERSION;
	ops.size = offsetof(struct tether_store_ops, del);
	CHECK(tether_store_register(&ops) == TETHER_ERROR);
	ops.size = sizeof ops;
	ops.list = NULL;
	CHECK(tether_store_register(&ops) == TETHER_ERROR);
	/* Filled at run time from TETHER_STORE_OPS_INIT: accepted. */
	struct tether_store_ops *fresh = malloc(sizeof *fresh);
	struct tether_store_ops init = {TETHER_STORE_OPS_INIT};
	*fresh = init;
	fresh->scheme = "stub";
	fresh->open = open_stub;
	fresh->close = close_stub;
	fresh->get = file->get;
	fresh->head = file->head;
	fresh->put = file->put;
	fresh->del = file->del;
	fresh->list = file->list;
	CHECK(tether_store_register(fresh) == 0);
	CHECK(tether_store_find("stub") == fresh);
	tether_store *s = NULL;
	CHECK(tether_store_open("stub://x/y", NULL, &s) == TETHER_ERROR && !s);
	/* fresh stays registered for the life of the process. */

	/* Ops from an older, shorter header: members past its size are never
	 * read, whatever the bytes there (here: a function that would fail the
	 * test), and the engine's fallbacks stand in for them. */
	struct tether_store_ops *old = malloc(sizeof *old);
	*old = *file;
	old->scheme = "older";
	file_ops = file;
	old->open = older_open;
	old->size = offsetof(struct tether_store_ops, root_exists);
	old->root_exists = must_not_be_called;
	CHECK(tether_store_register(old) == 0);
	char uri[] = "older:///tmp/tether-store-module-older-XXXXXX";
	CHECK(mkdtemp(uri + strlen("older://")) != NULL);
	CHECK(tether_store_open(uri, NULL, &s) == 0);
	if (s) {
		int exists = 1;
		CHECK(tether_store_root_exists(s, &exists) == 0 && !exists); /* by listing: no keys */
		CHECK(tether_store_put(s, "k", "v", 1, TETHER_PUT_OVERWRITE, NULL, NULL) == 0);
		CHECK(tether_store_root_exists(s, &exists) == 0 && exists);
		CHECK(tether_store_delete(s, "k") == 0);
		tether_store_close(s);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_store_module MODULE_DIR\n");
		return 2;
	}
	snprintf(module, sizeof module, "%s/tether-store-memtest.so", argv[1]);
	setenv("TETHER_MODULE_PATH", argv[1], 1);
	test_loaded_on_first_use();
	test_ops();
	test_versions();
	test_register();
	CHECK_DONE();
}
