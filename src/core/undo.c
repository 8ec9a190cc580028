/* tether undo: take back the last operation of the journal (undo.h).
 *
 * Which one: the newest entry that did something (not ABORTED, not a
 * commit that made no commit), is not an undo itself, and that no finished
 * undo took back already. So a second undo takes back the operation before
 * (as jj's undo walks back its operation log), and an undo is never undone
 * by the next one: redoing is running the command again. An undo killed
 * part-way comes first: the next `tether undo` finishes it from the
 * progress its entry recorded. */
#include "core/abi.h"
#include "core/lock.h"
#include "core/plan.h"
#include "core/sessions.h"
#include "core/undo.h"

#include <stdlib.h>
#include <string.h>

static const struct tt_undo_inverse *inverse_of(const char *op)
{
	for (size_t i = 0; op && tt_undo_inverses[i]; i++)
		if (strcmp(tt_undo_inverses[i]->op, op) == 0)
			return tt_undo_inverses[i];
	return NULL;
}

static const char *str(const json_t *e, const char *key)
{
	return json_string_value(json_object_get(e, key));
}

static int is(const json_t *e, const char *key, const char *value)
{
	const char *s = str(e, key);
	return s && strcmp(s, value) == 0;
}

/* Did the entry's operation change anything? */
static int did_something(const json_t *e)
{
	if (is(e, "status", "ABORTED"))
		return 0;
	/* a commit with nothing to commit made no commit, and so no pin; a dead
	 * commit a later one finished is that one's (its entry is the record) */
	return !(is(e, "op", "commit") && is(e, "status", "COMPLETE") && (!str(e, "commit") ||
	                                                                   json_object_get(e, "finished_by")));
}

static json_t *find_by_id(const json_t *entries, const char *id)
{
	size_t i;
	json_t *e;
	json_array_foreach(entries, i, e) if (id && is(e, "id", id)) return e;
	return NULL;
}

/* The operation to undo, and the dead undo run to finish when there is
 * one (*resume). */
static int pick(const json_t *entries, const json_t **target, const json_t **resume)
{
	json_t *undone = json_object();
	size_t i;
	json_t *e;
	*target = *resume = NULL;
	json_array_foreach(entries, i, e) {
		if (is(e, "op", "undo") && is(e, "status", "COMPLETE") && str(e, "undoes"))
			json_object_set_new(undone, str(e, "undoes"), json_true());
	}
	int rc = 0;
	for (i = json_array_size(entries); !rc && !*target && i-- > 0;) {
		e = json_array_get(entries, i);
		if (is(e, "op", "undo")) {
			if (!is(e, "status", "INCOMPLETE") || json_object_get(undone, str(e, "undoes") ? str(e, "undoes") : ""))
				continue;
			if (!tt_journal_entry_dead(e)) {
				rc = tether_error_set(TETHER_EREFUSED, "another `tether undo` is running (journal entry %s)",
				                      str(e, "id"));
				break;
			}
			*target = find_by_id(entries, str(e, "undoes"));
			*resume = e;
			if (!*target)
				rc = tether_error_set(TETHER_ERROR, "journal entry %s undoes %s, which is not in the journal",
				                      str(e, "id"), str(e, "undoes") ? str(e, "undoes") : "nothing");
			break;
		}
		if (!did_something(e) || json_object_get(undone, str(e, "id")))
			continue;
		if (is(e, "status", "INCOMPLETE")) {
			const char *op = str(e, "op") ? str(e, "op") : "?";
			if (!tt_journal_entry_dead(e))
				rc = tether_error_set(TETHER_EREFUSED, "the last operation, %s (journal entry %s), is still "
				                      "running", op, str(e, "id"));
			else {
				rc = tether_error_set(TETHER_EREFUSED, "the last operation, %s (journal entry %s), did not "
				                      "finish: its process died", op, str(e, "id"));
				tether_error_set_hint("re-run `tether %s` to finish it, then undo it", op);
			}
			break;
		}
		*target = e;
	}
	json_decref(undone);
	if (!rc && !*target)
		rc = tether_error_set(TETHER_EREFUSED, "nothing to undo: no operation in the journal is left to take back");
	return rc;
}

int tt_undo_progress(struct tt_undo *u, const char *step, json_t *value)
{
	json_object_set_new(u->progress, step, value);
	if (!u->journal)
		return 0;
	json_object_set(u->journal->entry, "progress", u->progress);
	return tt_journal_update(u->journal);
}

static int refuse_unknown(const json_t *target)
{
	const char *op = str(target, "op") ? str(target, "op") : "?";
	int rc = tether_error_set(TETHER_EREFUSED, "the last operation, %s (journal entry %s, %s), has no inverse "
	                          "that tether undo knows", op, str(target, "id"), str(target, "started") ?
	                          str(target, "started") : "?");
	if (str(target, "head_before"))
		tether_error_set_hint("the VCS's own undo takes it back (its reflog or operation log): HEAD was %.12s "
		                      "before it", str(target, "head_before"));
	return rc;
}

/* Perform the inverse, journalled: a run killed part-way leaves its entry
 * INCOMPLETE with the progress made, and the next undo finishes it. */
static int apply(struct tt_undo *u, const struct tt_undo_inverse *inv, const json_t *resume)
{
	struct tt_journal j = {0};
	int rc = tt_journal_begin_op(u->repo, "undo", json_pack("{s:s, s:s, s:O}", "undoes", str(u->entry, "id"),
	                                                        "undoes_op", str(u->entry, "op"), "progress",
	                                                        u->progress), &j);
	if (!rc && resume)
		rc = tt_journal_close_other(u->repo, resume, "ABORTED", json_pack("{s:s}", "resumed_by", j.name));
	if (rc) {
		tt_journal_free(&j);
		return rc;
	}
	u->journal = &j;
	tt_fault_point("undo", "journal-written");
	rc = inv->apply(u);
	u->journal = NULL;
	if (!rc) {
		rc = tt_journal_end(&j, "COMPLETE", NULL);
	} else if (!json_object_size(u->progress)) {
		int code = rc;
		char *why = strdup(tether_error_last());
		tt_journal_end(&j, "ABORTED", NULL);
		tether_error_set(code, "%s", why);
		free(why);
	} else {
		/* Part of it is done: the entry stays open for the next undo. */
		int code = rc;
		char *why = strdup(tether_error_last());
		tether_error_set(code, "%s; part of the undo is done: `tether undo` again finishes it", why);
		free(why);
	}
	tt_journal_free(&j);
	return rc;
}

/* The plan: which entry, resumed from which dead run, and the steps. */
static json_t *build_plan(struct tether_repo *repo, const json_t *target, const json_t *resume, const json_t *steps)
{
	json_t *plan = tt_plan_new(repo, "undo");
	json_t *pre = tt_plan_preconditions(plan);
	json_object_set_new(pre, "entry", json_string(str(target, "id")));
	json_object_set_new(pre, "op", json_string(str(target, "op")));
	json_object_set_new(pre, "resume", resume ? json_string(str(resume, "id")) : json_null());
	size_t i;
	json_t *s;
	json_array_foreach(steps, i, s)
		json_array_append_new(tt_plan_actions(plan), json_pack("{s:s, s:O}", "action", "step", "step", s));
	return plan;
}

/* --from-plan: the operation to undo and its steps are still the plan's. */
static int check_plan(const json_t *planned, const json_t *fresh)
{
	const json_t *was = tt_plan_preconditions(planned), *now = tt_plan_preconditions(fresh);
	if (!json_equal(json_object_get(was, "entry"), json_object_get(now, "entry")) ||
	    !json_equal(json_object_get(was, "resume"), json_object_get(now, "resume")))
		return tether_error_set(TETHER_EREFUSED, "stale plan: the operation to undo is now %s (journal entry %s), "
		                        "not entry %s", str(now, "op"), str(now, "entry"),
		                        str(was, "entry") ? str(was, "entry") : "?");
	if (!json_equal(tt_plan_actions(planned), tt_plan_actions(fresh)))
		return tether_error_set(TETHER_EREFUSED, "stale plan: undoing %s now takes other steps than the plan's",
		                        str(now, "entry"));
	return 0;
}

static int run_undo(struct tether_repo *repo, const struct tether_undo_opts *opts, json_t **report)
{
	json_t *entries = NULL;
	const json_t *target = NULL, *resume = NULL;
	int rc = tt_journal_list(repo, &entries);
	if (!rc)
		rc = pick(entries, &target, &resume);
	const struct tt_undo_inverse *inv = rc ? NULL : inverse_of(str(target, "op"));
	if (!rc && !inv)
		rc = refuse_unknown(target);
	struct tt_undo u = {.repo = repo, .entry = target, .dry_run = opts->dry_run, .steps = json_array(),
	                    .report = json_object()};
	u.progress = resume && json_is_object(json_object_get(resume, "progress"))
	             ? json_deep_copy(json_object_get(resume, "progress")) : json_object();
	int dry_run = opts->dry_run || opts->plan_out;
	if (!rc)
		rc = inv->check(&u);
	json_t *plan = rc ? NULL : build_plan(repo, target, resume, u.steps);
	if (!rc && opts->from_plan)
		rc = check_plan(opts->from_plan, plan);
	if (!rc && opts->plan_out)
		rc = tt_plan_save(plan, opts->plan_out);
	if (!rc && !dry_run)
		rc = apply(&u, inv, resume);
	if (!rc) {
		*report = json_pack("{s:{s:s, s:s, s:s?, s:s?, s:O?}, s:b, s:O}", "undone", "id", str(target, "id"),
		                    "op", str(target, "op"), "started", str(target, "started"), "message",
		                    str(target, "message"), "commit", json_object_get(target, "commit"), "resumed",
		                    resume != NULL, "steps", u.steps);
		json_object_update(*report, u.report);
		tt_plan_report(*report, plan, dry_run, opts->plan_out);
	}
	json_decref(plan);
	json_decref(u.steps);
	json_decref(u.report);
	json_decref(u.progress);
	json_decref(entries);
	return rc;
}

static int undo_command(tether_repo *repo, const struct tether_undo_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock lock = {-1}, shared = {-1};
	int rc = tt_plan_command_lock(repo, "undo", opts->plan_out, opts->from_plan, opts->from_plan_file, NULL, &lock,
	                              &shared);
	if (!rc)
		rc = run_undo(repo, opts, report);
	tt_repo_unlock(repo, &lock, &shared);
	return rc;
}

int tether_undo(tether_repo *repo, const struct tether_undo_opts *caller_opts, json_t **report)
{
	TT_COMMAND_RUN(tether_undo_opts, TETHER_UNDO_OPTS_VERSION, undo_command, repo, caller_opts, report);
}
