/* tether commit: snapshot every object, pin what can be pinned, record the
 * states in the manifests, and make one VCS commit of the dataset's paths.
 *
 * Order matters for crash safety: pins first, then listings and manifests,
 * then the VCS commit. Any failure before the VCS commit releases the pins
 * this run created (the backend's pin says whether a call created its
 * reference: one that existed is an earlier commit's, which history names)
 * and puts back the bytes of the manifests it rewrote, so nothing is left
 * half-written. Once the VCS commit is made, nothing is undone: a later
 * step that fails (the index, say) is reported with the commit standing.
 *
 * Every run plans first, from its snapshot (build_plan: HEAD, each object's
 * manifest and state, one action per object), then performs the plan's
 * actions (apply_plan). A dry run stops after the plan; --from-plan
 * compares the plan it builds now with the one it was given and refuses
 * when they differ, so what is applied is exactly what was reviewed.
 *
 * After a commit lands on a bookmark `tether new` put the checkout on,
 * new.auto_fork leaves every object that works on a working branch with
 * one at the state just recorded (auto_fork below). That step comes after
 * the commit, so it never undoes it: what fails there is a warning. */
#include "core/abi.h"
#include "core/cancel.h"
#include "core/engine.h"
#include "core/sessions.h"

#include "core/journal.h"
#include "core/lock.h"
#include "core/pinid.h"
#include "core/plan.h"
#include "core/tempfiles.h"
#include "core/trunk.h"
#include "core/workspace.h"
#include "core/workspace_check.h"
#include "util/fsutil.h"
#include "util/safefs.h"

#include <stdlib.h>
#include <string.h>

/* A pin call this run made (each (pin id, locator) once). */
struct created_pin {
	struct tt_obj *obj;
	char pin[TT_PIN_ID_LEN + 1];
	json_t *pin_ref;
	int created; /* the call made the reference: undo() releases it */
};

struct commit_run {
	struct tether_repo *repo;
	struct tt_obj *objs;
	size_t n;
	char **old_text;        /* the bytes of each manifest this run rewrote, as they were */
	struct created_pin *pins;
	size_t npins;
	char **new_listings;    /* listing files this commit wrote, removed by undo() */
	size_t nlistings;
	json_t *plan;           /* what this run does: action i is objs[i]'s */
	json_t *head_view;      /* HEAD's manifests: {key: {digest, ...}} */
	json_t *actions;        /* per-object report */
	json_t *warnings;
	json_t *ws;             /* workspace.toml as read when planning */
	json_t *forks;          /* the auto_fork report */
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
			/* What to do about it is the backend's to say, in its terms. */
			const char *hint = TT_BACKEND_GET(o->b, drift_hint);
			tether_error_set_hint("%s", hint && *hint ? hint : "restore the recorded data");
			return TETHER_EREFUSED;
		}
		if (strict && !(o->caps & (TETHER_CAP_PIN | TETHER_CAP_ADDRESSABLE)))
			return tether_error_set(TETHER_EREFUSED,
			                        "--strict: %s is observed only (kind %s): its state could not be recovered",
			                        o->m->key, o->b->kind);
	}
	return 0;
}

/* NEEDS_QUIESCENCE: a state read while writers are active is not one
 * state, so before anything is fingerprinted every such object whose
 * backend can tell (check_quiescence) is asked, and the first busy one
 * refuses the commit. --force skips the check and says so in a warning. */
static int refuse_busy(struct commit_run *run, int force)
{
	for (size_t i = 0; i < run->n; i++) {
		struct tt_obj *o = &run->objs[i];
		if (!(o->caps & TETHER_CAP_NEEDS_QUIESCENCE))
			continue;
		if (force) {
			json_array_append_new(run->warnings,
			                      json_sprintf("%s: --force: not checked for active writers (kind %s needs them "
			                                   "stopped for a consistent state)", o->m->key, o->b->kind));
			continue;
		}
		int (*check)(const struct tether_bctx *, const json_t *, int *, char **) =
		        TT_BACKEND_GET(o->b, check_quiescence);
		if (!check)
			continue;
		int busy = 0;
		char *why = NULL;
		tether_error_clear();
		int rc = check(&o->ctx, o->locator, &busy, &why);
		if (rc) {
			char *msg = strdup(tether_error_last());
			free(why);
			tether_error_set(rc, "%s: cannot tell whether writers are active: %s", o->m->key, msg ? msg : "");
			tether_error_set_hint("commit with --force to record the state without the check");
			free(msg);
			return rc;
		}
		if (busy) {
			tether_error_set(TETHER_EREFUSED, "%s: writers are active (%s): a commit now would not record one "
			                 "consistent state", o->m->key, why && *why ? why : "the system says so");
			tether_error_set_hint("stop the writers and commit again, or `tether commit --force` to record the "
			                      "state as it is");
			free(why);
			return TETHER_EREFUSED;
		}
		free(why);
	}
	return 0;
}

/* HEAD's commit id, or "" on an unborn branch. */
static int head_id(struct tether_repo *repo, char id[41])
{
	int rc = repo->vcs->resolve(repo->vh, "HEAD", id);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		id[0] = '\0';
		return 0;
	}
	return rc;
}

/* The object's precondition: its manifest as read and its content state
 * as just fingerprinted. */
static json_t *object_precondition(const struct tt_obj *o)
{
	json_t *state = tt_content_state(o->b, o->fp.state);
	char digest[65];
	tt_plan_digest(state, digest);
	return json_pack("{s:s, s:s, s:o, s:s}", "key", o->m->key, "manifest", o->m->digest, "state", state, "digest",
	                 digest);
}

/* What the commit does to one object: "unchanged" (the same state under
 * the same pin), "pin" (a native pin holds the state) or "record". */
static int plan_object(struct commit_run *run, struct tt_obj *o)
{
	char pin_id[TT_PIN_ID_LEN + 1];
	int rc = tt_obj_pin_id(run->repo, o, pin_id);
	if (rc)
		return rc;
	const char *old_pin = tt_manifest_pin(o->m);
	/* Unchanged means HEAD already records it: a manifest a dead commit
	 * rewrote holds the new pin but is not committed yet.
	 * Recorded means the same pin and state as HEAD's manifest, not the same
	 * bytes: a comment the user added is committed as written, never
	 * rewritten. */
	json_t *at_head = json_object_get(run->head_view, o->m->key);
	const char *head_pin = json_string_value(json_object_get(at_head, "pin"));
	const json_t *head_state = json_object_get(at_head, "state");
	int unchanged = strcmp(o->status, "clean") == 0 && old_pin && strcmp(old_pin, pin_id) == 0 && head_pin &&
	                strcmp(head_pin, pin_id) == 0 && head_state && tt_manifest_state(o->m) &&
	                json_equal(head_state, tt_manifest_state(o->m));
	int recoverable = unchanged ? json_is_true(json_object_get(o->m->doc, "recoverable"))
	                            : (o->caps & (TETHER_CAP_PIN | TETHER_CAP_ADDRESSABLE)) != 0;
	const char *action = unchanged ? "unchanged" : (o->caps & TETHER_CAP_PIN) ? "pin" : "record";
	json_array_append_new(tt_plan_actions(run->plan), json_pack("{s:s, s:s, s:s, s:b}", "key", o->m->key, "action",
	                                                            action, "pin", pin_id, "recoverable", recoverable));
	json_array_append_new(json_object_get(tt_plan_preconditions(run->plan), "objects"), object_precondition(o));
	if (!unchanged && !recoverable)
		json_array_append_new(run->warnings, json_sprintf("%s: state recorded, not recoverable (kind %s is %s)",
		                                                  o->m->key, o->b->kind, tether_tier_name(o->caps)));
	return 0;
}

/* new.auto_fork, planned: once the commit lands, every object that works on
 * a working branch (forkable, write = fork) and has a recorded state gets
 * the bookmark's branch at that state. "fork" where this checkout has no
 * working ref on that branch yet (added since `new`, or never forked):
 * conditional on the branch being absent, or at the head tether last left
 * it at; "refork" where it has: moved to the state just pinned unless it is
 * there already, conditional on the head the commit read. Nothing at all
 * on a checkout `tether new` never put on a bookmark (every object works on
 * its own branch there), on the trunk (its objects work on their upstream
 * branches), or with auto_fork = false; never an object at a detached
 * `at` (it stays there until `pull`). */
static json_t *plan_forks(struct commit_run *run)
{
	json_t *forks = json_array();
	const char *bookmark = json_string_value(json_object_get(run->ws, "bookmark"));
	if (!bookmark || !tt_repo_config_bool(run->repo, "new", "auto_fork", 1) || tt_is_trunk(run->repo, bookmark))
		return forks;
	char *branch = tt_working_branch_name(run->repo, bookmark);
	for (size_t i = 0; i < run->n; i++) {
		struct tt_obj *o = &run->objs[i];
		const char *action = json_string_value(json_object_get(json_array_get(tt_plan_actions(run->plan), i),
		                                                       "action"));
		if (!tt_fork_wanted(o) || tt_obj_detached(o) ||
		    (!tt_manifest_state(o->m) && strcmp(action, "unchanged") == 0))
			continue;
		const char *on = json_string_value(json_object_get(tt_workspace_entry(run->ws, o->m->key), "branch"));
		int refork = on && strcmp(on, branch) == 0;
		json_t *known = tt_fork_expect(run->ws, o, branch);
		json_t *expect = refork ? tt_content_state(o->b, strcmp(action, "unchanged") == 0 ? tt_manifest_state(o->m)
		                                                                                  : o->fp.state)
		                        : known ? tt_content_state(o->b, known) : json_null();
		json_array_append_new(forks, json_pack("{s:s, s:s, s:s, s:o}", "key", o->m->key, "action",
		                                       refork ? "refork" : "fork", "branch", branch, "expect", expect));
	}
	free(branch);
	return forks;
}

/* The plan, from the snapshot just taken: HEAD and every object's manifest
 * and state as preconditions, one action per object. */
static int build_plan(struct commit_run *run, const char *message)
{
	char head[41];
	int rc = head_id(run->repo, head);
	if (rc)
		return rc;
	rc = tt_head_view(run->repo, &run->head_view);
	if (rc)
		return rc;
	run->plan = tt_plan_new(run->repo, "commit");
	json_object_set_new(run->plan, "message", json_string(message));
	json_t *pre = tt_plan_preconditions(run->plan);
	json_object_set_new(pre, "head", *head ? json_string(head) : json_null());
	json_object_set_new(pre, "objects", json_array());
	for (size_t i = 0; !rc && i < run->n; i++)
		rc = plan_object(run, &run->objs[i]);
	if (!rc)
		rc = tt_workspace_load(run->repo, &run->ws);
	if (!rc)
		json_object_set_new(run->plan, "forks", plan_forks(run));
	return rc;
}

/* --from-plan: the plan made then must be the plan made now. */
static int check_plan(struct commit_run *run, const json_t *planned)
{
	const json_t *was = tt_plan_preconditions(planned), *now = tt_plan_preconditions(run->plan);
	json_t *head = json_object_get(was, "head");
	if (head && !json_is_string(head) && !json_is_null(head))
		return tether_error_set(TETHER_EUSAGE, "malformed plan: \"head\" must be a commit id or null");
	int rc = tt_plan_check_ref("HEAD", json_string_value(head), json_string_value(json_object_get(now, "head")));
	if (!rc)
		rc = tt_plan_check_objects(json_object_get(was, "objects"), json_object_get(now, "objects"));
	if (!rc)
		rc = tt_plan_check_actions("commit", tt_plan_actions(planned), tt_plan_actions(run->plan));
	const json_t *forks = json_object_get(planned, "forks");
	if (!rc && forks && !json_equal(forks, json_object_get(run->plan, "forks")))
		rc = tether_error_set(TETHER_EREFUSED, "stale plan: what new.auto_fork would fork after the commit "
		                      "changed since the plan (the workspace or its bookmark moved)");
	return rc;
}

/* A pin already made in this run through the same locator (two objects on
 * one store and state share one pin; one whose locator differs, say by a
 * remote to push to, still has its own pin call made). */
static json_t *pin_made_in_run(struct commit_run *run, const char *pin_id, const json_t *locator)
{
	for (size_t i = 0; i < run->npins; i++)
		if (strcmp(run->pins[i].pin, pin_id) == 0 && json_equal(run->pins[i].obj->locator, locator))
			return run->pins[i].pin_ref;
	return NULL;
}

/* The planned pin: into the manifest's pin_ref. */
static int pin_object(struct commit_run *run, struct tt_obj *o, const char *pin_id)
{
	json_t *pin_ref = pin_made_in_run(run, pin_id, o->locator);
	if (pin_ref) {
		json_incref(pin_ref);
	} else {
		int created = 0;
		int rc = TT_BACKEND_GET(o->b, pin)(&o->ctx, o->locator, o->fp.state, pin_id, &pin_ref, &created);
		if (rc)
			return tether_error_set(rc, "%s: cannot pin: %s", o->m->key, tether_error_last());
		struct created_pin *made = &run->pins[run->npins++];
		made->obj = o;
		snprintf(made->pin, sizeof made->pin, "%s", pin_id);
		made->pin_ref = json_incref(pin_ref);
		made->created = created == 1;
	}
	json_object_set_new(o->m->doc, "pin_ref", pin_ref);
	return 0;
}

/* Write the manifest of objs[i] if what it records changed, keeping the
 * bytes it had for undo(). One whose content is what it was stays as it
 * is, comments and all (a dead commit may have written it already). */
static int save_manifest(struct commit_run *run, size_t i, const json_t *before)
{
	struct tt_manifest *m = run->objs[i].m;
	if (json_equal(before, m->doc))
		return 0;
	char *rel = tt_manifest_relpath(m->key);
	char *path = tt_path_join(run->repo->root, rel);
	size_t len;
	int rc = tt_read_file(path, &run->old_text[i], &len);
	free(rel);
	free(path);
	if (rc == TETHER_ENOTFOUND)
		return tether_error_set(TETHER_ERROR, "%s: its manifest disappeared during the commit", m->key);
	if (rc)
		return rc;
	return tt_manifest_save(run->repo->root, run->repo->layout, m);
}

/* Perform one planned action. */
static int record_object(struct commit_run *run, size_t i, const json_t *planned)
{
	struct tt_obj *o = &run->objs[i];
	json_t *doc = o->m->doc;
	const char *action = json_string_value(json_object_get(planned, "action"));
	const char *pin_id = json_string_value(json_object_get(planned, "pin"));
	int recoverable = json_is_true(json_object_get(planned, "recoverable"));
	int pinned = strcmp(action, "pin") == 0;
	json_array_append_new(run->actions, json_pack("{s:s, s:s, s:s, s:b}", "key", o->m->key, "action",
	                                              pinned ? "pinned" : strcmp(action, "record") == 0 ? "recorded" : "unchanged",
	                                              "pin", pin_id, "recoverable", recoverable));
	if (strcmp(action, "unchanged") == 0)
		return 0;
	json_t *before = json_deep_copy(doc);
	json_object_del(doc, "pin_ref");
	int rc = pinned ? pin_object(run, o, pin_id) : 0;
	if (rc) {
		json_decref(before);
		return rc;
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
		if (rc) {
			json_decref(before);
			return rc;
		}
		json_object_set_new(doc, "listing", json_string(hex));
	}
	run->changed = 1;
	rc = save_manifest(run, i, before);
	json_decref(before);
	return rc;
}

/* Before the VCS commit: take back what this run made. A pin this run's
 * call found existing is an earlier commit's and stays. */
static void undo(struct commit_run *run)
{
	char *keep = strdup(tether_error_last());
	for (size_t i = 0; i < run->npins; i++) {
		struct tt_obj *o = run->pins[i].obj;
		if (run->pins[i].created)
			TT_BACKEND_GET(o->b, unpin)(&o->ctx, o->locator, run->pins[i].pin_ref);
	}
	for (size_t i = 0; i < run->n; i++) {
		if (!run->old_text[i])
			continue;
		char *rel = tt_manifest_relpath(run->objs[i].m->key);
		char *path = tt_path_join(run->repo->root, rel);
		tt_safe_write_atomic(run->repo->root, path, run->old_text[i], strlen(run->old_text[i]));
		free(rel);
		free(path);
	}
	/* A listing no manifest names would be swept into the next commit of
	 * .tether/: take back the ones this run added (never an older one). */
	for (size_t i = 0; i < run->nlistings; i++)
		tt_safe_remove(run->repo->root, run->new_listings[i]);
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
 * the next fork may move it from, and anything written after it is work a
 * fork must not overwrite. */
static int advance_working_heads(struct commit_run *run)
{
	int touched = 0;
	for (size_t i = 0; i < run->n; i++) {
		json_t *entry = tt_workspace_entry(run->ws, run->objs[i].m->key);
		json_t *heads = json_object_get(entry, "heads");
		const char *branch = json_string_value(json_object_get(entry, "branch"));
		if (heads && branch && run->objs[i].fp.state) {
			json_object_set(heads, branch, run->objs[i].fp.state);
			touched = 1;
		}
	}
	return touched;
}

static struct tt_obj *obj_by_key(struct commit_run *run, const char *key)
{
	for (size_t i = 0; key && i < run->n; i++)
		if (strcmp(run->objs[i].m->key, key) == 0)
			return &run->objs[i];
	return NULL;
}

/* What to tell the user when a planned fork failed: the commit stands, and
 * what to run about it. */
static json_t *fork_warning(const char *key, int refork)
{
	if (refork)
		return json_sprintf("%s (re-forking after the commit, which stands); what was written on the branch "
		                    "meanwhile is not in this commit: `tether status` shows it, `tether commit` records it",
		                    tether_error_last());
	return json_sprintf("%s (after the commit, which stands); %s works on its own branch until `tether open %s` "
	                    "(or the next `tether new`) forks it",
	                    tether_error_last(), key, key);
}

/* new.auto_fork, performed: each planned fork in turn, the workspace saved
 * after each (as `new` does, so a run that dies part-way leaves every
 * branch it made with its head recorded). */
static int auto_fork(struct commit_run *run)
{
	const char *bookmark = json_string_value(json_object_get(run->ws, "bookmark"));
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(run->plan, "forks"), i, f) {
		struct tt_obj *o = obj_by_key(run, json_string_value(json_object_get(f, "key")));
		int refork = strcmp(json_string_value(json_object_get(f, "action")), "refork") == 0;
		json_t *r = NULL;
		if (!o || !bookmark)
			continue;
		tether_error_clear();
		if (tt_fork_object(run->repo, o, run->ws, bookmark, NULL, &r) != 0) {
			json_array_append_new(run->warnings, fork_warning(o->m->key, refork));
			continue;
		}
		json_object_set_new(r, "action", json_string(refork ? "reforked" : "forked"));
		json_array_append_new(run->forks, r);
		int rc = tt_workspace_save(run->repo, run->ws);
		if (rc)
			return rc;
		tt_fault_point("commit", "forked");
	}
	return 0;
}

/* After the commit: the workspace stands at the new commit (its bookmark
 * is carried forward with it), the working heads advanced, then
 * new.auto_fork. */
static int after_commit(struct commit_run *run, const char *id)
{
	int moved = 0;
	const char *bookmark = json_string_value(json_object_get(run->ws, "bookmark"));
	if (*id && bookmark) {
		char *b = strdup(bookmark);
		tt_workspace_set_position(run->ws, b, id);
		free(b);
		moved = 1;
	}
	int rc = advance_working_heads(run) || moved ? tt_workspace_save(run->repo, run->ws) : 0;
	if (!rc && *id)
		rc = auto_fork(run);
	return rc;
}

/* The pins this commit may create, named in the journal before any is. */
static json_t *journal_pins(struct commit_run *run)
{
	json_t *pins = json_array();
	for (size_t i = 0; i < run->n; i++) {
		struct tt_obj *o = &run->objs[i];
		json_t *a = json_array_get(tt_plan_actions(run->plan), i);
		if (strcmp(json_string_value(json_object_get(a, "action")), "pin") != 0)
			continue;
		const char *pin_id = json_string_value(json_object_get(a, "pin"));
		const char *old = tt_manifest_pin(o->m);
		if (old && strcmp(old, pin_id) == 0)
			continue;
		json_array_append_new(pins, json_pack("{s:s, s:s, s:O, s:s}", "key", o->m->key, "kind", o->b->kind,
		                                      "locator", o->locator, "pin", pin_id));
	}
	return pins;
}

/* The pins this run's calls made (not those that existed already): what
 * undo of this commit releases, with the pin_ref to release them by. */
static json_t *created_pins(struct commit_run *run)
{
	json_t *made = json_array();
	for (size_t i = 0; i < run->npins; i++) {
		const struct created_pin *p = &run->pins[i];
		if (p->created)
			json_array_append_new(made, json_pack("{s:s, s:s, s:O, s:s, s:O}", "key", p->obj->m->key, "kind",
			                                      p->obj->b->kind, "locator", p->obj->locator, "pin", p->pin,
			                                      "pin_ref", p->pin_ref));
	}
	return made;
}

/* HEAD's view for the next status, read back from the new commit rather
 * than copied from the working manifests: the VCS leaves out a path the
 * repository's ignore rules match, and then the view and the report must
 * say so instead of calling the object committed. */
static void save_head_view(struct commit_run *run, const char *id)
{
	struct tt_manifest_set committed;
	if (tt_manifests_at(run->repo, id, &committed) != 0) {
		tether_error_clear(); /* only the cache is lost: status reads HEAD itself */
		return;
	}
	for (size_t i = 0; i < run->n; i++) {
		if (tt_manifest_set_find(&committed, run->objs[i].m->key))
			continue;
		char *rel = tt_manifest_relpath(run->objs[i].m->key);
		json_array_append_new(run->warnings, json_sprintf("%s: its manifest is not in commit %.7s: the repository "
		                                                  "ignores %s", run->objs[i].m->key, id, rel));
		free(rel);
	}
	tt_head_view_save(run->repo, id, &committed);
	tt_manifest_set_free(&committed);
	tt_head_files_save(run->repo, id);
}

static void finish_landed(struct commit_run *run, const char *id, int journal_rc);

/* Temporaries a killed tether left in the committed directories: the VCS
 * leaves them out of the commit, and this removes them. */
static void sweep_temporaries(struct commit_run *run)
{
	static const char *const dirs[] = {".tether/objects", ".tether/listings"};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		char *path = tt_path_join(run->repo->root, dirs[i]);
		tt_sweep_stale_temps(path);
		free(path);
	}
}

/* Every planned action, then the VCS commit; all undone when the VCS
 * commit was not made. */
static int apply_plan(struct commit_run *run, const char *message, char id[41])
{
	sweep_temporaries(run);
	json_t *pins = journal_pins(run);
	struct tt_journal journal = {0};
	/* Every commit is journalled, pins or not: undo takes the last one back
	 * from what its entry says (the head it started from). */
	int rc = tt_journal_begin(run->repo, "commit", message, pins, &journal);
	json_decref(pins);
	if (!rc) {
		json_object_set(journal.entry, "head_before", json_object_get(tt_plan_preconditions(run->plan), "head"));
		rc = tt_journal_update(&journal);
	}
	tt_fault_point("commit", "journal-written");
	/* A stop asked (tether_cancel) is taken between objects and before the
	 * VCS commit, never after it: what stops here is undone below, as any
	 * failure before the commit is, and a journal entry that could not be
	 * closed keeps its pins for gc. */
	for (size_t i = 0; !rc && i < run->n; i++) {
		if (tt_cancelled()) {
			rc = tt_cancel_error("commit");
			break;
		}
		rc = record_object(run, i, json_array_get(tt_plan_actions(run->plan), i));
		tt_fault_point("commit", "object-recorded");
	}
	id[0] = '\0';
	if (!rc && tt_cancelled())
		rc = tt_cancel_error("commit");
	if (!rc)
		rc = vcs_commit(run, message, id);
	if (*id)
		tt_fault_point("commit", "vcs-committed");
	if (rc && !*id) {
		int code = rc;
		undo(run);
		if (tt_journal_end(&journal, "ABORTED", NULL) != 0)
			tether_error_set(code, "%s", tether_error_last());
		tt_journal_free(&journal);
		return code;
	}
	/* From here the commit stands, whatever fails: history names its pins.
	 * A VCS step after the commit that failed (the index could not be
	 * updated) is reported once the journal says so. */
	int late = rc;
	char *late_message = late ? strdup(tether_error_last()) : NULL;
	json_object_set_new(journal.entry, "created", created_pins(run));
	/* Nothing committed and no pin named: no operation to record. */
	int noop = !*id && !late && !json_array_size(json_object_get(journal.entry, "pins"));
	rc = noop ? tt_journal_discard(&journal) : tt_journal_end(&journal, "COMPLETE", id);
	tt_journal_free(&journal);
	if (late) {
		finish_landed(run, id, rc);
		tether_error_set(late, "%s", late_message ? late_message : "the VCS commit failed after it was made");
		free(late_message);
		return late;
	}
	/* A dead commit's work is finished now, whether or not this run made a
	 * commit (its own may have landed before it died): what it pinned is
	 * named by history, or is an orphan gc may release. */
	char head[41] = "";
	if (!rc && !*id && run->repo->vcs->resolve(run->repo->vh, "HEAD", head) != 0)
		tether_error_clear();
	if (!rc)
		rc = tt_journal_close_finished(run->repo, *id ? id : head);
	if (!rc && *id)
		save_head_view(run, id);
	if (!rc)
		rc = after_commit(run, id);
	return rc;
}

/* The VCS commit `id` was made but a later VCS step failed: what follows a
 * commit still follows it (the working heads, new.auto_fork), since the
 * commit names the states; only the first error is reported. */
static void finish_landed(struct commit_run *run, const char *id, int journal_rc)
{
	if (!journal_rc)
		save_head_view(run, id);
	if (after_commit(run, id) != 0)
		tether_error_clear();
}

static int run_commit(struct commit_run *run, const struct tether_commit_opts *opts, const char *message,
                      json_t **report)
{
	int rc = refuse_busy(run, opts->force);
	if (rc)
		return rc;
	tt_objs_snapshot(run->objs, run->n);
	rc = refuse_drift_and_strict(run, opts->strict);
	if (!rc)
		rc = build_plan(run, message);
	if (!rc && opts->from_plan)
		rc = check_plan(run, opts->from_plan);
	int dry_run = opts->dry_run || opts->plan_out;
	if (!rc && opts->plan_out)
		rc = tt_plan_save(run->plan, opts->plan_out);
	/* What the commit records besides the objects (a listing gc removed). */
	json_t *files = NULL;
	if (!rc)
		rc = tt_pending_files(run->repo, &files);
	char id[41] = "";
	if (!rc && !dry_run)
		rc = apply_plan(run, message, id);
	if (rc) {
		json_decref(files);
		return rc;
	}
	*report = json_pack("{s:s?, s:s, s:O, s:o}", "commit", *id ? id : NULL, "message", message, "warnings",
	                    run->warnings, "files", files);
	if (!dry_run) {
		json_object_set(*report, "objects", run->actions);
		json_object_set(*report, "forks", run->forks);
	}
	tt_plan_report(*report, run->plan, dry_run, opts->plan_out);
	return 0;
}

/* The message: -m, else the plan's. */
static int commit_message(const struct tether_commit_opts *opts, const char **message)
{
	*message = opts->message;
	if (!*message && opts->from_plan)
		*message = json_string_value(json_object_get(opts->from_plan, "message"));
	if (!*message || !**message)
		return tether_error_set(TETHER_EUSAGE, opts->from_plan ? "the plan has no commit message: give -m MSG"
		                                                       : "a commit needs a message (-m MSG)");
	return 0;
}

static void commit_run_free(struct commit_run *run)
{
	for (size_t i = 0; run->old_text && i < run->n; i++)
		free(run->old_text[i]);
	for (size_t i = 0; i < run->npins; i++)
		json_decref(run->pins[i].pin_ref);
	for (size_t i = 0; i < run->nlistings; i++)
		free(run->new_listings[i]);
	free(run->old_text);
	free(run->pins);
	free(run->new_listings);
	json_decref(run->plan);
	json_decref(run->head_view);
	json_decref(run->actions);
	json_decref(run->warnings);
	json_decref(run->ws);
	json_decref(run->forks);
	tt_objs_free(run->objs, run->n);
}

static int commit_command(tether_repo *repo, const struct tether_commit_opts *opts, json_t **report)
{
	*report = NULL;
	const char *message = NULL;
	int rc = tt_plan_check_opts(opts->plan_out, opts->from_plan);
	if (!rc && opts->from_plan)
		rc = tt_plan_check_header(repo, opts->from_plan, "commit", opts->from_plan_file);
	if (!rc)
		rc = commit_message(opts, &message);
	if (!rc)
		rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	struct tt_lock lock = {-1}, shared = {-1};
	rc = tt_repo_lock(repo, &lock, &shared);
	if (rc)
		return rc;
	rc = tt_workspace_refuse_stale(repo, "commit");
	if (rc) {
		tt_repo_unlock(repo, &lock, &shared);
		return rc;
	}
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
		run.forks = json_array();
		rc = run_commit(&run, opts, message, report);
	}
	commit_run_free(&run);
	tt_manifest_set_free(&set);
	tt_repo_unlock(repo, &lock, &shared);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_commit(tether_repo *repo, const struct tether_commit_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_commit_opts opts;
	int rc = TT_OPTS_IN("struct tether_commit_opts", TETHER_COMMIT_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, opts.progress ? opts.progress_fn : NULL, opts.progress_ud);
	rc = commit_command(repo, &opts, report);
	tt_command_end(repo);
	return rc;
}
