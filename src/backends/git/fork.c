/* Working branches: fork makes (or moves, from the head the caller saw)
 * a branch at a recorded sha; delete_working_ref removes it; open describes
 * a handle on a pin or a working branch.
 *
 * The working ref is {"branch": name}. It is an overlay: merged into the
 * locator, it makes fingerprint, history and open read the working branch
 * (state.c), so the engine never needs to know what git calls a branch.
 *
 * A branch checked out in any worktree is never created over, moved or
 * deleted here: that checkout's files would then describe another commit.
 * (A fork that leaves a branch where it is, as commit's re-fork of a
 * working branch it has just pinned does, moves nothing and is allowed.) */
#include "backends/git/gitbe.h"

#include <stdlib.h>
#include <string.h>

int gb_branch_refname(const struct gb_obj *o, const char *branch, char **refname)
{
	int valid = 0;

	if (!branch || !*branch || git_branch_name_is_valid(&valid, branch) < 0 || !valid)
		return tether_error_set(TETHER_EUSAGE, "git repository %s: '%s' is not a valid branch name", o->path,
		                        branch ? branch : "");
	*refname = gb_strdupf("refs/heads/%s", branch);
	return *refname ? 0 : gb_fail_oom();
}

static int refuse_checked_out(const struct gb_obj *o, const char *refname)
{
	char *workdir = NULL;
	int rc = gb_find_checkout(o, refname, &workdir);

	if (rc == 0 && workdir)
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s is checked out at %s; switch that "
		                      "checkout to another branch first", o->path, refname, workdir);
	free(workdir);
	return rc;
}

/* The branch's head; GIT_ENOTFOUND (no error set) when it does not exist. */
int gb_branch_head(const struct gb_obj *o, const char *refname, git_oid *out)
{
	git_reference *ref = NULL;
	git_object *peeled = NULL;
	int rc = git_reference_lookup(&ref, o->repo, refname);

	if (rc == GIT_ENOTFOUND)
		return rc;
	if (rc == 0)
		rc = git_reference_peel(&peeled, ref, GIT_OBJECT_COMMIT);
	if (rc == 0)
		git_oid_cpy(out, git_object_id(peeled));
	git_object_free(peeled);
	git_reference_free(ref);
	return rc < 0 ? tt_git_fail(rc, "git repository %s: cannot read %s", o->path, refname) : 0;
}

/* The sha a fork starts from: the state's, else the pin's. */
static int fork_point(const struct gb_obj *o, const json_t *state, const json_t *pin_ref, git_oid *id)
{
	git_commit *commit = NULL;
	int rc = gb_parse_sha(json_object_get(state, "sha") ? state : pin_ref, "state", id);

	if (rc == 0)
		rc = gb_lookup_commit(o, id, &commit);
	git_commit_free(commit);
	return rc;
}

/* With no expectation a branch is created, or left where it already is;
 * moving an existing branch takes the head the caller saw. */
static int place_branch(const struct gb_obj *o, const char *refname, const git_oid *id, const json_t *expect)
{
	char have[GB_HEX_SIZE];
	git_oid current, expected;
	int rc;

	if (expect && !json_is_null(expect)) {
		if ((rc = gb_parse_sha(expect, "expected head", &expected)) < 0)
			return rc;
		return gb_move_ref(o->repo, refname, id, &expected, "tether: fork");
	}
	if (expect) /* JSON null: the branch must not exist */
		return gb_move_ref(o->repo, refname, id, NULL, "tether: fork");
	rc = gb_branch_head(o, refname, &current);
	if (rc == GIT_ENOTFOUND)
		return gb_move_ref(o->repo, refname, id, NULL, "tether: fork");
	if (rc == 0 && !git_oid_equal(&current, id))
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s already exists at %s; pass its head "
		                      "as the expected head to move it", o->path, refname, gb_hex(&current, have));
	return rc;
}

/* The branch is at `id` already and the caller expects it there (or sets
 * no condition): a fork that moves nothing, which a checkout of the branch
 * does not mind. */
static int already_there(const struct gb_obj *o, const char *refname, const git_oid *id, const json_t *expect)
{
	git_oid current, expected;

	if (expect && (json_is_null(expect) || gb_parse_sha(expect, "expected head", &expected) < 0 ||
	               !git_oid_equal(&expected, id))) {
		tether_error_clear();
		return 0;
	}
	if (gb_branch_head(o, refname, &current) != 0) {
		tether_error_clear();
		return 0;
	}
	return git_oid_equal(&current, id);
}

int gb_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
            const char *branch, const json_t *expect, json_t **working_ref)
{
	struct gb_obj o;
	char *refname = NULL;
	git_oid id;
	int rc = gb_open(ctx, locator, &o);

	if (rc < 0)
		return rc;
	rc = gb_branch_refname(&o, branch, &refname);
	if (rc == 0)
		rc = fork_point(&o, state, pin_ref, &id);
	if (rc == 0 && !already_there(&o, refname, &id, expect)) {
		rc = refuse_checked_out(&o, refname);
		if (rc == 0)
			rc = place_branch(&o, refname, &id, expect);
	}
	if (rc == 0 && !(*working_ref = json_pack("{s:s}", "branch", branch)))
		rc = gb_fail_oom();
	free(refname);
	gb_close(&o);
	return rc;
}

/* The base branch is the object itself, never a working ref to delete. */
static int refuse_base(const struct gb_obj *o, const char *refname)
{
	char *base = NULL;
	int is_base;

	if (gb_base_branch(o, &base) < 0) {
		tether_error_clear(); /* no base branch (e.g. detached): nothing to protect */
		return 0;
	}
	is_base = strcmp(base, refname) == 0;
	free(base);
	if (is_base)
		return tether_error_set(TETHER_EREFUSED, "git repository %s: %s is the object's base branch, not a "
		                        "working ref", o->path, refname);
	return 0;
}

int gb_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	struct gb_obj o;
	char *refname = NULL;
	int rc = gb_open(ctx, locator, &o);

	if (rc < 0)
		return rc;
	rc = gb_branch_refname(&o, json_string_value(json_object_get(working_ref, "branch")), &refname);
	if (rc == 0)
		rc = refuse_base(&o, refname);
	if (rc == 0)
		rc = refuse_checked_out(&o, refname);
	if (rc == 0)
		rc = gb_delete_ref(&o, refname);
	free(refname);
	gb_close(&o);
	return rc;
}

/* Delete the branch only while it is at `expect`. git_reference_delete
 * hands the refdb the head the lookup read as the old value, and the
 * refdb takes the ref's lock (refs/heads/X.lock, as git's own writers
 * do) and compares that old value with what is on disk under the lock
 * before removing the loose file and the packed-refs line: a writer that
 * moved the branch after the lookup makes the delete fail with
 * GIT_EMODIFIED, and its commit stays. Comparing the looked-up head with
 * `expect` first makes the whole condition the caller's. */
static int delete_if_at(const struct gb_obj *o, const char *refname, const git_oid *expect)
{
	git_reference *ref = NULL;
	char want[GB_HEX_SIZE], have[GB_HEX_SIZE];
	int rc = git_reference_lookup(&ref, o->repo, refname);

	if (rc == GIT_ENOTFOUND)
		return 0;
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot read %s", o->path, refname);
	const git_oid *at = git_reference_target(ref);
	if (!at)
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s is a symbolic ref, not a working branch; "
		                      "not deleted", o->path, refname);
	else if (!git_oid_equal(at, expect))
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s moved: expected %s, found %s; not deleted",
		                      o->path, refname, gb_hex(expect, want), gb_hex(at, have));
	else if ((rc = git_reference_delete(ref)) == GIT_EMODIFIED)
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s moved while it was being deleted "
		                      "(expected %s); not deleted", o->path, refname, gb_hex(expect, want));
	else if (rc < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot delete %s", o->path, refname);
	git_reference_free(ref);
	return rc;
}

int gb_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                             const json_t *expect)
{
	struct gb_obj o;
	char *refname = NULL;
	git_oid want;
	int rc = gb_parse_sha(expect, "expected working branch head", &want);

	if (rc < 0)
		return rc;
	if ((rc = gb_open(ctx, locator, &o)) < 0)
		return rc;
	rc = gb_branch_refname(&o, json_string_value(json_object_get(working_ref, "branch")), &refname);
	if (rc == 0)
		rc = refuse_base(&o, refname);
	if (rc == 0)
		rc = refuse_checked_out(&o, refname);
	if (rc == 0)
		rc = delete_if_at(&o, refname, &want);
	free(refname);
	gb_close(&o);
	return rc;
}

/* One working branch as list_working_refs describes it; NULL on OOM. A
 * symbolic ref under refs/heads has no head of its own: skipped (*row
 * stays NULL, 0 returned). */
static int working_row(git_reference *ref, json_t **row)
{
	const git_oid *target = git_reference_target(ref);
	const char *branch = git_reference_name(ref) + strlen("refs/heads/");
	char hex[GB_HEX_SIZE];

	*row = NULL;
	if (!target)
		return 0;
	*row = json_pack("{s:s, s:{s:s}, s:{s:s}}", "branch", branch, "ref", "branch", branch, "head", "sha",
	                 gb_hex(target, hex));
	return *row ? 0 : gb_fail_oom();
}

/* refs/heads/tether.ws.<dataset8>.*: the glob keeps other datasets'
 * working branches (and the user's own) out. */
int gb_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	struct gb_obj o;
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	json_t *row, *out = json_array();
	char *glob = gb_strdupf("refs/heads/tether.ws.%.8s.*", ctx->dataset_id);
	int rc = out && glob ? gb_open(ctx, locator, &o) : gb_fail_oom();

	if (rc < 0) {
		free(glob);
		json_decref(out);
		return rc;
	}
	int oom = 0;
	rc = git_reference_iterator_glob_new(&it, o.repo, glob);
	while (rc == 0 && (rc = git_reference_next(&ref, it)) == 0) {
		oom = working_row(ref, &row) < 0 || (row && json_array_append_new(out, row) < 0);
		git_reference_free(ref);
		if (oom)
			break;
	}
	git_reference_iterator_free(it);
	if (oom)
		rc = gb_fail_oom();
	else if (rc == GIT_ITEROVER)
		rc = 0;
	else if (rc < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot list its working branches", o.path);
	gb_close(&o);
	free(glob);
	if (rc < 0)
		json_decref(out);
	else
		*refs = out;
	return rc;
}

/* ------------------------------------------------------------------ */
/* open                                                                */
/* ------------------------------------------------------------------ */

struct handle_target {
	char *refname; /* the branch a writable handle writes to */
	const char *ref;
	git_oid sha;
};

static int read_only_target(const struct gb_obj *o, const json_t *state, const json_t *pin_ref,
                            struct handle_target *t)
{
	int rc = fork_point(o, state, pin_ref, &t->sha);

	t->ref = json_string_value(json_object_get(pin_ref, "tag"));
	return rc;
}

static int writable_target(const struct gb_obj *o, const json_t *working_ref, struct handle_target *t)
{
	const char *branch = json_string_value(json_object_get(working_ref, "branch"));
	int rc;

	if (!branch)
		branch = o->branch; /* the working ref already merged into the locator */
	rc = branch ? gb_branch_refname(o, branch, &t->refname) : gb_base_branch(o, &t->refname);

	if (rc < 0)
		return rc;
	t->ref = t->refname + strlen("refs/heads/");
	rc = gb_branch_head(o, t->refname, &t->sha);
	if (rc == GIT_ENOTFOUND)
		return tether_error_set(TETHER_ENOTFOUND, "git repository %s has no branch %s", o->path, t->ref);
	return rc;
}

static json_t *make_handle(const struct gb_obj *o, const struct handle_target *t, int read_only,
                           const char *worktree)
{
	char hex[GB_HEX_SIZE];

	gb_hex(&t->sha, hex);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:s?}", "kind", "git", "uri", o->path, "path", o->path,
	                 "sha", hex, "ref", t->ref ? t->ref : hex, "read_only", read_only, "worktree", worktree);
}

/* The handle: {kind, uri, path, sha, ref, read_only, worktree}. worktree is
 * the checkout holding the branch, or null when none does (a pin is never
 * checked out: read it through its sha). */
int gb_open_handle(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, const json_t *working_ref, int read_only, json_t **handle)
{
	struct handle_target t = {NULL, NULL, {{0}}};
	struct gb_obj o;
	char *worktree = NULL;
	int rc = gb_open(ctx, locator, &o);

	if (rc < 0)
		return rc;
	rc = read_only ? read_only_target(&o, state, pin_ref, &t) : writable_target(&o, working_ref, &t);
	if (rc == 0 && t.refname)
		rc = gb_find_checkout(&o, t.refname, &worktree);
	if (rc == 0 && !(*handle = make_handle(&o, &t, read_only, worktree)))
		rc = gb_fail_oom();
	free(worktree);
	free(t.refname);
	gb_close(&o);
	return rc;
}
