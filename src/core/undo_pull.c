/* The inverse of `tether pull` (undo.h): each object the pull moved onto
 * its upstream branch put back at the detached `at` it left ("moved" of
 * the entry: the key, its `at`, and the digest of the manifest pull
 * wrote), only while its working manifest is still the one pull wrote, so
 * that an edit or a later `add` is never overwritten. A manifest at that
 * `at` already (a commit of the pull undone since brought the parent's
 * back) counts as taken back. Pull wrote to no store (the next commit pins
 * the branch head), so neither does its undo. */
#include "core/abi.h"
#include "core/undo.h"
#include "format/cjson.h"

#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *e, const char *key)
{
	return json_string_value(json_object_get(e, key));
}

static int key_done(const struct tt_undo *u, size_t i)
{
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(u->progress, "keys"), k, v) if ((size_t)json_integer_value(v) == i) return 1;
	return 0;
}

/* The working manifest is pull's still (*back 0), or at the `at` again
 * (*back 1); m is loaded either way. */
static int check_key(struct tt_undo *u, const json_t *mv, struct tt_manifest *m, int *back)
{
	const char *key = str(mv, "key");
	*back = 0;
	int rc = tt_manifest_load_working(u->repo->root, key, m);
	if (rc == TETHER_ENOTFOUND)
		return tether_error_set(TETHER_EREFUSED, "%s: its manifest is gone since the pull (dropped?): nothing to "
		                        "put back", key);
	if (rc)
		return rc;
	const json_t *at = json_object_get(tt_manifest_locator(m), "at");
	if (at && json_equal(at, json_object_get(mv, "at"))) {
		*back = 1;
		return 0;
	}
	if (!str(mv, "manifest") || strcmp(m->digest, str(mv, "manifest")) != 0) {
		tether_error_set(TETHER_EREFUSED, "%s: its manifest changed since the pull (a commit recorded it, or an "
		                 "edit): putting `at` back would undo that too", key);
		tether_error_set_hint("`tether undo` takes back the commit first, when that is the last operation");
		return TETHER_EREFUSED;
	}
	return 0;
}

static int check(struct tt_undo *u)
{
	const json_t *moved = json_object_get(u->entry, "moved");
	if (!json_is_array(moved))
		return tether_error_set(TETHER_EREFUSED, "journal entry %s does not say what the pull moved (a tether "
		                        "before undo of pull wrote it)", str(u->entry, "id"));
	size_t i;
	json_t *mv;
	json_array_foreach(moved, i, mv) {
		if (key_done(u, i))
			continue;
		struct tt_manifest m = {0};
		int back = 0, rc = check_key(u, mv, &m, &back);
		tt_manifest_free(&m);
		if (rc)
			return rc;
		char *at = tt_cjson(json_object_get(mv, "at"));
		json_array_append_new(u->steps, back ? json_sprintf("%s: at %s again already", str(mv, "key"), at)
		                                     : json_sprintf("%s: put it back at %s, off its branch", str(mv, "key"),
		                                                    at));
		free(at);
	}
	return 0;
}

static int apply(struct tt_undo *u)
{
	const json_t *moved = json_object_get(u->entry, "moved");
	int rc = 0;
	for (size_t i = json_array_size(moved); !rc && i-- > 0;) {
		const json_t *mv = json_array_get(moved, i);
		if (key_done(u, i))
			continue;
		struct tt_manifest m = {0};
		int back = 0;
		rc = check_key(u, mv, &m, &back); /* again, just before */
		if (!rc && !back) {
			json_object_set(tt_manifest_locator(&m), "at", json_object_get(mv, "at"));
			rc = tt_manifest_save(u->repo->root, u->repo->layout, &m);
		}
		tt_manifest_free(&m);
		if (!rc) {
			json_t *done = json_object_get(u->progress, "keys");
			if (!done)
				json_object_set_new(u->progress, "keys", done = json_array());
			json_array_append_new(done, json_integer((json_int_t)i));
			rc = tt_undo_progress(u, "keys", json_incref(done));
			tt_fault_point("undo", "at-put-back");
		}
	}
	return rc;
}

const struct tt_undo_inverse tt_undo_pull = {
	.op = "pull",
	.check = check,
	.apply = apply,
};
