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

static int refuse_off_trunk(struct pull_run *run)
{
	const char *trunk = tt_trunk(run->repo);
	if (tt_is_trunk(run->repo, run->bookmark))
		return 0;
	if (run->bookmark)
		tether_error_set(TETHER_EREFUSED, "pull works on the trunk (%s); this workspace is on %s", trunk,
		                 run->bookmark);
	else
		tether_error_set(TETHER_EREFUSED, "pull works on the trunk (%s); this checkout is on no bookmark", trunk);
	tether_error_set_hint("`tether new %s` goes to the trunk; `[new] trunk` in tether.toml names another", trunk);
	return TETHER_EREFUSED;
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

/* One object's action, and a moved object's precondition. */
static int plan_object(struct pull_run *run, struct tt_obj *o)
{
	json_t *entry = tt_workspace_entry(run->ws, o->m->key);
	json_t *a = json_pack("{s:s}", "key", o->m->key);
	json_array_append_new(tt_plan_actions(run->plan), a);
	if (!tt_obj_detached(o)) {
		const char *branch = json_string_value(json_object_get(entry, "branch"));
		json_object_set_new(a, "action", json_string("stay"));
		json_object_set_new(a, "detail", branch ? json_sprintf("works on %s, a working branch an older tether forked "
		                                                       "on the trunk: `tether new` moves it onto its upstream "
		                                                       "branch", branch)
		                                        : json_string("not at a detached `at`: nothing to move"));
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

static int check_plan(struct pull_run *run, const json_t *planned)
{
	int rc = tt_plan_check_objects(json_object_get(tt_plan_preconditions(planned), "objects"),
	                               json_object_get(tt_plan_preconditions(run->plan), "objects"));
	return rc ? rc : tt_plan_check_actions("pull", tt_plan_actions(planned), tt_plan_actions(run->plan));
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

static int apply_plan(struct pull_run *run, json_t *done)
{
	struct tt_journal journal = {0};
	json_t *none = json_array();
	int moves = 0;
	size_t i;
	json_t *a;
	json_array_foreach(tt_plan_actions(run->plan), i, a)
		moves += strcmp(json_string_value(json_object_get(a, "action")), "move") == 0;
	int rc = moves ? tt_journal_begin(run->repo, "pull", "pull", none, &journal) : 0;
	json_decref(none);
	/* The keys this run is about: a dead pull of none but these is
	 * finished when this one is (they are on their branch then). */
	json_t *keys = json_array(), *moving = json_array(), *moved = json_array();
	json_array_foreach(tt_plan_actions(run->plan), i, a) {
		json_array_append(keys, json_object_get(a, "key"));
		if (strcmp(json_string_value(json_object_get(a, "action")), "move") == 0)
			json_array_append(moving, json_object_get(a, "key"));
	}
	if (!rc && moves)
		rc = tt_journal_note(&journal, "keys", json_incref(moving));
	json_decref(moving);
	if (moves)
		tt_fault_point("pull", "journal-written");
	json_array_foreach(tt_plan_actions(run->plan), i, a) {
		json_t *r = json_deep_copy(a);
		if (!rc && strcmp(json_string_value(json_object_get(a, "action")), "move") == 0) {
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
		}
		json_array_append_new(done, r);
	}
	if (rc) {
		char *why = strdup(tether_error_last()), *hint = tether_error_hint() ? strdup(tether_error_hint()) : NULL;
		undo(run);
		if (moves)
			tt_journal_end(&journal, "ABORTED", NULL);
		tether_error_set(rc, "%s", why);
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
		rc = refuse_off_trunk(run);
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
