/* tether new: move the checkout, then give every Forkable object a writable
 * branch off the state the new revision records. */
#include "core/engine.h"

#include "core/lock.h"
#include "core/workspace.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* The bookmark this checkout now stands for: the new branch, else the
 * checked-out branch, else the detached commit. */
static char *bookmark_of(struct tether_repo *repo, const struct tether_new_opts *opts)
{
	if (opts->branch)
		return strdup(opts->branch);
	char *name = NULL;
	if (repo->vcs->current_branch(repo->vh, &name) == 0 && name)
		return name;
	char id[41] = "";
	repo->vcs->resolve(repo->vh, "HEAD", id);
	return tt_strdupf("detached-%.12s", id);
}

static const char *write_policy(const struct tt_obj *o)
{
	const char *w = json_string_value(json_object_get(tt_manifest_policy(o->m), "write"));
	return w ? w : "none";
}

/* Fork one object; `expect` is the head tether last left its working
 * branch at, so a branch someone else moved is not overwritten. */
int tt_fork_object(struct tether_repo *repo, struct tt_obj *o, json_t *ws, const char *bookmark, json_t **result)
{
	const json_t *state = tt_manifest_state(o->m);
	const char *policy = write_policy(o);
	*result = NULL;
	if (!(o->caps & TETHER_CAP_FORK) || strcmp(policy, "none") == 0) {
		*result = json_pack("{s:s, s:s, s:s}", "key", o->m->key, "action", "skipped", "detail",
		                    !(o->caps & TETHER_CAP_FORK) ? "not forkable" : "write = none");
		return 0;
	}
	if (strcmp(policy, "track") == 0) {
		json_object_del(json_object_get(ws, "working"), o->m->key);
		*result = json_pack("{s:s, s:s, s:s}", "key", o->m->key, "action", "tracking", "detail",
		                    "writes go to the upstream branch");
		return 0;
	}
	if (!state) {
		*result = json_pack("{s:s, s:s, s:s}", "key", o->m->key, "action", "skipped", "detail",
		                    "never recorded: commit it first");
		return 0;
	}
	char *branch = tt_working_branch_name(repo, bookmark);
	json_t *prev = tt_workspace_entry(ws, o->m->key);
	json_t *expect = json_object_get(prev, "head");
	json_t *wref = NULL;
	int rc = o->b->fork(&o->ctx, tt_manifest_locator(o->m), state, json_object_get(o->m->doc, "pin_ref"), branch,
	                    expect, &wref);
	if (rc) {
		rc = tether_error_set(rc, "%s: cannot fork %s: %s", o->m->key, branch, tether_error_last());
		free(branch);
		return rc;
	}
	json_object_set_new(json_object_get(ws, "working"), o->m->key,
	                    json_pack("{s:O, s:s?, s:O, s:O}", "ref", wref, "from_pin", tt_manifest_pin(o->m), "state",
	                              state, "head", state));
	*result = json_pack("{s:s, s:s, s:s, s:o}", "key", o->m->key, "action", "forked", "branch", branch, "ref", wref);
	free(branch);
	return 0;
}

int tether_new(tether_repo *repo, const struct tether_new_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock checkout = {-1}, shared = {-1};
	int rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_repo_lock(repo, &checkout, &shared);
	if (!rc)
		rc = repo->vcs->switch_to(repo->vh, opts->rev, opts->branch);
	struct tt_manifest_set set = {0};
	struct tt_obj *objs = NULL;
	json_t *ws = NULL, *list = json_array();
	char *bookmark = rc ? NULL : bookmark_of(repo, opts);
	if (!rc)
		rc = tt_manifests_load_working(repo->root, &set);
	if (!rc)
		rc = tt_objs_prepare(repo, &set, 0, &objs);
	if (!rc)
		rc = tt_workspace_load(repo, &ws);
	for (size_t i = 0; !rc && i < set.n; i++) {
		json_t *r;
		rc = tt_fork_object(repo, &objs[i], ws, bookmark, &r);
		if (!rc)
			json_array_append_new(list, r);
	}
	if (!rc) {
		json_object_set_new(ws, "bookmark", json_string(bookmark));
		rc = tt_workspace_save(repo, ws);
	}
	char id[41] = "";
	if (!rc)
		rc = repo->vcs->resolve(repo->vh, "HEAD", id);
	if (!rc)
		*report = json_pack("{s:s, s:s, s:O}", "commit", id, "bookmark", bookmark, "objects", list);
	free(bookmark);
	json_decref(ws);
	json_decref(list);
	tt_objs_free(objs, set.n);
	tt_manifest_set_free(&set);
	tt_lock_release(&shared);
	tt_lock_release(&checkout);
	return rc;
}
