/* The S3 store's listings: ListObjectsV2 (keys with their size and ETag,
 * paged by continuation token), ListObjectVersions (paged by key and
 * version-id markers), and the root, which on S3 is only a prefix: it
 * exists while any key is under it. */
#include "store/s3/s3.h"

#include "format/xml.h"
#include "store/http/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* S3 answers at most 1,000 keys per request. */
#define PAGE_MAX 1000

/* One listing request's answer, parsed; the query is cleared. */
static int list_request(struct s3 *s, struct s3_query *q, const char *what, struct tt_xml_doc **doc)
{
	*doc = NULL;
	char *query = s3_query_build(q);
	s3_query_clear(q);
	if (!query)
		return s3_oom();
	struct tt_http_response r;
	int attempts;
	int rc = s3_perform(s, &(struct s3_call){.method = "GET", .query = query}, what, &r, &attempts);
	if (rc == 0 && r.status >= 300)
		rc = s3_fail(s, what, &r, attempts);
	if (rc == 0) {
		__atomic_store_n(&s->bucket_seen, 1, __ATOMIC_RELAXED);
		char err[512], name[600];
		snprintf(name, sizeof name, "listing of %s", what);
		if (!(*doc = tt_xml_parse((const char *)r.body, r.body_len, name, err, sizeof err)))
			rc = tether_error_set(TETHER_EIO, "%s", err);
	}
	tt_http_response_free(&r);
	free(query);
	return rc;
}

/* The full name under the bucket for a store-relative name, with a
 * trailing '/' kept: the root joined to it. */
static char *under_root(const struct s3 *s, const char *name)
{
	size_t n = strlen(s->root) + strlen(name) + 2;
	char *o = malloc(n);
	if (o)
		snprintf(o, n, "%s%s%s", s->root, *s->root ? "/" : "", name);
	return o;
}

/* A listed name back to a store key: the root's "root/" cut off. NULL for
 * what is no key: outside the root (never, from a prefix query), a
 * "directory" marker ending in '/', the staging file of a write. */
static const char *key_of(const struct s3 *s, const char *name)
{
	size_t rl = strlen(s->root);
	if (rl) {
		if (strncmp(name, s->root, rl) != 0 || name[rl] != '/')
			return NULL;
		name += rl + 1;
	}
	size_t n = strlen(name);
	if (!n || name[n - 1] == '/' || tether_store_is_staging_name(name))
		return NULL;
	return name;
}

static int is_true(const struct tt_xml_node *n, const char *child)
{
	const char *t = tt_xml_child_text(n, child);
	return t && strcmp(t, "true") == 0;
}

static uint64_t text_u64(const struct tt_xml_node *n, const char *child)
{
	const char *t = tt_xml_child_text(n, child);
	return t ? strtoull(t, NULL, 10) : 0;
}

struct lister {
	tether_store_key_fn key_fn;
	tether_store_stat_fn stat_fn;
	void *ud;
};

static int list_pages(struct s3 *s, const char *prefix, const char *start_after, size_t max_keys,
                      const struct lister *l, int *more)
{
	*more = 0;
	/* A prefix is a directory: "p" lists p/a, not pq/x. */
	size_t pl = strlen(prefix);
	char *dir = malloc(pl + 2);
	if (dir)
		snprintf(dir, pl + 2, "%s%s", prefix, pl ? "/" : "");
	char *full_prefix = dir ? under_root(s, dir) : NULL;
	free(dir);
	char *after = start_after && *start_after ? under_root(s, start_after) : NULL;
	char *what = full_prefix ? s3_object_uri(s, full_prefix) : NULL;
	char *token = NULL;
	int rc = !full_prefix || !what || (start_after && *start_after && !after) ? s3_oom() : 0;
	size_t emitted = 0;
	while (rc == 0 && emitted < max_keys) {
		struct s3_query q = {0};
		char mk[32];
		size_t want = max_keys - emitted;
		snprintf(mk, sizeof mk, "%zu", want < PAGE_MAX ? want : (size_t)PAGE_MAX);
		s3_query_add(&q, "list-type", "2");
		s3_query_add(&q, "prefix", full_prefix);
		s3_query_add(&q, "max-keys", mk);
		if (token)
			s3_query_add(&q, "continuation-token", token);
		else if (after)
			s3_query_add(&q, "start-after", after);
		struct tt_xml_doc *d;
		if ((rc = list_request(s, &q, what, &d)) != 0)
			break;
		const struct tt_xml_node *root = tt_xml_root(d);
		int truncated = is_true(root, "IsTruncated");
		const struct tt_xml_node *c;
		for (c = tt_xml_child(root, "Contents"); c && rc == 0; c = tt_xml_next(c, "Contents")) {
			const char *name = tt_xml_child_text(c, "Key");
			const char *key = name ? key_of(s, name) : NULL;
			if (!key)
				continue;
			if (emitted == max_keys) {
				/* A server that sent more than asked: the rest next time. */
				truncated = 1;
				break;
			}
			emitted++;
			if (l->key_fn) {
				rc = l->key_fn(l->ud, key);
			} else {
				struct tether_store_stat st = {.exists = 1, .is_latest = 1};
				st.size = text_u64(c, "Size");
				const char *etag = tt_xml_child_text(c, "ETag");
				snprintf(st.version.token, sizeof st.version.token, "%s", etag ? etag : "");
				rc = l->stat_fn(l->ud, key, &st);
			}
		}
		const char *next = tt_xml_child_text(root, "NextContinuationToken");
		/* A server that hands back the token it was given would page
		 * forever. */
		int repeated = token && next && strcmp(token, next) == 0;
		free(token);
		token = truncated && next && *next ? strdup(next) : NULL;
		tt_xml_free(d);
		if (rc == 0 && truncated && !token)
			rc = tether_error_set(TETHER_EIO, "%s: the listing was cut short without a continuation token",
			                      what);
		else if (rc == 0 && truncated && repeated)
			rc = tether_error_set(TETHER_EIO, "%s: the listing repeated its continuation token", what);
		if (rc != 0 || !truncated)
			break;
		if (emitted == max_keys)
			*more = 1;
	}
	free(token);
	free(full_prefix);
	free(after);
	free(what);
	return rc;
}

int s3_list(void *impl, const char *prefix, const char *start_after, size_t max_keys, tether_store_key_fn emit,
            void *ud, int *more)
{
	struct lister l = {.key_fn = emit, .ud = ud};
	return list_pages(impl, prefix, start_after, max_keys, &l, more);
}

int s3_list_stat(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                 tether_store_stat_fn emit, void *ud, int *more)
{
	struct lister l = {.stat_fn = emit, .ud = ud};
	return list_pages(impl, prefix, start_after, max_keys, &l, more);
}

int s3_list_versions(void *impl, const char *key, tether_store_stat_fn emit, void *ud)
{
	struct s3 *s = impl;
	char *object = s3_object_name(s, key);
	char *what = object ? s3_object_uri(s, object) : NULL;
	char *key_marker = NULL, *vid_marker = NULL;
	int rc = what ? 0 : s3_oom();
	int done = 0;
	while (rc == 0 && !done) {
		struct s3_query q = {0};
		s3_query_add(&q, "versions", "");
		s3_query_add(&q, "prefix", object);
		if (key_marker) {
			s3_query_add(&q, "key-marker", key_marker);
			if (vid_marker)
				s3_query_add(&q, "version-id-marker", vid_marker);
		}
		struct tt_xml_doc *d;
		if ((rc = list_request(s, &q, what, &d)) != 0)
			break;
		const struct tt_xml_node *root = tt_xml_root(d);
		/* Versions and delete markers come interleaved, newest first per
		 * key; the prefix also matches longer keys, which are skipped (and
		 * once past this key, nothing of it follows). */
		for (const struct tt_xml_node *v = tt_xml_child(root, NULL); v && rc == 0 && !done;
		     v = tt_xml_next(v, NULL)) {
			int is_marker = strcmp(tt_xml_name(v), "DeleteMarker") == 0;
			if (!is_marker && strcmp(tt_xml_name(v), "Version") != 0)
				continue;
			const char *name = tt_xml_child_text(v, "Key");
			if (!name)
				continue;
			int cmp = strcmp(name, object);
			if (cmp > 0) {
				done = 1;
				break;
			}
			if (cmp != 0)
				continue;
			struct tether_store_stat st = {.exists = !is_marker};
			st.size = is_marker ? 0 : text_u64(v, "Size");
			const char *etag = tt_xml_child_text(v, "ETag");
			snprintf(st.version.token, sizeof st.version.token, "%s", etag && !is_marker ? etag : "");
			const char *vid = tt_xml_child_text(v, "VersionId");
			snprintf(st.version_id, sizeof st.version_id, "%s", vid ? vid : "");
			st.is_latest = is_true(v, "IsLatest");
			rc = emit(ud, key, &st);
		}
		const char *nk = tt_xml_child_text(root, "NextKeyMarker");
		const char *nv = tt_xml_child_text(root, "NextVersionIdMarker");
		if (!done && is_true(root, "IsTruncated")) {
			if (!nk || !*nk) {
				rc = rc ? rc
				        : tether_error_set(TETHER_EIO, "%s: the version listing was cut short without a marker",
				                           what);
			} else {
				free(key_marker);
				free(vid_marker);
				key_marker = strdup(nk);
				vid_marker = nv && *nv ? strdup(nv) : NULL;
				if (!key_marker)
					rc = s3_oom();
			}
		} else {
			done = 1;
		}
		tt_xml_free(d);
	}
	free(key_marker);
	free(vid_marker);
	free(object);
	free(what);
	return rc;
}

static int count_one(void *ud, const char *key)
{
	(void)key;
	++*(size_t *)ud;
	return 0;
}

int s3_root_exists(void *impl, int *exists)
{
	size_t n = 0;
	int more = 0;
	int rc = s3_list(impl, "", "", 1, count_one, &n, &more);
	*exists = rc == 0 && (n > 0 || more);
	return rc;
}

int s3_make_root(void *impl)
{
	(void)impl; /* a prefix needs no making: it exists once a key is under it */
	return 0;
}

int s3_remove_root(void *impl)
{
	struct s3 *s = impl;
	int exists = 0;
	int rc = s3_root_exists(impl, &exists);
	if (rc == 0 && exists)
		rc = tether_error_set(TETHER_EREFUSED, "%s still holds objects: not removed", s->uri);
	return rc;
}
