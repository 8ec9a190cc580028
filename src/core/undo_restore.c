/* The inverse of `tether restore` (undo.h): each working branch the
 * restore reset moved back to the head it had before ("resets" of the
 * entry: before and after), newest first, each only while it is still
 * where the restore put it, with the conditional fork restore itself used
 * (a branch restore made is deleted); then .tether/workspace.toml as it
 * was. A branch written on since is refused by name before anything
 * moves. */
#include "core/abi.h"
#include "core/pinid.h"
#include "core/undo.h"
#include "core/workspace.h"

#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *e, const char *key)
{
	return json_string_value(json_object_get(e, key));
}

static int reset_done(const struct tt_undo *u, size_t i)
{
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(u->progress, "resets"), k, v) if ((size_t)json_integer_value(v) == i) return 1;
	return 0;
}

/* The branch's head now, on the object's locator with its working ref. */
static int read_head(struct tt_undo *u, const json_t *r, const struct tether_backend *b, json_t **state)
{
	json_t *loc = json_deep_copy(json_object_get(r, "locator"));
	if (json_is_object(json_object_get(r, "ref")))
		json_object_update(loc, json_object_get(r, "ref"));
	struct tether_bctx ctx;
	tt_repo_bctx(u->repo, str(r, "kind"), str(r, "key"), &ctx);
	ctx.state_only = 1;
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	json_t *policy = json_object();
	struct tt_manifest m = {0};
	if (tt_manifest_load_working(u->repo->root, str(r, "key"), &m) == 0) {
		json_decref(policy);
		policy = json_incref(tt_manifest_policy(&m));
	} else {
		tether_error_clear();
	}
	tt_manifest_free(&m);
	int rc = b->fingerprint(&ctx, loc, policy, &fp);
	json_decref(policy);
	json_decref(loc);
	free(fp.listing);
	*state = rc ? NULL : fp.state;
	if (rc) {
		json_decref(fp.state);
		rc = tether_error_set(rc, "%s: cannot read working branch %s: %s", str(r, "key"), str(r, "branch"),
		                      tether_error_last());
	}
	return rc;
}

/* The branch is where restore put it, or back already (*back). */
static int check_reset(struct tt_undo *u, const json_t *r, const struct tether_backend **out, int *back)
{
	const char *key = str(r, "key"), *branch = str(r, "branch");
	const struct tether_backend *b = tether_backend_find(str(r, "kind"));
	*back = 0;
	*out = b;
	if (!b)
		return tether_error_set(TETHER_EREFUSED, "%s: no backend for kind %s here, to move its working branch back",
		                        key, str(r, "kind"));
	json_t *now = NULL;
	int rc = read_head(u, r, b, &now);
	const json_t *before = json_object_get(r, "before"), *after = json_object_get(r, "after");
	if (rc && json_is_null(before)) {
		/* restore made the branch; gone now is back already */
		tether_error_clear();
		*back = 1;
		return 0;
	}
	if (rc)
		return rc;
	if (json_is_object(before) && tt_same_content(b, now, before)) {
		*back = 1;
	} else if (!tt_same_content(b, now, after)) {
		char *left = tt_state_brief(b, after), *is = tt_state_brief(b, now);
		rc = tether_error_set(TETHER_EREFUSED, "%s: working branch %s moved since the restore (restore left it at "
		                      "%s, it is at %s now): moving it back would lose what was written there", key, branch,
		                      left, is);
		tether_error_set_hint("`tether commit` records that work; undo takes back only what nothing built on");
		free(left);
		free(is);
	}
	json_decref(now);
	return rc;
}

static int check(struct tt_undo *u)
{
	const json_t *resets = json_object_get(u->entry, "resets");
	if (!json_is_array(resets))
		return tether_error_set(TETHER_EREFUSED, "journal entry %s does not say which branches the restore reset "
		                        "(a tether before undo of restore wrote it)", str(u->entry, "id"));
	size_t i;
	json_t *r;
	json_array_foreach(resets, i, r) {
		if (reset_done(u, i))
			continue;
		const struct tether_backend *b = NULL;
		int back = 0, rc = check_reset(u, r, &b, &back);
		if (rc)
			return rc;
		char *before = json_is_object(json_object_get(r, "before")) ? tt_state_brief(b, json_object_get(r, "before"))
		                                                            : NULL;
		json_array_append_new(u->steps, back ? json_sprintf("%s: working branch %s is back already", str(r, "key"),
		                                                     str(r, "branch"))
		                                : before ? json_sprintf("%s: move working branch %s back to %s", str(r, "key"),
		                                                        str(r, "branch"), before)
		                                         : json_sprintf("%s: delete working branch %s", str(r, "key"),
		                                                        str(r, "branch")));
		free(before);
	}
	if (!json_is_true(json_object_get(u->progress, "workspace")))
		json_array_append_new(u->steps, json_string("put .tether/workspace.toml back as it was before `restore`"));
	return 0;
}

static int undo_reset(struct tt_undo *u, const json_t *r)
{
	const struct tether_backend *b = NULL;
	int back = 0;
	int rc = check_reset(u, r, &b, &back); /* again, just before */
	if (rc || back)
		return rc;
	struct tether_bctx ctx;
	tt_repo_bctx(u->repo, str(r, "kind"), str(r, "key"), &ctx);
	const json_t *locator = json_object_get(r, "locator"), *before = json_object_get(r, "before");
	tether_error_clear();
	if (json_is_object(before)) {
		json_t *wref = NULL;
		rc = TT_BACKEND_GET(b, fork)(&ctx, locator, before, NULL, str(r, "branch"), json_object_get(r, "after"),
		                             &wref);
		json_decref(wref);
	} else {
		rc = TT_BACKEND_GET(b, delete_working_ref)(&ctx, locator, json_object_get(r, "ref"));
	}
	if (rc)
		rc = tether_error_set(rc, "%s: cannot move working branch %s back: %s", str(r, "key"), str(r, "branch"),
		                      tether_error_last());
	return rc;
}

static int apply(struct tt_undo *u)
{
	const json_t *resets = json_object_get(u->entry, "resets");
	int rc = 0;
	for (size_t i = json_array_size(resets); !rc && i-- > 0;) {
		if (reset_done(u, i))
			continue;
		rc = undo_reset(u, json_array_get(resets, i));
		if (!rc) {
			json_t *done = json_object_get(u->progress, "resets");
			if (!done)
				json_object_set_new(u->progress, "resets", done = json_array());
			json_array_append_new(done, json_integer((json_int_t)i));
			rc = tt_undo_progress(u, "resets", json_incref(done));
			tt_fault_point("undo", "reset-undone");
		}
	}
	if (!rc && !json_is_true(json_object_get(u->progress, "workspace"))) {
		rc = tt_workspace_restore(u->repo, str(u->entry, "workspace_before"));
		if (!rc)
			rc = tt_undo_progress(u, "workspace", json_true());
	}
	return rc;
}

const struct tt_undo_inverse tt_undo_restore = {
	.op = "restore",
	.check = check,
	.apply = apply,
};
