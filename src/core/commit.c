/* tether commit: snapshot every object, pin what can be pinned, record the
 * states in the manifests, and make one VCS commit of the dataset's paths.
 *
 * Order matters for crash safety: pins first, then listings and manifests,
 * then the VCS commit. Any failure before the VCS commit releases the pins
 * this run created (never one an earlier commit made) and puts the
 * manifests back, so nothing is left half-written. */
#include "core/engine.h"

#include "core/journal.h"
#include "core/lock.h"
#include "core/pinid.h"
#include "core/workspace.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

struct created_pin {
	struct tt_obj *obj;
	json_t *pin_ref;
};

struct commit_run {
	struct tether_repo *repo;
	struct tt_obj *objs;
	size_t n;
	char **old_text;        /* each manifest's text before this commit */
	struct created_pin *pins;
	size_t npins;
	char **new_listings;    /* listing files this commit wrote, removed by undo() */
	size_t nlistings;
	json_t *actions;        /* per-object report */
	json_t *warnings;
	int changed;
};

static int refuse_drift_and_strict(struct commit_run *run, int strict)
{
	for (size_t i = 0; i < run->n; i++) {
		struct tt_obj *o = &run->objs[i];
		if (o->rc)
			return tether_error_set(o->rc, "%s", o->error);
		if (strcmp(o->status, "drifted") == 0) {
			tether_error_set(TETHER_EREFUSED, "%s: %s", o->m->key, o->detail ? o->detail : "drifted");
			tether_error_set_hint("restore the recorded data, or re-add the object with --file mutable");
			return TETHER_EREFUSED;
		}
		if (strict && !(o->caps & (TETHER_CAP_PIN | TETHER_CAP_ADDRESSABLE)))
			return tether_error_set(TETHER_EREFUSED,
			                        "--strict: %s is observed only (kind %s): its state could not be recovered",
			                        o->m->key, o->b->kind);
	}
	return 0;
}

/* A pin id already pinned in this run (two objects on one store and state
 * share one pin). */
static json_t *pin_made_in_run(struct commit_run *run, const char *pin_id)
{
	for (size_t i = 0; i < run->npins; i++)
		if (strcmp(tt_manifest_pin(run->pins[i].obj->m), pin_id) == 0)
			return run->pins[i].pin_ref;
	return NULL;
}

static int record_object(struct commit_run *run, struct tt_obj *o)
{
	json_t *doc = o->m->doc;
	const char *old_pin = tt_manifest_pin(o->m);
	char pin_id[TT_PIN_ID_LEN + 1];
	int rc = tt_obj_pin_id(run->repo, o, pin_id);
	if (rc)
		return rc;
	int unchanged = strcmp(o->status, "clean") == 0 && old_pin && strcmp(old_pin, pin_id) == 0;
	if (unchanged) {
		json_array_append_new(run->actions, json_pack("{s:s, s:s, s:s, s:O}", "key", o->m->key, "action",
		                                              "unchanged", "pin", pin_id, "recoverable",
		                                              json_object_get(doc, "recoverable")));
		return 0;
	}
	const char *action = "recorded";
	int recoverable = (o->caps & (TETHER_CAP_PIN | TETHER_CAP_ADDRESSABLE)) != 0;
	json_object_del(doc, "pin_ref");
	if (o->caps & TETHER_CAP_PIN) {
		json_t *pin_ref = pin_made_in_run(run, pin_id);
		if (pin_ref) {
			json_incref(pin_ref);
		} else {
			rc = o->b->pin(&o->ctx, o->locator, o->fp.state, pin_id, &pin_ref);
			if (rc)
				return tether_error_set(rc, "%s: cannot pin: %s", o->m->key, tether_error_last());
			run->pins[run->npins].obj = o;
			run->pins[run->npins++].pin_ref = json_incref(pin_ref);
		}
		json_object_set_new(doc, "pin_ref", pin_ref);
		action = "pinned";
	}
	json_object_set(doc, "state", o->fp.state);
	json_object_set_new(doc, "pin", json_string(pin_id));
	json_object_set_new(doc, "recoverable", json_boolean(recoverable));
	json_object_del(doc, "listing");
	if (o->fp.listing) {
		char hex[65];
		char *created = NULL;
		rc = tt_listing_save(run->repo, o->fp.listing, o->fp.listing_len, hex, &created);
		if (created)
			run->new_listings[run->nlistings++] = created;
		if (rc)
			return rc;
		json_object_set_new(doc, "listing", json_string(hex));
	}
	if (!recoverable)
		json_array_append_new(run->warnings, json_sprintf("%s: state recorded, not recoverable (kind %s is %s)",
		                                                  o->m->key, o->b->kind, tether_tier_name(o->caps)));
	json_array_append_new(run->actions, json_pack("{s:s, s:s, s:s, s:b}", "key", o->m->key, "action", action,
	                                              "pin", pin_id, "recoverable", recoverable));
	run->changed = 1;
	return tt_manifest_save(run->repo->root, o->m);
}

static void undo(struct commit_run *run)
{
	char *keep = strdup(tether_error_last());
	for (size_t i = 0; i < run->npins; i++) {
		struct tt_obj *o = run->pins[i].obj;
		o->b->unpin(&o->ctx, o->locator, run->pins[i].pin_ref);
	}
	for (size_t i = 0; i < run->n; i++) {
		if (!run->old_text[i])
			continue;
		char *rel = tt_manifest_relpath(run->objs[i].m->key);
		char *path = tt_path_join(run->repo->root, rel);
		tt_write_file_atomic(path, run->old_text[i], strlen(run->old_text[i]));
		free(rel);
		free(path);
	}
	/* A listing no manifest names would be swept into the next commit of
	 * .tether/: take back the ones this run added (never an older one). */
	for (size_t i = 0; i < run->nlistings; i++)
		tt_remove_if_exists(run->new_listings[i]);
	tether_error_set(TETHER_ERROR, "%s", keep);
	free(keep);
}

/* Exactly the dataset's committed paths: never workspace.toml, secrets,
 * the cache, the journal or the lock, whatever ignore rules say. */
static const char *const committed_paths[] = {"tether.toml", ".tether/.gitignore", ".tether/objects",
                                              ".tether/listings"};
#define N_COMMITTED (sizeof committed_paths / sizeof committed_paths[0])

static int vcs_commit(struct commit_run *run, const char *message, char id[41])
{
	char *paths[N_COMMITTED];
	for (size_t i = 0; i < N_COMMITTED; i++)
		paths[i] = tt_repo_vcs_path(run->repo, committed_paths[i]);
	int rc = run->repo->vcs->commit_paths(run->repo->vh, (const char *const *)paths, N_COMMITTED, message, id);
	for (size_t i = 0; i < N_COMMITTED; i++)
		free(paths[i]);
	return rc;
}

/* A working branch now stands at the state just recorded: that is the head
 * the next `new` may move it from (new.auto_fork), and anything written
 * after it is work `new` must not overwrite. */
static int advance_working_heads(struct commit_run *run)
{
	json_t *ws = NULL;
	int rc = tt_workspace_load(run->repo, &ws), touched = 0;
	for (size_t i = 0; !rc && i < run->n; i++) {
		json_t *entry = tt_workspace_entry(ws, run->objs[i].m->key);
		if (!entry || !run->objs[i].fp.state)
			continue;
		json_object_set(entry, "head", run->objs[i].fp.state);
		touched = 1;
	}
	if (!rc && touched)
		rc = tt_workspace_save(run->repo, ws);
	json_decref(ws);
	return rc;
}

/* The pins this commit may create, named in the journal before any is. */
static int planned_pins(struct commit_run *run, json_t **pins)
{
	*pins = json_array();
	for (size_t i = 0; i < run->n; i++) {
		struct tt_obj *o = &run->objs[i];
		if (!(o->caps & TETHER_CAP_PIN))
			continue;
		char pin_id[TT_PIN_ID_LEN + 1];
		int rc = tt_obj_pin_id(run->repo, o, pin_id);
		if (rc)
			return rc;
		const char *old = tt_manifest_pin(o->m);
		if (old && strcmp(old, pin_id) == 0)
			continue;
		json_array_append_new(*pins, json_pack("{s:s, s:s, s:O, s:s}", "key", o->m->key, "kind", o->b->kind,
		                                       "locator", o->locator, "pin", pin_id));
	}
	return 0;
}

static int run_commit(struct commit_run *run, const struct tether_commit_opts *opts, json_t **report)
{
	tt_objs_snapshot(run->objs, run->n);
	int rc = refuse_drift_and_strict(run, opts->strict);
	json_t *pins = NULL;
	struct tt_journal journal = {0};
	if (!rc)
		rc = planned_pins(run, &pins);
	if (!rc && json_array_size(pins))
		rc = tt_journal_begin(run->repo, "commit", opts->message, pins, &journal);
	json_decref(pins);
	tt_fault_point("commit", "journal-written");
	for (size_t i = 0; !rc && i < run->n; i++)
		run->old_text[i] = tt_manifest_text(run->objs[i].m);
	for (size_t i = 0; !rc && i < run->n; i++) {
		rc = record_object(run, &run->objs[i]);
		tt_fault_point("commit", "object-recorded");
	}
	char id[41] = "";
	if (!rc)
		rc = vcs_commit(run, opts->message, id);
	tt_fault_point("commit", "vcs-committed");
	if (rc) {
		int code = rc;
		undo(run);
		if (tt_journal_end(&journal, "ABORTED", NULL) != 0)
			tether_error_set(code, "%s", tether_error_last());
		tt_journal_free(&journal);
		return code;
	}
	/* From here the commit stands, whatever fails: history names its pins. */
	rc = tt_journal_end(&journal, "COMPLETE", id);
	tt_journal_free(&journal);
	if (!rc && *id)
		rc = tt_journal_close_finished(run->repo, id);
	if (rc)
		return rc;
	rc = advance_working_heads(run);
	if (rc)
		return rc; /* the commit stands: history names its pins */
	if (*id) {
		/* HEAD's view for the next status, read back from the new commit
		 * rather than copied from the working manifests: the VCS leaves out
		 * a path the repository's ignore rules match, and then the view and
		 * the report must say so instead of calling the object committed. */
		struct tt_manifest_set committed;
		if (tt_manifests_at(run->repo, id, &committed) == 0) {
			for (size_t i = 0; i < run->n; i++) {
				if (tt_manifest_set_find(&committed, run->objs[i].m->key))
					continue;
				char *rel = tt_manifest_relpath(run->objs[i].m->key);
				json_array_append_new(run->warnings,
				                      json_sprintf("%s: its manifest is not in commit %.7s: the repository "
				                                   "ignores %s", run->objs[i].m->key, id, rel));
				free(rel);
			}
			tt_head_view_save(run->repo, id, &committed);
			tt_manifest_set_free(&committed);
		} else {
			tether_error_clear(); /* only the cache is lost: status reads HEAD itself */
		}
	}
	*report = json_pack("{s:s?, s:s, s:O, s:O}", "commit", *id ? id : NULL, "message", opts->message,
	                    "objects", run->actions, "warnings", run->warnings);
	return 0;
}

int tether_commit(tether_repo *repo, const struct tether_commit_opts *opts, json_t **report)
{
	*report = NULL;
	if (!opts->message || !*opts->message)
		return tether_error_set(TETHER_EUSAGE, "a commit needs a message (-m MSG)");
	int rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	struct tt_lock lock = {-1}, shared = {-1};
	rc = tt_repo_lock(repo, &lock, &shared);
	if (rc)
		return rc;
	struct tt_manifest_set set;
	rc = tt_manifests_load_working(repo->root, &set);
	struct commit_run run = {.repo = repo, .n = set.n};
	if (!rc)
		rc = tt_objs_prepare(repo, &set, opts->progress, &run.objs);
	if (!rc) {
		run.old_text = calloc(set.n + 1, sizeof *run.old_text);
		run.pins = calloc(set.n + 1, sizeof *run.pins);
		run.new_listings = calloc(set.n + 1, sizeof *run.new_listings);
		run.actions = json_array();
		run.warnings = json_array();
		rc = run_commit(&run, opts, report);
	}
	for (size_t i = 0; run.old_text && i < set.n; i++)
		free(run.old_text[i]);
	for (size_t i = 0; i < run.npins; i++)
		json_decref(run.pins[i].pin_ref);
	for (size_t i = 0; i < run.nlistings; i++)
		free(run.new_listings[i]);
	free(run.old_text);
	free(run.pins);
	free(run.new_listings);
	json_decref(run.actions);
	json_decref(run.warnings);
	tt_objs_free(run.objs, set.n);
	tt_manifest_set_free(&set);
	tt_lock_release(&shared);
	tt_lock_release(&lock);
	return rc;
}
