/* What status needs to know of HEAD's manifests (each one's digest, kind,
 * pin and state), cached under .tether/cache/ by commit id. A commit id
 * names its content, so a cache entry for the current HEAD is never stale;
 * finding HEAD's id with the probe costs a few small reads, and status on
 * local objects then never loads the VCS module. */
#include "core/engine.h"

#include "core/validate.h"
#include "util/fsutil.h"
#include "util/safefs.h"
#include "vcs/probe.h"

#include <stdlib.h>
#include <string.h>

static char *cache_path(const struct tether_repo *repo)
{
	return tt_path_join(repo->cache_dir, "head-manifests.json");
}

static json_t *view_of(const struct tt_manifest_set *set)
{
	json_t *view = json_object();
	for (size_t i = 0; i < set->n; i++) {
		const struct tt_manifest *m = &set->v[i];
		json_object_set_new(view, m->key, json_pack("{s:s, s:s, s:s?, s:O?}", "digest", m->digest, "kind",
		                                            tt_manifest_kind(m), "pin", tt_manifest_pin(m), "state",
		                                            tt_manifest_state(m)));
	}
	return view;
}

void tt_head_view_save(struct tether_repo *repo, const char *id, const struct tt_manifest_set *set)
{
	json_t *doc = json_pack("{s:s, s:o}", "commit", id, "objects", view_of(set));
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	char *path = cache_path(repo);
	/* Only a cache: failing to write it costs the next status some time. */
	if (text && tt_safe_write_atomic(repo->root, path, text, strlen(text)) != 0)
		tether_error_clear();
	free(path);
	free(text);
	json_decref(doc);
}

static json_t *cached_view(const struct tether_repo *repo, const char *id)
{
	char *path = cache_path(repo);
	char *text = NULL;
	size_t len = 0;
	json_t *doc = tt_safe_read(repo->root, path, &text, &len) == 0 ? json_loadb(text, len, 0, NULL) : NULL;
	tether_error_clear();
	free(text);
	free(path);
	json_t *objects = json_object_get(doc, "objects");
	const char *commit = json_string_value(json_object_get(doc, "commit"));
	json_t *view = commit && strcmp(commit, id) == 0 && json_is_object(objects) ? json_incref(objects) : NULL;
	json_decref(doc);
	/* Only a cache, but a file on disk: keys that are no object keys (or
	 * strings that are no C strings) make it a miss, never a path. */
	const char *key;
	json_t *entry;
	json_object_foreach(view, key, entry) {
		if (tt_key_check(key) != 0 || !json_is_object(entry) || tt_strings_check(entry, "headview") != 0) {
			tether_error_clear();
			json_decref(view);
			return NULL;
		}
	}
	return view;
}

int tt_head_view(struct tether_repo *repo, json_t **view)
{
	*view = NULL;
	char probed[41], id[41];
	int prc = tt_vcs_probe_head(repo->root, probed);
	if (prc == TETHER_ENOTFOUND) {
		*view = json_object(); /* no commit yet */
		return 0;
	}
	if (prc == 0 && (*view = cached_view(repo, probed)))
		return 0;
	int rc = tt_repo_resolve(repo, "HEAD", id);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		*view = json_object();
		return 0;
	}
	struct tt_manifest_set head;
	if (!rc)
		rc = tt_manifests_at(repo, id, &head);
	if (rc)
		return rc;
	*view = view_of(&head);
	tt_head_view_save(repo, id, &head);
	tt_manifest_set_free(&head);
	return 0;
}
