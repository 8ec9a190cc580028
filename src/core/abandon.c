/* tether abandon REV: drop a dataset commit through the VCS, then say
 * which pins only that commit named: the next gc releases them.
 *
 * History surgery is the VCS's job (spec, "History surgery"): on jj it is
 * `jj abandon`, on git a rebase of the current branch that leaves the
 * commit out (vcs.h, abandon). tether checks first what the VCS would not:
 * a commit another ref holds (pushed, or in another branch) is refused
 * unless forced, since rewriting it here leaves the other copy naming the
 * same pins. The journal entry is written before the rewrite and closed
 * after it; a run killed in between is finished by re-running it: the
 * branch moves in one step, so the re-run finds it either where the entry
 * says it was (and abandons again) or moved (and closes the entry). */
#include "core/abi.h"
#include "core/engine.h"
#include "core/journal.h"
#include "core/lock.h"
#include "core/plan.h"
#include "core/sessions.h"
#include "core/surgery.h"

#include <stdlib.h>
#include <string.h>

/* An INCOMPLETE abandon of `id` that a dead process left: closed here. Sets
 * *landed when its rewrite had happened (HEAD is no longer the head it
 * started from), and *entry to the entry (the caller's). */
static int finish_dead_run(struct tether_repo *repo, const char *id, const char *head, int *landed,
                           json_t **found)
{
	json_t *open = NULL;
	int rc = tt_journal_open_entries(repo, &open);
	size_t i;
	json_t *e;
	*landed = 0;
	*found = NULL;
	json_array_foreach(open, i, e) {
		const char *op = json_string_value(json_object_get(e, "op"));
		const char *what = json_string_value(json_object_get(e, "abandon"));
		const char *before = json_string_value(json_object_get(e, "head_before"));
		if (rc || !op || strcmp(op, "abandon") != 0 || !what || strcmp(what, id) != 0 || !before ||
		    !tt_journal_entry_dead(e))
			continue;
		/* Landed: HEAD moved and the commit is no longer on its line (a
		 * HEAD moved by someone else, with the commit still there, is a
		 * rewrite that never happened). */
		char ignored[41];
		int moved = strcmp(before, head) != 0 && tt_vcs_abandon(repo, id, head, 1, ignored) != 0;
		tether_error_clear();
		rc = tt_journal_close_other(repo, e, moved ? "COMPLETE" : "ABORTED",
		                            json_pack("{s:s?, s:s}", "commit", moved ? head : NULL, "finished_by",
		                                      "a re-run of abandon"));
		if (!rc && moved) {
			*landed = 1;
			*found = json_incref(e);
			break;
		}
	}
	json_decref(open);
	return rc;
}

static int head_commit(struct tether_repo *repo, char head[41])
{
	int rc = repo->vcs->resolve(repo->vh, "HEAD", head);
	if (rc == TETHER_ENOTFOUND)
		return tether_error_set(TETHER_EREFUSED, "the branch has no commit yet: there is nothing to abandon");
	return rc;
}

/* The refs' names, for the plan: what it reviewed must be what holds the
 * commit when it is applied. */
static json_t *ref_names(const json_t *refs)
{
	json_t *names = json_array();
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r) json_array_append(names, json_object_get(r, "ref"));
	return names;
}

/* --from-plan: the commit and HEAD the plan reviewed, still so. */
static int check_plan(const json_t *plan, const char *head, const json_t *refs)
{
	const json_t *pre = tt_plan_preconditions(plan);
	int rc = tt_plan_check_ref("HEAD", json_string_value(json_object_get(pre, "head")), head);
	json_t *now = ref_names(refs);
	if (!rc && !json_equal(now, json_object_get(pre, "refs")))
		rc = tether_error_set(TETHER_EREFUSED, "stale plan: the refs that hold the commit changed since the plan");
	json_decref(now);
	return rc;
}

static json_t *build_plan(struct tether_repo *repo, const char *id, const char *head, const json_t *refs, int force,
                          const json_t *candidates)
{
	json_t *plan = tt_plan_new(repo, "abandon");
	json_t *pre = tt_plan_preconditions(plan);
	json_object_set_new(pre, "commit", json_string(id));
	json_object_set_new(pre, "head", json_string(head));
	json_object_set_new(pre, "refs", ref_names(refs));
	json_array_append_new(tt_plan_actions(plan), json_pack("{s:s, s:s}", "action", "abandon", "commit", id));
	json_object_set_new(plan, "force", json_boolean(force));
	json_object_set(plan, "pins", (json_t *)candidates);
	return plan;
}

static int run_abandon(struct tether_repo *repo, const struct tether_abandon_opts *opts, json_t **report)
{
	char id[41], head[41], new_head[41] = "";
	const char *rev = opts->from_plan ? json_string_value(json_object_get(tt_plan_preconditions(opts->from_plan),
	                                                                      "commit"))
	                                  : opts->rev;
	int force = opts->from_plan ? json_is_true(json_object_get(opts->from_plan, "force")) : opts->force;
	int dry_run = opts->dry_run || opts->plan_out;
	int rc = repo->vcs->resolve(repo->vh, rev, id);
	/* From a plan there is no REV: a commit this repository lacks (a plan
	 * from another clone) is a plan not for this history, exit 3. */
	if (rc && opts->from_plan)
		return tether_error_set(TETHER_EREFUSED, "stale plan: preconditions.commit %.12s is not a commit of "
		                        "this repository", rev);
	if (rc)
		return tether_error_set(rc, "REV: %s", tether_error_last());
	rc = head_commit(repo, head);
	int landed = 0;
	json_t *dead = NULL;
	if (!rc && !dry_run && !opts->from_plan)
		rc = finish_dead_run(repo, id, head, &landed, &dead);
	json_t *refs = NULL, *candidates = NULL;
	if (!rc && landed) {
		/* A run killed after its rewrite: this one only closes it. */
		candidates = json_incref(json_object_get(dead, "candidates"));
		snprintf(new_head, sizeof new_head, "%s", head);
		snprintf(head, sizeof head, "%s", json_string_value(json_object_get(dead, "head_before")));
		refs = json_array();
	}
	json_decref(dead);
	if (!rc && !landed)
		rc = tt_refuse_published(repo, id, force, "abandon", &refs);
	if (!rc && opts->from_plan)
		rc = check_plan(opts->from_plan, head, refs);
	if (!rc && !landed)
		rc = tt_vcs_abandon(repo, id, head, 1, new_head);
	if (!rc && !landed)
		rc = tt_commit_new_pins(repo, id, &candidates);
	json_t *plan = !rc && !landed ? build_plan(repo, id, head, refs, force, candidates) : NULL;
	if (!rc && opts->plan_out)
		rc = tt_plan_save(plan, opts->plan_out);
	if (!rc && !landed && !dry_run) {
		struct tt_journal j = {0};
		rc = tt_journal_begin_op(repo, "abandon", json_pack("{s:s, s:s, s:O}", "abandon", id, "head_before", head,
		                                                     "candidates", candidates), &j);
		tt_fault_point("abandon", "journal-written");
		if (!rc)
			rc = tt_vcs_abandon(repo, id, head, 0, new_head);
		if (!rc)
			tt_fault_point("abandon", "rewritten");
		if (rc) {
			int code = rc;
			char *why = strdup(tether_error_last());
			tt_journal_end(&j, "ABORTED", NULL);
			tether_error_set(code, "%s", why);
			free(why);
		} else {
			rc = tt_journal_end(&j, "COMPLETE", new_head);
		}
		tt_journal_free(&j);
	}
	json_t *pins = NULL;
	/* What the dry run names are the pins the commit brought in; once it is
	 * gone, the walk of history as it is then says which nothing names. */
	if (!rc)
		rc = dry_run ? ((pins = json_incref(candidates)), 0) : tt_pins_unnamed(repo, candidates, &pins);
	if (!rc) {
		*report = json_pack("{s:s, s:s, s:s?, s:b, s:O, s:O}", "commit", id, "head_before", head, "head",
		                    *new_head ? new_head : NULL, "finished", landed, "refs", refs, "pins", pins);
		if (plan)
			tt_plan_report(*report, plan, dry_run, opts->plan_out);
		else
			json_object_set_new(*report, "dry_run", json_false());
	}
	json_decref(plan);
	json_decref(refs);
	json_decref(candidates);
	json_decref(pins);
	return rc;
}

static int abandon_command(tether_repo *repo, const struct tether_abandon_opts *opts, json_t **report)
{
	*report = NULL;
	int rc = tt_plan_check_opts(opts->plan_out, opts->from_plan);
	if (!rc && opts->from_plan && opts->rev)
		rc = tether_error_set(TETHER_EUSAGE, "--from-plan takes no REV: the plan names the commit");
	if (!rc && !opts->from_plan && (!opts->rev || !*opts->rev))
		rc = tether_error_set(TETHER_EUSAGE, "abandon needs REV, the commit to drop");
	if (!rc && opts->from_plan)
		rc = tt_plan_check_header(repo, opts->from_plan, "abandon", opts->from_plan_file);
	if (!rc)
		rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	struct tt_lock lock = {-1}, shared = {-1};
	rc = tt_repo_lock(repo, &lock, &shared);
	if (!rc)
		rc = run_abandon(repo, opts, report);
	tt_repo_unlock(repo, &lock, &shared);
	return rc;
}

int tether_abandon(tether_repo *repo, const struct tether_abandon_opts *caller_opts, json_t **report)
{
	TT_COMMAND_RUN(tether_abandon_opts, TETHER_ABANDON_OPTS_VERSION, abandon_command, repo, caller_opts, report);
}
