/* The inverse of `tether promote` (undo.h): each base branch the promote
 * moved put back at the head it had before ("from" of the entry's move),
 * only while it is still at the head promote left it ("to"), through the
 * backend's move_base, which compares and moves in one step. A base that
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

#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *e, const char *key)
{
	return json_string_value(json_object_get(e, key));
}

static int move_done(const struct tt_undo *u, size_t i)
{
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(u->progress, "moves"), k, v) if ((size_t)json_integer_value(v) == i) return 1;
	return 0;
}

/* The promote made this move (the run did not stop before it). */
static int was_made(const json_t *m)
{
	return json_is_true(json_object_get(m, "done"));
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
		                 "move_base): the promote cannot be undone by tether", key, b->kind);
		tether_error_set_hint("move %s back in the system itself if that is intended; nothing was changed",
		                      base_name(m));
		return TETHER_EREFUSED;
	}
	json_t *now = NULL;
	int rc = read_base(u, m, b, &now);
	if (rc)
		return rc;
	const json_t *from = json_object_get(m, "from"), *to = json_object_get(m, "to");
	if (tt_same_content(b, now, from)) {
		*back = 1;
	} else if (!tt_same_content(b, now, to)) {
		char *left = tt_state_brief(b, to), *is = tt_state_brief(b, now);
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s moved on since the promote (promote left it at %s, it is "
		                      "at %s now): moving it back would lose what was written there", key, base_name(m),
		                      left, is);
		tether_error_set_hint("nothing was changed; undo takes back only what nothing built on");
		free(left);
		free(is);
	}
	json_decref(now);
	*out = b;
	return rc;
}

static int check(struct tt_undo *u)
{
	const json_t *moves = json_object_get(u->entry, "moves");
	size_t i, made = 0;
	json_t *m;
	json_array_foreach(moves, i, m) {
		if (!was_made(m) || move_done(u, i))
			continue;
		made++;
		const struct tether_backend *b = NULL;
		int back = 0, rc = check_move(u, m, &b, &back);
		if (rc)
			return rc;
		char *from = tt_state_brief(b, json_object_get(m, "from"));
		json_array_append_new(u->steps, back ? json_sprintf("%s: %s is back at %s already", str(m, "key"),
		                                                     base_name(m), from)
		                                     : json_sprintf("%s: move %s back to %s", str(m, "key"), base_name(m),
		                                                     from));
		free(from);
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
	                                  json_object_get(m, "to"), &result);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot move %s back: %s", str(m, "key"), base_name(m), tether_error_last());
	else
		json_array_append_new(list, json_pack("{s:s, s:s, s:O}", "key", str(m, "key"), "action", "moved-back",
		                                      "base", result));
	json_decref(result);
	return rc;
}

static int apply(struct tt_undo *u)
{
	const json_t *moves = json_object_get(u->entry, "moves");
	json_t *list = json_array();
	int rc = 0;
	/* Newest first, as the promote made them. */
	for (size_t i = json_array_size(moves); !rc && i-- > 0;) {
		const json_t *m = json_array_get(moves, i);
		if (!was_made(m) || move_done(u, i))
			continue;
		rc = undo_move(u, m, list);
		if (!rc) {
			json_t *done = json_object_get(u->progress, "moves");
			if (!done)
				json_object_set_new(u->progress, "moves", done = json_array());
			json_array_append_new(done, json_integer((json_int_t)i));
			rc = tt_undo_progress(u, "moves", json_incref(done));
			tt_fault_point("undo", "base-moved-back");
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
