/* Landing a working branch on its base. lakeFS has no fast-forward merge
 * (a merge always writes a merge commit), so promote moves the base to
 * the fork's head with a hard reset, after checking that the base is an
 * ancestor of it and holds no staged objects; lakeFS cannot make that move
 * conditional on the head, so the check and the move are two requests
 * (ATOMIC_REF, not CONDITIONAL_REF). merge is lakeFS's own three-way merge,
 * which writes nothing when it meets a conflict. */
#include "backends/lakefs/lakefs.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

struct landing {
	struct lfs_loc loc;
	struct lfs_conn c;
	char *fork; /* lakeFS's name of the working branch */
	char *base_head, *fork_head;
};

static void landing_end(struct landing *l)
{
	free(l->fork);
	free(l->base_head);
	free(l->fork_head);
	lfs_disconnect(&l->c);
}

static int landing_begin(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                         struct landing *l)
{
	memset(l, 0, sizeof *l);
	const char *branch = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!branch)
		return tether_error_set(TETHER_ECONFIG, "lakefs working ref names no working_branch");
	int rc = lfs_begin(ctx, locator, &l->loc, &l->c);
	if (rc)
		return rc;
	if (!(l->fork = lfs_branch_encode(branch)))
		rc = tt_fail_oom();
	if (rc == 0)
		rc = lfs_branch_head(&l->c, l->loc.branch, &l->base_head);
	if (rc == 0)
		rc = lfs_branch_head(&l->c, l->fork, &l->fork_head);
	if (rc)
		landing_end(l);
	return rc;
}

static json_t *moved_result(const char *branch, const char *from, const char *to, int moved)
{
	return json_pack("{s:s, s:s, s:s, s:b}", "branch", branch, "from", from, "to", to, "moved", moved);
}

int lfs_promote(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                const json_t *expect, json_t **result)
{
	*result = NULL;
	struct landing l;
	int rc = landing_begin(ctx, locator, working_ref, &l);
	if (rc)
		return rc;
	const char *seen = expect ? lfs_state_commit(expect) : NULL;
	if (expect && (!seen || strcmp(seen, l.base_head) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: %s moved: expected %s, found %s; nothing was "
		                                       "changed", l.c.repo, l.loc.branch, seen ? seen : "?", l.base_head);
	int moved = rc == 0 && strcmp(l.base_head, l.fork_head) != 0, ff = 0;
	if (moved && (rc = lfs_is_ancestor(&l.c, l.base_head, l.fork_head, &ff)) == 0 && !ff) {
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: %s is at %s, which is not an ancestor of %s's "
		                                       "head %s: not a fast-forward", l.c.repo, l.loc.branch, l.base_head,
		                      l.fork, l.fork_head);
		tether_error_set_hint("`tether merge` merges it with lakeFS's three-way merge");
	}
	if (moved && rc == 0 && (rc = lfs_refuse_staged(&l.c, l.loc.branch, "promote onto")) == 0)
		rc = lfs_reset_branch(&l.c, l.loc.branch, l.fork_head);
	if (rc == 0 && !(*result = moved_result(l.loc.branch, l.base_head, l.fork_head, moved)))
		rc = tt_fail_oom();
	landing_end(&l);
	return rc;
}

int lfs_merge(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref, const char *message,
              json_t **result)
{
	*result = NULL;
	struct landing l;
	int rc = landing_begin(ctx, locator, working_ref, &l);
	if (rc)
		return rc;
	if ((rc = lfs_refuse_staged(&l.c, l.loc.branch, "merge into")) != 0) {
		landing_end(&l);
		return rc;
	}
	char *r = lfs_esc(l.c.repo), *src = lfs_esc(l.fork), *dst = lfs_esc(l.loc.branch);
	char *path = r && src && dst ? tt_strdupf("/repositories/%s/refs/%s/merge/%s", r, src, dst) : NULL;
	char *msg = message && *message ? NULL : tt_strdupf("Merge %s into %s (tether)", l.fork, l.loc.branch);
	json_t *body = json_pack("{s:s}", "message", message && *message ? message : msg ? msg : "tether merge");
	json_t *answer = NULL;
	long status = 0;
	rc = path && body ? lfs_request(&l.c, "POST", path, body, NULL, &status, &answer) : tt_fail_oom();
	if (rc == TETHER_EREFUSED)
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS refused to merge %s into %s (%s); nothing was merged", l.fork,
		                      l.loc.branch, tether_error_last());
	const char *to = json_string_value(json_object_get(answer, "reference"));
	if (rc == 0 && !to)
		rc = tether_error_set(TETHER_EIO, "lakeFS repository %s: the merge answer has no reference", l.c.repo);
	if (rc == 0 && !(*result = moved_result(l.loc.branch, l.base_head, to, 1)))
		rc = tt_fail_oom();
	json_decref(answer);
	json_decref(body);
	free(r);
	free(src);
	free(dst);
	free(path);
	free(msg);
	landing_end(&l);
	return rc;
}

int lfs_move_base(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *expect,
                  json_t **result)
{
	*result = NULL;
	struct lfs_loc loc;
	struct lfs_conn c;
	int rc = lfs_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char *head = NULL;
	const char *to = lfs_state_commit(state), *seen = lfs_state_commit(expect);
	rc = lfs_branch_head(&c, loc.branch, &head);
	int moved = rc == 0 && strcmp(head, to) != 0;
	if (moved && (!seen || strcmp(head, seen) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "lakeFS repository %s: %s moved: expected %s, found %s; nothing was "
		                                       "changed", c.repo, loc.branch, seen ? seen : "?", head);
	else if (moved && (rc = lfs_refuse_staged(&c, loc.branch, "move")) == 0)
		rc = lfs_reset_branch(&c, loc.branch, to);
	if (rc == 0 && !(*result = moved_result(loc.branch, head, to, moved)))
		rc = tt_fail_oom();
	free(head);
	lfs_disconnect(&c);
	return rc;
}
