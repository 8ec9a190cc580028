/* History surgery's shared steps (surgery.h). */
#include "core/surgery.h"

#include "core/history.h"
#include "core/journal.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

int tt_commit_new_pins(struct tether_repo *repo, const char *id, json_t **pins)
{
	struct tt_manifest_set at = {0}, before = {0};
	char parent[41];
	*pins = NULL;
	int rc = tt_manifests_at(repo, id, &at);
	char *rev = tt_strdupf("%s^", id);
	int has_parent = !rc && repo->vcs->resolve(repo->vh, rev, parent) == 0;
	free(rev);
	tether_error_clear();
	if (!rc && has_parent)
		rc = tt_manifests_at(repo, parent, &before);
	if (!rc) {
		*pins = json_array();
		for (size_t i = 0; i < at.n; i++) {
			const char *pin = tt_manifest_pin(&at.v[i]);
			struct tt_manifest *was = tt_manifest_set_find(&before, at.v[i].key);
			const char *old = was ? tt_manifest_pin(was) : NULL;
			if (pin && !(old && strcmp(old, pin) == 0))
				json_array_append_new(*pins, json_pack("{s:s, s:s, s:s}", "key", at.v[i].key, "kind",
				                                       tt_manifest_kind(&at.v[i]), "pin", pin));
		}
	}
	tt_manifest_set_free(&at);
	tt_manifest_set_free(&before);
	return rc;
}

int tt_refuse_published(struct tether_repo *repo, const char *id, int force, const char *what, json_t **refs)
{
	int (*containing)(struct tether_vcs *, const char *, json_t **) = TT_VCS_GET(repo->vcs, containing_refs);
	*refs = NULL;
	if (!containing)
		return tether_error_set(TETHER_ERROR, "the %s module cannot tell which refs hold a commit (it is older "
		                        "than this tether)", repo->vcs->name);
	int rc = containing(repo->vh, id, refs);
	if (rc || force || !json_array_size(*refs))
		return rc;
	const json_t *first = json_array_get(*refs, 0);
	const char *name = json_string_value(json_object_get(first, "ref"));
	int pushed = 0;
	size_t i;
	json_t *r;
	json_array_foreach(*refs, i, r) {
		if (json_is_true(json_object_get(r, "remote")) && !pushed) {
			pushed = 1;
			name = json_string_value(json_object_get(r, "ref"));
		}
	}
	size_t n = json_array_size(*refs);
	rc = tether_error_set(TETHER_EREFUSED, "commit %.12s %s %s%s%s", id,
	                      pushed ? "is already pushed: it is in" : "is in another branch:", name,
	                      n > 1 ? " and " : "", n > 1 ? (n == 2 ? "one more ref" : "more refs") : "");
	tether_error_set_hint("rewriting it leaves %s with the old commit; `tether %s --force` does it anyway",
	                      name, what);
	return rc;
}

int tt_pins_unnamed(struct tether_repo *repo, const json_t *pins, json_t **orphans)
{
	struct tt_history h = {0};
	*orphans = NULL;
	int rc = tt_history_collect(repo, &h);
	json_t *open = NULL;
	if (!rc)
		rc = tt_journal_open_entries(repo, &open);
	if (!rc) {
		/* an unfinished commit's pins are kept, as gc keeps them */
		size_t i, j;
		json_t *e, *p;
		json_array_foreach(open, i, e) {
			const char *status = json_string_value(json_object_get(e, "status"));
			if (status && strcmp(status, "INCOMPLETE") == 0)
				json_array_foreach(json_object_get(e, "pins"), j, p)
					if (json_is_string(json_object_get(p, "pin")))
						json_object_set_new(h.pins, json_string_value(json_object_get(p, "pin")), json_true());
		}
		*orphans = json_array();
		json_array_foreach(pins, i, p) {
			const char *pin = json_string_value(json_object_get(p, "pin"));
			if (pin && !json_object_get(h.pins, pin))
				json_array_append(*orphans, p);
		}
	}
	json_decref(open);
	tt_history_free(&h);
	return rc;
}

/* The dataset's committed paths: a manifest is a whole snapshot, so where
 * a later commit changed one that the dropped commit changed too, the
 * later version stands. */
static const char *const snapshot_paths[] = {"tether.toml", ".tether/.gitignore", ".tether/objects",
                                             ".tether/listings"};
#define N_SNAPSHOT (sizeof snapshot_paths / sizeof snapshot_paths[0])

int tt_vcs_abandon(struct tether_repo *repo, const char *id, const char *expect_head, int check_only,
                   char new_head[41])
{
	int (*abandon)(struct tether_vcs *, const char *, const char *, int, const char *const *, size_t, char[41]) =
		TT_VCS_GET(repo->vcs, abandon);
	new_head[0] = '\0';
	if (!abandon)
		return tether_error_set(TETHER_ERROR, "the %s module cannot rewrite history (it is older than this "
		                        "tether)", repo->vcs->name);
	char *own[N_SNAPSHOT];
	for (size_t i = 0; i < N_SNAPSHOT; i++)
		own[i] = tt_repo_vcs_path(repo, snapshot_paths[i]);
	int rc = abandon(repo->vh, id, expect_head, check_only, (const char *const *)own, N_SNAPSHOT, new_head);
	for (size_t i = 0; i < N_SNAPSHOT; i++)
		free(own[i]);
	return rc;
}
