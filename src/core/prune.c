/* gc --prune-workspaces: see prune.h. A working branch holds writes a
 * workspace made; once its bookmark is gone nobody will fork from it or
 * commit it again, but its head may still be the only copy of work. So
 * only a head some pin also holds (its state recorded in history with a
 * pin) is deleted by default: the pin keeps the data, the branch is
 * clutter. The rest needs --force-prune, as does any branch of a store
 * whose branches are its storage (deleting one drops data, pinned or not). */
#include "core/prune.h"

#include "core/abi.h"
#include "core/gc_stores.h"
#include "core/pinid.h"
#include "core/registry.h"
#include "core/workspace.h"
#include "format/cjson.h"

#include <stdlib.h>
#include <string.h>

/* {working branch name: true} for every bookmark a workspace may still
 * stand for: the VCS's live bookmarks, this checkout's own bookmark (it
 * may have no branch yet, e.g. a jj workspace's name), and the ones kept
 * by name. Names go through tt_working_branch_name, so a bookmark whose
 * characters were replaced still matches its branch. */
static void add_live(struct tether_repo *repo, json_t *live, const char *bookmark)
{
	if (!bookmark)
		return;
	char *name = tt_working_branch_name(repo, bookmark);
	json_object_set_new(live, name, json_true()); /* copies the key */
	free(name);
}

static int live_branches(struct tether_repo *repo, const struct tether_gc_opts *opts, json_t *live)
{
	json_t *names = NULL, *ws = NULL, *n;
	size_t i;
	int rc = tt_repo_vcs(repo);
	if (!rc && !TT_VCS_GET(repo->vcs, list_bookmarks))
		rc = tether_error_set(TETHER_ECONFIG, "the %s module cannot list bookmarks: rebuild it",
		                      repo->vcs->name);
	if (!rc)
		rc = TT_VCS_GET(repo->vcs, list_bookmarks)(repo->vh, &names);
	if (!rc)
		rc = tt_workspace_load(repo, &ws);
	if (rc) {
		json_decref(names);
		return rc;
	}
	json_array_foreach(names, i, n)
		add_live(repo, live, json_string_value(n));
	add_live(repo, live, json_string_value(json_object_get(ws, "bookmark")));
	for (i = 0; i < opts->n_keep; i++)
		add_live(repo, live, opts->keep_workspaces[i]);
	json_decref(names);
	json_decref(ws);
	return 0;
}

/* Does a pin hold `head`: is it the state of a pinned record of this
 * store (same kind and identity) in history? */
int tt_prune_head_pinned(struct tether_repo *repo, const struct tt_history *h, const json_t *store,
                         const struct tether_backend *b, const json_t *head)
{
	const char *kind = json_string_value(json_object_get(store, "kind"));
	const char *k;
	json_t *rec;
	json_object_foreach(h->records, k, rec) {
		if (!json_is_string(json_object_get(rec, "pin")) ||
		    strcmp(json_string_value(json_object_get(rec, "kind")), kind) != 0 ||
		    !tt_same_content(b, json_object_get(rec, "state"), head))
			continue;
		struct tether_bctx ctx;
		tt_repo_bctx(repo, kind, NULL, &ctx);
		json_t *identity = NULL;
		int same = b->identity(&ctx, json_object_get(rec, "locator"), &identity) == 0 &&
		           json_equal(identity, json_object_get(store, "identity"));
		json_decref(identity);
		if (same)
			return 1;
	}
	tether_error_clear();
	return 0;
}

/* What gc does with a dead branch, and why. */
static const char *decide(int pinned, int storage, int force, const char **reason)
{
	if (storage) {
		*reason = force ? "--force-prune: the branch is the store's storage"
		                : "the branch is the store's storage: only --force-prune deletes it";
		return force ? "delete" : "keep";
	}
	if (pinned) {
		*reason = "its head is pinned";
		return "delete";
	}
	*reason = force ? "--force-prune: its head is pinned by nothing"
	                : "its head is pinned by nothing: only --force-prune deletes it";
	return force ? "delete" : "keep";
}

static int prune_store(struct tether_repo *repo, const struct tt_history *h, const json_t *store,
                       const json_t *live, int force, json_t *out, json_t *skipped)
{
	const char *kind = json_string_value(json_object_get(store, "kind"));
	const struct tether_backend *b = tether_backend_find(kind);
	const json_t *locator = json_object_get(store, "locator");
	struct tether_bctx ctx;
	tt_gc_store_bctx(repo, store, json_array_get(json_object_get(store, "locators"), 0), &ctx);
	unsigned caps;
	int rc = tt_object_caps(b, &ctx, locator, NULL, &caps);
	if (!rc && (!(caps & TETHER_CAP_FORK) || !TT_BACKEND_GET(b, list_working_refs) ||
	            !TT_BACKEND_GET(b, delete_working_ref)))
		return 0;
	json_t *refs = NULL, *r;
	size_t i;
	if (!rc && (rc = TT_BACKEND_GET(b, list_working_refs)(&ctx, locator, &refs)) != 0)
		rc = tether_error_set(rc, "%s store: cannot list its working branches: %s", kind, tether_error_last());
	if (rc && !json_is_true(json_object_get(store, "in_history"))) {
		/* Only the journal names it: its system may be gone. */
		char *name = tt_gc_store_name(store);
		tt_gc_skip_store(skipped, name, tether_error_last());
		free(name);
		tether_error_clear();
		return 0;
	}
	if (rc)
		return rc;
	json_array_foreach(refs, i, r) {
		const char *branch = json_string_value(json_object_get(r, "branch"));
		if (!branch || json_object_get(live, branch))
			continue;
		const json_t *head = json_object_get(r, "head");
		const char *reason;
		int pinned = head && tt_prune_head_pinned(repo, h, store, b, head);
		const char *action = decide(pinned, (caps & TETHER_CAP_BRANCH_IS_STORAGE) != 0, force, &reason);
		json_array_append_new(out, json_pack("{s:s, s:O, s:O, s:O, s:s, s:O?, s:b, s:s, s:s, s:b}", "kind",
		                                     kind, "identity", json_object_get(store, "identity"), "store",
		                                     store, "ref", json_object_get(r, "ref"), "branch", branch,
		                                     "head", head, "pinned", pinned, "action", action, "reason",
		                                     reason, "done", 0));
	}
	json_decref(refs);
	return 0;
}

int tt_prune_find(struct tether_repo *repo, const struct tt_history *h, const json_t *stores,
                  const struct tether_gc_opts *opts, json_t *out, json_t *skipped)
{
	json_t *live = json_object();
	int rc = live_branches(repo, opts, live);
	const char *k;
	json_t *store;
	json_object_foreach((json_t *)stores, k, store) {
		if (rc)
			break;
		rc = prune_store(repo, h, store, live, opts->force_prune, out, skipped);
	}
	json_decref(live);
	return rc;
}

/* Delete a working branch through every locator of its store, the ones
 * that carry more first (as gc releases pins); the first failure stops. */
static int delete_branch(struct tether_repo *repo, const json_t *p)
{
	const json_t *store = json_object_get(p, "store");
	const struct tether_backend *b = tether_backend_find(json_string_value(json_object_get(store, "kind")));
	size_t i;
	json_t *entry;
	json_array_foreach(json_object_get(store, "locators"), i, entry) {
		struct tether_bctx ctx;
		tt_gc_store_bctx(repo, store, entry, &ctx);
		tether_error_clear();
		/* Conditional on the head gc reviewed where the backend can
		 * (delete_working_ref_if): a write since is kept, and refused. */
		const json_t *head = json_object_get(p, "head");
		int rc = head && TT_BACKEND_GET(b, delete_working_ref_if)
		                 ? TT_BACKEND_GET(b, delete_working_ref_if)(&ctx, json_object_get(entry, "locator"),
		                                                            json_object_get(p, "ref"), head)
		                 : TT_BACKEND_GET(b, delete_working_ref)(&ctx, json_object_get(entry, "locator"),
		                                                         json_object_get(p, "ref"));
		if (rc)
			return rc;
	}
	return 0;
}

void tt_prune_apply(struct tether_repo *repo, json_t *prune, json_t *errors)
{
	size_t i;
	json_t *p;
	json_array_foreach(prune, i, p) {
		if (strcmp(json_string_value(json_object_get(p, "action")), "delete") != 0)
			continue;
		int rc = delete_branch(repo, p);
		json_object_set_new(p, "done", json_boolean(rc == 0));
		if (rc)
			json_array_append_new(errors, json_sprintf("%s: %s", json_string_value(json_object_get(p, "branch")),
			                                          tether_error_last()));
	}
}

json_t *tt_prune_report(const json_t *prune)
{
	json_t *rows = json_array(), *p;
	size_t i;
	json_array_foreach(prune, i, p) {
		json_t *row = json_deep_copy(p);
		json_object_del(row, "store");
		json_object_del(row, "ref");
		json_array_append_new(rows, row);
	}
	return rows;
}
