/* The store contract, listing: prefixes are directories, keys come in
 * byte order, start_after is strictly after, paging loses and repeats no
 * key, list_stat agrees with stat, keys that need escaping survive the
 * round trip, and staging names are never keys. */
#include "testing/store_contract.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int by_bytes(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The listing must be exactly `want` (n keys, in any order here: sorted
 * before comparing, as strcmp orders bytes). */
static int expect_listing(struct sc_run *r, const char *what, const json_t *got, const char *const *want, size_t n)
{
	const char **sorted = malloc((n ? n : 1) * sizeof *sorted);
	if (!sorted)
		abort();
	if (n)
		memcpy(sorted, want, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, by_bytes);
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		const char *k = json_string_value(json_array_get(got, i));
		if (!k)
			rc = sc_fail(r, "%s stopped after %zu keys; \"%s\" and %zu more are missing", what, i, sorted[i],
			             n - i - 1);
		else if (strcmp(k, sorted[i]) != 0)
			rc = sc_fail(r, "%s gave \"%s\" as key %zu; want \"%s\" (byte order, each key once)", what, k, i + 1,
			             sorted[i]);
	}
	if (!rc && json_array_size(got) != n)
		rc = sc_fail(r, "%s gave %zu keys, %zu more than written (first extra: \"%s\")", what,
		             json_array_size(got), json_array_size(got) - n, json_string_value(json_array_get(got, n)));
	free(sorted);
	return rc;
}

static int put_all(struct sc_run *r, const char *const *keys, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = sc_put(r, keys[i], keys[i], strlen(keys[i]), NULL);
	return rc;
}

static int check_prefix(struct sc_run *r)
{
	static const char *const keys[] = {"p/a", "p/b/c", "p/b/d/e", "pq/x", "p-/y", "p.txt", "q/p/z"};
	static const char *const under_p[] = {"p/a", "p/b/c", "p/b/d/e"};
	static const char *const under_pb[] = {"p/b/c", "p/b/d/e"};
	static const char *const all[] = {"p/a", "p/b/c", "p/b/d/e", "pq/x", "p-/y", "p.txt", "q/p/z"};
	json_t *got = NULL;
	int rc = put_all(r, keys, sizeof keys / sizeof keys[0]);
	if (!rc && !(rc = sc_list(r, "p", NULL, 0, &got)))
		rc = expect_listing(r, "the listing under p/", got, under_p, 3);
	json_decref(got);
	got = NULL;
	if (!rc && !(rc = sc_list(r, "p/b", NULL, 0, &got)))
		rc = expect_listing(r, "the listing under p/b/", got, under_pb, 2);
	json_decref(got);
	got = NULL;
	if (!rc && !(rc = sc_list(r, "p/a", NULL, 0, &got)))
		rc = expect_listing(r, "the listing under p/a/ (an object, not a directory)", got, NULL, 0);
	json_decref(got);
	got = NULL;
	if (!rc && !(rc = sc_list(r, "none", NULL, 0, &got)))
		rc = expect_listing(r, "the listing under a prefix with no keys", got, NULL, 0);
	json_decref(got);
	got = NULL;
	if (!rc && !(rc = sc_list(r, "", NULL, 0, &got)))
		rc = expect_listing(r, "the listing of the whole area", got, all, sizeof all / sizeof all[0]);
	json_decref(got);
	return rc;
}

/* Bytes, not characters or case: "a-b" < "a/b" < "a0" < "B" < "b" < "ü". */
static const char *const ordered[] = {
	"o/A", "o/B", "o/a-b", "o/a/b", "o/a0", "o/b", "o/z~", "o/~", "o/\xc3\xbc", "o/\xe6\x97\xa5",
	"o/a.b", "o/a b", "o/A1", "o/Z",
};

static int check_order(struct sc_run *r)
{
	size_t n = sizeof ordered / sizeof ordered[0];
	json_t *got = NULL;
	int rc = put_all(r, ordered, n);
	if (!rc && !(rc = sc_list(r, "o", NULL, 0, &got)))
		rc = expect_listing(r, "the listing under o/", got, ordered, n);
	json_decref(got);
	return rc;
}

static int check_start_after(struct sc_run *r)
{
	static const char *const keys[] = {"s/a", "s/b", "s/b0", "s/c/d", "s/e"};
	static const char *const after_b[] = {"s/b0", "s/c/d", "s/e"};
	static const char *const after_bz[] = {"s/c/d", "s/e"};
	static const char *const after_c[] = {"s/c/d", "s/e"};
	json_t *got = NULL;
	int rc = put_all(r, keys, 5);
	if (!rc && !(rc = sc_list(r, "s", "s/b", 0, &got)))
		rc = expect_listing(r, "the listing after s/b (a key)", got, after_b, 3);
	json_decref(got);
	got = NULL;
	if (!rc && !(rc = sc_list(r, "s", "s/bz", 0, &got)))
		rc = expect_listing(r, "the listing after s/bz (no key)", got, after_bz, 2);
	json_decref(got);
	got = NULL;
	if (!rc && !(rc = sc_list(r, "s", "s/c", 0, &got)))
		rc = expect_listing(r, "the listing after s/c (a directory's name)", got, after_c, 2);
	json_decref(got);
	got = NULL;
	if (!rc && !(rc = sc_list(r, "s", "s/e", 0, &got)))
		rc = expect_listing(r, "the listing after s/e (the last key)", got, NULL, 0);
	json_decref(got);
	got = NULL;
	if (!rc && !(rc = sc_list(r, "s", "s/a", 1, &got)))
		rc = expect_listing(r, "the listing after s/a, a key a page", got, keys + 1, 4);
	json_decref(got);
	return rc;
}

#define PAGED 23

static int check_paging(struct sc_run *r)
{
	char names[PAGED][32];
	const char *keys[PAGED];
	for (int i = 0; i < PAGED; i++) {
		/* Some in sub-"directories", so pages cross them. */
		snprintf(names[i], sizeof names[i], i % 5 == 0 ? "pg/d%02d/k" : "pg/k%02d", i);
		keys[i] = names[i];
	}
	int rc = put_all(r, keys, PAGED);
	static const size_t pages[] = {1, 2, 4, 7, 22, 23, 24};
	for (size_t i = 0; !rc && i < sizeof pages / sizeof pages[0]; i++) {
		json_t *got = NULL;
		char what[64];
		snprintf(what, sizeof what, "the listing of %d keys, %zu a page", PAGED, pages[i]);
		if (!(rc = sc_list(r, "pg", NULL, pages[i], &got)))
			rc = expect_listing(r, what, got, keys, PAGED);
		json_decref(got);
	}
	return rc;
}

struct stat_pair {
	char key[SC_KEY_MAX];
	struct tether_store_stat st;
};

static int check_list_stat(struct sc_run *r)
{
	enum { N = 9 };
	int rc = 0;
	for (int i = 0; !rc && i < N; i++) {
		char key[32];
		snprintf(key, sizeof key, "ls/%s%d", i % 3 ? "" : "sub/", i);
		uint8_t *data = sc_pattern((size_t)i * 37, (unsigned)i);
		rc = sc_put(r, key, data, (size_t)i * 37, NULL);
		free(data);
	}
	tether_store_iter *it = NULL;
	const char *key = NULL;
	const struct tether_store_stat *lst = NULL;
	int seen = 0;
	if (!rc)
		rc = sc_ok(r, "list", tether_store_list(r->st, sc_key(r, "ls"), NULL, 4, &it));
	while (!rc && !(rc = sc_ok(r, "next_stat", tether_store_next_stat(it, &key, &lst))) && key) {
		struct tether_store_stat st;
		seen++;
		if ((rc = sc_ok(r, "stat", tether_store_stat(r->st, key, NULL, &st))))
			break;
		if (!lst->exists || lst->size != st.size || strcmp(lst->version.token, st.version.token) != 0)
			rc = sc_fail(r, "the listing says %s is %llu bytes at %s (exists %d); stat says %llu at %s", key,
			             (unsigned long long)lst->size, lst->version.token, lst->exists,
			             (unsigned long long)st.size, st.version.token);
		else if (strcmp(lst->version_id, st.version_id) != 0 && lst->version_id[0])
			rc = sc_fail(r, "the listing says %s is version id %s; stat says %s", key, lst->version_id,
			             st.version_id);
	}
	tether_store_iter_free(it);
	if (!rc && seen != N)
		rc = sc_fail(r, "list_stat gave %d keys; %d were written", seen, N);
	return rc;
}

/* Keys a URL, a query string, XML or a shell would have to escape. */
static const char *const awkward[] = {
	"a b", "a  b ", " lead", "\xc3\xbc", "\xe6\x97\xa5\xe6\x9c\xac/\xc3\xa9t\xc3\xa9", "+", "a+b", "%", "%20",
	"%2F", "%zz", "=", "a=b&c=d", "&", "?", "?x=1", "#", "a#b", "x#", "x#1a", "~", "!", "'", "\"", "(", ")",
	"*", ",", ";", ":", "@", "$", "[", "]", "{", "}", "^", "`", "|", "<", ">", "&amp;", "dir with space/k",
	"emoji \xf0\x9f\x98\x80", "\x7f", ".hidden", "..dots", "dots..", "a.", "-",
};

static int check_awkward_keys(struct sc_run *r)
{
	size_t n = sizeof awkward / sizeof awkward[0];
	char names[sizeof awkward / sizeof awkward[0]][64];
	const char *keys[sizeof awkward / sizeof awkward[0]];
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		snprintf(names[i], sizeof names[i], "w/%s", awkward[i]);
		keys[i] = names[i];
		rc = sc_put(r, keys[i], keys[i], strlen(keys[i]), NULL);
		if (!rc)
			rc = sc_expect_bytes(r, keys[i], keys[i], strlen(keys[i]));
		struct tether_store_stat st;
		char what[96];
		snprintf(what, sizeof what, "stat of key \"%s\"", keys[i]);
		if (!rc)
			rc = sc_ok(r, what, tether_store_stat(r->st, sc_key(r, keys[i]), NULL, &st));
		if (!rc && (!st.exists || st.size != strlen(keys[i])))
			rc = sc_fail(r, "%s says exists %d, %llu bytes; %zu were written", what, st.exists,
			             (unsigned long long)st.size, strlen(keys[i]));
	}
	json_t *got = NULL;
	if (!rc && !(rc = sc_list(r, "w", NULL, 7, &got)))
		rc = expect_listing(r, "the listing of the keys that need escaping", got, keys, n);
	json_decref(got);
	/* Listing from one of them, and under one as a prefix. */
	got = NULL;
	if (!rc && !(rc = sc_list(r, "w", "w/a b", 0, &got))) {
		size_t later = 0;
		for (size_t i = 0; i < n; i++)
			later += strcmp(keys[i], "w/a b") > 0;
		if (json_array_size(got) != later)
			rc = sc_fail(r, "the listing after \"w/a b\" gave %zu keys; %zu follow it", json_array_size(got), later);
	}
	json_decref(got);
	got = NULL;
	static const char *const spaced[] = {"w/dir with space/k"};
	if (!rc && !(rc = sc_list(r, "w/dir with space", NULL, 0, &got)))
		rc = expect_listing(r, "the listing under \"w/dir with space/\"", got, spaced, 1);
	json_decref(got);
	for (size_t i = 0; !rc && i < n; i++) {
		char what[96];
		snprintf(what, sizeof what, "delete of key \"%s\"", keys[i]);
		if (!(rc = sc_ok(r, what, tether_store_delete(r->st, sc_key(r, keys[i])))))
			rc = sc_expect_absent(r, keys[i]);
	}
	return rc;
}

/* NAME#DIGITS is a write in progress: the front refuses it as a key, and a
 * listing never shows one. On a local store the check also leaves a real
 * staging file beside an object, as a crashed writer would. */
static int check_staging(struct sc_run *r)
{
	static const char *const staging[] = {"st/obj#0", "st/obj#123", "st/sub/x#99999999999999999999"};
	static const char *const plain[] = {"st/obj", "st/obj#", "st/obj#1a", "st/obj#-1", "st/#x"};
	int rc = 0;
	for (size_t i = 0; !rc && i < sizeof staging / sizeof staging[0]; i++) {
		char what[96];
		snprintf(what, sizeof what, "put of staging name \"%s\"", staging[i]);
		rc = sc_want(r, what, tether_store_put(r->st, sc_key(r, staging[i]), "s", 1, TETHER_PUT_OVERWRITE, NULL,
		                                       NULL), TETHER_EUSAGE);
		if (!rc && !tether_store_is_staging_name(staging[i]))
			rc = sc_fail(r, "tether_store_is_staging_name(\"%s\") is 0", staging[i]);
	}
	for (size_t i = 0; !rc && i < sizeof plain / sizeof plain[0]; i++)
		if (tether_store_is_staging_name(plain[i]))
			rc = sc_fail(r, "tether_store_is_staging_name(\"%s\") is 1; only NAME#DIGITS is", plain[i]);
	if (!rc)
		rc = put_all(r, plain, sizeof plain / sizeof plain[0]);
	char path[SC_KEY_MAX * 2] = "";
	if (!rc && r->s->local) {
		snprintf(path, sizeof path, "%s/%s/st/obj#4242", r->s->uri, r->area);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			rc = sc_fail(r, "cannot make a staging file %s", path);
		else
			close(fd);
	}
	json_t *got = NULL;
	if (!rc && !(rc = sc_list(r, "st", NULL, 2, &got)))
		rc = expect_listing(r, "the listing beside staging names", got, plain, sizeof plain / sizeof plain[0]);
	json_decref(got);
	if (path[0])
		unlink(path);
	return rc;
}

const struct sc_check sc_checks_listing[] = {
	{"list: a prefix is a directory (p/ lists neither pq/ nor p-/)", check_prefix},
	{"list: keys come in byte order", check_order},
	{"list: start_after is strictly after, and need not be a key", check_start_after},
	{"list: paging by 1 to 24 keys a page loses and repeats no key", check_paging},
	{"list_stat: each key's size and version token are stat's", check_list_stat},
	{"keys: spaces, unicode and characters that need escaping round-trip, list and delete", check_awkward_keys},
	{"keys: NAME#DIGITS (a staging name) is refused as a key and never listed", check_staging},
	{NULL, NULL},
};
