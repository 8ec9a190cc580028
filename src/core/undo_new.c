/* The inverse of `tether new` (undo.h): the working refs it forked taken
 * back (a branch it made deleted, one it moved put back where it was),
 * each only while it is still where new left it, so no write made on it
 * since is lost; then workspace.toml as it was, then the checkout moved
 * back (and a branch -b created deleted), only while it is still where
 * new left it: HEAD at new's commit, and on jj no operation since. */
#include "core/abi.h"
#include "core/pinid.h"
#include "core/repo.h"
#include "core/validate.h"
#include "core/workspace.h"
#include "core/undo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *e, const char *key)
{
	return json_string_value(json_object_get(e, key));
}

static int fork_done(const struct tt_undo *u, size_t i)
{
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(u->progress, "forks"), k, v) if ((size_t)json_integer_value(v) == i) return 1;
	return 0;
}

static const json_t *find_row(const json_t *rows, const char *branch)
{
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) if (str(row, "branch") && strcmp(str(row, "branch"), branch) == 0) return row;
	return NULL;
}

/* Fork f must still be where new left it: its branch at "after". *gone
 * when it no longer exists and new had made it: nothing to delete. */
static int check_fork(struct tt_undo *u, const json_t *f, int *gone, json_t **listed)
{
	const struct tether_backend *b = tether_backend_find(str(f, "kind"));
	const char *key = str(f, "key"), *branch = str(f, "branch");
	*gone = 0;
	if (listed)
		*listed = NULL;
	/* The journal is a file, not proof (a crafted or corrupt entry names
	 * what it likes): undo deletes or moves only a working branch of this
	 * dataset, named as tether names them, and the entry's ref must be
	 * that branch. Anything else is refused before a store is opened. */
	char prefix[32];
	snprintf(prefix, sizeof prefix, "tether.ws.%.8s.", u->repo->id);
	if (!key || tt_key_check(key) != 0 || !str(f, "kind") || !branch ||
	    strncmp(branch, prefix, strlen(prefix)) != 0 || strlen(branch) == strlen(prefix) ||
	    !json_is_object(json_object_get(f, "locator")))
		return tether_error_set(TETHER_EREFUSED, "journal entry %s: fork %s is not one `new` makes (a working "
		                        "branch %s... of an object key, with its kind and locator); nothing undone",
		                        str(u->entry, "id") ? str(u->entry, "id") : "?", key && !tt_key_check(key) ? key : "?",
		                        prefix);
	if (!b)
		return tether_error_set(TETHER_EREFUSED, "%s: no backend for kind %s here, to take back its fork", key,
		                        str(f, "kind"));
	int (*list)(const struct tether_bctx *, const json_t *, json_t **) = TT_BACKEND_GET(b, list_working_refs);
	if (!list)
		return 0; /* the conditional move in apply decides */
	struct tether_bctx ctx;
	tt_repo_bctx(u->repo, str(f, "kind"), key, &ctx);
	json_t *rows = NULL;
	int rc = list(&ctx, json_object_get(f, "locator"), &rows);
	if (rc) {
		rc = tether_error_set(rc, "%s: cannot read its working branches: %s", key, tether_error_last());
		json_decref(rows);
		return rc;
	}
	const json_t *row = find_row(rows, branch), *head = json_object_get(row, "head");
	const json_t *before = json_object_get(f, "before");
	if (!row && json_is_null(before)) {
		*gone = 1;
	} else if (!row) {
		rc = tether_error_set(TETHER_EREFUSED, "%s: working branch %s was deleted since `new` moved it", key,
		                      branch);
	} else if (!head || !tt_same_content(b, json_object_get(f, "after"), head)) {
		char *was = tt_state_brief(b, json_object_get(f, "after")), *now = head ? tt_state_brief(b, head) : NULL;
		rc = tether_error_set(TETHER_EREFUSED, "%s: working branch %s moved since `new` forked it (at %s, now at "
		                      "%s): undoing the fork would lose what was written there", key, branch, was,
		                      now ? now : "an unknown head");
		tether_error_set_hint("`tether commit` records that work; undo takes back only what nothing built on");
		free(was);
		free(now);
	}
	/* What a delete is given is the ref the backend lists for that branch,
	 * never the entry's own "ref" (which could name another branch). */
	if (!rc && row && listed)
		*listed = json_incref(json_object_get(row, "ref"));
	json_decref(rows);
	return rc;
}

static int check_checkout(struct tt_undo *u)
{
	const json_t *before = json_object_get(u->entry, "position_before");
	if (!json_is_object(before) || json_is_true(json_object_get(u->progress, "checkout")))
		return 0;
	const json_t *after = json_object_get(u->entry, "position_after");
	if (!json_is_object(after))
		return tether_error_set(TETHER_EREFUSED, "journal entry %s does not say where `new` left the checkout",
		                        str(u->entry, "id"));
	json_t *now = NULL;
	char head[41] = "";
	int rc = u->repo->vcs->position(u->repo->vh, &now);
	if (!rc && !json_equal(now, after))
		rc = tether_error_set(TETHER_EREFUSED, "the checkout moved on since `new` (the VCS is not where new left "
		                      "it: a checkout, or an operation, since)");
	json_decref(now);
	if (!rc && (rc = u->repo->vcs->resolve(u->repo->vh, "HEAD", head)) == 0 && str(u->entry, "target") &&
	    strcmp(head, str(u->entry, "target")) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "history moved on since `new`: HEAD is %.12s, not %.12s where new "
		                      "put it", head, str(u->entry, "target"));
	return rc;
}

/* The entry as `new` writes it, before any field is acted on: a corrupt
 * or crafted one (forks not a list, a position that is no position) would
 * otherwise be "undone" by the parts that happen to read as absent, such
 * as workspace.toml put back to a state no `new` left. */
static int check_shape(const struct tt_undo *u)
{
	const json_t *e = u->entry, *forks = json_object_get(e, "forks"), *f;
	size_t i;
	int ok = json_is_array(forks) && json_is_string(json_object_get(e, "target"));
	json_array_foreach(forks, i, f) ok &= json_is_object(f);
	static const char *const positions[] = {"position_before", "position_after"};
	for (size_t k = 0; k < 2; k++) {
		const json_t *v = json_object_get(e, positions[k]);
		ok &= !v || json_is_null(v) || json_is_object(v);
	}
	static const char *const strings[] = {"workspace_before", "created_branch"};
	for (size_t k = 0; k < 2; k++) {
		const json_t *v = json_object_get(e, strings[k]);
		ok &= !v || json_is_null(v) || json_is_string(v);
	}
	return ok ? 0 : tether_error_set(TETHER_EREFUSED, "journal entry %s is not an entry `new` writes (forks, "
	                                 "target, positions or workspace of the wrong type); nothing undone",
	                                 str(e, "id") ? str(e, "id") : "?");
}

static int check(struct tt_undo *u)
{
	const json_t *forks = json_object_get(u->entry, "forks");
	int rc = check_shape(u);
	if (!rc)
		rc = check_checkout(u);
	size_t i;
	json_t *f;
	json_array_foreach(forks, i, f) {
		int gone = 0;
		if (rc || fork_done(u, i))
			continue;
		rc = check_fork(u, f, &gone, NULL);
		if (rc)
			break;
		if (gone)
			json_array_append_new(u->steps, json_sprintf("%s: working branch %s is gone already", str(f, "key"),
			                                              str(f, "branch")));
		else if (json_is_null(json_object_get(f, "before")))
			json_array_append_new(u->steps, json_sprintf("%s: delete working branch %s", str(f, "key"),
			                                              str(f, "branch")));
		else
			json_array_append_new(u->steps, json_sprintf("%s: move working branch %s back where it was",
			                                              str(f, "key"), str(f, "branch")));
	}
	if (rc)
		return rc;
	if (!json_is_true(json_object_get(u->progress, "workspace")))
		json_array_append_new(u->steps, json_string("put .tether/workspace.toml back as it was before `new`"));
	const json_t *before = json_object_get(u->entry, "position_before");
	if (json_is_object(before) && !json_is_true(json_object_get(u->progress, "checkout"))) {
		const char *where = str(before, "branch") ? str(before, "branch") : str(before, "commit");
		json_array_append_new(u->steps, json_sprintf("move the checkout back%s%s%s%s", where ? " to " : "",
		                                              where ? where : "", str(u->entry, "created_branch")
		                                              ? " and delete branch " : "",
		                                              str(u->entry, "created_branch") ? str(u->entry, "created_branch")
		                                                                               : ""));
	}
	return 0;
}

static int undo_fork(struct tt_undo *u, const json_t *f)
{
	const struct tether_backend *b = tether_backend_find(str(f, "kind"));
	struct tether_bctx ctx;
	tt_repo_bctx(u->repo, str(f, "kind"), str(f, "key"), &ctx);
	const json_t *locator = json_object_get(f, "locator"), *before = json_object_get(f, "before");
	json_t *wref = NULL;
	int rc;
	tether_error_clear();
	if (json_is_null(before) || !before) {
		int gone = 0;
		json_t *listed = NULL;
		rc = check_fork(u, f, &gone, &listed); /* again, just before: nothing written there meanwhile */
		if (!rc && !gone)
			rc = TT_BACKEND_GET(b, delete_working_ref)(&ctx, locator, listed ? listed : json_object_get(f, "ref"));
		json_decref(listed);
	} else {
		rc = TT_BACKEND_GET(b, fork)(&ctx, locator, before, NULL, str(f, "branch"), json_object_get(f, "after"),
		                             &wref);
	}
	json_decref(wref);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot take back the fork of %s: %s", str(f, "key"), str(f, "branch"),
		                      tether_error_last());
	return rc;
}

static int apply(struct tt_undo *u)
{
	const json_t *forks = json_object_get(u->entry, "forks");
	int rc = 0;
	for (size_t i = json_array_size(forks); !rc && i-- > 0;) {
		if (fork_done(u, i))
			continue;
		rc = undo_fork(u, json_array_get(forks, i));
		if (!rc) {
			json_t *done = json_object_get(u->progress, "forks");
			if (!done)
				json_object_set_new(u->progress, "forks", done = json_array());
			json_array_append_new(done, json_integer((json_int_t)i));
			rc = tt_undo_progress(u, "forks", json_incref(done));
			tt_fault_point("undo", "fork-undone");
		}
	}
	if (!rc && !json_is_true(json_object_get(u->progress, "workspace"))) {
		rc = tt_workspace_restore(u->repo, str(u->entry, "workspace_before"));
		if (!rc)
			rc = tt_undo_progress(u, "workspace", json_true());
	}
	const json_t *before = json_object_get(u->entry, "position_before");
	if (!rc && json_is_object(before) && !json_is_true(json_object_get(u->progress, "checkout"))) {
		rc = u->repo->vcs->return_to(u->repo->vh, before, str(u->entry, "created_branch"));
		if (!rc)
			rc = tt_undo_progress(u, "checkout", json_true());
	}
	return rc;
}

const struct tt_undo_inverse tt_undo_new = {
	.op = "new",
	.check = check,
	.apply = apply,
};
