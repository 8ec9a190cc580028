/* Working branches: a fork is a branch created off a pin's snapshot, or
 * reset onto it (Icechunk's create_branch / reset_branch); promote resets
 * the base branch to the fork's head when that is a fast-forward, and
 * move_base resets it back to an older head (undo of a promote). Moves
 * are conditional on the head the caller saw, checked against the freshly
 * read repository inside the update, so the check and the write see one
 * state. On the local filesystem the write itself is not atomic against
 * other writers (Icechunk's local storage compares nothing), which is why
 * the backend does not claim CONDITIONAL_REF there. */
#include "backends/icechunk/ic.h"

#include <stdlib.h>
#include <string.h>

static int source_snapshot(struct ic_repository *repo, const json_t *state, const json_t *pin_ref,
                           struct ic_id *out)
{
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	const char *pin = json_string_value(json_object_get(pin_ref, "pin"));
	if (!tag || !pin)
		return ic_state_snapshot(state, repo->uri, out);
	char *live = NULL;
	int rc = ic_live_tag(repo, tag, pin, &live, out);
	if (rc == 0 && !live)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: cannot fork: tag %s is gone (`tether repair` re-pins the "
		                                        "state if the repository still holds it)", repo->uri, tag);
	free(live);
	return rc;
}

static int refuse_base(const struct ic_loc *loc, const char *branch, const char *doing)
{
	if (strcmp(branch, loc->branch) == 0 || strcmp(branch, "main") == 0)
		return tether_error_set(TETHER_EREFUSED, "%s: will not %s branch %s, the object's base branch", loc->uri,
		                        doing, branch);
	return 0;
}

int ic_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
            const char *branch, const json_t *expect, json_t **working_ref)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id to, seen;
	*working_ref = NULL;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	if ((rc = refuse_base(&loc, branch, "fork over")) == 0 && (rc = source_snapshot(&repo, state, pin_ref, &to)) == 0) {
		int absent = expect && !json_is_object(expect);
		if (expect && !absent)
			rc = ic_state_snapshot(expect, repo.uri, &seen);
		if (rc == 0)
			rc = ic_fork_branch(&repo, branch, &to, absent, expect && !absent ? &seen : NULL);
	}
	ic_repository_close(&repo);
	if (rc == 0 && !(*working_ref = json_pack("{s:s}", "working_branch", branch)))
		rc = ic_fail_oom();
	return rc;
}

/* The working ref's branch, and the repository opened. */
static int open_working(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                        struct ic_loc *loc, struct ic_repository *repo, const char **branch)
{
	*branch = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!*branch)
		return tether_error_set(TETHER_ECONFIG, "icechunk working ref names no working_branch");
	return ic_open_locator(ctx, locator, loc, repo);
}

int ic_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	struct ic_loc loc;
	struct ic_repository repo;
	const char *branch = NULL;
	int rc = open_working(ctx, locator, working_ref, &loc, &repo, &branch);
	if (rc)
		return rc;
	if ((rc = refuse_base(&loc, branch, "delete")) == 0)
		rc = ic_delete_branch(&repo, branch, NULL);
	ic_repository_close(&repo);
	return rc;
}

int ic_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                             const json_t *expect)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id want;
	const char *branch = NULL;
	int rc = open_working(ctx, locator, working_ref, &loc, &repo, &branch);
	if (rc)
		return rc;
	if ((rc = refuse_base(&loc, branch, "delete")) == 0 && (rc = ic_state_snapshot(expect, repo.uri, &want)) == 0)
		rc = ic_delete_branch(&repo, branch, &want);
	ic_repository_close(&repo);
	return rc;
}

int ic_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	struct ic_loc loc;
	struct ic_repository repo;
	json_t *branches = NULL;
	*refs = NULL;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	rc = ic_list_refs(&repo, 0, &branches);
	ic_repository_close(&repo);
	if (rc)
		return rc;
	char *prefix = tt_strdupf("tether.ws.%.8s.", ctx && ctx->dataset_id ? ctx->dataset_id : "");
	json_t *out = json_array();
	const char *name;
	json_t *sid;
	json_object_foreach(branches, name, sid) {
		if (!prefix || !out || strncmp(name, prefix, strlen(prefix)) != 0)
			continue;
		json_array_append_new(out, json_pack("{s:s, s:{s:s}, s:{s:O}}", "branch", name, "ref", "working_branch",
		                                     name, "head", "snapshot_id", sid));
	}
	json_decref(branches);
	if (!prefix || !out) {
		free(prefix);
		json_decref(out);
		return ic_fail_oom();
	}
	free(prefix);
	*refs = out;
	return 0;
}

static int is_ancestor(struct ic_repository *repo, const struct ic_id *ancestor, const struct ic_id *of, int *yes)
{
	json_t *chain = NULL;
	char want[IC_ID_CHARS + 1];
	ic_id_text(ancestor, want);
	*yes = 0;
	int rc = ic_ancestry(repo, of, 0, &chain);
	size_t i;
	json_t *e;
	json_array_foreach(chain, i, e)
		if (strcmp(json_string_value(json_object_get(e, "id")), want) == 0)
			*yes = 1;
	json_decref(chain);
	return rc;
}

/* The descendant's snapshot parents walked back, looking for the ancestor
 * (the repository file's snapshot table in spec 2, the snapshot files in
 * spec 1). */
int ic_descends(const struct tether_bctx *ctx, const json_t *locator, const json_t *ancestor,
                const json_t *descendant, int *answer)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id a, d;
	int exists = 0;
	*answer = 0;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	if ((rc = ic_state_snapshot(ancestor, repo.uri, &a)) == 0 && (rc = ic_state_snapshot(descendant, repo.uri, &d)) == 0 &&
	    (rc = ic_snapshot_exists(&repo, &a, &exists)) == 0 && !exists) {
		char text[IC_ID_CHARS + 1];
		ic_id_text(&a, text);
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: snapshot %s is not in the repository", repo.uri, text);
	}
	if (rc == 0 && memcmp(a.b, d.b, IC_ID_BYTES) == 0)
		*answer = 1;
	else if (rc == 0)
		rc = is_ancestor(&repo, &a, &d, answer);
	ic_repository_close(&repo);
	return rc;
}

int ic_promote(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref, const json_t *expect,
               json_t **result)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id head, target, seen;
	char head_text[IC_ID_CHARS + 1], target_text[IC_ID_CHARS + 1];
	int found = 0, ff = 0;
	*result = NULL;
	const char *branch = NULL;
	int rc = open_working(ctx, locator, working_ref, &loc, &repo, &branch);
	if (rc)
		return rc;
	if ((rc = ic_branch_head(&repo, loc.branch, &head, &found)) == 0 && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\"", repo.uri, loc.branch);
	if (rc == 0 && (rc = ic_branch_head(&repo, branch, &target, &found)) == 0 && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\"", repo.uri, branch);
	ic_id_text(&head, head_text);
	ic_id_text(&target, target_text);
	if (rc == 0 && expect) {
		if ((rc = ic_state_snapshot(expect, repo.uri, &seen)) == 0 && memcmp(seen.b, head.b, IC_ID_BYTES) != 0)
			rc = tether_error_set(TETHER_EREFUSED, "%s: %s moved: expected %s, found %s; nothing was changed",
			                      repo.uri, loc.branch, json_string_value(json_object_get(expect, "snapshot_id")),
			                      head_text);
	}
	int moved = rc == 0 && memcmp(head.b, target.b, IC_ID_BYTES) != 0;
	if (moved && (rc = is_ancestor(&repo, &head, &target, &ff)) == 0 && !ff) {
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s is at %s, which is not an ancestor of %s's head %s: "
		                                       "not a fast-forward", repo.uri, loc.branch, head_text, branch,
		                      target_text);
		tether_error_set_hint("Icechunk has no merge: re-apply the writes on a fresh fork of %s, or reset %s "
		                      "with repo.reset_branch() if losing its newer snapshots is intended",
		                      loc.branch, loc.branch);
	}
	/* The base moves only from the head the ancestry was checked against. */
	if (moved && rc == 0)
		rc = ic_fork_branch(&repo, loc.branch, &target, 0, &head);
	ic_repository_close(&repo);
	if (rc == 0 && !(*result = json_pack("{s:s, s:s, s:s, s:b}", "branch", loc.branch, "from", head_text, "to",
	                                     target_text, "moved", moved)))
		rc = ic_fail_oom();
	return rc;
}

/* The base reset to `state` (any snapshot the repository holds: an undo
 * moves it back past a promote), only from `expect`; the reset itself
 * compares again inside the update. */
int ic_move_base(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *expect,
                 json_t **result)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id head, to, seen;
	char head_text[IC_ID_CHARS + 1] = "", to_text[IC_ID_CHARS + 1] = "", seen_text[IC_ID_CHARS + 1] = "";
	int found = 0, moved = 0;
	*result = NULL;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	if ((rc = ic_branch_head(&repo, loc.branch, &head, &found)) == 0 && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\"", repo.uri, loc.branch);
	if (rc == 0)
		rc = ic_state_snapshot(state, repo.uri, &to);
	if (rc == 0)
		rc = ic_state_snapshot(expect, repo.uri, &seen);
	if (rc == 0) {
		ic_id_text(&head, head_text);
		ic_id_text(&to, to_text);
		ic_id_text(&seen, seen_text);
		moved = memcmp(head.b, to.b, IC_ID_BYTES) != 0;
	}
	if (moved && memcmp(head.b, seen.b, IC_ID_BYTES) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s moved: expected %s, found %s; nothing was changed", repo.uri,
		                      loc.branch, seen_text, head_text);
	else if (moved)
		rc = ic_fork_branch(&repo, loc.branch, &to, 0, &seen);
	ic_repository_close(&repo);
	if (rc == 0 && !(*result = json_pack("{s:s, s:s, s:s, s:b}", "branch", loc.branch, "from", head_text, "to",
	                                     to_text, "moved", moved)))
		rc = ic_fail_oom();
	return rc;
}
