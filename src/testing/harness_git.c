/* The harness for `git`: each system is a fresh repository, made with
 * libgit2 in a scratch directory: branch main, checked out, with one
 * commit. A mutate of the base commits a new file through the checkout (so
 * it stays clean: a dirty checkout cannot be pinned); a mutate of a working
 * branch, which is not checked out, commits a tree built beside it.
 *
 * Layout: <scratch>/repo, so that new_locator can name <scratch>/repo
 * before create_store makes it, and cleanup removes the scratch either way. */
#include "testing/harnesses.h"

#include "testing/suite.h"

#include <git2.h>

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every write adds a file no earlier write did, so writes on a fork and on
 * its base never conflict. */
static unsigned long writes;

static int git_failed(int rc, const char *what)
{
	const git_error *e = git_error_last();
	return tether_error_set(TETHER_ERROR, "%s: libgit2 error %d: %s", what, rc, e && e->message ? e->message : "?");
}

static int signature(git_signature **sig)
{
	/* A fixed identity and time: the harness needs no git config. */
	return git_signature_new(sig, "tether conformance", "conformance@tether.invalid", 1700000000, 0);
}

static const char *string_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* <scratch>/repo for a fresh scratch directory; the repository is not made. */
static int new_locator(void *ud, json_t **locator)
{
	(void)ud;
	char path[PATH_MAX + 8];
	int rc = tt_harness_scratch_child("tether-conformance-git", "repo", path, sizeof path);
	if (rc == 0)
		*locator = json_pack("{s:s, s:s}", "path", path, "ref", "main");
	return rc;
}

/* Commit file <name> holding <text> through the checkout, onto HEAD. */
static int commit_in_checkout(git_repository *repo, const char *name, const char *text, const char *message)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s%s", git_repository_workdir(repo), name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		return tether_error_set(TETHER_EIO, "cannot write %s", path);
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_commit *parent = NULL;
	git_signature *sig = NULL;
	git_oid tree_id, id, head;
	int rc = git_repository_index(&index, repo);
	if (!rc)
		rc = git_index_add_bypath(index, name);
	if (!rc)
		rc = git_index_write(index);
	if (!rc)
		rc = git_index_write_tree(&tree_id, index);
	if (!rc)
		rc = git_tree_lookup(&tree, repo, &tree_id);
	if (!rc)
		rc = signature(&sig);
	int unborn = !rc && git_reference_name_to_id(&head, repo, "HEAD") != 0;
	if (!rc && !unborn)
		rc = git_commit_lookup(&parent, repo, &head);
	if (!rc)
		rc = git_commit_create(&id, repo, "HEAD", sig, sig, NULL, message, tree, parent ? 1 : 0,
		                       (const git_commit **)&parent);
	git_signature_free(sig);
	git_commit_free(parent);
	git_tree_free(tree);
	git_index_free(index);
	return rc < 0 ? git_failed(rc, "committing in the checkout") : 0;
}

/* Commit file <name> onto branch <branch> without checking it out: the
 * branch's tree plus one blob. */
static int commit_beside(git_repository *repo, const char *branch, const char *name, const char *text)
{
	char refname[256];
	snprintf(refname, sizeof refname, "refs/heads/%s", branch);
	git_oid head, blob, tree_id, id;
	git_commit *parent = NULL;
	git_tree *tree = NULL, *new_tree = NULL;
	git_treebuilder *tb = NULL;
	git_signature *sig = NULL;
	int rc = git_reference_name_to_id(&head, repo, refname);
	if (!rc)
		rc = git_commit_lookup(&parent, repo, &head);
	if (!rc)
		rc = git_commit_tree(&tree, parent);
	if (!rc)
		rc = git_blob_create_from_buffer(&blob, repo, text, strlen(text));
	if (!rc)
		rc = git_treebuilder_new(&tb, repo, tree);
	if (!rc)
		rc = git_treebuilder_insert(NULL, tb, name, &blob, GIT_FILEMODE_BLOB);
	if (!rc)
		rc = git_treebuilder_write(&tree_id, tb);
	if (!rc)
		rc = git_tree_lookup(&new_tree, repo, &tree_id);
	if (!rc)
		rc = signature(&sig);
	if (!rc)
		rc = git_commit_create(&id, repo, refname, sig, sig, NULL, name, new_tree, 1, (const git_commit **)&parent);
	git_signature_free(sig);
	git_tree_free(new_tree);
	git_treebuilder_free(tb);
	git_tree_free(tree);
	git_commit_free(parent);
	return rc < 0 ? git_failed(rc, "committing beside the checkout") : 0;
}

static int new_object(void *ud, json_t **locator)
{
	int rc = new_locator(ud, locator);
	if (rc)
		return rc;
	git_repository *repo = NULL;
	git_repository_init_options opts;
	git_repository_init_options_init(&opts, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
	opts.flags = GIT_REPOSITORY_INIT_MKPATH;
	opts.initial_head = "main";
	rc = git_repository_init_ext(&repo, string_of(*locator, "path"), &opts);
	rc = rc < 0 ? git_failed(rc, "git init") : commit_in_checkout(repo, "a.txt", "a\n", "first");
	git_repository_free(repo);
	if (rc) {
		json_decref(*locator);
		*locator = NULL;
	}
	return rc;
}

static int mutate(void *ud, const json_t *locator, const json_t *working_ref)
{
	(void)ud;
	git_repository *repo = NULL;
	char name[32], text[32];
	snprintf(name, sizeof name, "m%lu.txt", ++writes);
	snprintf(text, sizeof text, "%lu\n", writes);
	int rc = git_repository_open(&repo, string_of(locator, "path"));
	if (rc < 0)
		return git_failed(rc, "opening the repository");
	const char *branch = working_ref ? string_of(working_ref, "branch") : NULL;
	rc = branch ? commit_beside(repo, branch, name, text) : commit_in_checkout(repo, name, text, name);
	git_repository_free(repo);
	return rc;
}

static void cleanup(void *ud, const json_t *locator)
{
	(void)ud;
	const char *path = string_of(locator, "path");
	char copy[PATH_MAX];
	if (!path || strlen(path) >= sizeof copy)
		return;
	strcpy(copy, path);
	conf_rmtree(dirname(copy)); /* the scratch directory around the repository */
}

const struct tether_harness *tt_harness_git(void)
{
	static const struct tether_harness h = {
		TETHER_HARNESS_INIT,
		.new_object = new_object,
		.mutate = mutate,
		.cleanup = cleanup,
		.new_locator = new_locator,
	};
	/* Started once and left running: the backend module shares it. */
	if (git_libgit2_init() < 0) {
		git_failed(-1, "starting libgit2");
		return NULL;
	}
	return &h;
}
