/* tether new: move the checkout, then give every Forkable object a writable
 * branch off the state the new revision records.
 *
 * The target is settled first (the commit, and the ref that names it), the
 * objects are read from that commit's manifests, and the plan is built from
 * them, each fork with the condition it is made on. Every condition is
 * checked against the stores (read-only) before anything moves, so a
 * refused fork leaves the checkout where it was. A run then performs the
 * plan: switch, fork each object, save the workspace; if a fork is still
 * refused (something moved a branch in between) or fails, the forks made
 * are taken back, the workspace file restored and the checkout moved back:
 * nothing is left half-done. --from-plan takes the target from the plan and
 * refuses when the plan built now differs from it. */
#include "core/cancel.h"
#include "core/engine.h"
#include "core/abi.h"
#include "core/sessions.h"

#include "core/journal.h"
#include "core/lock.h"
#include "core/pinid.h"
#include "core/plan.h"
#include "core/trunk.h"
#include "core/workspace.h"
#include "util/fsutil.h"
#include "util/plural.h"

#include <stdlib.h>
#include <string.h>

/* Where `new` moves the checkout. */
struct new_target {
	char commit[41]; /* the commit it lands on */
	char *ref;       /* what must still name that commit: "HEAD", "refs/heads/<b>", or NULL */
	char *to;        /* switch_to's rev: NULL (stay), the branch, or the commit id */
	char *create;    /* the branch to create there, or NULL */
};

static void target_free(struct new_target *t)
{
	free(t->ref);
	free(t->to);
	free(t->create);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The command line's REV and -b: a local branch is checked out by name,
 * anything else is a commit (HEAD detaches there). */
static int target_resolve(struct tether_repo *repo, const struct tether_new_opts *opts, struct new_target *t)
{
	t->create = dup_or_null(opts->branch);
	if (!opts->rev) {
		t->ref = strdup("HEAD");
		return repo->vcs->resolve(repo->vh, "HEAD", t->commit);
	}
	int rc = repo->vcs->resolve(repo->vh, opts->rev, t->commit);
	if (rc)
		return rc;
	char *full = strncmp(opts->rev, "refs/heads/", 11) == 0 ? strdup(opts->rev) : tt_strdupf("refs/heads/%s", opts->rev);
	char id[41];
	if (repo->vcs->resolve(repo->vh, full, id) == 0 && strcmp(id, t->commit) == 0) {
		t->ref = full;
		t->to = strdup(opts->rev);
	} else {
		tether_error_clear();
		free(full);
		t->to = strdup(t->commit);
	}
	return 0;
}

static int is_commit_id(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return n == 40;
}

/* The target a plan names, consistent with itself: a plan resolves
 * nothing from the command line. */
static int target_from_plan(const json_t *plan, struct new_target *t)
{
	const json_t *pre = tt_plan_preconditions(plan), *sw = json_object_get(plan, "switch");
	const char *commit = json_string_value(json_object_get(pre, "commit"));
	const char *ref = json_string_value(json_object_get(pre, "ref"));
	const char *to = json_string_value(json_object_get(sw, "to"));
	const char *create = json_string_value(json_object_get(sw, "create"));
	int ok = is_commit_id(commit) && json_is_object(sw);
	if (ok && !ref)
		ok = to && strcmp(to, commit) == 0;
	else if (ok && strcmp(ref, "HEAD") == 0)
		ok = !to;
	else if (ok)
		ok = strncmp(ref, "refs/heads/", 11) == 0 && to && (strcmp(to, ref) == 0 || strcmp(to, ref + 11) == 0);
	if (!ok)
		return tether_error_set(TETHER_EUSAGE, "malformed plan: \"switch\" and the commit and ref it "
		                        "moves to do not agree");
	snprintf(t->commit, sizeof t->commit, "%s", commit);
	t->ref = dup_or_null(ref);
	t->to = dup_or_null(to);
	t->create = dup_or_null(create);
	return 0;
}

/* The ref the plan moves through must still be at the planned commit. */
static int check_target_ref(struct tether_repo *repo, const struct new_target *t)
{
	if (!t->ref)
		return 0;
	char now[41] = "";
	if (repo->vcs->resolve(repo->vh, t->ref, now) != 0) {
		tether_error_clear();
		now[0] = '\0';
	}
	char *what = strcmp(t->ref, "HEAD") == 0 ? strdup("HEAD") : tt_strdupf("branch %s", t->ref + 11);
	int rc = tt_plan_check_ref(what, t->commit, now);
	free(what);
	return rc;
}

/* The bookmark this checkout stands for once moved: the new branch, else
 * the branch checked out, else the detached commit. */
static char *target_bookmark(struct tether_repo *repo, const struct new_target *t)
{
	if (t->create)
		return strdup(t->create);
	char *name = NULL;
	if (t->ref && strcmp(t->ref, "HEAD") == 0 && repo->vcs->current_branch(repo->vh, &name) == 0 && name)
		return name;
	free(name);
	if (t->ref && strcmp(t->ref, "HEAD") != 0)
		return strdup(t->ref + 11);
	return tt_strdupf("detached-%.12s", t->commit);
}

/* --adopt: the checkout's bookmark; on a checkout that names none, the one
 * the workspace works on stays (the checkout moved under it, and adopting
 * keeps its working branches here). */
static char *adopt_bookmark(struct tether_repo *repo, const struct new_target *t, const json_t *ws)
{
	char *name = NULL;
	if (repo->vcs->current_branch(repo->vh, &name) == 0 && name)
		return name;
	tether_error_clear();
	const char *kept = json_string_value(json_object_get(ws, "bookmark"));
	return kept ? strdup(kept) : target_bookmark(repo, t);
}

/* One object's planned action; a fork carries the condition it is made on:
 * "expect" is null (the branch must not exist) or the head tether last left
 * it at. With --adopt, a working branch the store already holds is taken as
 * it is ("adopt", at the "head" it has now), and only a missing one is
 * forked, on the condition that it is still missing. */
static int plan_action(struct tether_repo *repo, struct tt_obj *o, const char *bookmark, const json_t *ws,
                       int adopt, json_t **out)
{
	const char *detail;
	const char *action = tt_fork_decision(o, tt_is_trunk(repo, bookmark), &detail);
	json_t *a = json_pack("{s:s, s:s}", "key", o->m->key, "action", action);
	*out = a;
	if (detail) {
		json_object_set_new(a, "detail", json_string(detail));
		return 0;
	}
	char *branch = tt_working_branch_name(repo, bookmark);
	json_t *head = NULL, *wref = NULL;
	int rc = adopt ? tt_fork_find_working(o, branch, &wref, &head) : 0;
	json_object_set_new(a, "branch", json_string(branch));
	if (head) {
		json_object_set_new(a, "action", json_string("adopt"));
		json_object_set_new(a, "head", tt_content_state(o->b, head));
	} else {
		json_t *known = adopt ? NULL : tt_fork_expect(ws, o, branch);
		json_object_set_new(a, "expect", known ? tt_content_state(o->b, known) : json_null());
	}
	json_decref(head);
	json_decref(wref);
	free(branch);
	return rc;
}

/* The forkable object's state at the target commit. */
static json_t *object_precondition(const struct tt_obj *o)
{
	const json_t *recorded = tt_manifest_state(o->m);
	json_t *state = recorded ? tt_content_state(o->b, recorded) : json_null();
	char digest[65];
	tt_plan_digest(state, digest);
	return json_pack("{s:s, s:s?, s:o, s:s}", "key", o->m->key, "pin", tt_manifest_pin(o->m), "state", state,
	                 "digest", digest);
}

static int build_plan(struct tether_repo *repo, const struct new_target *t, struct tt_obj *objs, size_t n,
                      const char *bookmark, const json_t *ws, int adopt, json_t **out)
{
	json_t *plan = tt_plan_new(repo, "new");
	int rc = 0;
	*out = plan;
	json_t *pre = tt_plan_preconditions(plan), *objects = json_array();
	json_object_set_new(pre, "commit", json_string(t->commit));
	json_object_set_new(pre, "ref", t->ref ? json_string(t->ref) : json_null());
	json_object_set_new(pre, "objects", objects);
	json_object_set_new(plan, "switch", json_pack("{s:s?, s:s?}", "to", t->to, "create", t->create));
	json_object_set_new(plan, "bookmark", json_string(bookmark));
	if (adopt)
		json_object_set_new(plan, "adopt", json_true());
	for (size_t i = 0; !rc && i < n; i++) {
		json_t *a = NULL;
		rc = plan_action(repo, &objs[i], bookmark, ws, adopt, &a);
		json_array_append_new(tt_plan_actions(plan), a);
		if (objs[i].caps & TETHER_CAP_FORK)
			json_array_append_new(objects, object_precondition(&objs[i]));
	}
	return rc;
}

/* --from-plan: the plan made then must be the plan made now. */
static int check_plan(const json_t *planned, const json_t *fresh)
{
	const char *was = json_string_value(json_object_get(planned, "bookmark"));
	const char *now = json_string_value(json_object_get(fresh, "bookmark"));
	if (!was || strcmp(was, now) != 0)
		return tether_error_set(TETHER_EREFUSED, "stale plan: the bookmark is now %s, not %s", now,
		                        was ? was : "(none)");
	int rc = tt_plan_check_objects(json_object_get(tt_plan_preconditions(planned), "objects"),
	                               json_object_get(tt_plan_preconditions(fresh), "objects"));
	return rc ? rc : tt_plan_check_actions("new", tt_plan_actions(planned), tt_plan_actions(fresh));
}

/* Every fork's condition, against the stores, before anything moves. */
static int check_forks(struct tether_repo *repo, struct tt_obj *objs, size_t n, const char *bookmark,
                       const json_t *ws, const json_t *plan)
{
	char *branch = tt_working_branch_name(repo, bookmark);
	int rc = tt_fork_scopes_agree(objs, n, branch, tt_is_trunk(repo, bookmark));
	int adopt = json_is_true(json_object_get(plan, "adopt"));
	for (size_t i = 0; !rc && i < n; i++) {
		const char *action = json_string_value(json_object_get(json_array_get(tt_plan_actions(plan), i), "action"));
		if (strcmp(action, "fork") == 0)
			rc = tt_fork_precheck(&objs[i], branch, adopt ? NULL : tt_fork_expect(ws, &objs[i], branch));
	}
	free(branch);
	return rc;
}

/* A failed run leaves nothing behind: its forks taken back, the workspace
 * file as it was, the checkout where it was. The error says what failed
 * first, then what was undone (or could not be), in one line. */
static int roll_back(struct tether_repo *repo, const struct new_target *t, struct tt_fork_log *log,
                     const char *ws_text, const json_t *pos, int code)
{
	char *why = strdup(tether_error_last()), *unforked = NULL;
	tt_fork_log_undo(log, &unforked);
	tether_error_clear();
	char *ws_failed = tt_workspace_restore(repo, ws_text) == 0 ? NULL : strdup(tether_error_last());
	char *moved_failed = NULL;
	if (pos && repo->vcs->return_to(repo->vh, pos, t->create) != 0)
		moved_failed = strdup(tether_error_last());
	char *forks = !log->n ? strdup("")
	              : unforked ? tt_strdupf("; a fork this run made could not be taken back: %s", unforked)
	                         : tt_strdupf("; the %zu %s this run made %s taken back", log->n,
	                                      tt_plural((long long)log->n, "fork", "forks"),
	                                      tt_plural((long long)log->n, "is", "are"));
	char *moved = !pos ? strdup("") : moved_failed ? tt_strdupf("; moving the checkout back failed: %s", moved_failed)
	                                               : strdup("; the checkout is back where it was");
	tether_error_set(code, "%s%s%s%s%s", why, moved, forks, ws_failed ? "; restoring workspace.toml failed: " : "",
	                 ws_failed ? ws_failed : "");
	free(why);
	free(unforked);
	free(ws_failed);
	free(moved_failed);
	free(forks);
	free(moved);
	return code;
}

/* A fork made, in the journal: the branch, where it was (null: absent),
 * where the fork put it, and what undo needs to reach the store. */
static int journal_fork(struct tt_journal *j, const struct tt_fork_done *d)
{
	struct tt_obj *o = d->obj;
	json_array_append_new(json_object_get(j->entry, "forks"),
	                      json_pack("{s:s, s:s, s:O, s:s, s:O?, s:O, s:O, s:O*}", "key", o->m->key, "kind", o->b->kind,
	                                "locator", tt_manifest_locator(o->m), "branch", d->branch, "before", d->before,
	                                "after", d->after, "ref", d->wref, "pin_ref",
	                                json_object_get(o->m->doc, "pin_ref")));
	return tt_journal_update(j);
}

/* Close the INCOMPLETE entries of `new` runs that died. */
static int close_dead_runs(struct tether_repo *repo)
{
	json_t *open = NULL;
	int rc = tt_journal_open_entries(repo, &open);
	size_t i;
	json_t *e;
	json_array_foreach(open, i, e) {
		const char *op = json_string_value(json_object_get(e, "op"));
		const char *status = json_string_value(json_object_get(e, "status"));
		if (!rc && op && strcmp(op, "new") == 0 && status && strcmp(status, "INCOMPLETE") == 0 &&
		    tt_journal_entry_dead(e))
			rc = tt_journal_close_other(repo, e, "COMPLETE", json_pack("{s:s}", "finished_by", "a later `new`"));
	}
	json_decref(open);
	return rc;
}

/* The plan's actions: move the checkout, then fork each object. */
static int apply_plan(struct tether_repo *repo, const struct new_target *t, struct tt_obj *objs, size_t n,
                      const char *bookmark, json_t *ws, const json_t *plan, json_t *list)
{
	int adopt = json_is_true(json_object_get(plan, "adopt"));
	json_t *pos = NULL;
	char *ws_text = NULL;
	struct tt_fork_log log = {0};
	int moves = t->to || t->create;
	struct tt_journal journal = {0};
	int rc = moves ? repo->vcs->position(repo->vh, &pos) : 0;
	if (!rc)
		rc = tt_workspace_text(repo, &ws_text);
	/* A `new` that died part-way was finished by this run, which found its
	 * forks where the dead one left them (undo takes back this run first,
	 * then that one). */
	if (!rc)
		rc = close_dead_runs(repo);
	/* What undo needs to put it all back (undo_new.c). */
	if (!rc)
		rc = tt_journal_begin_op(repo, "new", json_pack("{s:s, s:s, s:s?, s:O?, s:s?, s:[]}", "target", t->commit,
		                                                 "bookmark", bookmark, "created_branch", t->create,
		                                                 "position_before", pos, "workspace_before", ws_text,
		                                                 "forks"), &journal);
	if (!rc)
		rc = repo->vcs->switch_to(repo->vh, t->to, t->create);
	if (rc) {
		int code = rc;
		char *why = strdup(tether_error_last());
		tt_journal_end(&journal, "ABORTED", NULL);
		tt_journal_free(&journal);
		tether_error_set(code, "%s", why);
		free(why);
		json_decref(pos);
		free(ws_text);
		return code; /* switch_to moves nothing when it fails */
	}
	json_t *after = NULL;
	if (moves && repo->vcs->position(repo->vh, &after) != 0)
		tether_error_clear(); /* undo then refuses, not knowing where new left the checkout */
	json_object_set_new(journal.entry, "position_after", after ? after : json_null());
	rc = tt_journal_update(&journal);
	tt_fault_point("new", "switched");
	tt_workspace_set_position(ws, bookmark, t->commit);
	/* Adopting: what this checkout recorded about branches that are gone
	 * or moved no longer holds; each is taken as the store has it now. */
	for (size_t i = 0; adopt && i < n; i++)
		json_object_del(json_object_get(ws, "working"), objs[i].m->key);
	if (!rc)
		rc = tt_workspace_save(repo, ws);
	/* The workspace is saved after every fork: a run that dies part-way
	 * leaves each branch it made with its head recorded, so the re-run's
	 * conditional fork finds it where it expects. */
	for (size_t i = 0; !rc && i < n; i++) {
		json_t *r;
		if (tt_cancelled()) {
			rc = tt_cancel_error("new"); /* rolled back below, as any failure */
			break;
		}
		size_t forked = log.n;
		const json_t *a = json_array_get(tt_plan_actions(plan), i);
		if (strcmp(json_string_value(json_object_get(a, "action")), "adopt") == 0)
			rc = tt_fork_adopt(repo, &objs[i], ws, json_string_value(json_object_get(a, "branch")),
			                   json_object_get(a, "head"), &r);
		else
			rc = tt_fork_object(repo, &objs[i], ws, bookmark, &log, &r);
		if (!rc)
			json_array_append_new(list, r);
		if (!rc && log.n > forked)
			rc = journal_fork(&journal, &log.v[forked]);
		if (!rc)
			rc = tt_workspace_save(repo, ws);
		if (!rc)
			tt_fault_point("new", "forked");
	}
	if (rc) {
		rc = roll_back(repo, t, &log, ws_text, pos, rc);
		char *why = strdup(tether_error_last());
		tt_journal_end(&journal, "ABORTED", NULL);
		tether_error_set(rc, "%s", why);
		free(why);
	} else {
		rc = tt_journal_end(&journal, "COMPLETE", t->commit);
	}
	tt_journal_free(&journal);
	tt_fork_log_free(&log);
	json_decref(pos);
	free(ws_text);
	return rc;
}

/* The branch to create must not exist yet: said while planning, not when
 * the switch refuses it. */
static int check_new_branch(struct tether_repo *repo, const struct new_target *t)
{
	if (!t->create)
		return 0;
	char *full = tt_strdupf("refs/heads/%s", t->create);
	char id[41];
	int exists = repo->vcs->resolve(repo->vh, full, id) == 0;
	free(full);
	tether_error_clear();
	return exists ? tether_error_set(TETHER_EREFUSED, "branch '%s' already exists", t->create) : 0;
}

static int locate_target(struct tether_repo *repo, const struct tether_new_opts *opts, struct new_target *t)
{
	int rc = opts->from_plan ? target_from_plan(opts->from_plan, t) : target_resolve(repo, opts, t);
	if (!rc && opts->from_plan)
		rc = check_target_ref(repo, t);
	return rc ? rc : check_new_branch(repo, t);
}

static int run_new(struct tether_repo *repo, const struct tether_new_opts *opts, const struct new_target *t,
                   struct tt_manifest_set *set, json_t **report)
{
	struct tt_obj *objs = NULL;
	json_t *ws = NULL;
	int rc = tt_objs_prepare(repo, set, 0, &objs);
	if (!rc)
		rc = tt_workspace_load(repo, &ws);
	if (rc) {
		tt_objs_free(objs, set->n);
		return rc;
	}
	int adopt = opts->adopt || json_is_true(json_object_get(opts->from_plan, "adopt"));
	char *bookmark = adopt ? adopt_bookmark(repo, t, ws) : target_bookmark(repo, t);
	json_t *plan = NULL, *list = json_array();
	rc = build_plan(repo, t, objs, set->n, bookmark, ws, adopt, &plan);
	int dry_run = opts->dry_run || opts->plan_out;
	if (!rc && opts->from_plan)
		rc = check_plan(opts->from_plan, plan);
	if (!rc)
		rc = check_forks(repo, objs, set->n, bookmark, ws, plan);
	if (!rc && opts->plan_out)
		rc = tt_plan_save(plan, opts->plan_out);
	if (!rc && !dry_run)
		rc = apply_plan(repo, t, objs, set->n, bookmark, ws, plan, list);
	if (!rc) {
		*report = json_pack("{s:s, s:s}", "commit", t->commit, "bookmark", bookmark);
		if (!dry_run)
			json_object_set(*report, "objects", list);
		tt_plan_report(*report, plan, dry_run, opts->plan_out);
	}
	json_decref(plan);
	json_decref(list);
	json_decref(ws);
	free(bookmark);
	tt_objs_free(objs, set->n);
	return rc;
}

static int new_command(tether_repo *repo, const struct tether_new_opts *opts, json_t **report)
{
	*report = NULL;
	int rc = tt_plan_check_opts(opts->plan_out, opts->from_plan);
	if (!rc && opts->from_plan && (opts->rev || opts->branch || opts->adopt))
		rc = tether_error_set(TETHER_EUSAGE, "--from-plan takes no REV, -b or --adopt: the plan names where to go");
	if (!rc && opts->adopt && (opts->rev || opts->branch))
		rc = tether_error_set(TETHER_EUSAGE, "--adopt takes no REV and no -b: it adopts the checkout where it is");
	if (!rc && opts->from_plan)
		rc = tt_plan_check_header(repo, opts->from_plan, "new", opts->from_plan_file);
	if (!rc)
		rc = tt_repo_check_secrets(repo);
	struct tt_lock checkout = {-1}, shared = {-1};
	if (!rc)
		rc = tt_repo_lock(repo, &checkout, &shared);
	struct new_target t = {0};
	struct tt_manifest_set set = {0};
	if (!rc)
		rc = locate_target(repo, opts, &t);
	if (!rc)
		rc = tt_manifests_at(repo, t.commit, &set);
	if (!rc)
		rc = run_new(repo, opts, &t, &set, report);
	target_free(&t);
	tt_manifest_set_free(&set);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

int tether_new(tether_repo *repo, const struct tether_new_opts *caller_opts, json_t **report)
{
	TT_COMMAND_RUN(tether_new_opts, TETHER_NEW_OPTS_VERSION, new_command, repo, caller_opts, report);
}
