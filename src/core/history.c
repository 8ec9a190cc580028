/* The history walk behind gc and verify --all-history: every manifest in
 * every commit reachable from any ref, plus the working copy, each read
 * once. A commit whose .tether/objects tree was already seen is skipped
 * whole, and a manifest blob already parsed is skipped by its digest, so
 * the cost grows with the number of distinct manifests, not commits. */
#include "core/history.h"

#include "core/registry.h"
#include "format/cjson.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static void note_manifest(struct tt_history *h, const struct tt_manifest *m, const char *commit)
{
	const char *pin = tt_manifest_pin(m);
	if (pin)
		json_object_set_new(h->pins, pin, json_true());
	const char *listing = tt_manifest_listing(m);
	if (listing && !*commit)
		json_object_set_new(h->working_listings, listing, json_true());
	json_t *rec = json_pack("{s:s, s:O, s:O*, s:O*, s:O*}", "kind", tt_manifest_kind(m), "locator",
	                        tt_manifest_locator(m), "policy", tt_manifest_policy(m), "state",
	                        tt_manifest_state(m), "pin_ref", json_object_get(m->doc, "pin_ref"));
	char *id = tt_cjson(rec);
	json_t *entry = json_object_get(h->records, id);
	if (!entry) {
		json_object_set_new(rec, "keys", json_array());
		json_object_set_new(rec, "commit", json_string(*commit ? commit : "@"));
		if (pin)
			json_object_set_new(rec, "pin", json_string(pin));
		json_object_set_new(h->records, id, rec);
		entry = rec;
	} else {
		json_decref(rec);
	}
	json_t *keys = json_object_get(entry, "keys");
	size_t i;
	json_t *k;
	int known = 0;
	json_array_foreach(keys, i, k) known |= strcmp(json_string_value(k), m->key) == 0;
	if (!known)
		json_array_append_new(keys, json_string(m->key));
	free(id);
}

struct walk {
	struct tether_repo *repo;
	struct tt_history *h;
	json_t *seen_trees;
	json_t *seen_blobs;
	const char *commit;
	char *dir;
	int rc;
};

static int on_manifest(void *ud, const char *path, const char *data, size_t len)
{
	struct walk *w = ud;
	char digest[65];
	tether_sha256_hex(data, len, digest);
	if (json_object_get(w->seen_blobs, digest))
		return 0;
	json_object_set_new(w->seen_blobs, digest, json_true());
	size_t pl = strlen(path);
	if (pl <= 5 || strcmp(path + pl - 5, ".toml") != 0)
		return 0;
	char *key = strndup(path, pl - 5);
	char *name = tt_strdupf("%s/%s at %.12s", w->dir, path, w->commit);
	struct tt_manifest m;
	int rc = tt_manifest_parse(key, data, len, name, &m);
	free(key);
	free(name);
	if (rc) {
		w->rc = rc;
		return 1;
	}
	note_manifest(w->h, &m, w->commit);
	tt_manifest_free(&m);
	w->h->manifests_read++;
	return 0;
}

static int on_commit(void *ud, const char *id)
{
	struct walk *w = ud;
	char tree[41];
	w->h->commits++;
	int rc = w->repo->vcs->tree_id(w->repo->vh, id, w->dir, tree);
	if (rc) {
		w->rc = rc;
		return 1;
	}
	if (!*tree || json_object_get(w->seen_trees, tree))
		return 0;
	json_object_set_new(w->seen_trees, tree, json_true());
	w->commit = id;
	rc = w->repo->vcs->read_tree(w->repo->vh, id, w->dir, on_manifest, w);
	if (rc && !w->rc)
		w->rc = rc;
	return w->rc ? 1 : 0;
}

int tt_history_collect(struct tether_repo *repo, struct tt_history *h)
{
	memset(h, 0, sizeof *h);
	h->pins = json_object();
	h->records = json_object();
	h->working_listings = json_object();
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	struct tt_manifest_set work;
	rc = tt_manifests_load_working(repo->root, &work);
	if (rc)
		return rc;
	for (size_t i = 0; i < work.n; i++)
		note_manifest(h, &work.v[i], "");
	tt_manifest_set_free(&work);
	struct walk w = {.repo = repo, .h = h, .seen_trees = json_object(), .seen_blobs = json_object(),
	                 .dir = tt_repo_vcs_path(repo, ".tether/objects")};
	rc = repo->vcs->each_commit(repo->vh, on_commit, &w);
	if (w.rc)
		rc = w.rc;
	json_decref(w.seen_trees);
	json_decref(w.seen_blobs);
	free(w.dir);
	return rc;
}

void tt_history_free(struct tt_history *h)
{
	json_decref(h->pins);
	json_decref(h->records);
	json_decref(h->working_listings);
	memset(h, 0, sizeof *h);
}
