/* tether drop KEY...: remove objects from the dataset, as `git rm` removes
 * files: each manifest leaves the working copy, and the next commit records
 * the removal. History keeps every earlier commit's manifest, and with it
 * every pin those name, so nothing recorded is lost.
 *
 * What tether made for the object goes too, when that loses nothing: this
 * workspace's working branch is deleted when its head is a state a pin in
 * history holds (the pin keeps the data; the branch is clutter), and kept,
 * and said so, when it holds writes no commit pinned (--force deletes it
 * anyway). With --delete-store, a store tether created (CREATE) goes as
 * well when no other object names it and no recorded state is in it: the
 * engine checks those, and the backend's delete_store checks that this
 * dataset made the store and that it is still ref-empty, just before it
 * deletes.
 *
 * The store writes come first (branches, then stores), each re-checked just
 * before, then the manifests; the run is journaled with the keys and the
 * stores it deletes, so a run killed part-way is finished by running it
 * again: a branch already deleted is "gone", and a store the dead run was
 * deleting that is not found any more is "gone" too. */
#include "core/abi.h"
#include "core/cancel.h"
#include "core/engine.h"
#include "core/sessions.h"

#include "core/history.h"
#include "core/journal.h"
#include "core/lock.h"
#include "core/pinid.h"
#include "core/plan.h"
#include "core/prune.h"
#include "core/workspace.h"
#include "util/fsutil.h"
#include "util/plural.h"
#include "util/safefs.h"

#include <stdlib.h>
#include <string.h>

struct drop_item {
	struct tt_obj *o;
	json_t *action;   /* its plan action (borrowed from the plan) */
	json_t *identity; /* {kind, identity}, or NULL when the backend gives none */
	char *scope;
	json_t *wref;     /* the working ref (borrowed from the workspace), or NULL */
	json_t *head;     /* the branch's head when planned, or NULL */
};

struct drop_run {
	struct tether_repo *repo;
	json_t *keys;
	int force, delete_store;
	struct tt_manifest_set work;
	struct tt_obj *objs;
	struct drop_item *items;
	size_t n;
	json_t *ws;
	json_t *dead; /* INCOMPLETE drop entries of dead processes */
	struct tt_history h;
	json_t *plan;
};

static int has_key(const json_t *keys, const char *key)
{
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k)
		if (strcmp(json_string_value(k), key) == 0)
			return 1;
	return 0;
}

/* Was a dead drop deleting this key's store? */
static int dead_was_deleting(const struct drop_run *run, const char *key)
{
	size_t i;
	json_t *e;
	json_array_foreach(run->dead, i, e)
		if (has_key(json_object_get(e, "delete_store"), key))
			return 1;
	return 0;
}

static json_t *store_of(struct tt_obj *o)
{
	json_t *identity = NULL;
	if (!o->b->identity || o->b->identity(&o->ctx, tt_manifest_locator(o->m), &identity) != 0) {
		tether_error_clear();
		return NULL;
	}
	return json_pack("{s:s, s:o}", "kind", o->b->kind, "identity", identity);
}

/* Another object of the working copy, not dropped, on the same store. */
static const char *store_mate(const struct drop_run *run, const struct drop_item *it)
{
	for (size_t i = 0; it->identity && i < run->work.n; i++) {
		struct tt_obj *o = &run->objs[i];
		if (o == it->o || has_key(run->keys, o->m->key))
			continue;
		json_t *s = store_of(o);
		int same = s && json_equal(s, it->identity);
		json_decref(s);
		if (same)
			return o->m->key;
	}
	return NULL;
}

/* Another object, not dropped, whose working entry is on the same branch
 * of the same store. */
static const char *branch_mate(const struct drop_run *run, const struct drop_item *it, const char *branch)
{
	const char *k;
	json_t *entry;
	json_object_foreach(json_object_get(run->ws, "working"), k, entry) {
		const char *s = json_string_value(json_object_get(entry, "scope"));
		const char *b = json_string_value(json_object_get(entry, "branch"));
		if (it->scope && s && b && strcmp(s, it->scope) == 0 && strcmp(b, branch) == 0 &&
		    strcmp(k, it->o->m->key) != 0 && !has_key(run->keys, k) && tt_manifest_set_find(&run->work, k))
			return k;
	}
	return NULL;
}

/* A recorded state (a commit's, or the working copy's) in this store. */
static int store_recorded(const struct drop_run *run, const struct drop_item *it)
{
	const char *k;
	json_t *rec;
	json_object_foreach(run->h.records, k, rec) {
		if (!json_object_get(rec, "state") || strcmp(json_string_value(json_object_get(rec, "kind")),
		                                               it->o->b->kind) != 0)
			continue;
		json_t *identity = NULL;
		int same = it->o->b->identity(&it->o->ctx, json_object_get(rec, "locator"), &identity) == 0 &&
		           json_equal(identity, json_object_get(it->identity, "identity"));
		json_decref(identity);
		tether_error_clear();
		if (same)
			return 1;
	}
	return 0;
}

static void set_str(json_t *a, const char *k, const char *v)
{
	json_object_set_new(a, k, json_string(v));
}

/* What happens to the object's working branch in this workspace. */
static int plan_fork(struct drop_run *run, struct drop_item *it, json_t *a)
{
	struct tt_obj *o = it->o;
	json_t *entry = tt_workspace_entry(run->ws, o->m->key);
	const char *branch = json_string_value(json_object_get(entry, "branch"));
	it->wref = json_object_get(entry, "ref");
	if (!branch || !it->wref || !(o->caps & TETHER_CAP_FORK)) {
		set_str(a, "fork", "none");
		return 0;
	}
	set_str(a, "branch", branch);
	const char *mate = branch_mate(run, it, branch);
	if (mate) {
		set_str(a, "fork", "keep");
		json_object_set_new(a, "fork_reason", json_sprintf("%s, an object of the same store, works on it", mate));
		return 0;
	}
	if (!TT_BACKEND_GET(o->b, delete_working_ref)) {
		set_str(a, "fork", "keep");
		set_str(a, "fork_reason", "the backend cannot delete working branches");
		return 0;
	}
	int exists = 0;
	int rc = tt_fork_head(o, branch, &it->head, &exists);
	if (rc == TETHER_ENOTFOUND && dead_was_deleting(run, o->m->key)) {
		tether_error_clear();
		set_str(a, "fork", "gone");
		set_str(a, "fork_reason", "its store was deleted by the interrupted drop");
		return 0;
	}
	if (rc)
		return tether_error_set(rc, "%s: cannot read %s: %s", o->m->key, branch, tether_error_last());
	if (!exists) {
		set_str(a, "fork", "gone");
		set_str(a, "fork_reason", "it is deleted already");
		return 0;
	}
	if (it->head)
		json_object_set_new(a, "head", tt_content_state(o->b, it->head));
	int pinned = it->head && it->identity && tt_prune_head_pinned(run->repo, &run->h, it->identity, o->b, it->head);
	int storage = (o->caps & TETHER_CAP_BRANCH_IS_STORAGE) != 0;
	if (pinned && !storage) {
		set_str(a, "fork", "delete");
		set_str(a, "fork_reason", "its head is pinned");
	} else if (run->force) {
		set_str(a, "fork", "delete");
		set_str(a, "fork_reason", storage ? "--force: the branch is the store's storage"
		                                  : "--force: its head is pinned by nothing");
	} else {
		char *at = it->head ? tt_state_brief(o->b, it->head) : strdup("an unknown head");
		set_str(a, "fork", "keep");
		json_object_set_new(a, "fork_reason",
		                    storage ? json_sprintf("the branch is the store's storage: only --force deletes it")
		                            : json_sprintf("its head %s is pinned by no commit: deleting the branch would "
		                                           "lose those writes", at));
		free(at);
	}
	return 0;
}

/* What happens to the store, with --delete-store. */
static void plan_store(struct drop_run *run, struct drop_item *it, json_t *a)
{
	struct tt_obj *o = it->o;
	const char *fork = json_string_value(json_object_get(a, "fork"));
	const char *mate = NULL;
	if (!run->delete_store) {
		set_str(a, "store", "none");
		return;
	}
	set_str(a, "store", "keep");
	if (!(o->b->caps & TETHER_CAP_CREATE) || !TT_BACKEND_GET(o->b, delete_store) || !it->identity)
		json_object_set_new(a, "store_reason", json_sprintf("kind %s does not create its stores, so tether deletes "
		                                                    "none", o->b->kind));
	else if ((mate = store_mate(run, it)))
		json_object_set_new(a, "store_reason", json_sprintf("%s names the same store", mate));
	else if (store_recorded(run, it))
		set_str(a, "store_reason", "a commit records a state of it: deleting the store would lose that state");
	else if (strcmp(fork, "keep") == 0)
		json_object_set_new(a, "store_reason", json_sprintf("its working branch %s stays",
		                                                    json_string_value(json_object_get(a, "branch"))));
	else {
		set_str(a, "store", "delete");
		set_str(a, "store_reason", "if this dataset created it and it is still ref-empty (the backend checks "
		                           "both just before it deletes)");
	}
}

static int build_plan(struct drop_run *run)
{
	run->plan = tt_plan_new(run->repo, "drop");
	json_object_set(run->plan, "keys", run->keys);
	json_object_set_new(run->plan, "force", json_boolean(run->force));
	json_object_set_new(run->plan, "delete_store", json_boolean(run->delete_store));
	json_t *objects = json_array();
	json_object_set_new(tt_plan_preconditions(run->plan), "objects", objects);
	run->items = calloc(run->work.n + 1, sizeof *run->items);
	if (!run->items)
		abort();
	for (size_t i = 0; i < run->work.n; i++) {
		struct tt_obj *o = &run->objs[i];
		if (!has_key(run->keys, o->m->key))
			continue;
		struct drop_item *it = &run->items[run->n++];
		it->o = o;
		it->identity = store_of(o);
		it->scope = tt_fork_scope(o);
		json_t *a = json_pack("{s:s, s:s}", "key", o->m->key, "action", "drop");
		it->action = a;
		json_array_append_new(tt_plan_actions(run->plan), a);
		int rc = plan_fork(run, it, a);
		if (rc)
			return rc;
		plan_store(run, it, a);
		const json_t *state = tt_manifest_state(o->m);
		json_t *content = state ? tt_content_state(o->b, state) : json_null();
		char digest[65];
		tt_plan_digest(content, digest);
		json_array_append_new(objects, json_pack("{s:s, s:s, s:o, s:s}", "key", o->m->key, "manifest", o->m->digest,
		                                         "state", content, "digest", digest));
	}
	return 0;
}

static int check_keys(struct drop_run *run, int planned)
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

static const char *str(const json_t *a, const char *k)
{
	const char *v = json_string_value(json_object_get(a, k));
	return v ? v : "";
}

/* Has an earlier item of this run deleted the same branch of the store? */
static int deleted_already(const struct drop_run *run, size_t i)
{
	const struct drop_item *it = &run->items[i];
	for (size_t j = 0; it->scope && j < i; j++)
		if (run->items[j].scope && strcmp(run->items[j].scope, it->scope) == 0 &&
		    strcmp(str(run->items[j].action, "fork"), "delete") == 0 &&
		    strcmp(str(run->items[j].action, "branch"), str(it->action, "branch")) == 0)
			return 1;
	return 0;
}

/* Delete the working branch, re-checking its head just before: a write
 * since the plan is never deleted. */
static int delete_fork(struct drop_run *run, size_t i, json_t *done)
{
	struct drop_item *it = &run->items[i];
	struct tt_obj *o = it->o;
	const char *branch = str(it->action, "branch");
	if (deleted_already(run, i))
		return 0;
	json_t *now = NULL;
	int exists = 0;
	int rc = tt_fork_head(o, branch, &now, &exists);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot read %s: %s", o->m->key, branch, tether_error_last());
	else if (exists && !(now && it->head && tt_same_content(o->b, now, it->head))) {
		char *was = it->head ? tt_state_brief(o->b, it->head) : strdup("?");
		char *is = now ? tt_state_brief(o->b, now) : strdup("an unknown head");
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s moved since the plan (at %s, now at %s): not deleted",
		                      o->m->key, branch, was, is);
		free(was);
		free(is);
	} else if (exists) {
		tether_error_clear();
		tt_fault_point("drop", "branch-checked");
		/* Where the backend can, the delete itself is conditional on the
		 * reviewed head, closing the window between the re-read above and
		 * the delete: a write landing there is kept, and refused here. */
		if (TT_BACKEND_GET(o->b, delete_working_ref_if))
			rc = TT_BACKEND_GET(o->b, delete_working_ref_if)(&o->ctx, tt_manifest_locator(o->m), it->wref, it->head);
		else
			rc = TT_BACKEND_GET(o->b, delete_working_ref)(&o->ctx, tt_manifest_locator(o->m), it->wref);
		if (rc == TETHER_EREFUSED)
			rc = tether_error_set(rc, "%s: %s was written to while drop deleted it: not deleted (%s)", o->m->key,
			                      branch, tether_error_last());
		else if (rc)
			rc = tether_error_set(rc, "%s: cannot delete %s: %s", o->m->key, branch, tether_error_last());
		else
			json_array_append_new(done, json_sprintf("deleted branch %s of %s", branch, o->m->key));
	}
	json_decref(now);
	return rc;
}

static int delete_store(struct drop_run *run, struct drop_item *it, json_t *done)
{
	struct tt_obj *o = it->o;
	tether_error_clear();
	int rc = TT_BACKEND_GET(o->b, delete_store)(&o->ctx, tt_manifest_locator(o->m));
	if (rc == TETHER_ENOTFOUND && dead_was_deleting(run, o->m->key)) {
		tether_error_clear();
		set_str(it->action, "store", "gone");
		return 0;
	}
	if (rc)
		return tether_error_set(rc, "%s: the store was not deleted: %s", o->m->key, tether_error_last());
	json_array_append_new(done, json_sprintf("deleted the store of %s", o->m->key));
	return 0;
}

/* The manifests leave the working copy, and their working entries the
 * workspace. */
static int remove_manifests(struct drop_run *run)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < run->n; i++) {
		char *rel = tt_manifest_relpath(run->items[i].o->m->key);
		char *path = tt_path_join(run->repo->root, rel);
		rc = tt_safe_remove(run->repo->root, path);
		free(rel);
		free(path);
		json_object_del(json_object_get(run->ws, "working"), run->items[i].o->m->key);
	}
	return rc ? rc : tt_workspace_save(run->repo, run->ws);
}

static json_t *store_keys(const struct drop_run *run)
{
	json_t *keys = json_array();
	for (size_t i = 0; i < run->n; i++)
		if (strcmp(str(run->items[i].action, "store"), "delete") == 0)
			json_array_append_new(keys, json_string(run->items[i].o->m->key));
	return keys;
}

static int apply_steps(struct drop_run *run, json_t *done)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < run->n; i++) {
		if (strcmp(str(run->items[i].action, "fork"), "delete") != 0)
			continue;
		rc = tt_cancelled() ? tt_cancel_error("drop") : delete_fork(run, i, done);
		if (!rc)
			tt_fault_point("drop", "branch-deleted");
	}
	for (size_t i = 0; !rc && i < run->n; i++) {
		if (strcmp(str(run->items[i].action, "store"), "delete") != 0)
			continue;
		int twice = 0; /* two keys of one store, both dropped: one deletion */
		for (size_t j = 0; j < i; j++)
			twice |= strcmp(str(run->items[j].action, "store"), "delete") == 0 &&
			         json_equal(run->items[j].identity, run->items[i].identity);
		if (twice)
			continue;
		rc = tt_cancelled() ? tt_cancel_error("drop") : delete_store(run, &run->items[i], done);
		if (!rc)
			tt_fault_point("drop", "store-deleted");
	}
	if (!rc && tt_cancelled())
		rc = tt_cancel_error("drop");
	return rc ? rc : remove_manifests(run);
}

static int apply_plan(struct drop_run *run)
{
	struct tt_journal journal = {0};
	json_t *pins = json_array(), *done = json_array();
	char *message = tt_strdupf("drop %zu %s", run->n, tt_plural((long long)run->n, "object", "objects"));
	int rc = tt_journal_begin(run->repo, "drop", message, pins, &journal);
	if (!rc)
		rc = tt_journal_note(&journal, "keys", json_deep_copy(run->keys));
	if (!rc)
		rc = tt_journal_note(&journal, "delete_store", store_keys(run));
	json_decref(pins);
	free(message);
	tt_fault_point("drop", "journal-written");
	if (!rc) {
		rc = apply_steps(run, done);
		for (size_t i = 0; i < run->n; i++)
			json_object_set_new(run->items[i].action, "done", json_boolean(rc == 0));
	}
	if (rc && journal.entry) {
		/* What was deleted stays deleted (a branch a pin holds, an empty
		 * store): the error says so, and that a re-run finishes. */
		char *why = strdup(tether_error_last());
		char *list = NULL;
		size_t n = json_array_size(done);
		for (size_t i = 0; i < n; i++) {
			char *more = tt_strdupf("%s%s%s", list ? list : "", list ? ", " : "", json_string_value(json_array_get(done, i)));
			free(list);
			list = more;
		}
		tt_journal_note(&journal, "done", json_incref(done));
		tt_journal_end(&journal, "ABORTED", NULL);
		tether_error_set(rc, "%s; nothing was removed from the working copy%s%s", why, list ? "; already done: " : "",
		                 list ? list : "");
		free(why);
		free(list);
	} else if (!rc) {
		tt_journal_note(&journal, "done", json_incref(done));
		rc = tt_journal_end(&journal, "COMPLETE", NULL);
		if (!rc)
			rc = tt_journal_close_dead_runs(run->repo, "drop", run->keys, NULL, journal.name);
	}
	tt_journal_free(&journal);
	json_decref(done);
	return rc;
}

static int check_plan(const struct drop_run *run, const json_t *planned)
{
	int rc = tt_plan_check_objects(json_object_get(tt_plan_preconditions(planned), "objects"),
	                               json_object_get(tt_plan_preconditions(run->plan), "objects"));
	return rc ? rc : tt_plan_check_actions("drop", tt_plan_actions(planned), tt_plan_actions(run->plan));
}

static int locate(struct drop_run *run, const struct tether_drop_opts *opts)
{
	if (opts->from_plan) {
		run->keys = json_deep_copy(json_object_get(opts->from_plan, "keys"));
		run->force = json_is_true(json_object_get(opts->from_plan, "force"));
		run->delete_store = json_is_true(json_object_get(opts->from_plan, "delete_store"));
		return 0;
	}
	if (!opts->n_keys)
		return tether_error_set(TETHER_EUSAGE, "drop needs at least one KEY");
	run->keys = json_array();
	run->force = opts->force;
	run->delete_store = opts->delete_store;
	for (size_t i = 0; i < opts->n_keys; i++) {
		int rc = tt_key_check(opts->keys[i]);
		if (rc)
			return rc;
		if (!has_key(run->keys, opts->keys[i]))
			json_array_append_new(run->keys, json_string(opts->keys[i]));
	}
	return 0;
}

static int run_drop(struct drop_run *run, const struct tether_drop_opts *opts, json_t **report)
{
	int rc = tt_manifests_load_working(run->repo->root, &run->work);
	if (!rc)
		rc = check_keys(run, opts->from_plan != NULL);
	if (!rc)
		rc = tt_objs_prepare(run->repo, &run->work, 0, &run->objs);
	if (!rc)
		rc = tt_workspace_load(run->repo, &run->ws);
	if (!rc)
		rc = tt_journal_dead_entries(run->repo, "drop", &run->dead);
	if (!rc)
		rc = tt_history_collect(run->repo, &run->h);
	if (!rc)
		rc = build_plan(run);
	if (!rc && opts->from_plan)
		rc = check_plan(run, opts->from_plan);
	int dry_run = opts->dry_run || opts->plan_out;
	if (!rc && opts->plan_out)
		rc = tt_plan_save(run->plan, opts->plan_out);
	if (!rc && !dry_run) {
		tt_fault_point("drop", "planned");
		rc = apply_plan(run);
	}
	if (!rc) {
		*report = json_object();
		if (!dry_run) {
			json_t *list = json_array();
			for (size_t i = 0; i < run->n; i++) {
				json_t *row = json_deep_copy(run->items[i].action);
				json_object_del(row, "action");
				json_object_set_new(row, "manifest", json_string("removed"));
				json_array_append_new(list, row);
			}
			json_object_set_new(*report, "objects", list);
		}
		tt_plan_report(*report, run->plan, dry_run, opts->plan_out);
	}
	return rc;
}

static void run_free(struct drop_run *run)
{
	for (size_t i = 0; i < run->n; i++) {
		json_decref(run->items[i].identity);
		json_decref(run->items[i].head);
		free(run->items[i].scope);
	}
	free(run->items);
	if (run->objs)
		tt_objs_free(run->objs, run->work.n);
	tt_manifest_set_free(&run->work);
	tt_history_free(&run->h);
	json_decref(run->keys);
	json_decref(run->ws);
	json_decref(run->dead);
	json_decref(run->plan);
}

static int drop_command(tether_repo *repo, const struct tether_drop_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock checkout = {-1}, shared = {-1};
	int rc = tt_plan_command_lock(repo, "drop", opts->plan_out, opts->from_plan, opts->from_plan_file,
	                              opts->n_keys || opts->force || opts->delete_store
	                                  ? "--from-plan takes no KEY, --force or --delete-store: the plan names them"
	                                  : NULL,
	                              &checkout, &shared);
	struct drop_run run = {.repo = repo};
	if (!rc)
		rc = locate(&run, opts);
	if (!rc)
		rc = run_drop(&run, opts, report);
	run_free(&run);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

int tether_drop(tether_repo *repo, const struct tether_drop_opts *caller_opts, json_t **report)
{
	TT_COMMAND_RUN(tether_drop_opts, TETHER_DROP_OPTS_VERSION, drop_command, repo, caller_opts, report);
}
