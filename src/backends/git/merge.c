/* promote and merge: bring a working branch's commits onto the object's
 * base branch (the locator's ref; with ref = HEAD, the branch checked out).
 *
 * Both compute the new head first, then move the base with one
 * compare-and-swap from the head they read, so a commit landing in between
 * makes them fail rather than be discarded. A checked-out base must be
 * clean, and its checkout follows the move (worktree.c). */
#include "backends/git/gitbe.h"
#include "util/plural.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFLICTS_LISTED 20

struct heads {
	char *base_ref, *work_ref;
	git_oid base, work;
};

static void heads_free(struct heads *h)
{
	free(h->base_ref);
	free(h->work_ref);
}

static int read_head(const struct gb_obj *o, const char *refname, git_oid *out)
{
	int rc = gb_branch_head(o, refname, out);

	if (rc == GIT_ENOTFOUND)
		return tether_error_set(TETHER_ENOTFOUND, "git repository %s has no branch %s", o->path, refname);
	return rc;
}

static int read_heads(const struct gb_obj *o, const json_t *working_ref, struct heads *h)
{
	int rc = gb_base_branch(o, &h->base_ref);

	if (rc == 0)
		rc = gb_branch_refname(o, json_string_value(json_object_get(working_ref, "branch")), &h->work_ref);
	if (rc == 0)
		rc = read_head(o, h->base_ref, &h->base);
	if (rc == 0)
		rc = read_head(o, h->work_ref, &h->work);
	if (rc == 0 && strcmp(h->base_ref, h->work_ref) == 0)
		rc = tether_error_set(TETHER_EUSAGE, "git repository %s: the working branch is the base branch %s",
		                      o->path, h->base_ref);
	return rc;
}

/* Is commit `a` a descendant of `b` (or `b` itself)? */
static int contains(const struct gb_obj *o, const git_oid *a, const git_oid *b, int *yes)
{
	int rc;

	if (git_oid_equal(a, b)) {
		*yes = 1;
		return 0;
	}
	rc = git_graph_descendant_of(o->repo, a, b);
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot compare histories", o->path);
	*yes = rc;
	return 0;
}

static int lookup_commit(const struct gb_obj *o, const json_t *state, const char *what, git_oid *id)
{
	git_commit *commit = NULL;
	char hex[GB_HEX_SIZE];
	int rc = gb_parse_sha(state, what, id);

	if (rc < 0)
		return rc;
	rc = git_commit_lookup(&commit, o->repo, id);
	git_commit_free(commit);
	if (rc == GIT_ENOTFOUND)
		return tether_error_set(TETHER_ENOTFOUND, "git repository %s has no commit %s", o->path, gb_hex(id, hex));
	return rc < 0 ? tt_git_fail(rc, "git repository %s: cannot read commit %s", o->path, gb_hex(id, hex)) : 0;
}

int gb_descends(const struct tether_bctx *ctx, const json_t *locator, const json_t *ancestor,
                const json_t *descendant, int *answer)
{
	struct gb_obj o;
	git_oid a, d;
	int rc = gb_open(ctx, locator, &o);

	*answer = 0;
	if (rc < 0)
		return rc;
	rc = lookup_commit(&o, ancestor, "ancestor", &a);
	if (rc == 0)
		rc = lookup_commit(&o, descendant, "descendant", &d);
	if (rc == 0)
		rc = contains(&o, &d, &a, answer);
	gb_close(&o);
	return rc;
}

/* `expect` is the base head the caller saw: {"sha": ...}; JSON null means
 * the caller saw no base at all. */
static int check_expected_base(const struct gb_obj *o, const struct heads *h, const json_t *expect)
{
	char want[GB_HEX_SIZE], have[GB_HEX_SIZE];
	git_oid expected;
	int rc;

	if (!expect)
		return 0;
	if (json_is_null(expect))
		return tether_error_set(TETHER_EREFUSED, "git repository %s: %s exists (at %s), expected absent",
		                        o->path, h->base_ref, gb_hex(&h->base, have));
	if ((rc = gb_parse_sha(expect, "expected base head", &expected)) < 0)
		return rc;
	if (!git_oid_equal(&expected, &h->base))
		return tether_error_set(TETHER_EREFUSED, "git repository %s: %s moved: expected %s, found %s; "
		                        "nothing was changed", o->path, h->base_ref, gb_hex(&expected, want),
		                        gb_hex(&h->base, have));
	return 0;
}

static json_t *move_result(const struct heads *h, const git_oid *to, const char *worktree)
{
	char from_hex[GB_HEX_SIZE], to_hex[GB_HEX_SIZE];

	return json_pack("{s:s, s:s, s:s, s:b, s:s?}", "branch", h->base_ref + strlen("refs/heads/"), "from",
	                 gb_hex(&h->base, from_hex), "to", gb_hex(to, to_hex), "moved",
	                 !git_oid_equal(&h->base, to), "worktree", worktree);
}

static int finish(const struct heads *h, const git_oid *to, const char *worktree, json_t **result)
{
	*result = move_result(h, to, worktree);
	return *result ? 0 : gb_fail_oom();
}

/* ------------------------------------------------------------------ */
/* promote                                                             */
/* ------------------------------------------------------------------ */

static int promote_open(const struct gb_obj *o, const json_t *working_ref, const json_t *expect,
                        json_t **result)
{
	struct heads h = {NULL, NULL, {{0}}, {{0}}};
	char *worktree = NULL;
	int fast_forward = 0;
	int rc = read_heads(o, working_ref, &h);

	if (rc == 0)
		rc = check_expected_base(o, &h, expect);
	if (rc == 0)
		rc = contains(o, &h.work, &h.base, &fast_forward);
	if (rc == 0 && !fast_forward)
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s has commits %s does not: promoting "
		                      "would not be a fast-forward; merge instead", o->path, h.base_ref, h.work_ref);
	if (rc == 0 && !git_oid_equal(&h.base, &h.work))
		rc = gb_move_branch(o, h.base_ref, &h.base, &h.work, "tether: promote", &worktree);
	if (rc == 0)
		rc = finish(&h, &h.work, worktree, result);
	free(worktree);
	heads_free(&h);
	return rc;
}

int gb_promote(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
               const json_t *expect, json_t **result)
{
	struct gb_obj o;
	int rc = gb_open(ctx, locator, &o);

	if (rc < 0)
		return rc;
	rc = promote_open(&o, working_ref, expect, result);
	gb_close(&o);
	return rc;
}

/* ------------------------------------------------------------------ */
/* move_base: a promote or merge taken back                            */
/* ------------------------------------------------------------------ */

/* The base moves back to `state` with one compare-and-swap from `expect`,
 * the head tether left it at; a commit landed on it since makes the move
 * fail, so nothing written there is dropped. */
static int move_base_open(const struct gb_obj *o, const json_t *state, const json_t *expect, json_t **result)
{
	struct heads h = {NULL, NULL, {{0}}, {{0}}};
	char *worktree = NULL, want[GB_HEX_SIZE], have[GB_HEX_SIZE];
	git_oid to, expected;
	git_commit *commit = NULL;
	int rc = gb_base_branch(o, &h.base_ref);

	if (rc == 0)
		rc = read_head(o, h.base_ref, &h.base);
	if (rc == 0)
		rc = gb_parse_sha(state, "state to move the base to", &to);
	if (rc == 0)
		rc = gb_parse_sha(expect, "expected base head", &expected);
	if (rc == 0 && !git_oid_equal(&h.base, &to)) {
		if (!git_oid_equal(&h.base, &expected))
			rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s moved: expected %s, found %s; "
			                      "nothing was changed", o->path, h.base_ref, gb_hex(&expected, want),
			                      gb_hex(&h.base, have));
		else if ((rc = gb_lookup_commit(o, &to, &commit)) == 0)
			rc = gb_move_branch(o, h.base_ref, &h.base, &to, "tether: undo", &worktree);
	}
	if (rc == 0)
		rc = finish(&h, &to, worktree, result);
	git_commit_free(commit);
	free(worktree);
	heads_free(&h);
	return rc;
}

int gb_move_base(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *expect,
                 json_t **result)
{
	struct gb_obj o;
	int rc = gb_open(ctx, locator, &o);

	*result = NULL;
	if (rc < 0)
		return rc;
	rc = move_base_open(&o, state, expect, result);
	gb_close(&o);
	return rc;
}

/* ------------------------------------------------------------------ */
/* merge                                                               */
/* ------------------------------------------------------------------ */

static const char *conflict_path(const git_index_entry *a, const git_index_entry *b, const git_index_entry *c)
{
	return b ? b->path : c ? c->path : a ? a->path : "?";
}

/* TETHER_EREFUSED naming the conflicting paths. */
static int refuse_conflicts(const struct gb_obj *o, const struct heads *h, git_index *index)
{
	const git_index_entry *ancestor, *ours, *theirs;
	git_index_conflict_iterator *it = NULL;
	char list[768] = "";
	size_t n = 0, used = 0;

	if (git_index_conflict_iterator_new(&it, index) == 0) {
		while (git_index_conflict_next(&ancestor, &ours, &theirs, it) == 0) {
			if (n++ < CONFLICTS_LISTED && used < sizeof list)
				used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", n > 1 ? ", " : "",
				                         conflict_path(ancestor, ours, theirs));
		}
		git_index_conflict_iterator_free(it);
	}
	return tether_error_set(TETHER_EREFUSED, "git repository %s: merging %s into %s conflicts in %zu "
	                        "%s: %s%s; nothing was changed", o->path, h->work_ref, h->base_ref, n,
	                        tt_plural((long long)n, "path", "paths"), list, n > CONFLICTS_LISTED ? ", ..." : "");
}

/* The merged tree, written only when nothing conflicts. */
static int merged_tree(const struct gb_obj *o, const struct heads *h, git_commit *base, git_commit *work,
                       git_tree **tree)
{
	git_merge_options opts;
	git_index *index = NULL;
	git_oid tree_id;
	int rc;

	git_merge_options_init(&opts, GIT_MERGE_OPTIONS_VERSION);
	rc = git_merge_commits(&index, o->repo, base, work, &opts);

	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot merge %s into %s", o->path, h->work_ref,
		                   h->base_ref);
	if (git_index_has_conflicts(index))
		rc = refuse_conflicts(o, h, index);
	else if ((rc = git_index_write_tree_to(&tree_id, index, o->repo)) < 0 ||
	         (rc = git_tree_lookup(tree, o->repo, &tree_id)) < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot write the merged tree", o->path);
	git_index_free(index);
	return rc;
}

/* The repository's configured identity, as git would use; tether's own
 * when it has none. */
static int merge_signature(git_repository *repo, git_signature **sig)
{
	if (git_signature_default(sig, repo) == 0)
		return 0;
	if (git_signature_now(sig, "tether", "tether@localhost") == 0)
		return 0;
	return tt_git_fail(-1, "cannot make a commit signature");
}

static int write_merge_commit(const struct gb_obj *o, const struct heads *h, const char *message, git_oid *out)
{
	git_commit *parents[2] = {NULL, NULL};
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	char *default_message = NULL;
	int rc = gb_lookup_commit(o, &h->base, &parents[0]);

	if (rc == 0)
		rc = gb_lookup_commit(o, &h->work, &parents[1]);
	if (rc == 0)
		rc = merged_tree(o, h, parents[0], parents[1], &tree);
	if (rc == 0)
		rc = merge_signature(o->repo, &sig);
	if (rc == 0 && (!message || !*message)) {
		default_message = gb_strdupf("Merge branch '%s' into %s\n", h->work_ref + strlen("refs/heads/"),
		                             h->base_ref + strlen("refs/heads/"));
		if (!(message = default_message))
			rc = gb_fail_oom();
	}
	if (rc == 0 && (rc = git_commit_create(out, o->repo, NULL, sig, sig, NULL, message, tree, 2,
	                                       (const git_commit **)parents)) < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot write the merge commit", o->path);
	free(default_message);
	git_signature_free(sig);
	git_tree_free(tree);
	git_commit_free(parents[0]);
	git_commit_free(parents[1]);
	return rc;
}

/* Already merged: nothing moves. Base behind: fast-forward, as git merge
 * does. Diverged: a merge commit with both heads as parents. */
static int merge_open(const struct gb_obj *o, const json_t *working_ref, const char *message, json_t **result)
{
	struct heads h = {NULL, NULL, {{0}}, {{0}}};
	char *worktree = NULL;
	int merged = 0, behind = 0;
	git_oid to;
	int rc = read_heads(o, working_ref, &h);

	if (rc == 0)
		rc = contains(o, &h.base, &h.work, &merged);
	if (rc == 0 && !merged)
		rc = contains(o, &h.work, &h.base, &behind);
	if (rc == 0)
		git_oid_cpy(&to, merged ? &h.base : &h.work);
	if (rc == 0 && !merged && !behind)
		rc = write_merge_commit(o, &h, message, &to);
	if (rc == 0 && !merged)
		rc = gb_move_branch(o, h.base_ref, &h.base, &to, "tether: merge", &worktree);
	if (rc == 0)
		rc = finish(&h, &to, worktree, result);
	if (rc == 0)
		json_object_set_new(*result, "fast_forward", json_boolean(!merged && behind));
	free(worktree);
	heads_free(&h);
	return rc;
}

int gb_merge(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref, const char *message,
             json_t **result)
{
	struct gb_obj o;
	int rc = gb_open(ctx, locator, &o);

	if (rc < 0)
		return rc;
	rc = merge_open(&o, working_ref, message, result);
	gb_close(&o);
	return rc;
}
