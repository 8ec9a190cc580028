/* What lakeFS says of its past: the commit log of a ref with the tags on
 * each commit (`tether log KEY`), the objects that differ between two
 * commits under the prefix (`tether diff --content`), and the handle a
 * program opens the recorded state with. */
#include "backends/lakefs/lakefs.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* Up to max_count entries (<= 0: all) of `ref`'s log. */
static int read_log(struct lfs_conn *c, const char *ref, int max_count, json_t **log)
{
	char *r = lfs_esc(c->repo), *e = lfs_esc(ref);
	char *path = r && e ? tt_strdupf("/repositories/%s/refs/%s/commits", r, e) : NULL;
	free(r);
	free(e);
	if (!path)
		return tt_fail_oom();
	int rc;
	if (max_count > 0 && max_count <= 1000) {
		char *url = tt_strdupf("%s?amount=%d", path, max_count);
		long status;
		json_t *j = NULL;
		rc = url ? lfs_request(c, "GET", url, NULL, NULL, &status, &j) : tt_fail_oom();
		json_t *results = json_object_get(j, "results");
		if (rc == 0 && !json_is_array(results))
			rc = tether_error_set(TETHER_EIO, "lakeFS repository %s: the log of %s is not a list", c->repo, ref);
		*log = rc == 0 ? json_incref(results) : NULL;
		json_decref(j);
		free(url);
	} else
		rc = lfs_list_all(c, path, "", 10000000, log);
	free(path);
	if (rc == TETHER_ENOTFOUND)
		rc = tether_error_set(TETHER_ENOTFOUND, "lakeFS repository %s has no ref \"%s\" (%s)", c->repo, ref,
		                      tether_error_last());
	return rc;
}

/* The refs of one kind ("branches", "tags") added to commit id -> [name]. */
static int refs_of(struct lfs_conn *c, const char *what, json_t *by_commit)
{
	char *r = lfs_esc(c->repo), *path = r ? tt_strdupf("/repositories/%s/%s", r, what) : NULL;
	free(r);
	json_t *refs = NULL;
	int rc = path ? lfs_list_all(c, path, "", 1000000, &refs) : tt_fail_oom();
	free(path);
	size_t i;
	json_t *t;
	json_array_foreach(refs, i, t) {
		const char *id = json_string_value(json_object_get(t, "id"));
		const char *commit = json_string_value(json_object_get(t, "commit_id"));
		if (!id || !commit)
			continue;
		json_t *list = json_object_get(by_commit, commit);
		if (!list)
			json_object_set_new(by_commit, commit, list = json_array());
		json_array_append_new(list, json_string(id));
	}
	json_decref(refs);
	return rc;
}

/* commit id -> [branch, ..., tag, ...], as `git log --decorate` shows them. */
static int tags_by_commit(struct lfs_conn *c, json_t **out)
{
	*out = json_object();
	int rc = *out ? refs_of(c, "branches", *out) : tt_fail_oom();
	if (rc == 0)
		rc = refs_of(c, "tags", *out);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int lfs_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	*entries = NULL;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	int is_branch;
	char *pos = lfs_position(&loc, &is_branch);
	json_t *log = NULL, *tags = NULL, *out = json_array();
	rc = pos && out ? read_log(&c, pos, max_count, &log) : tt_fail_oom();
	if (rc == 0)
		rc = tags_by_commit(&c, &tags);
	size_t i;
	json_t *e;
	json_array_foreach(log, i, e) {
		const char *id = json_string_value(json_object_get(e, "id"));
		json_t *when = json_object_get(e, "creation_date");
		if (rc || !id)
			continue;
		json_t *refs = json_object_get(tags, id);
		json_array_append_new(out, json_pack("{s:s, s:I, s:s, s:o}", "id", id, "time",
		                                     json_is_integer(when) ? json_integer_value(when) : (json_int_t)0, "message",
		                                     json_string_value(json_object_get(e, "message")) ?
		                                             json_string_value(json_object_get(e, "message")) : "",
		                                     "refs", refs ? json_incref(refs) : json_array()));
	}
	json_decref(log);
	json_decref(tags);
	free(pos);
	lfs_disconnect(&c);
	if (rc)
		json_decref(out);
	else
		*entries = out;
	return rc;
}

int lfs_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
             const char *la, size_t na, const char *lb, size_t nb, size_t max_entries, json_t **diff)
{
	(void)la;
	(void)na;
	(void)lb;
	(void)nb;
	*diff = NULL;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	const char *from = lfs_state_commit(a), *to = lfs_state_commit(b);
	char *r = lfs_esc(c.repo), *ef = from ? lfs_esc(from) : NULL, *et = to ? lfs_esc(to) : NULL;
	char *p = lfs_esc(loc.prefix);
	char *path = r && ef && et ? tt_strdupf("/repositories/%s/refs/%s/diff/%s", r, ef, et) : NULL;
	char *query = p ? tt_strdupf("type=two_dot&prefix=%s", p) : NULL;
	json_t *list = NULL;
	rc = path && query ? lfs_list_all(&c, path, query, 10000000, &list) : tt_fail_oom();
	json_t *entries = json_array();
	json_int_t added = 0, removed = 0, modified = 0, delta = 0;
	size_t i;
	json_t *d;
	json_array_foreach(list, i, d) {
		const char *type = json_string_value(json_object_get(d, "type"));
		const char *name = json_string_value(json_object_get(d, "path"));
		json_int_t size = json_integer_value(json_object_get(d, "size_bytes"));
		if (!type || !name)
			continue;
		const char *change = strcmp(type, "added") == 0     ? "added"
		                     : strcmp(type, "removed") == 0 ? "removed"
		                                                    : "modified";
		if (*change == 'a') {
			added++;
			delta += size;
		} else if (*change == 'r') {
			removed++;
			delta -= size;
		} else
			modified++;
		if (json_array_size(entries) < max_entries)
			json_array_append_new(entries, json_pack("{s:s, s:s, s:I}", "path", name, "change", change, "size", size));
	}
	if (rc == 0) {
		char *summary = tt_strdupf("%" JSON_INTEGER_FORMAT " added, %" JSON_INTEGER_FORMAT " removed, "
		                           "%" JSON_INTEGER_FORMAT " modified", added, removed, modified);
		*diff = json_pack("{s:s, s:s?, s:O, s:{s:I, s:I, s:I, s:I}, s:b}", "unit", "objects", "summary", summary,
		                  "entries", entries, "totals", "added", added, "removed", removed, "modified", modified,
		                  "size_delta", delta, "truncated", (size_t)(added + removed + modified) > json_array_size(entries));
		free(summary);
		if (!*diff)
			rc = tt_fail_oom();
	}
	json_decref(entries);
	json_decref(list);
	free(r);
	free(ef);
	free(et);
	free(p);
	free(path);
	free(query);
	lfs_disconnect(&c);
	return rc;
}

int lfs_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
             const json_t *working_ref, int read_only, json_t **handle)
{
	*handle = NULL;
	struct lfs_loc loc;
	int rc = lfs_read_locator(locator, &loc);
	if (rc)
		return rc;
	const char *commit = lfs_state_commit(state);
	const char *wb = json_string_value(json_object_get(working_ref, "working_branch"));
	char *ref = NULL, *live = NULL;
	if (read_only) {
		const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
		ref = strdup(tag ? tag : commit ? commit : loc.branch);
	} else
		ref = wb ? lfs_branch_encode(wb) : strdup(loc.branch);
	if (!ref)
		return tt_fail_oom();
	/* A writable handle is the branch as it is now, which may be ahead of
	 * the recorded state. */
	struct lfs_conn c;
	if (!read_only && (rc = lfs_connect(ctx, &loc, &c)) == 0) {
		rc = lfs_branch_head(&c, ref, &live);
		lfs_disconnect(&c);
	}
	if (rc) {
		free(ref);
		return rc;
	}
	if (live)
		commit = live;
	/* lakeFS's URI, and the S3 gateway's form of the same place (the
	 * repository is the bucket, the ref the first path segment). */
	char *uri = tt_strdupf("lakefs://%s/%s/%s", loc.repository, ref, loc.prefix);
	char *s3 = tt_strdupf("s3://%s/%s/%s", loc.repository, ref, loc.prefix);
	*handle = json_pack("{s:s, s:s?, s:s?, s:s, s:s, s:s, s:s?, s:b}", "kind", LFS_KIND, "uri", uri, "s3_uri", s3,
	                    "repository", loc.repository, "ref", ref, "prefix", loc.prefix, "commit", commit,
	                    "read_only", read_only);
	free(uri);
	free(s3);
	free(ref);
	free(live);
	return *handle ? 0 : tt_fail_oom();
}
