/* Stores tether creates (`tether add --create`) and may delete again.
 *
 * create_store is `git init -b <branch>` plus one empty root commit with a
 * fixed tree, author, committer, date and message, so every created store
 * has the same root sha; `git config tether.owner` names the dataset.
 *
 * delete_store removes only a store that is still exactly that: owned by
 * this dataset, no ref but the base branch, the base at the root, and a
 * working tree holding nothing (an untracked, staged or ignored file is
 * data). It checks, moves the directory aside so no one can reach it by its
 * name, checks again there, and only then removes it. */
#include "backends/git/gitbe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT_NAME "tether"
#define ROOT_EMAIL "tether@localhost"
#define ROOT_MESSAGE "tether: empty root\n"
#define DEFAULT_BRANCH "main"

/* ------------------------------------------------------------------ */
/* The empty root commit                                               */
/* ------------------------------------------------------------------ */

struct root_commit {
	git_signature *sig;
	git_tree *tree;
};

static void root_free(struct root_commit *r)
{
	git_signature_free(r->sig);
	git_tree_free(r->tree);
}

/* The fixed signature (time 0 +0000) and the empty tree, written. */
static int root_parts(git_repository *repo, struct root_commit *r)
{
	git_treebuilder *tb = NULL;
	git_oid tree_id;
	int rc = git_signature_new(&r->sig, ROOT_NAME, ROOT_EMAIL, 0, 0);

	if (rc == 0)
		rc = git_treebuilder_new(&tb, repo, NULL);
	if (rc == 0)
		rc = git_treebuilder_write(&tree_id, tb);
	if (rc == 0)
		rc = git_tree_lookup(&r->tree, repo, &tree_id);
	git_treebuilder_free(tb);
	return rc < 0 ? tt_git_fail(rc, "cannot write the empty tree") : 0;
}

/* The root commit's id, computed without writing it. */
static int root_id(git_repository *repo, git_oid *id)
{
	struct root_commit r = {NULL, NULL};
	git_buf buf = GIT_BUF_INIT;
	int rc = root_parts(repo, &r);

	if (rc == 0 && ((rc = git_commit_create_buffer(&buf, repo, r.sig, r.sig, NULL, ROOT_MESSAGE, r.tree, 0,
	                                               NULL)) < 0 ||
	                (rc = git_odb_hash(id, buf.ptr, buf.size, GIT_OBJECT_COMMIT)) < 0))
		rc = tt_git_fail(rc, "cannot compute the empty root commit");
	git_buf_dispose(&buf);
	root_free(&r);
	return rc;
}

static int write_root(git_repository *repo, const char *path)
{
	struct root_commit r = {NULL, NULL};
	git_oid id;
	int rc = root_parts(repo, &r);

	if (rc == 0 && (rc = git_commit_create(&id, repo, "HEAD", r.sig, r.sig, NULL, ROOT_MESSAGE, r.tree, 0,
	                                       NULL)) < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot write the empty root commit", path);
	root_free(&r);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Configuration: the owner marker, from the repository's own file      */
/* ------------------------------------------------------------------ */

/* The local level only: a tether.owner in ~/.gitconfig would otherwise
 * make every repository look owned. */
static int local_config(git_repository *repo, git_config **local)
{
	git_config *all = NULL;
	int rc = git_repository_config(&all, repo);

	if (rc == 0)
		rc = git_config_open_level(local, all, GIT_CONFIG_LEVEL_LOCAL);
	git_config_free(all);
	return rc < 0 ? tt_git_fail(rc, "cannot open the configuration of %s", git_repository_path(repo)) : 0;
}

static int set_owner(git_repository *repo, const char *dataset_id)
{
	git_config *local = NULL;
	int rc = local_config(repo, &local);

	if (rc == 0 && (rc = git_config_set_string(local, "tether.owner", dataset_id)) < 0)
		rc = tt_git_fail(rc, "cannot set tether.owner in %s", git_repository_path(repo));
	git_config_free(local);
	return rc;
}

static int read_owner(git_repository *repo, git_buf *owner)
{
	git_config *local = NULL;
	int rc = local_config(repo, &local);

	if (rc == 0 && (rc = git_config_get_string_buf(owner, local, "tether.owner")) < 0 && rc != GIT_ENOTFOUND)
		rc = tt_git_fail(rc, "cannot read tether.owner in %s", git_repository_path(repo));
	git_config_free(local);
	return rc == GIT_ENOTFOUND ? 0 : rc;
}

/* ------------------------------------------------------------------ */
/* Removing a directory tree                                           */
/* ------------------------------------------------------------------ */

/* rm -rf of `name` under the directory `parent`, never following a
 * symbolic link. */
static int remove_tree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *e;
	DIR *dir;
	int rc = 0;

	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? unlinkat(parent, name, 0) : -1;
	if (!(dir = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	while (rc == 0 && (e = readdir(dir)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			rc = remove_tree_at(dirfd(dir), e->d_name);
	closedir(dir);
	return rc < 0 ? rc : unlinkat(parent, name, AT_REMOVEDIR);
}

static int remove_tree(const char *path)
{
	if (remove_tree_at(AT_FDCWD, path) < 0 && errno != ENOENT)
		return tether_error_set(TETHER_EIO, "cannot remove %s: %s", path, strerror(errno));
	return 0;
}

/* ------------------------------------------------------------------ */
/* create_store                                                        */
/* ------------------------------------------------------------------ */

/* The initial branch: the locator's ref when it is a branch name. */
static int initial_branch(const struct gb_obj *o, char **branch)
{
	const char *ref = strncmp(o->ref, "refs/heads/", 11) == 0 ? o->ref + 11 : o->ref;
	int valid = 0;

	if (strcmp(ref, "HEAD") == 0 || strcmp(ref, "@") == 0 || git_branch_name_is_valid(&valid, ref) < 0 || !valid)
		ref = DEFAULT_BRANCH;
	*branch = strdup(ref);
	return *branch ? 0 : gb_fail_oom();
}

/* Nothing may be there yet, but an empty directory. *existed says which. */
static int check_free(const char *path, int *existed)
{
	struct stat st;
	DIR *dir;
	struct dirent *e;
	int empty = 1;

	*existed = lstat(path, &st) == 0;
	if (!*existed)
		return errno == ENOENT ? 0 : tether_error_set(TETHER_EIO, "cannot read %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode) || !(dir = opendir(path)))
		return tether_error_set(TETHER_EREFUSED, "%s already exists and is not an empty directory", path);
	while (empty && (e = readdir(dir)))
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(dir);
	if (!empty)
		return tether_error_set(TETHER_EREFUSED, "%s already exists and is not empty: tether creates "
		                        "stores only where nothing is", path);
	return 0;
}

static int init_repository(const char *path, const char *branch, git_repository **repo)
{
	git_repository_init_options opts;
	int rc;

	git_repository_init_options_init(&opts, GIT_REPOSITORY_INIT_OPTIONS_VERSION);

	/* No EXTERNAL_TEMPLATE flag: libgit2's built-in template, never a
	 * template directory named by some configuration. */
	opts.flags = GIT_REPOSITORY_INIT_MKPATH | GIT_REPOSITORY_INIT_NO_REINIT;
	opts.initial_head = branch;
	rc = git_repository_init_ext(repo, path, &opts);
	return rc < 0 ? tt_git_fail(rc, "cannot create git repository %s", path) : 0;
}

/* Undo a half-made store: only what this call made. */
static void undo_create(const char *path, int existed)
{
	char *git_dir = gb_strdupf("%s/.git", path);

	if (existed && git_dir)
		remove_tree_at(AT_FDCWD, git_dir);
	else if (!existed)
		remove_tree_at(AT_FDCWD, path);
	free(git_dir);
}

int gb_create_store(const struct tether_bctx *ctx, const json_t *locator)
{
	git_repository *repo = NULL;
	struct gb_obj o;
	char *branch = NULL;
	int existed = 0;
	int rc = gb_read_locator(ctx, locator, &o);

	if (rc == 0 && (!ctx || !ctx->dataset_id))
		rc = tether_error_set(TETHER_EUSAGE, "git create_store needs the dataset id");
	if (rc == 0)
		rc = initial_branch(&o, &branch);
	if (rc == 0)
		rc = check_free(o.path, &existed);
	if (rc == 0 && (rc = init_repository(o.path, branch, &repo)) == 0) {
		rc = write_root(repo, o.path);
		if (rc == 0)
			rc = set_owner(repo, ctx->dataset_id);
		git_repository_free(repo);
		if (rc < 0)
			undo_create(o.path, existed);
	}
	free(branch);
	return rc;
}

/* ------------------------------------------------------------------ */
/* delete_store                                                        */
/* ------------------------------------------------------------------ */

static int refuse_foreign(git_repository *repo, const char *path, const char *dataset_id)
{
	git_buf owner = GIT_BUF_INIT;
	int rc = read_owner(repo, &owner);

	if (rc == 0 && (!owner.ptr || strcmp(owner.ptr, dataset_id) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s was not created by this dataset "
		                      "(tether.owner is %s); not deleted", path, owner.size ? owner.ptr : "unset");
	git_buf_dispose(&owner);
	return rc;
}

/* The repository must be a plain checkout at `path`: its .git inside it,
 * no linked worktree anywhere (deleting it would strand them). */
static int refuse_unusual_layout(git_repository *repo, const char *path)
{
	git_strarray names = {NULL, 0};
	char *expected = gb_strdupf("%s/.git/", path);
	char *workdir = realpath(git_repository_workdir(repo), NULL);
	char *gitdir = realpath(git_repository_path(repo), NULL);
	int plain = expected && workdir && gitdir && strcmp(workdir, path) == 0 &&
	            strlen(expected) == strlen(gitdir) + 1 && strncmp(expected, gitdir, strlen(gitdir)) == 0 &&
	            !git_repository_is_worktree(repo);
	int rc = plain ? git_worktree_list(&names, repo) : 0;

	if (!plain)
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s is not a plain checkout with its .git "
		                      "inside it; not deleted", path);
	else if (rc < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot list its worktrees", path);
	else if (names.count > 0)
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s has linked worktrees (%s); not deleted",
		                      path, names.strings[0]);
	git_strarray_dispose(&names);
	free(expected);
	free(workdir);
	free(gitdir);
	return rc;
}

static int check_base_at_root(git_repository *repo, const char *path, const char *base)
{
	git_reference *ref = NULL;
	git_oid root;
	int rc = root_id(repo, &root);

	if (rc == 0 && (rc = git_reference_lookup(&ref, repo, base)) < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot read %s", path, base);
	if (rc == 0 && (git_reference_type(ref) != GIT_REFERENCE_DIRECT || !git_oid_equal(git_reference_target(ref), &root)))
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s holds commits beyond the empty root; "
		                      "not deleted", path, base);
	git_reference_free(ref);
	return rc;
}

/* No ref but the base branch, and the base at the empty root. */
static int refuse_refs(git_repository *repo, const char *path)
{
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	char *base = NULL;
	int rc = gb_head_branch(repo, &base);

	if (rc == 0 && !base)
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: HEAD is detached; not deleted", path);
	if (rc == 0 && (rc = git_reference_iterator_new(&it, repo)) < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot list its refs", path);
	while (rc == 0 && git_reference_next(&ref, it) == 0) {
		if (strcmp(git_reference_name(ref), base) != 0)
			rc = tether_error_set(TETHER_EREFUSED, "git repository %s holds %s besides its base branch; "
			                      "not deleted", path, git_reference_name(ref));
		git_reference_free(ref);
	}
	git_reference_iterator_free(it);
	if (rc == 0)
		rc = check_base_at_root(repo, path, base);
	free(base);
	return rc;
}

/* Nothing staged, changed, untracked or ignored. */
static int refuse_files(git_repository *repo, const char *path)
{
	git_status_options opts;
	git_status_list *list = NULL;
	int rc;

	git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);

	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_INCLUDE_IGNORED;
	if ((rc = git_status_list_new(&list, repo, &opts)) < 0)
		return tt_git_fail(rc, "git repository %s: cannot read the status of the checkout", path);
	if (git_status_list_entrycount(list) > 0) {
		const git_status_entry *e = git_status_byindex(list, 0);
		const git_diff_delta *d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;

		rc = tether_error_set(TETHER_EREFUSED, "git repository %s holds files (%s%s): they are data; "
		                      "not deleted", path, d ? d->new_file.path : "?",
		                      git_status_list_entrycount(list) > 1 ? ", ..." : "");
	}
	git_status_list_free(list);
	return rc;
}

/* Everything that makes a store safe to delete, at `path`. */
static int check_deletable(const char *path, const char *dataset_id)
{
	git_repository *repo = NULL;
	int rc = git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);

	if (rc < 0)
		return tt_git_fail(rc, "cannot open git repository %s", path);
	if (git_repository_is_bare(repo))
		rc = tether_error_set(TETHER_EREFUSED, "%s is a bare git repository; not deleted", path);
	if (rc == 0)
		rc = refuse_foreign(repo, path, dataset_id);
	if (rc == 0)
		rc = refuse_unusual_layout(repo, path);
	if (rc == 0)
		rc = refuse_refs(repo, path);
	if (rc == 0)
		rc = refuse_files(repo, path);
	git_repository_free(repo);
	return rc;
}

/* Move `path` to a fresh name beside it. */
static int move_aside(const char *path, char **aside)
{
	*aside = gb_strdupf("%s.tether-deleting-XXXXXX", path);
	if (!*aside)
		return gb_fail_oom();
	/* rename() replaces the empty directory mkdtemp makes, atomically. */
	if (!mkdtemp(*aside) || rename(path, *aside) < 0) {
		int rc = tether_error_set(TETHER_EIO, "cannot move %s aside to delete it: %s", path, strerror(errno));

		rmdir(*aside);
		free(*aside);
		*aside = NULL;
		return rc;
	}
	return 0;
}

static int remove_checked(const char *path, const char *dataset_id)
{
	char *aside = NULL;
	int rc = move_aside(path, &aside);

	if (rc < 0)
		return rc;
	rc = check_deletable(aside, dataset_id); /* again: something may have landed since */
	if (rc < 0 && rename(aside, path) < 0)
		tether_error_set_hint("the store was left at %s: %s", aside, strerror(errno));
	if (rc == 0)
		rc = remove_tree(aside);
	free(aside);
	return rc;
}

int gb_delete_store(const struct tether_bctx *ctx, const json_t *locator)
{
	struct gb_obj o;
	char *path = NULL;
	int rc = gb_open(ctx, locator, &o);

	if (rc < 0)
		return rc;
	if (!ctx || !ctx->dataset_id)
		rc = tether_error_set(TETHER_EUSAGE, "git delete_store needs the dataset id");
	if (rc == 0 && !(path = realpath(o.path, NULL)))
		rc = tether_error_set(TETHER_EIO, "cannot resolve %s: %s", o.path, strerror(errno));
	gb_close(&o);
	if (rc == 0)
		rc = check_deletable(path, ctx->dataset_id);
	if (rc == 0)
		rc = remove_checked(path, ctx->dataset_id);
	free(path);
	return rc;
}
