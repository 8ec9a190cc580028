/* The inverse of a commit (undo.h): its VCS commit removed while it is
 * still HEAD and no other ref holds it, then the pins it created released
 * when nothing else names them. The data stays where the commit found it:
 * what the commit recorded is uncommitted work again (status shows it, the
 * next commit records it), as after `jj undo` of a commit. Working refs
 * new.auto_fork moved after the commit stay where they are, at that data. */
#include "core/abi.h"
#include "core/engine.h"
#include "core/manifest.h"
#include "core/pinid.h"
#include "core/repo.h"
#include "core/surgery.h"
#include "core/undo.h"

#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *e, const char *key)
{
	return json_string_value(json_object_get(e, key));
}

static int check(struct tt_undo *u)
{
	const char *commit = str(u->entry, "commit"), *before = str(u->entry, "head_before");
	char head[41] = "";
	if (!commit)
		return tether_error_set(TETHER_EREFUSED, "journal entry %s records no commit to undo", str(u->entry, "id"));
	if (!before)
		return tether_error_set(TETHER_EREFUSED, "commit %.12s is the branch's first: undo takes back a commit "
		                        "onto its parent, and it has none", commit);
	int removed = str(u->progress, "removed") != NULL;
	int rc = u->repo->vcs->resolve(u->repo->vh, "HEAD", head);
	if (rc == TETHER_ENOTFOUND)
		tether_error_clear(), rc = 0;
	if (rc)
		return rc;
	if (removed && strcmp(head, str(u->progress, "removed")) != 0)
		return tether_error_set(TETHER_EREFUSED, "HEAD moved since the interrupted undo removed commit %.12s "
		                        "(it is %.12s, not %.12s)", commit, head, str(u->progress, "removed"));
	if (!removed && strcmp(head, commit) != 0)
		return tether_error_set(TETHER_EREFUSED, "history moved on since the commit: HEAD is %.12s, not %.12s, "
		                        "the commit to undo", *head ? head : "unborn", commit);
	json_t *refs = NULL;
	if (!removed)
		rc = tt_refuse_published(u->repo, commit, 0, "undo", &refs);
	json_decref(refs);
	char ignored[41];
	if (!rc && !removed)
		rc = tt_vcs_abandon(u->repo, commit, commit, 1, ignored);
	if (rc)
		return rc;
	if (!removed)
		json_array_append_new(u->steps, json_sprintf("remove commit %.12s (HEAD back to %.12s)", commit, before));
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(u->entry, "created"), i, p)
		json_array_append_new(u->steps, json_sprintf("release pin %s of %s, unless another commit names it",
		                                              str(p, "pin"), str(p, "key")));
	return 0;
}

/* Is pin entry p one the undone commit itself records? The journal is a
 * file in the repository's directory, not proof: an entry that was
 * crafted (or is corrupt) could name any locator, pin_ref or pin, and the
 * backend's unpin deletes what it is given. So a pin is released only
 * when it is this dataset's (its id's prefix) and the commit's manifest of
 * that key records exactly it: the same kind, locator, pin and pin_ref.
 * The commit object outlives its removal from the branch. */
static int recorded_by_commit(const struct tt_undo *u, const struct tt_manifest_set *at, const json_t *p)
{
	const char *key = str(p, "key"), *pin = str(p, "pin");
	if (!key || !pin || strlen(pin) != TT_PIN_ID_LEN || strncmp(pin, u->repo->id, 8) != 0 || pin[8] != '.')
		return 0;
	const struct tt_manifest *m = tt_manifest_set_find(at, key);
	return m && tt_manifest_pin(m) && strcmp(tt_manifest_pin(m), pin) == 0 && tt_manifest_kind(m) && str(p, "kind") &&
	       strcmp(tt_manifest_kind(m), str(p, "kind")) == 0 &&
	       json_equal(tt_manifest_locator(m), json_object_get(p, "locator")) &&
	       json_equal(json_object_get(m->doc, "pin_ref"), json_object_get(p, "pin_ref"));
}

/* Release the pins the commit created that nothing names now. */
static int release(struct tt_undo *u)
{
	json_t *orphans = NULL, *released = json_array(), *errors = json_array();
	struct tt_manifest_set at = {0};
	int rc = tt_manifests_at(u->repo, str(u->entry, "commit"), &at);
	if (!rc)
		rc = tt_pins_unnamed(u->repo, json_object_get(u->entry, "created"), &orphans);
	size_t i;
	json_t *p;
	json_array_foreach(orphans, i, p) {
		if (rc)
			break;
		if (!recorded_by_commit(u, &at, p)) {
			json_array_append_new(errors, json_sprintf("pin %s of %s not released: the commit undone does not "
			                                           "record it (the journal entry does not match the commit)",
			                                           str(p, "pin") ? str(p, "pin") : "(none)",
			                                           str(p, "key") ? str(p, "key") : "(no key)"));
			continue;
		}
		const struct tether_backend *b = tether_backend_find(str(p, "kind"));
		int (*unpin)(const struct tether_bctx *, const json_t *, const json_t *) = b ? TT_BACKEND_GET(b, unpin) : NULL;
		struct tether_bctx ctx;
		tt_repo_bctx(u->repo, str(p, "kind"), str(p, "key"), &ctx);
		tether_error_clear();
		if (!unpin || unpin(&ctx, json_object_get(p, "locator"), json_object_get(p, "pin_ref")) != 0) {
			/* gc releases what is left, as it does any unnamed pin */
			json_array_append_new(errors, json_sprintf("%s: pin %s not released (%s); `tether gc` releases it",
			                                           str(p, "key"), str(p, "pin"),
			                                           unpin ? tether_error_last() : "its backend is not here"));
			continue;
		}
		json_array_append_new(released, json_pack("{s:s, s:s}", "key", str(p, "key"), "pin", str(p, "pin")));
	}
	tt_manifest_set_free(&at);
	json_object_set_new(u->report, "released", released);
	json_object_set_new(u->report, "errors", errors);
	json_decref(orphans);
	return rc;
}

static int apply(struct tt_undo *u)
{
	const char *commit = str(u->entry, "commit");
	char head[41] = "";
	int rc = 0;
	if (!str(u->progress, "removed")) {
		rc = tt_vcs_abandon(u->repo, commit, commit, 0, head);
		if (!rc)
			rc = tt_undo_progress(u, "removed", json_string(head));
		tt_fault_point("undo", "vcs-removed");
	}
	if (!rc)
		rc = release(u);
	if (!rc)
		json_object_set_new(u->report, "head", json_string(str(u->progress, "removed")));
	return rc;
}

const struct tt_undo_inverse tt_undo_commit = {
	.op = "commit",
	.check = check,
	.apply = apply,
};
