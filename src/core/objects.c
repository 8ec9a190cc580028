/* Objects resolved to backends, and the concurrent snapshot every command
 * that looks at live state starts with. */
#include "core/abi.h"
#include "core/engine.h"

#include "core/cancel.h"
#include "core/pinid.h"
#include "core/registry.h"
#include "core/sessions.h"
#include "core/workspace.h"
#include "util/fsutil.h"
#include "util/pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int tt_objs_prepare(struct tether_repo *repo, struct tt_manifest_set *set, int progress, struct tt_obj **out)
{
	struct tt_obj *objs = calloc(set->n ? set->n : 1, sizeof *objs);
	if (!objs)
		abort();
	json_t *ws = NULL;
	/* The objects' stores are opened with the options secrets.toml gives
	 * them (an S3 endpoint, keys), whichever command opens them. */
	int rc = tt_repo_load_secrets(repo);
	if (!rc)
		rc = tt_workspace_load(repo, &ws);
	for (size_t i = 0; i < set->n && !rc; i++) {
		struct tt_obj *o = &objs[i];
		o->m = &set->v[i];
		const char *kind = tt_manifest_kind(o->m);
		int unknown = 0;
		o->b = tt_backend_find(kind, &unknown);
		if (!o->b && !unknown) {
			rc = tether_error_set(TETHER_ECONFIG, "object '%s': %s", o->m->key, tether_error_last());
			break;
		}
		if (!o->b) {
			rc = tether_error_set(TETHER_ECONFIG, "object '%s': unknown kind '%s'", o->m->key, kind);
			tether_error_set_hint("this build has no %s backend: `tether backends` lists what it has", kind);
			break;
		}
		rc = tt_repo_check_object_secrets(repo, o->b, o->m->key);
		if (rc)
			break;
		tt_repo_bctx(repo, kind, o->m->key, &o->ctx);
		o->ctx.policy = tt_manifest_policy(o->m);
		o->ctx.progress = progress;
		/* Objects run concurrently (all but those tt_objs_snapshot takes
		 * first, alone): each backend gets a share. */
		o->threads_alone = o->ctx.threads;
		if (set->n > 1)
			o->ctx.threads = o->ctx.threads / (int)set->n > 0 ? o->ctx.threads / (int)set->n : 1;
		rc = tt_object_caps(o->b, &o->ctx, tt_manifest_locator(o->m), tt_manifest_policy(o->m), &o->caps);
		o->status = "unknown";
		json_t *entry = tt_workspace_entry(ws, o->m->key);
		o->working_ref = json_incref(json_object_get(entry, "ref"));
		o->locator = tt_locator_at(tt_manifest_locator(o->m), o->working_ref);
		if (!rc) /* (an attach clears the error slot it finds no identity in) */
			tt_session_attach(repo, o->b, o->locator, NULL, &o->ctx);
	}
	json_decref(ws);
	if (rc) {
		tt_objs_free(objs, set->n);
		return rc;
	}
	*out = objs;
	return 0;
}

static void classify(struct tt_obj *o)
{
	const json_t *recorded = tt_manifest_state(o->m);
	if (!recorded) {
		o->status = "never-recorded";
		return;
	}
	if (tt_same_content(o->b, recorded, o->fp.state)) {
		o->status = "clean";
		return;
	}
	int refused = 0;
	char *why = NULL;
	if (TT_BACKEND_GET(o->b, check_drift)) {
		int rc = TT_BACKEND_GET(o->b, check_drift)(&o->ctx, o->locator, tt_manifest_policy(o->m), recorded,
		                           o->fp.state, &refused, &why);
		if (rc) {
			o->rc = rc;
			o->error = strdup(tether_error_last());
			return;
		}
	}
	o->status = refused ? "drifted" : "modified";
	o->detail = why;
}

static void snapshot_one(void *ud, size_t i)
{
	struct tt_obj *o = &((struct tt_obj *)ud)[i];
	tether_error_clear();
	if (tt_cancelled()) {
		o->rc = tt_cancel_error("reading its state");
		o->error = tt_strdupf("%s: %s", o->m->key, tether_error_last());
		return;
	}
	o->fp = (struct tether_fingerprint){TETHER_FINGERPRINT_INIT};
	o->rc = o->b->fingerprint(&o->ctx, o->locator, tt_manifest_policy(o->m), &o->fp);
	if (o->rc) {
		o->error = tt_strdupf("%s: %s", o->m->key, tether_error_last());
		return;
	}
	classify(o);
}

/* Most snapshots are of objects whose caches vouch for them (a settled
 * file is a stat and a cache lookup): tens of microseconds each, less
 * than starting a thread costs, and a thread the machine is slow to
 * schedule makes the whole command wait for it. So objects are taken one
 * by one on this thread, each with the whole thread budget for its own
 * work, until a millisecond has passed; what remains then is fanned out,
 * each object with its share. An object that is slow (a first scan, a
 * remote store) thus runs alone with every thread, and the others follow
 * it concurrently. */
#define INLINE_BUDGET_NS 1000000

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* An object whose fingerprint is a round trip to a remote server
 * (REMOTE_FINGERPRINT) waits, and uses no CPU while it does: a hundred
 * objects in one bucket on two threads would take fifty round trips in a
 * row. Those run on a pool of their own, this many threads at most, and
 * then the others on the usual one. */
#define REMOTE_THREADS 32

struct subset {
	struct tt_obj *objs;
	const size_t *index;
};

static void snapshot_indexed(void *ud, size_t i)
{
	const struct subset *s = ud;
	snapshot_one(s->objs, s->index[i]);
}

/* objs[0, n) on the pools; objs stays in its order. */
static void snapshot_pooled(struct tt_obj *objs, size_t n)
{
	size_t remote = 0;
	for (size_t i = 0; i < n; i++)
		remote += (objs[i].caps & TETHER_CAP_REMOTE_FINGERPRINT) != 0;
	size_t *index = remote ? malloc(n * sizeof *index) : NULL;
	if (!index) { /* none remote (a status of local files: as it always was), or out of memory */
		tt_pool_run(n, 0, snapshot_one, objs);
		return;
	}
	size_t r = 0, l = remote;
	for (size_t i = 0; i < n; i++)
		index[(objs[i].caps & TETHER_CAP_REMOTE_FINGERPRINT) ? r++ : l++] = i;
	struct subset rs = {objs, index}, ls = {objs, index + remote};
	tt_pool_run(remote, remote < REMOTE_THREADS ? (int)remote : REMOTE_THREADS, snapshot_indexed, &rs);
	if (n > remote)
		tt_pool_run(n - remote, 0, snapshot_indexed, &ls);
	free(index);
}

void tt_objs_snapshot(struct tt_obj *objs, size_t n)
{
	int64_t start = now_ns();
	size_t i = 0;
	while (i < n && (i == 0 || now_ns() - start < INLINE_BUDGET_NS)) {
		int share = objs[i].ctx.threads;
		if (objs[i].threads_alone > 0)
			objs[i].ctx.threads = objs[i].threads_alone;
		snapshot_one(objs, i);
		objs[i].ctx.threads = share;
		i++;
	}
	if (i < n)
		snapshot_pooled(objs + i, n - i);
}

void tt_objs_free(struct tt_obj *objs, size_t n)
{
	if (!objs)
		return;
	for (size_t i = 0; i < n; i++) {
		json_decref(objs[i].fp.state);
		free(objs[i].fp.listing);
		free(objs[i].error);
		free(objs[i].detail);
		json_decref(objs[i].working_ref);
		json_decref(objs[i].locator);
	}
	free(objs);
}

int tt_obj_pin_id(const struct tether_repo *repo, const struct tt_obj *o, char *out)
{
	json_t *identity = NULL;
	int rc = o->b->identity(&o->ctx, o->locator, &identity);
	if (rc)
		return rc;
	json_t *content = tt_content_state(o->b, o->fp.state);
	rc = tt_pin_id(repo->id, o->b->kind, identity, content, out);
	json_decref(identity);
	json_decref(content);
	return rc;
}

struct tree_collect {
	struct tt_manifest_set *set;
	const char *base;
	const char *id;
	int rc;
};

static int collect_manifest(void *ud, const char *path, const char *data, size_t len)
{
	struct tree_collect *tc = ud;
	size_t pl = strlen(path);
	if (pl <= 5 || strcmp(path + pl - 5, ".toml") != 0)
		return 0;
	char *key = strndup(path, pl - 5);
	char *name = tt_strdupf("%s/%s at %.12s", tc->base, path, tc->id);
	struct tt_manifest m;
	int rc = tt_key_check(key);
	if (rc)
		rc = tether_error_set(TETHER_ECONFIG, "%s: not a valid object key", name);
	if (!rc)
		rc = tt_manifest_parse(key, data, len, name, &m);
	free(key);
	free(name);
	if (rc) {
		tc->rc = rc;
		return 1;
	}
	tt_manifest_set_push(tc->set, &m);
	return 0;
}

int tt_manifests_at(struct tether_repo *repo, const char *id, struct tt_manifest_set *out)
{
	if (!*id)
		return tt_manifests_load_working(repo->root, out);
	memset(out, 0, sizeof *out);
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	char *dir = tt_repo_vcs_path(repo, ".tether/objects");
	struct tree_collect tc = {.set = out, .base = dir, .id = id};
	rc = repo->vcs->read_tree(repo->vh, id, dir, collect_manifest, &tc);
	free(dir);
	/* A manifest the callback refused stops the walk, and the walk's own
	 * return is then the VCS's "stopped": the manifest's code is the one
	 * that says why (a newer layout is exit 3, not 1, as in the working
	 * copy). */
	if (tc.rc)
		rc = tc.rc;
	if (rc)
		tt_manifest_set_free(out);
	else
		tt_manifest_set_sort(out);
	return rc;
}
