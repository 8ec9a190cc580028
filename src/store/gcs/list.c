/* Listing: a page of keys (objects.list with prefix, startOffset,
 * maxResults and pageToken), every generation of one key (versions=true),
 * and the root, which on an object store is only its prefix.
 *
 * startOffset includes the object it names, and the store's listing starts
 * strictly after start_after, so that object is passed over; one more
 * object than asked for is requested (up to the API's 1,000), so whether
 * keys remain is mostly known from the answer itself. Objects whose names end in '/' (the
 * "folders" the Cloud Console makes) and staging files of writes in
 * progress are not keys and are passed over. */
#include "store/gcs/gcs.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* The API answers at most this many objects a request. */
#define MAX_RESULTS 1000

struct page_walk {
	struct tt_gcs *g;
	const char *what;
	tether_store_key_fn emit_key;   /* one of these two */
	tether_store_stat_fn emit_stat;
	void *ud;
	size_t max_keys, emitted;
	int more;
};

static int is_key(const char *key)
{
	size_t n = strlen(key);
	if (n == 0 || key[n - 1] == '/')
		return 0;
	const char *last = strrchr(key, '/');
	return !tether_store_is_staging_name(last ? last + 1 : key);
}

/* One object of a page: emitted while the page has room; the first one
 * past it says that keys remain. */
static int take(struct page_walk *w, const json_t *item, const char *skip)
{
	const char *name = json_string_value(json_object_get(item, "name"));
	size_t rl = strlen(w->g->root);
	if (!name || strncmp(name, w->g->root, rl) != 0)
		return tether_error_set(TETHER_EIO, "%s: the server listed an object outside the prefix", w->what);
	if (strcmp(name, skip) == 0 || !is_key(name + rl))
		return 0;
	if (w->emitted == w->max_keys) {
		w->more = 1;
		return 0;
	}
	w->emitted++;
	if (w->emit_key)
		return w->emit_key(w->ud, name + rl);
	struct tether_store_stat st;
	int rc = tt_gcs_object_stat(item, w->what, &st);
	return rc ? rc : w->emit_stat(w->ud, name + rl, &st);
}

/* objects.list from `from` (an object name, included; "" for the first)
 * under `under`; *next_token the answer's nextPageToken (malloc'd) or
 * NULL. versions: every generation, not only the live ones. */
static int list_request(struct tt_gcs *g, const char *what, const char *under, const char *from, const char *token,
                        size_t max_results, int versions, json_t **answer, char **next_token)
{
	*answer = NULL;
	*next_token = NULL;
	char *b = tt_http_escape(g->bucket, 0), *p = tt_http_escape(under, 0), *f = tt_http_escape(from, 0);
	char *t = token ? tt_http_escape(token, 0) : NULL;
	char *url = b && p && f && (!token || t)
	                    ? tt_strdupf("%s/storage/v1/b/%s/o?prefix=%s&maxResults=%zu%s%s%s%s%s&fields=items(name,size,"
	                                 "generation,timeDeleted),nextPageToken",
	                                 g->base, b, p, max_results, *from ? "&startOffset=" : "", *from ? f : "",
	                                 token ? "&pageToken=" : "", token ? t : "", versions ? "&versions=true" : "")
	                    : NULL;
	free(b);
	free(p);
	free(f);
	free(t);
	if (!url)
		return tt_fail_oom();
	struct tt_http_response resp;
	struct tt_gcs_call c = {.method = "GET", .url = url, .what = what};
	int rc = tt_gcs_call(g, &c, &resp);
	if (rc == 0 && resp.status == 200 && (rc = tt_gcs_json_body(&resp, what, answer)) == 0) {
		const json_t *items = json_object_get(*answer, "items");
		const char *next = json_string_value(json_object_get(*answer, "nextPageToken"));
		if (items && !json_is_array(items))
			rc = tether_error_set(TETHER_EIO, "%s: the server's listing has no list of items", what);
		else if (next && *next && !(*next_token = strdup(next)))
			rc = tt_fail_oom();
	} else if (rc == 0)
		rc = tt_gcs_fail(g, what, &resp);
	if (rc) {
		json_decref(*answer);
		*answer = NULL;
	}
	tt_http_response_free(&resp);
	free(url);
	return rc;
}

static int list_page(struct tt_gcs *g, const char *prefix, const char *start_after, struct page_walk *w)
{
	char *under = *prefix ? tt_strdupf("%s%s/", g->root, prefix) : strdup(g->root);
	char *from = *start_after ? tt_strdupf("%s%s", g->root, start_after) : strdup("");
	char *what = under ? tt_strdupf("gs://%s/%s", g->bucket, under) : NULL;
	char *token = NULL;
	int rc = under && from && what ? 0 : tt_fail_oom();
	w->g = g;
	w->what = what;
	while (rc == 0) {
		size_t want = w->max_keys - w->emitted + 1;
		json_t *answer;
		char *next;
		rc = list_request(g, what, under, from, token, want < MAX_RESULTS ? want : MAX_RESULTS, 0, &answer, &next);
		size_t i;
		json_t *item;
		json_array_foreach(json_object_get(answer, "items"), i, item) {
			if (rc || w->more)
				break;
			rc = take(w, item, from);
		}
		json_decref(answer);
		free(token);
		token = next;
		/* Past this page keys remain only where the server gave a token.
		 * With the page full, the token is taken at its word (a request
		 * for one more object would cost as much as the next page, where
		 * an empty answer settles it). */
		if (rc || w->more || !token)
			break;
		if (w->emitted == w->max_keys) {
			w->more = 1;
			break;
		}
	}
	free(token);
	free(under);
	free(from);
	free(what);
	return rc;
}

int tt_gcs_list(void *impl, const char *prefix, const char *start_after, size_t max_keys, tether_store_key_fn emit,
                void *ud, int *more)
{
	struct page_walk w = {.emit_key = emit, .ud = ud, .max_keys = max_keys};
	int rc = list_page(impl, prefix, start_after, &w);
	*more = rc == 0 && w.more;
	return rc;
}

int tt_gcs_list_stat(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                     tether_store_stat_fn emit, void *ud, int *more)
{
	struct page_walk w = {.emit_stat = emit, .ud = ud, .max_keys = max_keys};
	int rc = list_page(impl, prefix, start_after, &w);
	*more = rc == 0 && w.more;
	return rc;
}

struct versions {
	struct tether_store_stat *st;
	size_t n, cap;
};

static int by_generation_newest_first(const void *a, const void *b)
{
	unsigned long long x = strtoull(((const struct tether_store_stat *)a)->version_id, NULL, 10);
	unsigned long long y = strtoull(((const struct tether_store_stat *)b)->version_id, NULL, 10);
	return x < y ? 1 : x > y ? -1 : 0;
}

int tt_gcs_list_versions(void *impl, const char *key, tether_store_stat_fn emit, void *ud)
{
	struct tt_gcs *g = impl;
	char *name = tt_gcs_object_name(g, key);
	char *what = name ? tt_gcs_what(g, name) : NULL;
	char *token = NULL;
	struct versions v = {0};
	int rc = what ? 0 : tt_fail_oom();
	/* prefix=name lists name's generations and those of every name that
	 * begins with it; only name's are kept. */
	while (rc == 0) {
		json_t *answer;
		char *next;
		rc = list_request(g, what, name, name, token, MAX_RESULTS, 1, &answer, &next);
		size_t i;
		json_t *item;
		json_array_foreach(json_object_get(answer, "items"), i, item) {
			const char *item_name = json_string_value(json_object_get(item, "name"));
			if (rc || !item_name || strcmp(item_name, name) != 0)
				continue;
			if (v.n == v.cap) {
				size_t cap = v.cap ? 2 * v.cap : 16;
				struct tether_store_stat *grown = realloc(v.st, cap * sizeof *grown);
				if (!grown) {
					rc = tt_fail_oom();
					continue;
				}
				v.st = grown;
				v.cap = cap;
			}
			rc = tt_gcs_object_stat(item, what, &v.st[v.n]);
			v.n += rc == 0;
		}
		json_decref(answer);
		free(token);
		token = next;
		if (!token)
			break;
	}
	if (rc == 0 && v.n)
		qsort(v.st, v.n, sizeof *v.st, by_generation_newest_first);
	for (size_t i = 0; rc == 0 && i < v.n; i++)
		rc = emit(ud, key, &v.st[i]);
	free(v.st);
	free(token);
	free(name);
	free(what);
	return rc;
}

static int count_one(void *ud, const char *key)
{
	(void)key;
	*(int *)ud = 1;
	return 0;
}

int tt_gcs_root_exists(void *impl, int *exists)
{
	*exists = 0;
	int more;
	int rc = tt_gcs_list(impl, "", "", 1, count_one, exists, &more);
	if (rc == 0 && more)
		*exists = 1;
	return rc;
}

int tt_gcs_make_root(void *impl)
{
	/* A prefix is made by the first object written under it; the bucket
	 * must already exist (tether does not create buckets). */
	return tt_gcs_check_bucket(impl);
}

int tt_gcs_remove_root(void *impl)
{
	struct tt_gcs *g = impl;
	int exists;
	int rc = tt_gcs_root_exists(impl, &exists);
	if (rc == 0 && exists)
		rc = tether_error_set(TETHER_EREFUSED, "gs://%s/%s: objects remain under the prefix", g->bucket, g->root);
	return rc;
}
