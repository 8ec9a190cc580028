/* tether restore [-r REV] [KEY...]: put working branches back to the state
 * a revision records, as `jj restore` puts files back.
 *
 * Only this workspace's working branches move (the ones workspace.toml
 * names): a base branch is never touched, so an object with no working
 * branch here, one that writes to its upstream branch (write = track), one
 * that is not forkable (tether keeps no copy of a local file's bytes) and
 * one REV does not record are refused when named, and skipped when no key
 * is. Each reset is a fork onto the branch that exists, conditional on the
 * head the plan read (the writes it discards): a writer that moved the
 * branch since makes the backend refuse, and the resets this run made are
 * taken back, so nothing is left half-done. The run is journaled (`tether
 * ops`); one killed part-way is finished by running it again, which finds
 * the branches it reset already at REV's state. */
#include "core/abi.h"
#include "core/cancel.h"
#include "core/engine.h"
#include "core/sessions.h"

#include "core/journal.h"
#include "core/lock.h"
#include "core/pinid.h"
#include "core/plan.h"
#include "core/workspace.h"
#include "util/fsutil.h"
#include "util/plural.h"

#include <stdlib.h>
#include <string.h>

/* One working object the run looked at. */
struct pick {
	struct tt_obj *o;
	const struct tt_manifest *at; /* REV's manifest of the key, or NULL */
	json_t *action;               /* its plan action (borrowed from the plan) */
	char *scope;                  /* tt_fork_scope, or NULL */
	json_t *head;                 /* the branch's head when planned, or NULL */
};

struct restore_run {
	struct tether_repo *repo;
	struct tt_journal *journal; /* while applying: where each reset is noted */
	json_t *resets;             /* [{key, kind, locator, branch, ref, before, after}]: what undo reads */
	const char *rev;   /* as given, for messages */
	char commit[41];
	json_t *keys;      /* the keys asked for: [] is every object */
	struct tt_manifest_set work, at;
	struct tt_obj *objs;
	struct pick *picks;
	size_t n;          /* picks in use */
	json_t *ws;
	json_t *plan;
};

static int key_wanted(const json_t *keys, const char *key)
{
	if (!json_array_size(keys))
		return 1;
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k)
		if (strcmp(json_string_value(k), key) == 0)
			return 1;
	return 0;
}

/* Why the object cannot be restored, or NULL when it can; *hint gets what
 * to do about it, when something can be done. */
static char *why_not(struct restore_run *run, struct tt_obj *o, const struct tt_manifest *at, const char **hint)
{
	*hint = NULL;
	const char *write = json_string_value(json_object_get(tt_manifest_policy(o->m), "write"));
	const json_t *entry = tt_workspace_entry(run->ws, o->m->key);
	if (!(o->caps & TETHER_CAP_FORK))
		return tt_strdupf("kind %s is %s: tether keeps no copy of its data, so it cannot put it back; restore "
		                  "it with the system's own tools", o->b->kind, tether_tier_name(o->caps));
	if (write && strcmp(write, "track") == 0)
		return strdup("it writes to its upstream branch (write = track), and restore never moves a base branch");
	if (write && strcmp(write, "none") == 0)
		return strdup("write = none: it has no working branch to restore");
	if (!json_is_string(json_object_get(entry, "branch")) || !json_object_get(entry, "ref")) {
		*hint = "`tether new` (or a writable `tether open KEY`) forks a working branch; restore then resets it";
		return strdup("it has no working branch in this workspace, and restore never moves a base branch");
	}
	if (!at || !tt_manifest_state(at))
		return tt_strdupf("%s (%.12s) records no state of it", run->rev, run->commit);
	if (strcmp(tt_manifest_kind(at), o->b->kind) != 0)
		return tt_strdupf("at %s it is of kind %s, not %s", run->rev, tt_manifest_kind(at), o->b->kind);
	json_t *now = NULL, *then = NULL;
	int same = o->b->identity && o->b->identity(&o->ctx, tt_manifest_locator(o->m), &now) == 0 &&
	           o->b->identity(&o->ctx, tt_manifest_locator(at), &then) == 0 && json_equal(now, then);
	json_decref(now);
	json_decref(then);
	tether_error_clear();
	if (!same)
		return tt_strdupf("at %s it names another store than it does now", run->rev);
	return NULL;
}

static json_t *skip_action(const char *key, const char *detail)
{
	return json_pack("{s:s, s:s, s:s}", "key", key, "action", "skip", "detail", detail);
}

/* The action for one object that can be restored: "reset" the branch to
 * REV's state, conditional on the head read now (null: the branch is gone
 * and is made again), or "unchanged" when it is there already. */
static int plan_reset(struct restore_run *run, struct pick *p)
{
	struct tt_obj *o = p->o;
	const char *branch = json_string_value(json_object_get(tt_workspace_entry(run->ws, o->m->key), "branch"));
	int exists = 0;
	int rc = tt_fork_head(o, branch, &p->head, &exists);
	if (rc)
		return tether_error_set(rc, "%s: cannot read %s: %s", o->m->key, branch, tether_error_last());
	const json_t *to = tt_manifest_state(p->at);
	int there = exists && p->head && tt_same_content(o->b, p->head, to);
	json_t *a = json_pack("{s:s, s:s, s:s, s:o}", "key", o->m->key, "action", there ? "unchanged" : "reset", "branch",
	                      branch, "to", tt_content_state(o->b, to));
	if (!there)
		json_object_set_new(a, "expect", exists && p->head ? tt_content_state(o->b, p->head) : json_null());
	if (!exists)
		json_object_set_new(a, "detail", json_string("the branch is gone: it is made again"));
	p->action = a;
	p->scope = tt_fork_scope(o);
	return 0;
}

/* Objects of one store share its working branch: restoring one moves the
 * others, so they are restored together, to one state. */
static int check_scopes(struct restore_run *run)
{
	for (size_t i = 0; i < run->n; i++) {
		struct pick *p = &run->picks[i];
		if (!p->scope)
			continue;
		const char *branch = json_string_value(json_object_get(p->action, "branch"));
		const char *k;
		json_t *entry;
		json_object_foreach(json_object_get(run->ws, "working"), k, entry) {
			const char *s = json_string_value(json_object_get(entry, "scope"));
			const char *b = json_string_value(json_object_get(entry, "branch"));
			if (strcmp(k, p->o->m->key) == 0 || !s || strcmp(s, p->scope) != 0 || !b || strcmp(b, branch) != 0 ||
			    !tt_manifest_set_find(&run->work, k))
				continue;
			int picked = 0;
			for (size_t j = 0; j < run->n; j++)
				picked |= strcmp(run->picks[j].o->m->key, k) == 0 && run->picks[j].scope;
			if (!picked) {
				tether_error_set(TETHER_EREFUSED, "%s: cannot restore %s alone: %s is an object of the same "
				                 "store and works on that branch too", p->o->m->key, branch, k);
				tether_error_set_hint("restore them together: tether restore %s %s", p->o->m->key, k);
				return TETHER_EREFUSED;
			}
		}
		for (size_t j = 0; j < i; j++) {
			struct pick *q = &run->picks[j];
			if (q->scope && strcmp(q->scope, p->scope) == 0 &&
			    !tt_same_content(p->o->b, tt_manifest_state(p->at), tt_manifest_state(q->at)))
				return tether_error_set(TETHER_EREFUSED, "%s: cannot restore %s: %s and %s are objects of one "
				                        "store, which share its working branch, but %s records them at "
				                        "different states", p->o->m->key, branch, q->o->m->key, p->o->m->key,
				                        run->rev);
		}
	}
	return 0;
}

static json_t *object_precondition(const struct pick *p)
{
	json_t *state = tt_content_state(p->o->b, tt_manifest_state(p->at));
	char digest[65];
	tt_plan_digest(state, digest);
	return json_pack("{s:s, s:s, s:o, s:s}", "key", p->o->m->key, "manifest", p->o->m->digest, "state", state,
	                 "digest", digest);
}

/* Every selected object's action, refusing a named object that cannot be
 * restored. */
static int build_plan(struct restore_run *run)
{
	run->plan = tt_plan_new(run->repo, "restore");
	json_object_set_new(run->plan, "rev", json_string(run->rev));
	json_object_set(run->plan, "keys", run->keys);
	json_t *objects = json_array();
	json_object_set_new(tt_plan_preconditions(run->plan), "commit", json_string(run->commit));
	json_object_set_new(tt_plan_preconditions(run->plan), "objects", objects);
	run->picks = calloc(run->work.n + 1, sizeof *run->picks);
	if (!run->picks)
		abort();
	int named = json_array_size(run->keys) > 0;
	for (size_t i = 0; i < run->work.n; i++) {
		struct tt_obj *o = &run->objs[i];
		if (!key_wanted(run->keys, o->m->key))
			continue;
		const struct tt_manifest *at = tt_manifest_set_find(&run->at, o->m->key);
		const char *hint;
		char *why = why_not(run, o, at, &hint);
		if (why && named) {
			tether_error_set(TETHER_EREFUSED, "cannot restore %s: %s", o->m->key, why);
			if (hint)
				tether_error_set_hint("%s", hint);
			free(why);
			return TETHER_EREFUSED;
		}
		if (why) {
			json_array_append_new(tt_plan_actions(run->plan), skip_action(o->m->key, why));
			free(why);
			continue;
		}
		struct pick *p = &run->picks[run->n++];
		p->o = o;
		p->at = at;
		int rc = plan_reset(run, p);
		if (rc)
			return rc;
		json_array_append_new(tt_plan_actions(run->plan), p->action); /* the plan owns it; p borrows */
		json_array_append_new(objects, object_precondition(p));
	}
	return check_scopes(run);
}

/* The keys asked for are objects of the working copy. */
static int check_keys(struct restore_run *run, int planned)
{
	size_t i;
	json_t *k;
	json_array_foreach(run->keys, i, k) {
		if (!tt_manifest_set_find(&run->work, json_string_value(k)) && planned)
			return tether_error_set(TETHER_EREFUSED, "stale plan: %s was removed since the plan",
			                        json_string_value(k));
		if (!tt_manifest_set_find(&run->work, json_string_value(k))) {
			char *rel = tt_manifest_relpath(json_string_value(k));
			int rc = tether_error_set(TETHER_ENOTFOUND, "no object '%s' in this dataset (no %s)",
			                          json_string_value(k), rel);
			free(rel);
			return rc;
		}
	}
	return 0;
}

static int check_plan(const struct restore_run *run, const json_t *planned)
{
	int rc = tt_plan_check_objects(json_object_get(tt_plan_preconditions(planned), "objects"),
	                               json_object_get(tt_plan_preconditions(run->plan), "objects"));
	return rc ? rc : tt_plan_check_actions("restore", tt_plan_actions(planned), tt_plan_actions(run->plan));
}

/* The workspace now says the branch stands at REV's state: the head the
 * next fork or commit moves it from. */
static void note_restored(struct restore_run *run, const struct pick *p, const json_t *wref)
{
	json_t *entry = tt_workspace_entry(run->ws, p->o->m->key);
	const json_t *state = tt_manifest_state(p->at);
	const char *branch = json_string_value(json_object_get(p->action, "branch"));
	const char *pin = tt_manifest_pin(p->at);
	json_object_set(entry, "state", (json_t *)state);
	if (pin)
		json_object_set_new(entry, "from_pin", json_string(pin));
	else
		json_object_del(entry, "from_pin");
	if (wref)
		json_object_set(entry, "ref", (json_t *)wref);
	json_t *heads = json_object_get(entry, "heads");
	if (!json_is_object(heads)) {
		heads = json_object();
		json_object_set_new(entry, "heads", heads);
	}
	json_object_set(heads, branch, (json_t *)state);
}

/* Has an earlier pick of this run moved the same branch of the same store? */
static int moved_already(const struct restore_run *run, size_t i)
{
	const struct pick *p = &run->picks[i];
	for (size_t j = 0; p->scope && j < i; j++)
		if (run->picks[j].scope && strcmp(run->picks[j].scope, p->scope) == 0 &&
		    strcmp(json_string_value(json_object_get(run->picks[j].action, "action")), "reset") == 0)
			return 1;
	return 0;
}

static int reset_one(struct restore_run *run, size_t i, struct tt_fork_log *log, json_t *list)
{
	struct pick *p = &run->picks[i];
	struct tt_obj *o = p->o;
	const char *action = json_string_value(json_object_get(p->action, "action"));
	const char *branch = json_string_value(json_object_get(p->action, "branch"));
	json_t *row = json_pack("{s:s, s:s, s:s, s:O, s:O?}", "key", o->m->key, "action", action, "branch", branch, "to",
	                        json_object_get(p->action, "to"), "from", json_object_get(p->action, "expect"));
	if (strcmp(action, "reset") == 0 && !moved_already(run, i)) {
		const json_t *expect = json_object_get(p->action, "expect");
		json_t *wref = NULL;
		tether_error_clear();
		int rc = TT_BACKEND_GET(o->b, fork)(&o->ctx, tt_manifest_locator(o->m), tt_manifest_state(p->at),
		                                    json_object_get(p->at->doc, "pin_ref"), branch, expect, &wref);
		if (rc) {
			json_decref(row);
			return tether_error_set(rc, "%s: cannot reset %s: %s", o->m->key, branch, tether_error_last());
		}
		if (log->n == log->cap) {
			log->cap = log->cap ? 2 * log->cap : 8;
			log->v = realloc(log->v, log->cap * sizeof *log->v);
			if (!log->v)
				abort();
		}
		log->v[log->n++] = (struct tt_fork_done){o, strdup(branch), json_is_object(expect) ? json_deep_copy(p->head)
		                                                                                    : NULL,
		                                         json_deep_copy(tt_manifest_state(p->at)), json_incref(wref)};
		/* Journaled once made: undo moves the branch back from "after" to
		 * "before" (null: it made the branch, undo deletes it). */
		json_array_append_new(run->resets, json_pack("{s:s, s:s, s:O, s:s, s:O, s:O, s:o}", "key", o->m->key, "kind",
		                                             o->b->kind, "locator", tt_manifest_locator(o->m), "branch",
		                                             branch, "ref", wref ? wref : json_null(), "before",
		                                             expect ? expect : json_null(),
		                                             "after", tt_content_state(o->b, tt_manifest_state(p->at))));
		if (run->journal && run->journal->entry && tt_journal_note(run->journal, "resets",
		                                                           json_incref(run->resets)) != 0) {
			json_decref(wref);
			json_decref(row);
			return tether_error_set(TETHER_EIO, "%s: cannot journal the reset of %s: %s", o->m->key, branch,
			                        tether_error_last());
		}
		note_restored(run, p, wref);
		json_decref(wref);
	} else {
		note_restored(run, p, NULL);
	}
	json_array_append_new(list, row);
	return 0;
}

/* A reset refused or failed part-way: the resets made are taken back (each
 * conditional on the branch still being where this run put it), and the
 * workspace file is as it was. */
static int roll_back(struct restore_run *run, struct tt_fork_log *log, const char *ws_text, int code)
{
	char *why = strdup(tether_error_last()), *failed = NULL;
	tt_fork_log_undo(log, &failed);
	tether_error_clear();
	int ws_ok = tt_workspace_restore(run->repo, ws_text) == 0;
	char *undone = !log->n ? strdup("")
	               : failed ? tt_strdupf("; a reset this run made could not be taken back: %s", failed)
	                        : tt_strdupf("; the %zu %s this run made %s taken back", log->n,
	                                     tt_plural((long long)log->n, "reset", "resets"),
	                                     tt_plural((long long)log->n, "is", "are"));
	tether_error_set(code, "%s%s%s", why, undone, ws_ok ? "" : "; workspace.toml could not be restored");
	free(why);
	free(failed);
	free(undone);
	return code;
}

static json_t *acted_keys(const struct restore_run *run)
{
	json_t *keys = json_array();
	for (size_t i = 0; i < run->n; i++)
		json_array_append_new(keys, json_string(run->picks[i].o->m->key));
	return keys;
}

static int apply_plan(struct restore_run *run, json_t *list)
{
	char *ws_text = NULL;
	struct tt_journal journal = {0};
	struct tt_fork_log log = {0};
	char *message = tt_strdupf("restore to %s (%.12s)", run->rev, run->commit);
	json_t *pins = json_array();
	int resets = 0;
	for (size_t i = 0; i < run->n; i++)
		resets += strcmp(json_string_value(json_object_get(run->picks[i].action, "action")), "reset") == 0;
	int rc = tt_workspace_text(run->repo, &ws_text);
	/* Only a run that moves a branch writes to a store, and is journaled. */
	if (!rc && resets)
		rc = tt_journal_begin(run->repo, "restore", message, pins, &journal);
	if (!rc)
		rc = tt_journal_note(&journal, "target", json_string(run->commit));
	if (!rc)
		rc = tt_journal_note(&journal, "keys", acted_keys(run));
	if (!rc)
		rc = tt_journal_note(&journal, "workspace_before", ws_text ? json_string(ws_text) : json_null());
	run->journal = &journal;
	run->resets = json_array();
	json_decref(pins);
	free(message);
	tt_fault_point("restore", "journal-written");
	/* The workspace is saved after every reset, so a run that dies part-way
	 * leaves each branch it moved with its new head recorded. */
	int began = !rc;
	for (size_t i = 0; !rc && i < run->n; i++) {
		if (tt_cancelled()) {
			rc = tt_cancel_error("restore");
			break;
		}
		rc = reset_one(run, i, &log, list);
		if (!rc)
			rc = tt_workspace_save(run->repo, run->ws);
		if (!rc)
			tt_fault_point("restore", "reset");
	}
	if (rc && began) {
		rc = roll_back(run, &log, ws_text, rc);
		char *keep = strdup(tether_error_last());
		tt_journal_end(&journal, "ABORTED", NULL);
		tether_error_set(rc, "%s", keep);
		free(keep);
	} else if (!rc) {
		rc = tt_journal_end(&journal, "COMPLETE", NULL);
		json_t *keys = acted_keys(run);
		if (!rc)
			rc = tt_journal_close_dead_runs(run->repo, "restore", keys, run->commit, journal.name);
		json_decref(keys);
	}
	run->journal = NULL;
	json_decref(run->resets);
	run->resets = NULL;
	tt_journal_free(&journal);
	tt_fork_log_free(&log);
	free(ws_text);
	return rc;
}

/* REV and the keys: from the command line, or from the plan. */
static int locate(struct restore_run *run, const struct tether_restore_opts *opts)
{
	if (opts->from_plan) {
		const json_t *pre = tt_plan_preconditions(opts->from_plan);
		snprintf(run->commit, sizeof run->commit, "%s", json_string_value(json_object_get(pre, "commit")));
		run->rev = json_string_value(json_object_get(opts->from_plan, "rev"));
		if (!run->rev)
			run->rev = run->commit;
		run->keys = json_deep_copy(json_object_get(opts->from_plan, "keys"));
		if (!json_is_array(run->keys)) {
			json_decref(run->keys);
			run->keys = json_array();
		}
		/* A plan handed over from another clone may name a commit this
		 * repository does not have: that is a plan not for this history
		 * (exit 3, naming the plan's field), not an unknown revision the
		 * user typed. */
		char id[41];
		if (run->repo->vcs->resolve(run->repo->vh, run->commit, id) != 0 || strcmp(id, run->commit) != 0)
			return tether_error_set(TETHER_EREFUSED, "stale plan: preconditions.commit %.12s is not a commit of "
			                        "this repository", run->commit);
		return 0;
	}
	run->rev = opts->rev ? opts->rev : "HEAD";
	run->keys = json_array();
	for (size_t i = 0; i < opts->n_keys; i++) {
		int rc = tt_key_check(opts->keys[i]);
		if (rc)
			return rc;
		if (!key_wanted(run->keys, opts->keys[i]) || !json_array_size(run->keys))
			json_array_append_new(run->keys, json_string(opts->keys[i]));
	}
	int rc = run->repo->vcs->resolve(run->repo->vh, run->rev, run->commit);
	if (rc)
		return tether_error_set(rc, "-r %s: %s", run->rev, tether_error_last());
	return 0;
}

static int run_restore(struct restore_run *run, const struct tether_restore_opts *opts, json_t **report)
{
	int rc = tt_manifests_load_working(run->repo->root, &run->work);
	if (!rc)
		rc = check_keys(run, opts->from_plan != NULL);
	if (!rc)
		rc = tt_manifests_at(run->repo, run->commit, &run->at);
	if (!rc)
		rc = tt_objs_prepare(run->repo, &run->work, 0, &run->objs);
	if (!rc)
		rc = tt_workspace_load(run->repo, &run->ws);
	if (!rc)
		rc = build_plan(run);
	if (!rc && opts->from_plan)
		rc = check_plan(run, opts->from_plan);
	int dry_run = opts->dry_run || opts->plan_out;
	if (!rc && opts->plan_out)
		rc = tt_plan_save(run->plan, opts->plan_out);
	if (!rc && !dry_run)
		tt_fault_point("restore", "planned");
	json_t *list = json_array();
	if (!rc && !dry_run)
		rc = apply_plan(run, list);
	if (!rc) {
		*report = json_pack("{s:s, s:s}", "rev", run->rev, "commit", run->commit);
		if (!dry_run) {
			/* What was skipped is in the plan's actions, after the acted ones. */
			size_t i;
			json_t *a;
			json_array_foreach(tt_plan_actions(run->plan), i, a)
				if (strcmp(json_string_value(json_object_get(a, "action")), "skip") == 0)
					json_array_append(list, a);
			json_object_set(*report, "objects", list);
		}
		tt_plan_report(*report, run->plan, dry_run, opts->plan_out);
	}
	json_decref(list);
	return rc;
}

static void run_free(struct restore_run *run)
{
	for (size_t i = 0; i < run->n; i++) {
		free(run->picks[i].scope);
		json_decref(run->picks[i].head);
	}
	free(run->picks);
	if (run->objs)
		tt_objs_free(run->objs, run->work.n);
	tt_manifest_set_free(&run->work);
	tt_manifest_set_free(&run->at);
	json_decref(run->keys);
	json_decref(run->ws);
	json_decref(run->plan);
}

static int restore_command(tether_repo *repo, const struct tether_restore_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock checkout = {-1}, shared = {-1};
	int rc = tt_plan_command_lock(repo, "restore", opts->plan_out, opts->from_plan, opts->from_plan_file,
	                              opts->rev || opts->n_keys ? "--from-plan takes no -r and no KEY: the plan names them"
	                                                        : NULL,
	                              &checkout, &shared);
	struct restore_run run = {.repo = repo};
	if (!rc)
		rc = locate(&run, opts);
	if (!rc)
		rc = run_restore(&run, opts, report);
	run_free(&run);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

int tether_restore(tether_repo *repo, const struct tether_restore_opts *caller_opts, json_t **report)
{
	TT_COMMAND_RUN(tether_restore_opts, TETHER_RESTORE_OPTS_VERSION, restore_command, repo, caller_opts, report);
}
