/* Checkouts of a branch, and moving a branch without losing anything.
 *
 * A branch can be checked out in the main worktree or in any linked one.
 * fork and delete_working_ref refuse such a branch (moving it would leave
 * that checkout's files describing another commit); promote and merge move
 * it only when that checkout is clean, and then bring its index and files
 * along, so it stays clean. */
#include "backends/git/gitbe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Does the HEAD file at `path` say "ref: <refname>"? A missing or
 * unreadable file points at nothing. */
static int head_file_points_at(const char *path, const char *refname)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	int yes = 0;

	if (!f)
		return 0;
	if (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		yes = strncmp(line, "ref: ", 5) == 0 && strcmp(line + 5, refname) == 0;
	}
	fclose(f);
	return yes;
}

static char *strip_slash_dup(const char *path)
{
	char *s = strdup(path);
	size_t n = s ? strlen(s) : 0;

	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

/* The main worktree's top, or NULL when the main repository is bare. */
static int main_workdir(const struct gb_obj *o, char **workdir)
{
	git_repository *main_repo = NULL;
	int rc;

	*workdir = NULL;
	if (!git_repository_is_worktree(o->repo))
		return (*workdir = strip_slash_dup(git_repository_workdir(o->repo))) ? 0 : gb_fail_oom();
	rc = git_repository_open_ext(&main_repo, git_repository_commondir(o->repo),
	                             GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot open its main repository", o->path);
	if (!git_repository_is_bare(main_repo) && !(*workdir = strip_slash_dup(git_repository_workdir(main_repo))))
		rc = gb_fail_oom();
	git_repository_free(main_repo);
	return rc;
}

static int check_main(const struct gb_obj *o, const char *refname, char **workdir)
{
	char *head = gb_strdupf("%sHEAD", git_repository_commondir(o->repo));
	int rc = head ? 0 : gb_fail_oom();

	if (rc == 0 && head_file_points_at(head, refname))
		rc = main_workdir(o, workdir);
	free(head);
	return rc;
}

static int check_linked(const struct gb_obj *o, const char *name, const char *refname, char **workdir)
{
	char *head = gb_strdupf("%sworktrees/%s/HEAD", git_repository_commondir(o->repo), name);
	git_worktree *wt = NULL;
	int rc = head ? 0 : gb_fail_oom();

	if (rc == 0 && head_file_points_at(head, refname)) {
		rc = git_worktree_lookup(&wt, o->repo, name);
		if (rc < 0)
			rc = tt_git_fail(rc, "git repository %s: cannot read worktree %s", o->path, name);
		else if (!(*workdir = strip_slash_dup(git_worktree_path(wt))))
			rc = gb_fail_oom();
	}
	git_worktree_free(wt);
	free(head);
	return rc;
}

/* The top of the checkout (main or linked worktree) whose HEAD is on
 * `refname`, or NULL when none is. A linked worktree whose directory is gone
 * still holds its branch until it is pruned, as git sees it. */
int gb_find_checkout(const struct gb_obj *o, const char *refname, char **workdir)
{
	git_strarray names = {NULL, 0};
	int rc;

	*workdir = NULL;
	if ((rc = check_main(o, refname, workdir)) < 0 || *workdir)
		return rc;
	rc = git_worktree_list(&names, o->repo);
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot list its worktrees", o->path);
	for (size_t i = 0; rc == 0 && !*workdir && i < names.count; i++)
		rc = check_linked(o, names.strings[i], refname, workdir);
	git_strarray_dispose(&names);
	return rc;
}

/* Move `refname` to `to` in one atomic compare-and-swap: only from
 * `expected`, or only when absent if expected is NULL. */
int gb_move_ref(git_repository *repo, const char *refname, const git_oid *to, const git_oid *expected,
                const char *why)
{
	git_reference *ref = NULL;
	char hex[GB_HEX_SIZE];
	int rc = expected ? git_reference_create_matching(&ref, repo, refname, to, 1, expected, why)
	                  : git_reference_create(&ref, repo, refname, to, 0, why);
	const char *where = git_repository_workdir(repo) ? git_repository_workdir(repo) : git_repository_path(repo);

	git_reference_free(ref);
	if (rc == GIT_EMODIFIED || (rc == GIT_ENOTFOUND && expected))
		return tether_error_set(TETHER_EREFUSED, "git repository %s: %s moved (expected it at %s); "
		                        "nothing was changed", where, refname, gb_hex(expected, hex));
	if (rc == GIT_EEXISTS)
		return tether_error_set(TETHER_EREFUSED, "git repository %s: %s already exists (expected it "
		                        "absent); nothing was changed", where, refname);
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot move %s", where, refname);
	return 0;
}

static int open_checkout(const char *workdir, git_repository **repo)
{
	int rc = git_repository_open_ext(repo, workdir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);

	if (rc < 0)
		return tt_git_fail(rc, "cannot open the checkout at %s", workdir);
	return 0;
}

static int refuse_dirty_checkout(git_repository *repo, const char *workdir, const char *refname)
{
	int dirty = 0;
	int rc = gb_is_dirty(repo, &dirty);

	if (rc == 0 && dirty)
		return tether_error_set(TETHER_EREFUSED, "%s is checked out at %s, which has uncommitted or "
		                        "untracked changes; commit or remove them first", refname, workdir);
	return rc;
}

static int commit_tree_of(git_repository *repo, const git_oid *id, git_tree **tree)
{
	git_commit *commit = NULL;
	char hex[GB_HEX_SIZE];
	int rc = git_commit_lookup(&commit, repo, id);

	if (rc == 0)
		rc = git_commit_tree(tree, commit);
	git_commit_free(commit);
	if (rc < 0)
		return tt_git_fail(rc, "cannot read the tree of commit %s", gb_hex(id, hex));
	return 0;
}

/* Bring a clean checkout from commit `from` to commit `to`. SAFE never
 * overwrites a change it did not expect: it fails first, writing nothing. */
static int update_checkout(git_repository *repo, const char *workdir, const git_oid *from, const git_oid *to)
{
	git_checkout_options opts;
	git_tree *baseline = NULL, *target = NULL;
	int rc = commit_tree_of(repo, from, &baseline);

	if (rc == 0)
		rc = commit_tree_of(repo, to, &target);
	if (rc == 0) {
		git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
		opts.checkout_strategy = GIT_CHECKOUT_SAFE;
		opts.baseline = baseline; /* HEAD already names `to`: say what the files hold */
		rc = git_checkout_tree(repo, (const git_object *)target, &opts);
		if (rc < 0)
			rc = tt_git_fail(rc, "cannot update the checkout at %s", workdir);
	}
	git_tree_free(baseline);
	git_tree_free(target);
	return rc;
}

/* The checkout could not follow: put the branch back where it was, unless
 * someone moved it since. The checkout's error stays the one reported. */
static void roll_back(const struct gb_obj *o, const char *refname, const git_oid *from, const git_oid *to)
{
	git_reference *ref = NULL;

	if (git_reference_create_matching(&ref, o->repo, refname, from, 1, to, "tether: roll back") < 0)
		tether_error_set_hint("%s could not be moved back; it is left where it was moved to", refname);
	git_reference_free(ref);
}

/* Move a branch from `from` to `to` with a compare-and-swap. When the branch
 * is checked out, its checkout must be clean, and it is brought along. The
 * ref moves first: it is the one atomic step, and a commit landing in the
 * meantime makes it fail before any file is touched. *workdir is the
 * checkout that followed, or NULL. */
int gb_move_branch(const struct gb_obj *o, const char *refname, const git_oid *from, const git_oid *to,
                   const char *why, char **workdir)
{
	git_repository *checkout = NULL;
	int rc = gb_find_checkout(o, refname, workdir);

	if (rc == 0 && *workdir)
		rc = open_checkout(*workdir, &checkout);
	if (rc == 0 && checkout)
		rc = refuse_dirty_checkout(checkout, *workdir, refname);
	if (rc == 0)
		rc = gb_move_ref(o->repo, refname, to, from, why);
	if (rc == 0 && checkout && (rc = update_checkout(checkout, *workdir, from, to)) < 0)
		roll_back(o, refname, from, to);
	git_repository_free(checkout);
	if (rc < 0) {
		free(*workdir);
		*workdir = NULL;
	}
	return rc;
}
