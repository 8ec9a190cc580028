/* The store contract, objects: put and get, ranges, head and stat,
 * conditional writes, version tokens, copy, delete, the front's refusal of
 * invalid keys, the root, and injected faults (tether/store.h says what
 * each call promises; these checks hold every store to it). */
#include "testing/store_contract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024u * 1024u)

/* put key = data, then get it back whole: the bytes, and get's version is
 * put's new_version and head's. */
static int round_trip(struct sc_run *r, const char *key, size_t len, unsigned seed)
{
	uint8_t *data = sc_pattern(len, seed);
	struct tether_store_version put_v = {{0}}, get_v = {{0}}, head_v = {{0}};
	uint8_t *got = NULL;
	size_t n = 0;
	uint64_t size = 0;
	int exists = 0;
	const char *k = sc_key(r, key);
	char what[SC_KEY_MAX + 32];
	snprintf(what, sizeof what, "put %s (%zu bytes)", k, len);
	int rc = sc_ok(r, what, tether_store_put(r->st, k, data, len, TETHER_PUT_OVERWRITE, NULL, &put_v));
	if (!rc && !put_v.token[0])
		rc = sc_fail(r, "%s gave no new_version", what);
	if (!rc) {
		snprintf(what, sizeof what, "get %s", k);
		rc = sc_ok(r, what, tether_store_get(r->st, k, &got, &n, &get_v));
	}
	if (!rc && !got)
		rc = sc_fail(r, "%s gave NULL data for %zu bytes", what, n);
	if (!rc && (n != len || (len && memcmp(got, data, len) != 0)))
		rc = sc_fail(r, "%s gave %zu bytes%s, not the %zu put", what, n, n == len ? " that differ" : "", len);
	if (!rc && strcmp(get_v.token, put_v.token) != 0)
		rc = sc_fail(r, "%s gave version %s, put gave %s", what, get_v.token, put_v.token);
	if (!rc)
		rc = sc_ok(r, "head", tether_store_head(r->st, k, &exists, &head_v, &size));
	if (!rc && (!exists || size != len || strcmp(head_v.token, put_v.token) != 0))
		rc = sc_fail(r, "head %s says exists %d, size %llu, version %s; put wrote %zu bytes at %s", k, exists,
		             (unsigned long long)size, head_v.token, len, put_v.token);
	free(got);
	free(data);
	return rc;
}

static int check_round_trip(struct sc_run *r)
{
	int rc = round_trip(r, "empty", 0, 1);
	if (!rc)
		rc = round_trip(r, "one", 1, 2);
	if (!rc)
		rc = round_trip(r, "dir/sub/three-mib", 3 * MIB + 17, 3);
	/* Overwriting with fewer bytes leaves none of the old ones. */
	if (!rc)
		rc = round_trip(r, "dir/sub/three-mib", 5, 4);
	return rc;
}

static int range(struct sc_run *r, const char *k, const uint8_t *all, size_t size, uint64_t off, uint64_t len)
{
	uint8_t *got = NULL;
	size_t n = 0;
	char what[SC_KEY_MAX + 96];
	if (len == TETHER_STORE_TO_END)
		snprintf(what, sizeof what, "get %s from %llu to the end", k, (unsigned long long)off);
	else
		snprintf(what, sizeof what, "get %s bytes [%llu, +%llu)", k, (unsigned long long)off,
		         (unsigned long long)len);
	int rc = sc_ok(r, what, tether_store_get_range(r->st, k, off, len, &got, &n, NULL));
	uint64_t from = off < size ? off : size;
	size_t want = (size_t)(len < size - from ? len : size - from);
	if (!rc && !got)
		rc = sc_fail(r, "%s gave NULL data (it must be a buffer, even for no bytes)", what);
	if (!rc && (n != want || (n && memcmp(got, all + from, n) != 0)))
		rc = sc_fail(r, "%s gave %zu bytes%s; want %zu", what, n, n == want ? " that differ" : "", want);
	free(got);
	return rc;
}

static int check_ranges(struct sc_run *r)
{
	const size_t size = 1000;
	uint8_t *data = sc_pattern(size, 5);
	const char *k = sc_key(r, "ranged");
	int rc = sc_ok(r, "put", tether_store_put(r->st, k, data, size, TETHER_PUT_OVERWRITE, NULL, NULL));
	static const uint64_t cases[][2] = {
		{10, 20}, {0, 1}, {999, 1}, {990, 20}, {1000, 5}, {5000, 1}, {0, TETHER_STORE_TO_END},
		{100, TETHER_STORE_TO_END}, {1000, TETHER_STORE_TO_END}, {0, 1000},
	};
	for (size_t i = 0; !rc && i < sizeof cases / sizeof cases[0]; i++)
		rc = range(r, k, data, size, cases[i][0], cases[i][1]);
	uint8_t *got = NULL;
	size_t n = 0;
	if (!rc)
		rc = sc_want(r, "a ranged get of an absent key",
		             tether_store_get_range(r->st, sc_key(r, "absent"), 0, 10, &got, &n, NULL), TETHER_ENOTFOUND);
	free(got);
	free(data);
	return rc;
}

static int expect_stat(struct sc_run *r, const char *k, int exists, uint64_t size, const char *token)
{
	struct tether_store_stat st;
	struct tether_store_version hv = {{0}};
	int hexists = -1;
	uint64_t hsize = 0;
	int rc = sc_ok(r, "head", tether_store_head(r->st, k, &hexists, &hv, &hsize));
	if (!rc && hexists != exists)
		rc = sc_fail(r, "head %s says exists %d, want %d", k, hexists, exists);
	if (!rc && exists && (hsize != size || strcmp(hv.token, token) != 0))
		rc = sc_fail(r, "head %s says %llu bytes at %s, want %llu at %s", k, (unsigned long long)hsize, hv.token,
		             (unsigned long long)size, token);
	if (!rc)
		rc = sc_ok(r, "stat", tether_store_stat(r->st, k, NULL, &st));
	if (!rc && st.exists != exists)
		rc = sc_fail(r, "stat %s says exists %d, want %d", k, st.exists, exists);
	if (!rc && exists && (st.size != size || strcmp(st.version.token, token) != 0))
		rc = sc_fail(r, "stat %s says %llu bytes at %s, want %llu at %s", k, (unsigned long long)st.size,
		             st.version.token, (unsigned long long)size, token);
	return rc;
}

static int check_head_stat(struct sc_run *r)
{
	struct tether_store_version v;
	uint8_t *data = sc_pattern(77, 6);
	int rc = sc_put(r, "present", data, 77, &v);
	free(data);
	if (!rc)
		rc = expect_stat(r, sc_key(r, "present"), 1, 77, v.token);
	if (!rc)
		rc = expect_stat(r, sc_key(r, "absent"), 0, 0, "");
	if (!rc)
		rc = expect_stat(r, sc_key(r, "no/such/dir/absent"), 0, 0, "");
	/* Under an object, as if it were a directory: absent, not an error. */
	if (!rc)
		rc = expect_stat(r, sc_key(r, "present/below"), 0, 0, "");
	uint8_t *got = NULL;
	size_t n = 0;
	if (!rc)
		rc = sc_want(r, "get of an absent key", tether_store_get(r->st, sc_key(r, "absent"), &got, &n, NULL),
		             TETHER_ENOTFOUND);
	free(got);
	return rc;
}

static int check_if_absent(struct sc_run *r)
{
	const char *k = sc_key(r, "once");
	struct tether_store_version v = {{0}};
	int rc = sc_ok(r, "put if-absent of an absent key", tether_store_put(r->st, k, "first", 5, TETHER_PUT_IF_ABSENT,
	                                                                      NULL, &v));
	if (!rc && !v.token[0])
		rc = sc_fail(r, "put if-absent gave no new_version");
	if (!rc)
		rc = sc_want(r, "put if-absent of a present key",
		             tether_store_put(r->st, k, "second", 6, TETHER_PUT_IF_ABSENT, NULL, NULL), TETHER_EREFUSED);
	if (!rc)
		rc = sc_expect_bytes(r, "once", "first", 5);
	if (!rc)
		rc = expect_stat(r, k, 1, 5, v.token);
	/* An empty object is present too. */
	if (!rc)
		rc = sc_ok(r, "put if-absent of an empty object",
		           tether_store_put(r->st, sc_key(r, "empty"), "", 0, TETHER_PUT_IF_ABSENT, NULL, NULL));
	if (!rc)
		rc = sc_want(r, "put if-absent onto an empty object",
		             tether_store_put(r->st, sc_key(r, "empty"), "x", 1, TETHER_PUT_IF_ABSENT, NULL, NULL),
		             TETHER_EREFUSED);
	return rc;
}

static int check_if_match(struct sc_run *r)
{
	const char *k = sc_key(r, "ref");
	struct tether_store_version v1 = {{0}}, v2 = {{0}}, v3 = {{0}};
	int rc = sc_put(r, "ref", "one", 3, &v1);
	if (!rc)
		rc = sc_ok(r, "put if-match at the current version",
		           tether_store_put(r->st, k, "two", 3, TETHER_PUT_IF_MATCH, &v1, &v2));
	if (!rc && (!v2.token[0] || strcmp(v1.token, v2.token) == 0))
		rc = sc_fail(r, "put if-match gave new_version \"%s\"; it must differ from the version replaced, \"%s\"",
		             v2.token, v1.token);
	if (!rc)
		rc = sc_want(r, "put if-match at a stale version",
		             tether_store_put(r->st, k, "three", 5, TETHER_PUT_IF_MATCH, &v1, NULL), TETHER_EREFUSED);
	if (!rc)
		rc = sc_expect_bytes(r, "ref", "two", 3);
	if (!rc)
		rc = expect_stat(r, k, 1, 3, v2.token);
	if (!rc)
		rc = sc_ok(r, "put if-match at the new version", tether_store_put(r->st, k, "four", 4, TETHER_PUT_IF_MATCH,
		                                                                  &v2, &v3));
	/* Deleted since it was read: another version too. */
	if (!rc)
		rc = sc_ok(r, "delete", tether_store_delete(r->st, k));
	if (!rc)
		rc = sc_want(r, "put if-match of a key deleted since it was read",
		             tether_store_put(r->st, k, "five", 4, TETHER_PUT_IF_MATCH, &v3, NULL), TETHER_EREFUSED);
	if (!rc)
		rc = sc_expect_absent(r, "ref");
	return rc;
}

/* Tokens of consecutive writes of the same bytes, and of a write that
 * brings back the bytes of an earlier one: each new. */
static int check_token_changes(struct sc_run *r)
{
	enum { WRITES = 8 };
	struct tether_store_version v[WRITES];
	const char *k = sc_key(r, "same");
	int rc = 0;
	for (int i = 0; !rc && i < WRITES; i++) {
		enum tether_put_mode mode = i % 2 ? TETHER_PUT_IF_MATCH : TETHER_PUT_OVERWRITE;
		char what[64];
		snprintf(what, sizeof what, "write %d of the same bytes", i + 1);
		rc = sc_ok(r, what, tether_store_put(r->st, k, "same", 4, mode, i ? &v[i - 1] : NULL, &v[i]));
		for (int j = 0; !rc && j < i; j++)
			if (strcmp(v[i].token, v[j].token) == 0)
				rc = sc_fail(r, "write %d of the same bytes gave version \"%s\", as write %d did: a stale "
				             "if-match would pass", i + 1, v[i].token, j + 1);
	}
	if (!rc)
		rc = expect_stat(r, k, 1, 4, v[WRITES - 1].token);
	/* The oldest token must not match now. */
	if (!rc)
		rc = sc_want(r, "put if-match at the first of the writes' versions",
		             tether_store_put(r->st, k, "x", 1, TETHER_PUT_IF_MATCH, &v[0], NULL), TETHER_EREFUSED);
	return rc;
}

static int check_copy(struct sc_run *r)
{
	uint8_t *data = sc_pattern(4096, 7);
	struct tether_store_version v = {{0}}, stale = {{0}};
	int rc = sc_put(r, "src", data, 4096, &stale);
	if (!rc)
		rc = sc_put(r, "src", data, 4096, &v);
	if (!rc)
		rc = sc_ok(r, "copy to a new key", tether_store_copy(r->st, sc_key(r, "src"), sc_key(r, "dst/new"), NULL));
	if (!rc)
		rc = sc_expect_bytes(r, "dst/new", data, 4096);
	if (!rc)
		rc = sc_put(r, "taken", "old", 3, NULL);
	if (!rc)
		rc = sc_want(r, "copy onto an existing key",
		             tether_store_copy(r->st, sc_key(r, "src"), sc_key(r, "taken"), NULL), TETHER_EREFUSED);
	if (!rc)
		rc = sc_expect_bytes(r, "taken", "old", 3);
	if (!rc)
		rc = sc_ok(r, "copy if-match at the source's version",
		           tether_store_copy(r->st, sc_key(r, "src"), sc_key(r, "dst/matched"), &v));
	if (!rc)
		rc = sc_expect_bytes(r, "dst/matched", data, 4096);
	if (!rc)
		rc = sc_want(r, "copy if-match at a stale version of the source",
		             tether_store_copy(r->st, sc_key(r, "src"), sc_key(r, "dst/stale"), &stale), TETHER_EREFUSED);
	if (!rc)
		rc = sc_expect_absent(r, "dst/stale");
	if (!rc)
		rc = sc_want(r, "copy of an absent key",
		             tether_store_copy(r->st, sc_key(r, "absent"), sc_key(r, "dst/none"), NULL), TETHER_ENOTFOUND);
	if (!rc)
		rc = sc_expect_absent(r, "dst/none");
	/* The source is untouched. */
	if (!rc)
		rc = expect_stat(r, sc_key(r, "src"), 1, 4096, v.token);
	free(data);
	return rc;
}

static int check_delete(struct sc_run *r)
{
	int rc = sc_put(r, "gone", "bytes", 5, NULL);
	if (!rc)
		rc = sc_ok(r, "delete", tether_store_delete(r->st, sc_key(r, "gone")));
	if (!rc)
		rc = sc_expect_absent(r, "gone");
	if (!rc)
		rc = sc_ok(r, "delete again (an object already gone is not an error)",
		           tether_store_delete(r->st, sc_key(r, "gone")));
	if (!rc)
		rc = sc_ok(r, "delete of a key never written", tether_store_delete(r->st, sc_key(r, "never/written")));
	uint8_t *got = NULL;
	size_t n = 0;
	if (!rc)
		rc = sc_want(r, "get after delete", tether_store_get(r->st, sc_key(r, "gone"), &got, &n, NULL),
		             TETHER_ENOTFOUND);
	free(got);
	/* Deleted, it can be created again if absent. */
	if (!rc)
		rc = sc_ok(r, "put if-absent after delete",
		           tether_store_put(r->st, sc_key(r, "gone"), "again", 5, TETHER_PUT_IF_ABSENT, NULL, NULL));
	return rc;
}

/* Keys that could leave the root, or that name a staging file: refused by
 * the front with TETHER_EUSAGE before any store sees them, and nothing
 * written. */
static int check_invalid_keys(struct sc_run *r)
{
	static const char *const bad[] = {
		"", "/", "/abs", "trailing/", "a//b", ".", "..", "./a", "a/.", "../up", "a/../b", "a/..", "back\\slash",
		"ctl\001", "new\nline", "tab\tkey", "staging#123", "dir/staging#0",
	};
	char key[64], what[128];
	int rc = 0;
	for (size_t i = 0; !rc && i < sizeof bad / sizeof bad[0]; i++) {
		/* Inside this check's area, so a store that took one wrote only there. */
		int bare = !bad[i][0] || bad[i][0] == '/';
		snprintf(key, sizeof key, "%s%s%s", bare ? "" : r->area, bare ? "" : "/", bad[i]);
		struct tether_store_version v = {"\"x\""};
		struct tether_store_stat st;
		uint8_t *got = NULL;
		size_t n = 0;
		int exists = 0;
		snprintf(what, sizeof what, "put of key \"%s\"", key);
		rc = sc_want(r, what, tether_store_put(r->st, key, "x", 1, TETHER_PUT_OVERWRITE, NULL, NULL), TETHER_EUSAGE);
		snprintf(what, sizeof what, "put if-match of key \"%s\"", key);
		if (!rc)
			rc = sc_want(r, what, tether_store_put(r->st, key, "x", 1, TETHER_PUT_IF_MATCH, &v, NULL), TETHER_EUSAGE);
		snprintf(what, sizeof what, "get of key \"%s\"", key);
		if (!rc)
			rc = sc_want(r, what, tether_store_get(r->st, key, &got, &n, NULL), TETHER_EUSAGE);
		free(got);
		snprintf(what, sizeof what, "head of key \"%s\"", key);
		if (!rc)
			rc = sc_want(r, what, tether_store_head(r->st, key, &exists, NULL, NULL), TETHER_EUSAGE);
		snprintf(what, sizeof what, "stat of key \"%s\"", key);
		if (!rc)
			rc = sc_want(r, what, tether_store_stat(r->st, key, NULL, &st), TETHER_EUSAGE);
		snprintf(what, sizeof what, "delete of key \"%s\"", key);
		if (!rc)
			rc = sc_want(r, what, tether_store_delete(r->st, key), TETHER_EUSAGE);
		snprintf(what, sizeof what, "copy to key \"%s\"", key);
		if (!rc)
			rc = sc_put(r, "valid", "v", 1, NULL);
		if (!rc)
			rc = sc_want(r, what, tether_store_copy(r->st, sc_key(r, "valid"), key, NULL), TETHER_EUSAGE);
	}
	tether_store_iter *it = NULL;
	if (!rc)
		rc = sc_want(r, "list under prefix \"../x\"", tether_store_list(r->st, "../x", NULL, 0, &it), TETHER_EUSAGE);
	tether_store_iter_free(it);
	it = NULL;
	if (!rc)
		rc = sc_want(r, "list after \"a/../b\"", tether_store_list(r->st, "", "a/../b", 0, &it), TETHER_EUSAGE);
	tether_store_iter_free(it);
	/* Nothing but the valid key was written. */
	json_t *keys = NULL;
	if (!rc)
		rc = sc_list(r, "", NULL, 0, &keys);
	if (!rc && (json_array_size(keys) != 1 || strcmp(json_string_value(json_array_get(keys, 0)), "valid") != 0)) {
		char *text = json_dumps(keys, JSON_COMPACT);
		rc = sc_fail(r, "after the refused calls the area lists %s, not [\"valid\"]", text ? text : "?");
		free(text);
	}
	json_decref(keys);
	return rc;
}

/* root_exists, make_root and remove_root on a root of the check's own. */
static int check_root(struct sc_run *r)
{
	char uri[SC_KEY_MAX * 2];
	snprintf(uri, sizeof uri, "%s/%s/root", r->s->uri, r->area);
	tether_store *st = NULL;
	int exists = 1;
	int rc = sc_ok(r, "open of a fresh root", tether_store_open(uri, r->s->options, &st));
	if (!rc)
		rc = sc_ok(r, "root_exists of a fresh root", tether_store_root_exists(st, &exists));
	if (!rc && exists)
		rc = sc_fail(r, "root_exists says %s exists before anything was written", uri);
	if (!rc)
		rc = sc_ok(r, "make_root", tether_store_make_root(st));
	if (!rc)
		rc = sc_ok(r, "make_root again", tether_store_make_root(st));
	if (!rc)
		rc = sc_ok(r, "put under the root", tether_store_put(st, "top", "t", 1, TETHER_PUT_OVERWRITE, NULL, NULL));
	if (!rc)
		rc = sc_ok(r, "put under the root",
		           tether_store_put(st, "deep/er/key", "d", 1, TETHER_PUT_OVERWRITE, NULL, NULL));
	if (!rc)
		rc = sc_ok(r, "root_exists with objects", tether_store_root_exists(st, &exists));
	if (!rc && !exists)
		rc = sc_fail(r, "root_exists says %s does not exist; it holds two objects", uri);
	if (!rc)
		rc = sc_want(r, "remove_root while two objects are left", tether_store_remove_root(st), TETHER_EREFUSED);
	if (!rc)
		rc = sc_ok(r, "delete", tether_store_delete(st, "top"));
	if (!rc)
		rc = sc_want(r, "remove_root while a nested object is left", tether_store_remove_root(st), TETHER_EREFUSED);
	int present = 0;
	if (!rc)
		rc = sc_ok(r, "head after a refused remove_root", tether_store_head(st, "deep/er/key", &present, NULL, NULL));
	if (!rc && !present)
		rc = sc_fail(r, "a refused remove_root removed deep/er/key");
	if (!rc)
		rc = sc_ok(r, "delete", tether_store_delete(st, "deep/er/key"));
	if (!rc)
		rc = sc_ok(r, "remove_root once no object is left", tether_store_remove_root(st));
	if (!rc)
		rc = sc_ok(r, "root_exists after remove_root", tether_store_root_exists(st, &exists));
	if (!rc && exists)
		rc = sc_fail(r, "root_exists says %s exists after remove_root", uri);
	if (!rc)
		rc = sc_ok(r, "remove_root of a root that is gone", tether_store_remove_root(st));
	tether_store_close(st);
	return rc;
}

/* Through the fault store (fault+...), an injected failure of each kind
 * surfaces as the error it injects, and a torn write is an error that took
 * effect. */
static int check_faults(struct sc_run *r)
{
	if (!r->s->fault)
		return sc_skip(r, "the store is not the fault store (give a fault+file:// URI)");
	const char *k = sc_key(r, "faulted");
	uint8_t *got = NULL;
	size_t n = 0;
	int exists = 0;
	tether_store_iter *it = NULL;
	const char *key = NULL;
	int rc = sc_ok(r, "fault spec", tether_fault_store_set("put:1:fail"));
	if (!rc)
		rc = sc_want(r, "put with an injected failure",
		             tether_store_put(r->st, k, "x", 1, TETHER_PUT_OVERWRITE, NULL, NULL), TETHER_EIO);
	tether_fault_store_set(NULL);
	if (!rc)
		rc = sc_expect_absent(r, "faulted");
	if (!rc)
		rc = sc_put(r, "faulted", "x", 1, NULL);
	if (!rc && !(rc = sc_ok(r, "fault spec", tether_fault_store_set("get:1:transient"))))
		rc = sc_want(r, "get with an injected transient failure", tether_store_get(r->st, k, &got, &n, NULL),
		             TETHER_ETRANSIENT);
	free(got);
	if (!rc && !(rc = sc_ok(r, "fault spec", tether_fault_store_set("head:1:auth"))))
		rc = sc_want(r, "head with an injected refusal of credentials",
		             tether_store_head(r->st, k, &exists, NULL, NULL), TETHER_EAUTH);
	if (!rc && !(rc = sc_ok(r, "fault spec", tether_fault_store_set("list:1:fail"))) &&
	    !(rc = sc_ok(r, "list", tether_store_list(r->st, r->area, NULL, 0, &it))))
		rc = sc_want(r, "a listing with an injected failure", tether_store_next(it, &key), TETHER_EIO);
	tether_store_iter_free(it);
	if (!rc && !(rc = sc_ok(r, "fault spec", tether_fault_store_set("delete:1:tear"))))
		rc = sc_want(r, "delete with a torn reply", tether_store_delete(r->st, k), TETHER_ETRANSIENT);
	tether_fault_store_set(NULL);
	/* Torn: the delete took effect though it was reported lost. */
	if (!rc)
		rc = sc_expect_absent(r, "faulted");
	return rc;
}

const struct sc_check sc_checks_objects[] = {
	{"put/get: an empty object, 1 byte and 3 MiB come back as written", check_round_trip},
	{"get: ranges inside, at the end, past the end and TETHER_STORE_TO_END", check_ranges},
	{"head/stat: a present key's size and version; an absent key is absent, not an error", check_head_stat},
	{"put if-absent: written when absent, TETHER_EREFUSED when present", check_if_absent},
	{"put if-match: written at the current version, TETHER_EREFUSED at a stale one", check_if_match},
	{"version: every write gives a new version token, even of the same bytes", check_token_changes},
	{"copy: to a new key; TETHER_EREFUSED onto an existing key; if_match honoured", check_copy},
	{"delete: removes the object; deleting again is not an error", check_delete},
	{"keys: the front refuses keys that leave the root or name staging files (TETHER_EUSAGE)", check_invalid_keys},
	{"root: root_exists, make_root, and remove_root refused while objects are left", check_root},
	{"faults: an injected failure surfaces as its error; a torn write took effect", check_faults},
	{NULL, NULL},
};
