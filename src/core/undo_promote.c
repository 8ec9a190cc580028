/* The inverses of `tether promote` and `tether merge` (undo.h): each base
 * branch the run moved put back at the head it had before ("from" of the
 * entry's move), only while it is still at the head the run left it
 * (promote: "to", the working head; merge: "after", the merged head),
 * through the backend's move_base, which compares and moves in one step.
 * A merge's working branch, which followed the base to the merged head,
 * goes back to its own head ("to") the same way, through a conditional
 * fork, and the workspace's record of it with it. A base that
 * moved on since (a writer landed there) is refused by name before
 * anything moves, and so is an object whose backend cannot move a base
 * back. Moves the promote did not make (a run stopped part-way) are left
 * alone. The manifests need nothing: promote changed none (the working
 * branches still hold what was promoted, and the dataset records them).
 *
 * Progress: the index of each move taken back is recorded before the next
 * one is tried, so a killed undo resumes; a base found at "from" already
 * is taken back too (a killed run that moved it without saying so, or two
 * keys of one store, which share the base). */
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

static int in_progress(const struct tt_undo *u, const char *step, size_t i)
{
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(u->progress, step), k, v) if ((size_t)json_integer_value(v) == i) return 1;
	return 0;
}

static int move_done(const struct tt_undo *u, size_t i)
{
	return in_progress(u, "moves", i);
}

static int record(struct tt_undo *u, const char *step, size_t i)
{
	json_t *done = json_object_get(u->progress, step);
	if (!done)
		json_object_set_new(u->progress, step, done = json_array());
	json_array_append_new(done, json_integer((json_int_t)i));
	return tt_undo_progress(u, step, json_incref(done));
}

static int is_merge(const struct tt_undo *u)
{
	const char *op = str(u->entry, "op");
	return op && strcmp(op, "merge") == 0;
}

/* The run made this move (it did not stop before it). A merge's key that
 * another key of its store merged (no result) moved nothing itself. */
static int was_made(const struct tt_undo *u, const json_t *m)
{
	return json_is_true(json_object_get(m, "done")) && (!is_merge(u) || json_object_get(m, "result"));
}

/* Where the run left the base. */
static const json_t *left_at(const struct tt_undo *u, const json_t *m)
{
	return json_object_get(m, is_merge(u) ? "after" : "to");
}

/* The object's policy from the working manifest, for fingerprint (an
 * object dropped since reads with none). */
static json_t *policy_of(const struct tt_undo *u, const char *key)
{
	struct tt_manifest m = {0};
	json_t *policy = NULL;
	if (tt_manifest_load_working(u->repo->root, key, &m) == 0)
		policy = json_incref(tt_manifest_policy(&m));
	else
		tether_error_clear();
	tt_manifest_free(&m);
	return policy ? policy : json_object();
}

/* The base branch's head now. */
static int read_base(struct tt_undo *u, const json_t *m, const struct tether_backend *b, json_t **state)
{
	struct tether_bctx ctx;
	tt_repo_bctx(u->repo, str(m, "kind"), str(m, "key"), &ctx);
	ctx.state_only = 1;
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	json_t *policy = policy_of(u, str(m, "key"));
	int rc = b->fingerprint(&ctx, json_object_get(m, "locator"), policy, &fp);
	json_decref(policy);
	free(fp.listing);
	*state = rc ? NULL : fp.state;
	if (rc) {
		json_decref(fp.state);
		rc = tether_error_set(rc, "%s: cannot read its base branch: %s", str(m, "key"), tether_error_last());
	}
	return rc;
}

static const char *base_name(const json_t *m)
{
	const char *branch = str(json_object_get(m, "result"), "branch");
	return branch ? branch : "its base branch";
}

/* Move m can be taken back: the base is where promote left it, or back
 * already (*back). */
static int check_move(struct tt_undo *u, const json_t *m, const struct tether_backend **out, int *back)
{
	const char *key = str(m, "key");
	const struct tether_backend *b = tether_backend_find(str(m, "kind"));
	*back = 0;
	if (!b)
		return tether_error_set(TETHER_EREFUSED, "%s: no backend for kind %s here, to move its base branch back",
		                        key, str(m, "kind"));
	tether_error_clear();
	if (!TT_BACKEND_GET(b, move_base)) {
		tether_error_set(TETHER_EREFUSED, "%s: its backend (%s) cannot move a base branch back (it has no "
		                 "move_base): the %s cannot be undone by tether", key, b->kind, str(u->entry, "op"));
		tether_error_set_hint("move %s back in the system itself if that is intended; nothing was changed",
		                      base_name(m));
		return TETHER_EREFUSED;
	}
	const json_t *from = json_object_get(m, "from"), *to = left_at(u, m);
	if (!to)
		return tether_error_set(TETHER_EREFUSED, "%s: journal entry %s does not say where the %s left %s", key,
		                        str(u->entry, "id"), str(u->entry, "op"), base_name(m));
	json_t *now = NULL;
	int rc = read_base(u, m, b, &now);
	if (rc)
		return rc;
	if (tt_same_content(b, now, from)) {
		*back = 1;
	} else if (!tt_same_content(b, now, to)) {
		char *left = tt_state_brief(b, to), *is = tt_state_brief(b, now);
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s moved on since the %s (%s left it at %s, it is at %s now): "
		                      "moving it back would lose what was written there", key, base_name(m),
		                      str(u->entry, "op"), str(u->entry, "op"), left, is);
		tether_error_set_hint("nothing was changed; undo takes back only what nothing built on");
		free(left);
		free(is);
	}
	json_decref(now);
	*out = b;
	return rc;
}

/* A merge's working branch followed the base to the merged head: it goes
 * back to its own head ("to"), only while it is still at the merged head.
 * *back: it is at "to" already. */
static int check_follow(struct tt_undo *u, const json_t *m, const struct tether_backend *b, int *back)
{
	json_t *loc = json_deep_copy(json_object_get(m, "locator")), *now = NULL;
	json_object_update(loc, json_object_get(m, "working_ref"));
	struct tether_bctx ctx;
	tt_repo_bctx(u->repo, str(m, "kind"), str(m, "key"), &ctx);
	ctx.state_only = 1;
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	json_t *policy = policy_of(u, str(m, "key"));
	int rc = b->fingerprint(&ctx, loc, policy, &fp);
	json_decref(policy);
	json_decref(loc);
	free(fp.listing);
	now = fp.state;
	*back = 0;
	if (rc) {
		rc = tether_error_set(rc, "%s: cannot read its working branch %s: %s", str(m, "key"), str(m, "branch"),
		                      tether_error_last());
	} else if (tt_same_content(b, now, json_object_get(m, "to"))) {
		*back = 1;
	} else if (!tt_same_content(b, now, json_object_get(m, "after"))) {
		char *left = tt_state_brief(b, json_object_get(m, "after")), *is = tt_state_brief(b, now);
		rc = tether_error_set(TETHER_EREFUSED, "%s: working branch %s moved since the merge (merge left it at %s, "
		                      "it is at %s now): moving it back would lose what was written there", str(m, "key"),
		                      str(m, "branch"), left, is);
		tether_error_set_hint("`tether commit` records that work; undo takes back only what nothing built on");
		free(left);
		free(is);
	}
	json_decref(now);
	return rc;
}

static int follows(const struct tt_undo *u, const json_t *m, size_t i)
{
	return is_merge(u) && json_is_true(json_object_get(m, "followed")) && !in_progress(u, "follows", i);
}

static int check(struct tt_undo *u)
{
	const json_t *moves = json_object_get(u->entry, "moves");
	size_t i, made = 0;
	json_t *m;
	json_array_foreach(moves, i, m) {
		if (!was_made(u, m) || (move_done(u, i) && !follows(u, m, i)))
			continue;
		made++;
		const struct tether_backend *b = tether_backend_find(str(m, "kind"));
		int back = 0, rc = 0;
		if (!move_done(u, i)) {
			rc = check_move(u, m, &b, &back);
			if (rc)
				return rc;
			char *from = tt_state_brief(b, json_object_get(m, "from"));
			json_array_append_new(u->steps, back ? json_sprintf("%s: %s is back at %s already", str(m, "key"),
			                                                     base_name(m), from)
			                                     : json_sprintf("%s: move %s back to %s", str(m, "key"),
			                                                     base_name(m), from));
			free(from);
		}
		if (b && follows(u, m, i)) {
			if ((rc = check_follow(u, m, b, &back)) != 0)
				return rc;
			char *to = tt_state_brief(b, json_object_get(m, "to"));
			json_array_append_new(u->steps, back ? json_sprintf("%s: working branch %s is back at %s already",
			                                                     str(m, "key"), str(m, "branch"), to)
			                                     : json_sprintf("%s: move working branch %s back to %s",
			                                                     str(m, "key"), str(m, "branch"), to));
			free(to);
		}
	}
	if (!made && !json_array_size(json_object_get(u->progress, "moves")))
		return tether_error_set(TETHER_EREFUSED, "journal entry %s moved no base branch: nothing to take back",
		                        str(u->entry, "id"));
	return 0;
}

static int undo_move(struct tt_undo *u, const json_t *m, json_t *list)
{
	const struct tether_backend *b = NULL;
	int back = 0;
	int rc = check_move(u, m, &b, &back); /* again, just before: nothing landed there meanwhile */
	if (rc || back) {
		if (!rc)
			json_array_append_new(list, json_pack("{s:s, s:s}", "key", str(m, "key"), "action", "back-already"));
		return rc;
	}
	struct tether_bctx ctx;
	tt_repo_bctx(u->repo, str(m, "kind"), str(m, "key"), &ctx);
	json_t *result = NULL;
	tether_error_clear();
	rc = TT_BACKEND_GET(b, move_base)(&ctx, json_object_get(m, "locator"), json_object_get(m, "from"),
	                                  left_at(u, m), &result);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot move %s back: %s", str(m, "key"), base_name(m), tether_error_last());
	else
		json_array_append_new(list, json_pack("{s:s, s:s, s:O}", "key", str(m, "key"), "action", "moved-back",
		                                      "base", result));
	json_decref(result);
	return rc;
}

/* The working branch back at its own head, conditional on the merged one,
 * and the workspace's record of where tether left it with it. */
static int undo_follow(struct tt_undo *u, const json_t *m)
{
	const struct tether_backend *b = tether_backend_find(str(m, "kind"));
	int back = 0;
	int rc = b ? check_follow(u, m, b, &back) : TETHER_ENOTFOUND;
	if (!rc && !back) {
		struct tether_bctx ctx;
		tt_repo_bctx(u->repo, str(m, "kind"), str(m, "key"), &ctx);
		json_t *wref = NULL;
		tether_error_clear();
		rc = TT_BACKEND_GET(b, fork)(&ctx, json_object_get(m, "locator"), json_object_get(m, "to"), NULL,
		                             str(m, "branch"), json_object_get(m, "after"), &wref);
		json_decref(wref);
		if (rc)
			rc = tether_error_set(rc, "%s: cannot move working branch %s back: %s", str(m, "key"),
			                      str(m, "branch"), tether_error_last());
	}
	json_t *ws = NULL;
	if (!rc && (rc = tt_workspace_load(u->repo, &ws)) == 0) {
		json_t *heads = json_object_get(tt_workspace_entry(ws, str(m, "key")), "heads");
		const json_t *was = json_object_get(heads, str(m, "branch"));
		if (was && b && tt_same_content(b, was, json_object_get(m, "after"))) {
			json_object_set(heads, str(m, "branch"), json_object_get(m, "to"));
			rc = tt_workspace_save(u->repo, ws);
		}
	}
	json_decref(ws);
	return rc;
}

static int apply(struct tt_undo *u)
{
	const json_t *moves = json_object_get(u->entry, "moves");
	json_t *list = json_array();
	int rc = 0;
	/* Newest first, as the run made them. */
	for (size_t i = json_array_size(moves); !rc && i-- > 0;) {
		const json_t *m = json_array_get(moves, i);
		if (!was_made(u, m))
			continue;
		if (!move_done(u, i)) {
			rc = undo_move(u, m, list);
			if (!rc)
				rc = record(u, "moves", i);
			tt_fault_point("undo", "base-moved-back");
		}
		if (!rc && follows(u, m, i)) {
			rc = undo_follow(u, m);
			if (!rc)
				rc = record(u, "follows", i);
		}
	}
	json_object_set_new(u->report, "objects", list);
	return rc;
}

const struct tt_undo_inverse tt_undo_promote = {
	.op = "promote",
	.check = check,
	.apply = apply,
};

const struct tt_undo_inverse tt_undo_merge = {
	.op = "merge",
	.check = check,
	.apply = apply,
};
