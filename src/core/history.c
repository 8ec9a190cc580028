/* The history walk behind gc and verify --all-history: every manifest in
 * every commit reachable from any ref, plus the working copy, each read
 * once. The VCS's history_files hands over each distinct (path, blob)
 * once, skipping commits whose .tether/objects tree it has already read,
 * so the cost grows with the number of distinct manifests, not commits. */
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
	struct tt_history *h;
	const char *dir;
	int rc;
};

/* One manifest blob the walk has not met before at its path. */
static int on_manifest(void *ud, const char *commit, const char *path, const char *data, size_t len)
{
	struct walk *w = ud;
	size_t pl = strlen(path);
	if (pl <= 5 || strcmp(path + pl - 5, ".toml") != 0)
		return 0;
	char *key = strndup(path, pl - 5);
	char *name = tt_strdupf("%s/%s at %.12s", w->dir, path, commit);
	struct tt_manifest m;
	int rc = tt_manifest_parse(key, data, len, name, &m);
	free(key);
	free(name);
	if (rc) {
		w->rc = rc;
		return 1;
	}
	note_manifest(w->h, &m, commit);
	tt_manifest_free(&m);
	w->h->manifests_read++;
	return 0;
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
	char *dir = tt_repo_vcs_path(repo, ".tether/objects");
	/* Beside the journal, in the directory only the VCS and tether write:
	 * a clone cannot bring a cache along that would steer gc. */
	char *cache = repo->common_dir ? tt_strdupf("%s/tether/cache/%s/history-walk", repo->common_dir, repo->id)
	                               : NULL;
	struct walk w = {.h = h, .dir = dir};
	rc = repo->vcs->history_files(repo->vh, dir, cache, on_manifest, &w, &h->commits);
	if (w.rc)
		rc = w.rc;
	free(cache);
	free(dir);
	return rc;
}

void tt_history_free(struct tt_history *h)
{
	json_decref(h->pins);
	json_decref(h->records);
	json_decref(h->working_listings);
	memset(h, 0, sizeof *h);
}
