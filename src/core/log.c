/* tether log: the dataset's commits (those that touched .tether/), each
 * with the objects it added, removed or changed. */
#include "core/abi.h"
#include "core/engine.h"
#include "core/sessions.h"

#include "core/registry.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static json_t *object_changes(const struct tt_manifest_set *before, const struct tt_manifest_set *after)
{
	json_t *list = json_array();
	size_t i = 0, j = 0;
	while (i < before->n || j < after->n) {
		int c = i == before->n ? 1 : j == after->n ? -1 : strcmp(before->v[i].key, after->v[j].key);
		const struct tt_manifest *m = c < 0 ? &before->v[i] : &after->v[j];
		const char *change = c < 0 ? "removed" : c > 0 ? "added" : NULL;
		if (c == 0 && !json_equal(before->v[i].doc, after->v[j].doc))
			change = "changed";
		if (change)
			json_array_append_new(list, json_pack("{s:s, s:s, s:s?}", "key", m->key, "change", change, "pin",
			                                      tt_manifest_pin(m)));
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	return list;
}

/* Manifests in the first parent of `id`; none for a root commit. */
static int parent_manifests(struct tether_repo *repo, const char *id, struct tt_manifest_set *out)
{
	memset(out, 0, sizeof *out);
	char *parent_rev = tt_strdupf("%s^", id);
	char parent[41];
	int rc = repo->vcs->resolve(repo->vh, parent_rev, parent);
	free(parent_rev);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0;
	}
	return rc ? rc : tt_manifests_at(repo, parent, out);
}

/* An object's own history, as its system keeps it. */
static int native_log(struct tether_repo *repo, struct tt_manifest *m, int max, json_t **report)
{
	struct tt_manifest_set one = {m, 1};
	struct tt_obj *objs = NULL;
	int rc = tt_objs_prepare(repo, &one, 0, &objs);
	if (!rc && !(objs->b->caps & TETHER_CAP_HISTORY))
		rc = tether_error_set(TETHER_EREFUSED, "kind %s keeps no history tether can list (%s is %s)",
		                      objs->b->kind, m->key, tether_tier_name(objs->caps));
	json_t *entries = NULL;
	if (!rc)
		rc = TT_BACKEND_GET(objs->b, history)(&objs->ctx, objs->locator, max, &entries);
	if (!rc)
		*report = json_pack("{s:s, s:s, s:o}", "key", m->key, "kind", objs->b->kind, "entries", entries);
	tt_objs_free(objs, 1);
	return rc;
}

static int log_command(tether_repo *repo, const struct tether_log_opts *opts, json_t **report)
{
	*report = NULL;
	if (opts->rev && tt_key_check(opts->rev) == 0) {
		struct tt_manifest m;
		if (tt_manifest_load_working(repo->root, opts->rev, &m) == 0) {
			int rc = native_log(repo, &m, opts->max_count, report);
			tt_manifest_free(&m);
			return rc;
		}
	}
	tether_error_clear();
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	char head[41];
	const char *rev = opts->rev ? opts->rev : "HEAD";
	rc = repo->vcs->resolve(repo->vh, rev, head);
	if (rc == TETHER_ENOTFOUND && !opts->rev) {
		tether_error_clear();
		*report = json_pack("{s:[]}", "commits");
		return 0;
	}
	if (rc)
		return rc;
	char *path = tt_repo_vcs_path(repo, ".tether");
	json_t *commits = NULL;
	rc = repo->vcs->log(repo->vh, head, path, opts->max_count, &commits);
	free(path);
	size_t i;
	json_t *c;
	json_array_foreach(commits, i, c) {
		if (rc)
			break;
		const char *id = json_string_value(json_object_get(c, "id"));
		struct tt_manifest_set before, after;
		rc = parent_manifests(repo, id, &before);
		if (rc)
			break;
		rc = tt_manifests_at(repo, id, &after);
		if (!rc)
			json_object_set_new(c, "objects", object_changes(&before, &after));
		tt_manifest_set_free(&before);
		tt_manifest_set_free(&after);
	}
	if (!rc)
		*report = json_pack("{s:O}", "commits", commits);
	json_decref(commits);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_log(tether_repo *repo, const struct tether_log_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_log_opts opts;
	int rc = TT_OPTS_IN("struct tether_log_opts", TETHER_LOG_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, NULL, NULL);
	rc = log_command(repo, &opts, report);
	tt_command_end(repo);
	return rc;
}
