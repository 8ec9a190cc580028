/* tether pull [KEY...]: on the trunk, move every object that sits at a
 * detached `at` (add --at / --pick) onto its upstream branch.
 *
 * backends.md, Conventions: `at` is an object's initial position, pinned by
 * the first commit until a trunk `pull` moves the object onto the branch.
 * The move is the working manifest's: its locator loses `at`, so the
 * object reads (and, being on the trunk, writes) its branch; the state it
 * records stays the one last committed, so `status` shows the object
 * modified and the next commit pins the branch head. No store is written.
 *
 * Off the trunk, pull brings working refs up to date with upstream where
 * the backend can (same Conventions): each object with a working branch in
 * this workspace whose head is in its base head's history (descends,
 * backend version 6) has the branch fast-forwarded to the base head by the
 * backend's fork, conditional on the working head the plan read (as
 * restore's reset is); workspace.toml records the new head and the next
 * commit pins it. A branch with work of its own is reported (ahead,
 * diverged) and left, as is one whose backend cannot tell (unknown). The
 * detached part is the trunk's only: off it such objects stay.
 *
 * Every run plans first: per object "move" (from its `at` to the branch
 * head it reads now) or "stay" (with why), and as preconditions each
 * moved object's manifest and that head. --from-plan compares the plan
 * built now with the one given and refuses when they differ; a run
 * re-reads each head just before it rewrites the manifest (the conditional
 * move: a branch that moved since the plan is refused), and a failure
 * part-way puts back every manifest it rewrote. The lock is held and the
 * run journalled (`tether ops`) as every writing command is. */
#include "core/abi.h"
#include "core/cancel.h"
#include "core/engine.h"
#include "core/sessions.h"

#include "core/journal.h"
#include "core/lock.h"
#include "core/pinid.h"
#include "core/plan.h"
#include "core/trunk.h"
#include "core/validate.h"
#include "core/workspace.h"
#include "core/workspace_check.h"
#include "util/fsutil.h"
#include "util/safefs.h"

#include <stdlib.h>
#include <string.h>

struct pull_run {
	struct tether_repo *repo;
	struct tt_manifest_set set;
	struct tt_obj *objs;
	json_t *ws;
	json_t *plan;
	char *bookmark;
	char **old_text; /* bytes of each manifest this run rewrote */
};

/* The bookmark this workspace stands for: the one `new` recorded, else the
 * checkout's (malloc'd; NULL when it names none). */
static int workspace_bookmark(struct pull_run *run)
{
	const char *b = json_string_value(json_object_get(run->ws, "bookmark"));
	if (b) {
		run->bookmark = strdup(b);
		return 0;
	}
	return run->repo->vcs->current_branch(run->repo->vh, &run->bookmark);
}

/* The object's locator without its `at`: where it stands once moved. */
static json_t *upstream_locator(const struct tt_obj *o)
{
	json_t *loc = json_deep_copy(tt_manifest_locator(o->m));
	json_object_del(loc, "at");
	return loc;
}

/* The head of the upstream branch, as its content state (new reference). */
static int upstream_head(struct tt_obj *o, json_t **state)
{
	json_t *loc = upstream_locator(o);
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	o->ctx.state_only = 1;
	int rc = o->b->fingerprint(&o->ctx, loc, tt_manifest_policy(o->m), &fp);
	*state = rc ? NULL : tt_content_state(o->b, fp.state);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot read its upstream branch: %s", o->m->key, tether_error_last());
	json_decref(fp.state);
	free(fp.listing);
	json_decref(loc);
	return rc;
}

static int wanted(const struct tether_pull_opts *opts, const char *key)
{
	if (!opts->n_keys)
		return 1;
	for (size_t i = 0; i < opts->n_keys; i++)
		if (strcmp(opts->keys[i], key) == 0)
			return 1;
	return 0;
}

static int check_keys(const struct pull_run *run, const struct tether_pull_opts *opts)
{
	for (size_t i = 0; i < opts->n_keys; i++) {
		int rc = tt_key_check(opts->keys[i]);
		if (rc)
			return rc;
		if (!tt_manifest_set_find(&run->set, opts->keys[i]))
			return tether_error_set(TETHER_ENOTFOUND, "pull: no object '%s' in the working copy", opts->keys[i]);
	}
	return 0;
}

static int fingerprint_at(struct tt_obj *o, const json_t *locator, json_t **state)
{
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	int state_only = o->ctx.state_only;
	o->ctx.state_only = 1;
	int rc = o->b->fingerprint(&o->ctx, locator, tt_manifest_policy(o->m), &fp);
	o->ctx.state_only = state_only;
	*state = rc ? NULL : tt_content_state(o->b, fp.state);
	json_decref(fp.state);
	free(fp.listing);
	return rc;
}

/* The working branch's head, as its content state (new reference). */
static int working_head(struct tt_obj *o, json_t **state)
{
	int rc = fingerprint_at(o, o->locator, state);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot read its working branch: %s", o->m->key, tether_error_last());
	return rc;
}

/* Is `ancestor` in the history of `descendant` (descends, backend version
 * 6; the caller checked the backend has it)? */
static int in_history(struct tt_obj *o, const json_t *ancestor, const json_t *descendant, int *answer)
{
	json_t *loc = upstream_locator(o);
	int rc = TT_BACKEND_GET(o->b, descends)(&o->ctx, loc, ancestor, descendant, answer);
	json_decref(loc);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot tell whether its working branch is behind its base: %s", o->m->key,
		                      tether_error_last());
	return rc;
}

/* Off the trunk: where the working branch stands against its base
 * (backends.md, Conventions: pull brings working refs up to date with
 * upstream where the backend can). "fast-forward" when the working head is
 * in the base's history (no work of its own beyond the base), "up-to-date"
 * when level, "ahead" when the base is in the working head's history,
 * "diverged" when each has its own, "unknown" when the backend cannot tell
 * (no descends). Only a fast-forward moves anything; its precondition is
 * both heads. */
static int plan_working(struct pull_run *run, struct tt_obj *o, const char *branch, json_t *a)
{
	json_t *head = NULL, *base = NULL;
	int rc = working_head(o, &head);
	if (!rc)
		rc = upstream_head(o, &base);
	const char *action = NULL;
	json_t *detail = NULL;
	int behind = 0, ahead = 0;
	if (!rc && tt_same_content(o->b, head, base)) {
		action = "up-to-date";
		detail = json_string("the working branch is at its base branch's head");
	} else if (!rc && !TT_BACKEND_GET(o->b, descends)) {
		action = "unknown";
		detail = json_string("this system cannot tell whether the working branch is behind its base (no "
		                     "descends): nothing was moved");
	} else if (!rc) {
		rc = in_history(o, head, base, &behind);
		if (!rc && !behind)
			rc = in_history(o, base, head, &ahead);
		action = behind ? "fast-forward" : ahead ? "ahead" : "diverged";
		if (ahead)
			detail = json_sprintf("the working branch has work of its own and its base has not moved on: "
			                      "`tether promote %s` lands it", o->m->key);
		else if (!behind && (o->caps & TETHER_CAP_MERGE))
			detail = json_sprintf("the working branch has work of its own and its base has moved on: "
			                      "`tether merge %s` merges the two", o->m->key);
		else if (!behind)
			detail = json_string("the working branch has work of its own and its base has moved on, and this "
			                     "system cannot merge: re-apply the work on a fresh fork (`tether new`)");
	}
	if (rc) {
		json_decref(head);
		json_decref(base);
		return rc;
	}
	json_object_set_new(a, "action", json_string(action));
	json_object_set_new(a, "branch", json_string(branch));
	json_object_set(a, "from", head);
	json_object_set(a, "to", base);
	if (detail)
		json_object_set_new(a, "detail", detail);
	if (behind) {
		char digest[65];
		tt_plan_digest(base, digest);
		json_array_append_new(json_object_get(tt_plan_preconditions(run->plan), "objects"),
		                      json_pack("{s:s, s:s, s:O, s:O, s:s}", "key", o->m->key, "manifest", o->m->digest,
		                                "state", base, "head", head, "digest", digest));
	}
	json_decref(head);
	json_decref(base);
	return 0;
}

/* One object's action, and a moved object's precondition. On the trunk an
 * object at a detached `at` moves onto its branch; off it, an object with
 * a working branch here is brought up to date with its base where it can
 * be (plan_working). */
static int plan_object(struct pull_run *run, struct tt_obj *o)
{
	json_t *entry = tt_workspace_entry(run->ws, o->m->key);
	json_t *a = json_pack("{s:s}", "key", o->m->key);
	json_array_append_new(tt_plan_actions(run->plan), a);
	const char *branch = json_string_value(json_object_get(entry, "branch"));
	int trunk = tt_is_trunk(run->repo, run->bookmark);
	if (!trunk && branch && o->working_ref)
		return plan_working(run, o, branch, a);
	if (!trunk || !tt_obj_detached(o)) {
		json_object_set_new(a, "action", json_string("stay"));
		json_object_set_new(a, "detail",
		                    trunk && branch ? json_sprintf("works on %s, a working branch an older tether forked "
		                                                   "on the trunk: `tether new` moves it onto its upstream "
		                                                   "branch", branch)
		                    : trunk ? json_string("not at a detached `at`: nothing to move")
		                    : tt_obj_detached(o)
		                            ? json_sprintf("at a detached `at`: only a pull on the trunk (%s) moves it "
		                                           "onto its branch", tt_trunk(run->repo))
		                            : json_string("no working branch in this checkout: it reads its base branch"));
		return 0;
	}
	json_t *head = NULL;
	int rc = upstream_head(o, &head);
	if (rc)
		return rc;
	char digest[65];
	tt_plan_digest(head, digest);
	json_object_set_new(a, "action", json_string("move"));
	json_object_set(a, "from", json_object_get(tt_manifest_locator(o->m), "at"));
	json_object_set(a, "to", head);
	json_array_append_new(json_object_get(tt_plan_preconditions(run->plan), "objects"),
	                      json_pack("{s:s, s:s, s:o, s:s}", "key", o->m->key, "manifest", o->m->digest, "state",
	                                head, "digest", digest));
	return 0;
}

static int build_plan(struct pull_run *run, const struct tether_pull_opts *opts)
{
	run->plan = tt_plan_new(run->repo, "pull");
	json_object_set_new(tt_plan_preconditions(run->plan), "objects", json_array());
	json_object_set_new(run->plan, "bookmark", json_string(run->bookmark));
	int rc = 0;
	for (size_t i = 0; !rc && i < run->set.n; i++)
		if (wanted(opts, run->objs[i].m->key))
			rc = plan_object(run, &run->objs[i]);
	return rc;
}

static struct tt_obj *obj_by_key(struct pull_run *run, const char *key, size_t *index)
{
	for (size_t i = 0; i < run->set.n; i++)
		if (strcmp(run->objs[i].m->key, key) == 0) {
			*index = i;
			return &run->objs[i];
		}
	return NULL;
}

static const json_t *action_for(const json_t *actions, const char *key)
{
	size_t i;
	json_t *a;
	json_array_foreach(actions, i, a) {
		const char *k = json_string_value(json_object_get(a, "key"));
		if (k && key && strcmp(k, key) == 0)
			return a;
	}
	return NULL;
}

/* A planned fast-forward whose working head or base head moved since: the
 * stale plan says which head, from where to where. */
static int check_heads(struct pull_run *run, const json_t *planned)
{
	size_t i;
	json_t *a;
	json_array_foreach(tt_plan_actions(planned), i, a) {
		const char *key = json_string_value(json_object_get(a, "key"));
		const json_t *f = action_for(tt_plan_actions(run->plan), key);
		const char *action = json_string_value(json_object_get(a, "action"));
		if (!f || !action || strcmp(action, "fast-forward") != 0)
			continue;
		size_t x;
		struct tt_obj *o = obj_by_key(run, key, &x);
		const char *which[] = {"from", "to"};
		for (int w = 0; w < 2; w++) {
			const json_t *was = json_object_get(a, which[w]), *is = json_object_get(f, which[w]);
			if (!was || !is || tt_same_content(o->b, was, is))
				continue;
			char *b1 = tt_state_brief(o->b, was), *b2 = tt_state_brief(o->b, is);
			tether_error_set(TETHER_EREFUSED, "stale plan: %s's %s moved since the plan (at %s, now at %s)", key,
			                 w ? "base branch" : "working branch", b1, b2);
			free(b1);
			free(b2);
			return TETHER_EREFUSED;
		}
	}
	return 0;
}

static int check_plan(struct pull_run *run, const json_t *planned)
{
	int rc = check_heads(run, planned);
	if (rc)
		return rc;
	rc = tt_plan_check_objects(json_object_get(tt_plan_preconditions(planned), "objects"),
	                               json_object_get(tt_plan_preconditions(run->plan), "objects"));
	return rc ? rc : tt_plan_check_actions("pull", tt_plan_actions(planned), tt_plan_actions(run->plan));
}


/* The conditional move: the branch head read now must be the plan's, then
 * the manifest loses its `at`. */
static int move_object(struct pull_run *run, const json_t *a)
{
	size_t i = 0;
	struct tt_obj *o = obj_by_key(run, json_string_value(json_object_get(a, "key")), &i);
	if (!o)
		return tether_error_set(TETHER_ERROR, "pull: planned object vanished");
	json_t *now = NULL;
	int rc = upstream_head(o, &now);
	const json_t *planned = json_object_get(a, "to");
	if (!rc && !tt_same_content(o->b, planned, now)) {
		char *was = tt_state_brief(o->b, planned), *is = tt_state_brief(o->b, now);
		rc = tether_error_set(TETHER_EREFUSED, "%s: its upstream branch moved since the plan (at %s, now at %s)",
		                      o->m->key, was, is);
		tether_error_set_hint("nothing was moved for %s; run `tether pull` again to move it to the new head",
		                      o->m->key);
		free(was);
		free(is);
	}
	json_decref(now);
	char *rel = rc ? NULL : tt_manifest_relpath(o->m->key);
	char *path = rel ? tt_path_join(run->repo->root, rel) : NULL;
	size_t len;
	if (!rc)
		rc = tt_read_file(path, &run->old_text[i], &len);
	if (!rc) {
		json_object_del(tt_manifest_locator(o->m), "at");
		rc = tt_manifest_save(run->repo->root, run->repo->layout, o->m);
	}
	free(rel);
	free(path);
	return rc;
}

/* The working branch to its base's head, conditional on the working head
 * the plan read (the backend's fork with that head expected, as restore's
 * reset is): a write on the working branch since the plan is refused and
 * kept. A branch already at the base head (another key of the same store,
 * or a run that died after this move) is left. The workspace then says
 * where tether left the branch, and the next commit records that state. */
static int fast_forward_object(struct pull_run *run, const json_t *a, json_t *r)
{
	size_t i = 0;
	struct tt_obj *o = obj_by_key(run, json_string_value(json_object_get(a, "key")), &i);
	if (!o)
		return tether_error_set(TETHER_ERROR, "pull: planned object vanished");
	const char *branch = json_string_value(json_object_get(a, "branch"));
	const json_t *from = json_object_get(a, "from"), *to = json_object_get(a, "to");
	json_t *now = NULL;
	int rc = working_head(o, &now);
	int there = !rc && tt_same_content(o->b, now, to);
	json_decref(now);
	if (rc)
		return rc;
	json_t *entry = tt_workspace_entry(run->ws, o->m->key);
	json_t *heads = json_object_get(entry, "heads");
	if (there) {
		/* Moved by a run killed before it saved the workspace, or by this
		 * run for another key of the store: where tether left the branch
		 * is the head the next fork is conditional on. */
		const json_t *left = json_object_get(heads, branch);
		if (!left || !tt_same_content(o->b, left, from))
			return 0;
		json_object_set(heads, branch, (json_t *)to);
		return tt_workspace_save(run->repo, run->ws);
	}
	json_t *wref = NULL;
	tether_error_clear();
	rc = TT_BACKEND_GET(o->b, fork)(&o->ctx, tt_manifest_locator(o->m), to, NULL, branch, from, &wref);
	if (rc) {
		json_decref(wref);
		rc = tether_error_set(rc, "%s: cannot fast-forward %s: %s", o->m->key, branch, tether_error_last());
		tether_error_set_hint("nothing was moved for %s; run `tether pull` again to see where it stands now",
		                      o->m->key);
		return rc;
	}
	tt_fault_point("pull", "forked");
	if (wref)
		json_object_set(entry, "ref", wref);
	json_decref(wref);
	if (!json_is_object(heads)) {
		heads = json_object();
		json_object_set_new(entry, "heads", heads);
	}
	json_object_set(heads, branch, (json_t *)to);
	json_object_set_new(r, "action", json_string("fast-forwarded"));
	return tt_workspace_save(run->repo, run->ws);
}

/* Does a dead pull's journal entry name `key` among the keys it moved? */
static int dead_pull_moved(struct pull_run *run, const char *key)
{
	json_t *entries = NULL;
	if (tt_journal_open_entries(run->repo, &entries) != 0) {
		tether_error_clear(); /* gc and ops report a bad entry */
		return 0;
	}
	int found = 0;
	size_t i, j;
	json_t *e, *k;
	json_array_foreach(entries, i, e) {
		const char *op = json_string_value(json_object_get(e, "op"));
		if (!op || strcmp(op, "pull") != 0 || !tt_journal_entry_dead(e))
			continue;
		json_array_foreach(json_object_get(e, "keys"), j, k)
			found |= json_is_string(k) && strcmp(json_string_value(k), key) == 0;
	}
	json_decref(entries);
	return found;
}

/* A working branch already at its base head that a dead pull meant to
 * fast-forward: that run moved it and was killed before it saved the
 * workspace. The workspace now says where the branch stands (the head the
 * next fork is conditional on); the base holds everything up to it. */
static int settle_dead_forward(struct pull_run *run, const json_t *a)
{
	const char *branch = json_string_value(json_object_get(a, "branch"));
	const char *key = json_string_value(json_object_get(a, "key"));
	size_t i = 0;
	struct tt_obj *o = obj_by_key(run, key, &i);
	json_t *heads = json_object_get(tt_workspace_entry(run->ws, key), "heads");
	const json_t *left = json_object_get(heads, branch ? branch : ""), *to = json_object_get(a, "to");
	if (!o || !left || !to || tt_same_content(o->b, left, to) || !dead_pull_moved(run, key))
		return 0;
	json_object_set(heads, branch, (json_t *)to);
	return tt_workspace_save(run->repo, run->ws);
}

/* Every manifest this run rewrote, back as it was. */
static void undo(struct pull_run *run)
{
	for (size_t i = 0; i < run->set.n; i++) {
		if (!run->old_text[i])
			continue;
		char *rel = tt_manifest_relpath(run->objs[i].m->key);
		char *path = tt_path_join(run->repo->root, rel);
		tt_safe_write_atomic(run->repo->root, path, run->old_text[i], strlen(run->old_text[i]));
		free(rel);
		free(path);
	}
}

/* The actions that write: a detached object's move, a working branch's
 * fast-forward. */
static int moving_action(const json_t *a)
{
	const char *action = json_string_value(json_object_get(a, "action"));
	return strcmp(action, "move") == 0 || strcmp(action, "fast-forward") == 0;
}

static int apply_plan(struct pull_run *run, json_t *done)
{
	struct tt_journal journal = {0};
	json_t *none = json_array(), *forwarded = json_array();
	int moves = 0;
	size_t i, j;
	json_t *a, *d;
	json_array_foreach(tt_plan_actions(run->plan), i, a)
		moves += moving_action(a);
	int rc = moves ? tt_journal_begin(run->repo, "pull", "pull", none, &journal) : 0;
	json_decref(none);
	/* The keys this run is about: a dead pull of none but these is
	 * finished when this one is (they are on their branch then). */
	json_t *keys = json_array(), *moving = json_array(), *moved = json_array();
	json_array_foreach(tt_plan_actions(run->plan), i, a) {
		json_array_append(keys, json_object_get(a, "key"));
		if (moving_action(a))
			json_array_append(moving, json_object_get(a, "key"));
	}
	if (!rc && moves)
		rc = tt_journal_note(&journal, "keys", json_incref(moving));
	json_decref(moving);
	if (moves)
		tt_fault_point("pull", "journal-written");
	json_array_foreach(tt_plan_actions(run->plan), i, a) {
		json_t *r = json_deep_copy(a);
		const char *action = json_string_value(json_object_get(a, "action"));
		if (!rc && strcmp(action, "move") == 0) {
			rc = tt_cancelled() ? tt_cancel_error("pull") : move_object(run, a);
			json_object_set_new(r, "action", json_string("moved"));
			/* What undo needs to put it back: the `at` it left and the
			 * manifest it wrote (undo moves it back only while it is
			 * that one). */
			size_t at = 0;
			struct tt_obj *o = rc ? NULL : obj_by_key(run, json_string_value(json_object_get(a, "key")), &at);
			if (o) {
				json_array_append_new(moved, json_pack("{s:s, s:O, s:s}", "key", o->m->key, "at",
				                                       json_object_get(a, "from"), "manifest", o->m->digest));
				rc = tt_journal_note(&journal, "moved", json_incref(moved));
			}
			if (!rc)
				tt_fault_point("pull", "moved");
		} else if (!rc && strcmp(action, "up-to-date") == 0) {
			rc = settle_dead_forward(run, a);
		} else if (!rc && strcmp(action, "fast-forward") == 0) {
			/* Already there (a dead run's move) reads "up-to-date". */
			json_object_set_new(r, "action", json_string("up-to-date"));
			rc = tt_cancelled() ? tt_cancel_error("pull") : fast_forward_object(run, a, r);
			if (!rc)
				tt_fault_point("pull", "moved");
		}
		json_array_append_new(done, r);
	}
	if (rc) {
		char *why = strdup(tether_error_last()), *hint = tether_error_hint() ? strdup(tether_error_hint()) : NULL;
		undo(run);
		if (moves)
			tt_journal_end(&journal, "ABORTED", NULL);
		/* A fast-forward made stays made (the working branch at its base's
		 * head loses nothing; the workspace says so): the message names it. */
		json_array_foreach(done, j, d)
			if (strcmp(json_string_value(json_object_get(d, "action")), "fast-forwarded") == 0)
				json_array_append(forwarded, json_object_get(d, "key"));
		char *kept = strdup("");
		json_array_foreach(forwarded, j, d) {
			char *next = tt_strdupf("%s%s%s", kept, j ? ", " : "", json_string_value(d));
			free(kept);
			kept = next;
		}
		tether_error_set(rc, "%s%s%s%s", why, *kept ? "; fast-forwarded before it, and left so: " : "", kept, "");
		free(kept);
		if (hint)
			tether_error_set_hint("%s", hint);
		free(why);
		free(hint);
	} else if (moves) {
		rc = tt_journal_end(&journal, "COMPLETE", NULL);
	}
	if (!rc) {
		char *by = journal.name ? strndup(journal.name, strlen(journal.name) - 5) : NULL;
		rc = tt_journal_close_dead_runs(run->repo, "pull", keys, NULL, by);
		free(by);
	}
	json_decref(keys);
	json_decref(moved);
	json_decref(forwarded);
	tt_journal_free(&journal);
	return rc;
}

static int run_pull(struct pull_run *run, const struct tether_pull_opts *opts, json_t **report)
{
	int rc = tt_manifests_load_working(run->repo->root, &run->set);
	if (!rc)
		rc = check_keys(run, opts);
	if (!rc)
		rc = tt_objs_prepare(run->repo, &run->set, 0, &run->objs);
	if (!rc)
		rc = tt_workspace_load(run->repo, &run->ws);
	if (!rc)
		rc = workspace_bookmark(run);
	if (!rc)
		rc = build_plan(run, opts);
	if (!rc && opts->from_plan)
		rc = check_plan(run, opts->from_plan);
	int dry_run = opts->dry_run || opts->plan_out;
	if (!rc && opts->plan_out)
		rc = tt_plan_save(run->plan, opts->plan_out);
	json_t *done = json_array();
	if (!rc && !dry_run) {
		run->old_text = calloc(run->set.n + 1, sizeof *run->old_text);
		rc = apply_plan(run, done);
	}
	if (!rc) {
		*report = json_pack("{s:s}", "bookmark", run->bookmark);
		if (!dry_run)
			json_object_set(*report, "objects", done);
		tt_plan_report(*report, run->plan, dry_run, opts->plan_out);
	}
	json_decref(done);
	return rc;
}

static int pull_command(tether_repo *repo, const struct tether_pull_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock checkout = {-1}, shared = {-1};
	int rc = tt_plan_command_lock(repo, "pull", opts->plan_out, opts->from_plan, opts->from_plan_file,
	                              opts->n_keys ? "--from-plan takes no KEY: the plan names the objects" : NULL,
	                              &checkout, &shared);
	if (!rc)
		rc = tt_workspace_refuse_stale(repo, "pull");
	struct pull_run run = {.repo = repo};
	if (!rc)
		rc = run_pull(&run, opts, report);
	for (size_t i = 0; run.old_text && i < run.set.n; i++)
		free(run.old_text[i]);
	free(run.old_text);
	json_decref(run.plan);
	json_decref(run.ws);
	free(run.bookmark);
	tt_objs_free(run.objs, run.set.n);
	tt_manifest_set_free(&run.set);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

int tether_pull(tether_repo *repo, const struct tether_pull_opts *caller_opts, json_t **report)
{
	TT_COMMAND_RUN(tether_pull_opts, TETHER_PULL_OPTS_VERSION, pull_command, repo, caller_opts, report);
}
