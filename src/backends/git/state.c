/* The git backend's state: the sha a ref names, and whether the checkout
 * has uncommitted changes. Also the revision helpers the other files use. */
#include "backends/git/gitbe.h"

#include <stdlib.h>
#include <string.h>

static int names_head(const char *rev)
{
	return strcmp(rev, "HEAD") == 0 || strcmp(rev, "@") == 0;
}

/* The commit a revision (any commit-ish) names; messages name both the
 * repository and the revision. */
int gb_resolve_commit(const struct gb_obj *o, const char *rev, git_commit **out)
{
	git_object *obj = NULL, *peeled = NULL;
	int rc;

	if (names_head(rev) && git_repository_head_unborn(o->repo) == 1)
		return tether_error_set(TETHER_ENOTFOUND, "git repository %s: HEAD has no commits yet", o->path);
	rc = git_revparse_single(&obj, o->repo, rev);
	if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC || rc == GIT_EAMBIGUOUS)
		return tether_error_set(TETHER_ENOTFOUND, "git repository %s has no ref or commit '%s'%s", o->path,
		                        rev, rc == GIT_EAMBIGUOUS ? " (ambiguous)" : "");
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot resolve '%s'", o->path, rev);
	rc = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
	git_object_free(obj);
	if (rc < 0)
		return tether_error_set(TETHER_ENOTFOUND, "git repository %s: '%s' is not a commit", o->path, rev);
	*out = (git_commit *)peeled;
	return 0;
}

int gb_lookup_commit(const struct gb_obj *o, const git_oid *id, git_commit **out)
{
	char hex[GB_HEX_SIZE];
	int rc = git_commit_lookup(out, o->repo, id);

	if (rc == GIT_ENOTFOUND)
		return tether_error_set(TETHER_ENOTFOUND, "git repository %s does not hold commit %s", o->path,
		                        gb_hex(id, hex));
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot read commit %s", o->path, gb_hex(id, hex));
	return 0;
}

/* Where the object stands: the working branch when a working ref is merged
 * into the locator ({"branch": ...} is the overlay fork returns), else its
 * initial position `at` while it has one, else its ref. */
const char *gb_position(const struct gb_obj *o)
{
	return o->branch ? o->branch : o->at ? o->at : o->ref;
}

/* The commit at the object's position. A working branch is looked up as a
 * branch, never as a tag or sha of the same spelling. */
int gb_resolve_position(const struct gb_obj *o, git_commit **out)
{
	git_reference *ref = NULL;
	git_object *peeled = NULL;
	char *refname;
	int rc;

	if (!o->branch)
		return gb_resolve_commit(o, gb_position(o), out);
	if (!(refname = gb_strdupf("refs/heads/%s", o->branch)))
		return gb_fail_oom();
	rc = git_reference_lookup(&ref, o->repo, refname);
	if (rc == 0)
		rc = git_reference_peel(&peeled, ref, GIT_OBJECT_COMMIT);
	if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC)
		rc = tether_error_set(TETHER_ENOTFOUND, "git repository %s has no branch %s", o->path, o->branch);
	else if (rc < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot read %s", o->path, refname);
	else
		*out = (git_commit *)peeled;
	git_reference_free(ref);
	free(refname);
	return rc;
}

/* The branch HEAD is on ("refs/heads/..."), or NULL when HEAD is
 * detached. */
int gb_head_branch(git_repository *repo, char **refname)
{
	git_reference *head = NULL;
	int rc = git_reference_lookup(&head, repo, "HEAD");

	*refname = NULL;
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot read HEAD", git_repository_path(repo));
	if (git_reference_type(head) == GIT_REFERENCE_SYMBOLIC &&
	    !(*refname = strdup(git_reference_symbolic_target(head))))
		rc = gb_fail_oom();
	git_reference_free(head);
	return rc;
}

static int branch_exists(git_repository *repo, const char *refname)
{
	git_reference *ref = NULL;
	int rc = git_reference_lookup(&ref, repo, refname);

	git_reference_free(ref);
	return rc == 0;
}

static int branch_refname(const struct gb_obj *o, char **refname)
{
	const char *ref = o->ref;
	int valid = 0;

	*refname = strncmp(ref, "refs/heads/", 11) == 0 ? strdup(ref) : gb_strdupf("refs/heads/%s", ref);
	if (!*refname)
		return gb_fail_oom();
	if (git_reference_name_is_valid(&valid, *refname) < 0 || !valid) {
		free(*refname);
		*refname = NULL;
		return tether_error_set(TETHER_EREFUSED, "git repository %s: ref '%s' is not a branch; set ref "
		                        "to the branch name", o->path, ref);
	}
	return 0;
}

/* The branch promote and merge move: the locator's ref, which must name a
 * branch (with ref = HEAD, the branch checked out). */
int gb_base_branch(const struct gb_obj *o, char **refname)
{
	git_commit *commit = NULL;
	int rc;

	if (names_head(o->ref)) {
		if ((rc = gb_head_branch(o->repo, refname)) < 0)
			return rc;
		if (!*refname)
			return tether_error_set(TETHER_EREFUSED, "git repository %s: HEAD is detached, so there is "
			                        "no base branch to move; set ref to the branch name", o->path);
		return 0;
	}
	if ((rc = branch_refname(o, refname)) < 0 || branch_exists(o->repo, *refname))
		return rc;
	rc = gb_resolve_commit(o, o->ref, &commit);
	git_commit_free(commit);
	free(*refname);
	*refname = NULL;
	if (rc == 0)
		return tether_error_set(TETHER_EREFUSED, "git repository %s: ref '%s' is not a branch; set ref "
		                        "to the branch name", o->path, o->ref);
	return rc;
}

/* Do the index or the working tree differ from HEAD? Untracked files count
 * (they are changes nobody committed); ignored ones do not. */
int gb_is_dirty(git_repository *repo, int *dirty)
{
	git_status_options opts;
	git_status_list *list = NULL;
	int rc;

	git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);

	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED;
	rc = git_status_list_new(&list, repo, &opts);
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot read the status of the checkout",
		                   git_repository_workdir(repo));
	*dirty = git_status_list_entrycount(list) > 0;
	git_status_list_free(list);
	return 0;
}

/* Is `rev` the checked-out ref? Only then does the working tree hold it,
 * so only then is "dirty" meaningful. */
static int names_checked_out(const struct gb_obj *o, const char *rev, int *yes)
{
	char *head = NULL;
	int rc;

	*yes = names_head(rev);
	if (*yes)
		return 0;
	if ((rc = gb_head_branch(o->repo, &head)) < 0 || !head)
		return rc;
	*yes = strcmp(head, rev) == 0 || (strncmp(head, "refs/heads/", 11) == 0 && strcmp(head + 11, rev) == 0);
	free(head);
	return 0;
}

static int read_state(const struct gb_obj *o, json_t **state)
{
	const char *rev = gb_position(o);
	git_commit *commit = NULL;
	char hex[GB_HEX_SIZE];
	int checked_out = 0, dirty = 0;
	int rc = gb_resolve_position(o, &commit);

	if (rc == 0)
		rc = names_checked_out(o, rev, &checked_out);
	if (rc == 0 && checked_out)
		rc = gb_is_dirty(o->repo, &dirty);
	if (rc == 0) {
		*state = json_pack("{s:s}", "sha", gb_hex(git_commit_id(commit), hex));
		if (*state && checked_out)
			json_object_set_new(*state, "dirty", json_boolean(dirty));
		if (!*state)
			rc = gb_fail_oom();
	}
	git_commit_free(commit);
	return rc;
}

int gb_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                   struct tether_fingerprint *out)
{
	struct gb_obj o;
	int rc;

	(void)policy;
	memset(out, 0, sizeof *out);
	if ((rc = gb_open(ctx, locator, &o)) < 0)
		return rc;
	rc = read_state(&o, &out->state);
	gb_close(&o);
	return rc;
}
