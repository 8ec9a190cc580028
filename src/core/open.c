/* tether open: the handle a native library opens. Read-only at a
 * revision's pinned state, or writable on this workspace's working ref. A
 * handle already given out keeps naming the branch it was opened on: it
 * does not follow a later `tether new` (docs/CLI.md says so). */
#include "core/abi.h"
#include "core/engine.h"
#include "core/sessions.h"

#include "core/lock.h"
#include "core/trunk.h"
#include "core/workspace.h"
#include "core/workspace_check.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* An observed object cannot be read at a past state: its handle names
 * today's bytes. It may be handed out for REV only while they are still
 * the bytes REV recorded; otherwise refused, or with allow_drift a handle
 * with a warning saying so. */
static int check_observed(struct tt_obj *o, const char *rev, int allow_drift, json_t **warning)
{
	*warning = NULL;
	if (o->caps & TETHER_CAP_ADDRESSABLE)
		return 0;
	tt_objs_snapshot(o, 1);
	if (o->rc)
		return tether_error_set(o->rc, "%s", o->error);
	if (strcmp(o->status, "clean") == 0)
		return 0;
	char *now = o->detail ? NULL : tt_state_brief(o->b, o->fp.state);
	char *why = tt_strdupf("%s (kind %s) is observed only and has changed since %s recorded it: %s",
	                       o->m->key, o->b->kind, rev, o->detail ? o->detail : now);
	int rc = 0;
	if (allow_drift) {
		*warning = json_sprintf("%s; the handle names its current bytes, not %s's", why, rev);
	} else {
		rc = tether_error_set(TETHER_EREFUSED, "%s", why);
		tether_error_set_hint("open it without -r for what is there now, or pass --allow-drift to "
		                      "take today's bytes under %s's name", rev);
	}
	free(why);
	free(now);
	return rc;
}

static int open_at_rev(struct tether_repo *repo, const char *key, const char *rev, int allow_drift,
                       json_t **handle)
{
	char id[41];
	int rc = tt_repo_resolve(repo, rev, id);
	if (rc)
		return rc;
	struct tt_manifest_set set;
	rc = tt_manifests_at(repo, id, &set);
	if (rc)
		return rc;
	struct tt_manifest *m = tt_manifest_set_find(&set, key);
	struct tt_obj *objs = NULL;
	if (!m)
		rc = tether_error_set(TETHER_ENOTFOUND, "no object '%s' at %s", key, rev);
	else if (!tt_manifest_state(m))
		rc = tether_error_set(TETHER_ENOTFOUND, "'%s' has no recorded state at %s", key, rev);
	struct tt_manifest_set one = {m, 1};
	if (!rc)
		rc = tt_objs_prepare(repo, &one, 0, &objs);
	if (!rc && !TT_BACKEND_GET(objs->b, open))
		rc = tether_error_set(TETHER_EREFUSED, "kind %s gives no handles", objs->b->kind);
	json_t *warning = NULL;
	if (!rc)
		rc = check_observed(objs, rev, allow_drift, &warning);
	if (!rc) {
		rc = TT_BACKEND_GET(objs->b, open)(&objs->ctx, tt_manifest_locator(m), tt_manifest_state(m), json_object_get(m->doc, "pin_ref"),
		                   NULL, 1, handle);
		if (!rc)
			json_object_set_new(*handle, "rev", json_string(id));
		if (!rc && warning)
			json_object_set_new(*handle, "warnings", json_pack("[O]", warning));
	}
	json_decref(warning);
	tt_objs_free(objs, m ? 1 : 0);
	tt_manifest_set_free(&set);
	return rc;
}

/* The bookmark a lazy fork is made for: the one the workspace stands for,
 * else the checkout's branch, else (HEAD detached) the commit's, as `new`
 * names it (malloc'd). */
static int open_bookmark(struct tether_repo *repo, char **bookmark)
{
	json_t *ws = NULL;
	int rc = tt_workspace_load(repo, &ws);
	const char *b = json_string_value(json_object_get(ws, "bookmark"));
	*bookmark = NULL;
	if (!rc && b)
		*bookmark = strdup(b);
	if (!rc && !b)
		rc = tt_repo_vcs(repo);
	if (!rc && !b)
		rc = repo->vcs->current_branch(repo->vh, bookmark);
	if (!rc && !*bookmark) {
		char head[41] = "";
		rc = repo->vcs->resolve(repo->vh, "HEAD", head);
		if (!rc)
			*bookmark = tt_strdupf("detached-%.12s", head);
	}
	json_decref(ws);
	return rc;
}

/* Writable: the working ref, forked now when the workspace has none yet
 * (under both locks, so two checkouts cannot fork over each other). */
static int open_working(struct tether_repo *repo, const char *key, json_t **handle)
{
	struct tt_manifest m;
	int rc = tt_manifest_load_working(repo->root, key, &m);
	if (rc)
		return rc;
	struct tt_manifest_set one = {&m, 1};
	struct tt_obj *objs = NULL;
	json_t *ws = NULL;
	rc = tt_objs_prepare(repo, &one, 0, &objs);
	const char *write = rc ? NULL : json_string_value(json_object_get(tt_manifest_policy(&m), "write"));
	int wants_fork = !rc && (objs->caps & TETHER_CAP_FORK) && write && strcmp(write, "fork") == 0;
	/* At a detached `at`, the handle reads that state and writes nothing:
	 * `pull` on the trunk moves the object onto its branch first. */
	int detached = !rc && !objs->working_ref && tt_obj_detached(objs);
	/* A stale workspace's working refs are another bookmark's. */
	if (!rc && wants_fork)
		rc = tt_workspace_refuse_stale(repo, "open for writing");
	char *bookmark = NULL;
	if (!rc && wants_fork && !detached && !objs->working_ref)
		rc = open_bookmark(repo, &bookmark);
	if (!rc && wants_fork && !detached && !objs->working_ref && tt_manifest_state(&m) &&
	    !tt_is_trunk(repo, bookmark)) {
		struct tt_lock checkout = {-1}, shared = {-1};
		rc = tt_repo_lock(repo, &checkout, &shared);
		if (!rc) /* a fork on the word of a workspace.toml a clone committed: never */
			rc = tt_repo_check_secrets(repo);
		if (!rc)
			rc = tt_workspace_load(repo, &ws);
		if (!rc && !json_object_get(ws, "bookmark")) {
			/* The first fork of a checkout `new` never put anywhere: the
			 * workspace now stands for this bookmark, here. */
			char head[41] = "";
			if (repo->vcs->resolve(repo->vh, "HEAD", head) != 0)
				tether_error_clear();
			tt_workspace_set_position(ws, bookmark, head);
		}
		if (!rc) {
			json_t *r = NULL;
			rc = tt_fork_object(repo, objs, ws, bookmark, NULL, &r);
			json_decref(r);
		}
		if (!rc)
			rc = tt_workspace_save(repo, ws);
		if (!rc) {
			json_decref(objs->working_ref);
			objs->working_ref = json_incref(json_object_get(tt_workspace_entry(ws, key), "ref"));
		}
		tt_repo_unlock(repo, &checkout, &shared);
	}
	free(bookmark);
	if (!rc && !TT_BACKEND_GET(objs->b, open))
		rc = tether_error_set(TETHER_EREFUSED, "kind %s gives no handles", objs->b->kind);
	if (!rc)
		rc = TT_BACKEND_GET(objs->b, open)(&objs->ctx, tt_manifest_locator(&m), tt_manifest_state(&m),
		                   json_object_get(m.doc, "pin_ref"), objs->working_ref,
		                   !(objs->caps & TETHER_CAP_FORK) || detached, handle);
	json_decref(ws);
	tt_objs_free(objs, 1);
	tt_manifest_free(&m);
	return rc;
}

static int open_command(tether_repo *repo, const struct tether_open_opts *opts, json_t **handle)
{
	*handle = NULL;
	int rc = tt_key_check(opts->key);
	if (rc)
		return rc;
	const char *rev = opts->rev;
	if (!rev && !opts->ignore_env && getenv("TETHER_REV") && *getenv("TETHER_REV"))
		rev = getenv("TETHER_REV");
	rc = rev ? open_at_rev(repo, opts->key, rev, opts->allow_drift, handle) : open_working(repo, opts->key, handle);
	if (rc && rev && rev != opts->rev) {
		/* Nothing on the command line named a revision: say where it came from. */
		char *hint = tether_error_hint() ? strdup(tether_error_hint()) : NULL;
		rc = tether_error_set(rc, "$TETHER_REV=%s: %s", rev, tether_error_last());
		if (hint)
			tether_error_set_hint("%s", hint);
		else
			tether_error_set_hint("the revision came from $TETHER_REV: unset it to open the working state, "
			                      "or give -r REV");
		free(hint);
	}
	if (!rc)
		json_object_set_new(*handle, "key", json_string(opts->key));
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_open(tether_repo *repo, const struct tether_open_opts *caller_opts, json_t **handle)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_open_opts opts;
	int rc = TT_OPTS_IN("struct tether_open_opts", TETHER_OPEN_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*handle = NULL;
		return rc;
	}
	tt_command_begin(repo, NULL, NULL);
	rc = open_command(repo, &opts, handle);
	tt_command_end(repo);
	return rc;
}
