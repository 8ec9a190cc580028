/* Tests for the jj VCS module (src/vcs/jj.c), linked in directly.
 *
 * Every repository is made, and every result checked, with the real jj
 * command line, colocated (`jj git init --colocate`) and not
 * (`--no-colocate`), and in a second workspace (`jj workspace add`). Exits
 * 77 (skipped) when jj is not installed: $TETHER_JJ, else jj on PATH. */
#include "check.h"
#include "shell.h"

#include "vcs/vcs.h"

#include <tether/backend.h>

#include <git2.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern tether_vcs_module_t tether_vcs_module;

static const struct tether_vcs_ops *ops;
static char scratch[1024]; /* realpath'd; every repository lives here */
static char jj[PATH_MAX];  /* the jj the module runs, quoted for the shell */

/* ---------------------------------------------------------------- */
/* Helpers                                                           */
/* ---------------------------------------------------------------- */

/* A fresh jj repository scratch/name. */
static char *mkrepo(const char *name, int colocate)
{
	char *dir = malloc(PATH_MAX);

	snprintf(dir, PATH_MAX, "%s/%s", scratch, name);
	sh("%s git init --quiet %s '%s'", jj, colocate ? "--colocate" : "--no-colocate", dir);
	return dir;
}

/* `jj log -r REV -T TEMPLATE` in a workspace, without snapshotting. */
static char *jj_log(const char *ws, const char *rev, const char *tmpl)
{
	return out("%s -R '%s' --no-pager --color=never log --ignore-working-copy --no-graph "
	           "-r '%s' -T '%s'",
	           jj, ws, rev, tmpl);
}

static char *commit_of(const char *ws, const char *rev)
{
	return jj_log(ws, rev, "commit_id");
}

/* The paths a commit changed, as jj lists them, one "A path" a line. */
static char *summary(const char *ws, const char *rev)
{
	return out("cd '%s' && %s --no-pager --color=never diff --ignore-working-copy --summary -r '%s'",
	           ws, jj, rev);
}

static struct tether_vcs *open_at(const char *dir)
{
	struct tether_vcs *v = NULL;
	int rc = ops->open(dir, &v, NULL, NULL);

	if (rc != 0)
		fprintf(stderr, "open %s: %s\n", dir, tether_error_last());
	return v;
}

static int commit_one(struct tether_vcs *v, const char *path, const char *message, char id[41])
{
	const char *paths[] = { path };
	int rc = ops->commit_paths(v, paths, 1, message, id);

	if (rc != 0)
		fprintf(stderr, "  (commit_paths %s: %s)\n", path, tether_error_last());
	return rc;
}

/* Compare and free. */
static void check_out(char *got, const char *want, int line)
{
	if (!got || strcmp(got, want) != 0)
		fprintf(stderr, "line %d:\n  got:  [%s]\n  want: [%s]\n", line, got ? got : "(null)",
		        want);
	CHECK(got && strcmp(got, want) == 0);
	free(got);
}
#define CHECK_OUT(got, want) check_out((got), (want), __LINE__)

static int has(const char *haystack, const char *needle)
{
	return haystack && strstr(haystack, needle) != NULL;
}

static char *resolved(struct tether_vcs *v, const char *rev)
{
	static char id[41];
	int rc = ops->resolve(v, rev, id);

	if (rc != 0) {
		fprintf(stderr, "  (resolve %s: %s)\n", rev, tether_error_last());
		return strdup("");
	}
	return strdup(id);
}

static int count_file(void *ud, const char *path, const char *data, size_t len)
{
	(void)path;
	(void)data;
	(void)len;
	(*(int *)ud)++;
	return 0;
}

/* ---------------------------------------------------------------- */
/* open                                                              */
/* ---------------------------------------------------------------- */

static void check_open(const char *repo, const char *from, const char *common_want)
{
	char *workdir = NULL, *common = NULL;
	struct tether_vcs *v = NULL;

	CHECK(ops->open(from, &v, &workdir, &common) == 0);
	CHECK_STR(workdir, repo);
	CHECK_STR(common, common_want);
	ops->close(v);
	free(workdir);
	free(common);
}

static void test_open(void)
{
	char *nc = mkrepo("open-nc", 0), *co = mkrepo("open-co", 1);
	struct tether_vcs *v = NULL;

	put(nc, "a/b/file", "x\n");
	check_open(nc, path_in(nc, "a/b"), path_in(nc, ".jj/repo"));
	check_open(co, co, path_in(co, ".jj/repo"));
	sh("mkdir -p '%s'", path_in(scratch, "plain/sub"));
	CHECK(ops->open(path_in(scratch, "plain/sub"), &v, NULL, NULL) == TETHER_ENOREPO);
	CHECK(has(tether_error_last(), "not inside a jj repository"));
	CHECK(ops->open(path_in(scratch, "no/such/dir"), &v, NULL, NULL) == TETHER_EIO);

	/* A second workspace: .jj/repo is a file naming the first one's. */
	sh("cd '%s' && %s --quiet workspace add --name ws2 '%s'", nc, jj, path_in(scratch, "open-ws2"));
	check_open(path_in(scratch, "open-ws2"), path_in(scratch, "open-ws2"), path_in(nc, ".jj/repo"));
	free(nc);
	free(co);
}

/* ---------------------------------------------------------------- */
/* commit_paths, resolve, reads                                      */
/* ---------------------------------------------------------------- */

/* The first commits of a fresh repository: only the dataset's paths go in,
 * the user's other changes stay in @. */
static void test_commit_basics(const char *repo, struct tether_vcs *v, char first[41],
                               char second[41])
{
	char id[41];

	CHECK(ops->resolve(v, "HEAD", id) == TETHER_ENOTFOUND);
	CHECK(has(tether_error_last(), "no commits yet"));
	put(repo, "ds/tether.toml", "[dataset]\n");
	put(repo, "ds/.tether/objects/a.toml", "kind = \"file\"\n");
	put(repo, "notes.txt", "the user's\n");
	put(repo, "ds-x/f", "a sibling, not under ds\n");
	CHECK(commit_one(v, "ds", "first\n", first) == 0);
	CHECK_OUT(commit_of(repo, "@-"), first);
	CHECK_OUT(summary(repo, "@-"), "A ds/.tether/objects/a.toml\nA ds/tether.toml");
	CHECK_OUT(summary(repo, "@"), "A ds-x/f\nA notes.txt");

	/* Nothing under ds changed: no commit, and @- stays. */
	put(repo, "notes.txt", "changed again\n");
	CHECK(commit_one(v, "ds", "again", id) == 0);
	CHECK_STR(id, "");
	CHECK_OUT(commit_of(repo, "@-"), first);

	put(repo, "ds/.tether/objects/a.toml", "kind = \"file\"\nstate = 2\n");
	put(repo, "ds/.tether/objects/we\"ird*[x].toml", "odd = true\n");
	CHECK(commit_one(v, "./ds/", "\nsecond  \n\n\n", second) == 0);
	CHECK_OUT(commit_of(repo, "@-"), second);
	CHECK_OUT(summary(repo, "@-"),
	          "M ds/.tether/objects/a.toml\nA ds/.tether/objects/we\"ird*[x].toml");
	CHECK_OUT(summary(repo, "@"), "A ds-x/f\nA notes.txt");
	CHECK_OUT(jj_log(repo, "@-", "description"), "second");
}

static void test_resolve(const char *repo, struct tether_vcs *v, const char *first,
                         const char *second)
{
	char id[41], spelled[64];

	CHECK_OUT(resolved(v, "HEAD"), second);
	CHECK_OUT(resolved(v, "@-"), second);
	CHECK_OUT(resolved(v, "HEAD~1"), first);
	CHECK_OUT(resolved(v, "HEAD^"), first);
	CHECK_OUT(resolved(v, "HEAD~0^"), first);
	snprintf(spelled, sizeof spelled, "%s^", second);
	CHECK_OUT(resolved(v, spelled), first);
	snprintf(spelled, sizeof spelled, "%.10s", first);
	CHECK_OUT(resolved(v, spelled), first);
	sh("%s -R '%s' --quiet bookmark create b1 -r '%s'", jj, repo, first);
	CHECK_OUT(resolved(v, "b1"), first);
	CHECK_OUT(resolved(v, "refs/heads/b1"), first);
	CHECK(ops->resolve(v, "refs/heads/b", id) == TETHER_ENOTFOUND); /* exactly: not b1 */
	sh("%s -R '%s' --quiet tag set t1 -r '%s'", jj, repo, second);
	CHECK_OUT(resolved(v, "refs/tags/t1"), second);
	CHECK_OUT(resolved(v, "description(exact:\"first\n\")"), first);
	CHECK(ops->resolve(v, "HEAD~2", id) == TETHER_ENOTFOUND);
	CHECK(ops->resolve(v, "no-such-bookmark", id) == TETHER_ENOTFOUND);
	CHECK(has(tether_error_last(), "no-such-bookmark"));
	CHECK(ops->resolve(v, "all()", id) == TETHER_EUSAGE);
	CHECK(has(tether_error_last(), "more than one commit"));
	CHECK(ops->resolve(v, "none()", id) == TETHER_ENOTFOUND);
	CHECK(ops->resolve(v, "root()", id) == TETHER_ENOTFOUND);
	CHECK(ops->resolve(v, "HEAD^2", id) == TETHER_EUSAGE);
	CHECK(ops->resolve(v, "(", id) == TETHER_EUSAGE);
	CHECK(ops->resolve(v, "", id) == TETHER_EUSAGE);
}

static void test_reads(struct tether_vcs *v, const char *first, const char *second)
{
	char *data = NULL, tree[41];
	size_t len = 0;
	json_t *log = NULL;
	int n = 0;

	CHECK(ops->read_file(v, second, "ds/.tether/objects/a.toml", &data, &len) == 0);
	CHECK_STR(data, "kind = \"file\"\nstate = 2\n");
	CHECK(len == strlen("kind = \"file\"\nstate = 2\n"));
	free(data);
	CHECK(ops->read_file(v, "HEAD~1", "ds/.tether/objects/a.toml", &data, NULL) == 0);
	CHECK_STR(data, "kind = \"file\"\n");
	free(data);
	CHECK(ops->read_file(v, second, "notes.txt", &data, NULL) == TETHER_ENOTFOUND);
	CHECK(ops->read_file(v, second, ".jj/repo", &data, NULL) == TETHER_EUSAGE);
	CHECK(ops->read_tree(v, first, "ds", count_file, &n) == 0 && n == 2);
	n = 0;
	CHECK(ops->read_tree(v, "HEAD", "ds/.tether", count_file, &n) == 0 && n == 2);
	CHECK(ops->tree_id(v, second, "ds", tree) == 0 && strlen(tree) == 40);
	CHECK(ops->tree_id(v, second, "nowhere", tree) == 0 && tree[0] == '\0');

	CHECK(ops->log(v, NULL, "ds/.tether", 0, &log) == 0);
	CHECK(json_array_size(log) == 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(log, 0), "id")), second);
	CHECK_STR(json_string_value(json_object_get(json_array_get(log, 0), "message")), "second\n");
	CHECK_STR(json_string_value(json_object_get(json_array_get(log, 0), "author")), "Jay Jay");
	json_decref(log);
	CHECK(ops->log(v, "HEAD", "ds/tether.toml", 0, &log) == 0);
	CHECK(json_array_size(log) == 1); /* only the first commit changed it */
	json_decref(log);
	CHECK(ops->log(v, NULL, "notes.txt", 0, &log) == 0 && json_array_size(log) == 0);
	json_decref(log);
}

/* Ignore rules do not apply to the named paths; deletions are recorded;
 * paths that would reach outside or into .jj are refused. */
static void test_commit_edges(const char *repo, struct tether_vcs *v)
{
	const char *none[] = { NULL };
	const char *bad[] = { "ds/.jj/x" };
	char id[41];

	put(repo, ".gitignore", "*.toml\n");
	put(repo, "ds/.tether/objects/ignored.toml", "x = 1\n");
	sh("rm '%s'", path_in(repo, "ds/.tether/objects/a.toml"));
	CHECK(commit_one(v, "ds", "edges", id) == 0);
	CHECK_OUT(summary(repo, "@-"),
	          "D ds/.tether/objects/a.toml\nA ds/.tether/objects/ignored.toml");
	CHECK(ops->commit_paths(v, none, 0, "m", id) == TETHER_EUSAGE);
	CHECK(ops->commit_paths(v, bad, 1, "m", id) == TETHER_EUSAGE);
	CHECK(commit_one(v, "../x", "m", id) == TETHER_EUSAGE);
	put(repo, "ds/tether.toml", "[dataset]\nchanged = 1\n");
	CHECK(commit_one(v, "ds", " \n\n", id) == TETHER_EUSAGE);

	/* No identity: refused before anything is committed. */
	char *before = commit_of(repo, "@-");
	unsetenv("JJ_USER");
	unsetenv("JJ_EMAIL");
	CHECK(commit_one(v, "ds", "anonymous", id) == TETHER_ECONFIG);
	setenv("JJ_USER", "Jay Jay", 1);
	setenv("JJ_EMAIL", "jay@example.org", 1);
	CHECK_OUT(commit_of(repo, "@-"), before);
	free(before);
	CHECK(commit_one(v, "ds", "named", id) == 0);

	int tracked = -1;
	CHECK(ops->is_tracked(v, "ds/tether.toml", &tracked) == 0 && tracked == 1);
	CHECK(ops->is_tracked(v, "ds", &tracked) == 0 && tracked == 1);
	CHECK(ops->is_tracked(v, "notes.txt", &tracked) == 0 && tracked == 1); /* in @ */
	CHECK(ops->is_tracked(v, "never/here", &tracked) == 0 && tracked == 0);
}

/* gc and verify --all-history stand on each_commit: an abandoned commit
 * is gone, even though jj keeps it under refs/jj/keep. */
static int collect_id(void *ud, const char *id)
{
	json_array_append_new(ud, json_string(id));
	return 0;
}

static int contains(const json_t *ids, const char *id)
{
	size_t i;
	json_t *e;

	json_array_foreach(ids, i, e)
		if (strcmp(json_string_value(e), id) == 0)
			return 1;
	return 0;
}

/* history_files: each file as "path@commit" in an array. */
static int collect_file(void *ud, const char *commit, const char *path, const char *data, size_t len)
{
	(void)data;
	(void)len;
	json_array_append_new(ud, json_sprintf("%s@%s", path, commit));
	return 0;
}

static int names_path(const json_t *files, const char *path)
{
	size_t i, n = strlen(path);
	json_t *e;

	json_array_foreach(files, i, e)
		if (strncmp(json_string_value(e), path, n) == 0 && json_string_value(e)[n] == '@')
			return 1;
	return 0;
}

/* history_trees: the commits, as "commit" strings; files not kept. */
static int tree_commit(void *ud, const char *commit, const char *tree, int fresh)
{
	(void)tree;
	(void)fresh;
	json_array_append_new(ud, json_string(commit));
	return 0;
}

static int tree_file(void *ud, const char *path, const char *blob, const char *data, size_t len)
{
	(void)ud;
	(void)path;
	(void)blob;
	(void)data;
	(void)len;
	return 0;
}

static const struct tether_vcs_tree_walk tree_cbs = { tree_commit, tree_file };

static void test_each_commit(const char *repo, struct tether_vcs *v)
{
	json_t *ids = json_array(), *files = json_array();
	char id[41], *expected, *abandoned;
	size_t want, walked = 0;

	put(repo, "ds/.tether/objects/gone.toml", "to be abandoned\n");
	CHECK(commit_one(v, "ds", "abandon me", id) == 0);
	abandoned = strdup(id);
	CHECK(ops->each_commit(v, collect_id, ids) == 0);
	CHECK(contains(ids, abandoned));
	json_array_clear(ids);
	CHECK(ops->history_files(v, "ds/.tether/objects", NULL, collect_file, files, &walked) == 0);
	CHECK(names_path(files, "gone.toml"));
	json_array_clear(files);

	sh("%s -R '%s' --quiet abandon '%s'", jj, repo, abandoned);
	CHECK(ops->each_commit(v, collect_id, ids) == 0);
	CHECK(!contains(ids, abandoned));
	/* The abandoned commit's files are gone from history_files too, and it
	 * walks exactly the commits each_commit visits. */
	CHECK(ops->history_files(v, "ds/.tether/objects", NULL, collect_file, files, &walked) == 0);
	CHECK(!names_path(files, "gone.toml"));
	CHECK(walked == json_array_size(ids));
	CHECK(ops->history_files(v, ".jj/repo", NULL, collect_file, files, &walked) == TETHER_EUSAGE);
	/* history_trees walks the same visible commits, or those of a tip */
	json_t *walked_ids = json_array();
	CHECK(ops->history_trees(v, NULL, 0, "ds/.tether/objects", NULL, &tree_cbs, walked_ids, &walked) == 0);
	CHECK(walked == json_array_size(ids) && json_array_size(walked_ids) == walked && !contains(walked_ids, abandoned));
	json_array_clear(walked_ids);
	const char *tip[] = { json_string_value(json_array_get(ids, 0)) };
	CHECK(ops->history_trees(v, tip, 1, "ds/.tether/objects", NULL, &tree_cbs, walked_ids, &walked) == 0);
	CHECK(walked >= 1 && contains(walked_ids, tip[0]));
	CHECK(ops->history_trees(v, NULL, 0, ".jj/repo", NULL, &tree_cbs, walked_ids, &walked) == TETHER_EUSAGE);
	json_decref(walked_ids);
	json_decref(files);
	expected = out("%s -R '%s' log --ignore-working-copy --no-graph -r '::visible_heads() ~ root()' "
	               "-T 'commit_id ++ \"\\n\"' | wc -l",
	               jj, repo);
	want = (size_t)atoi(expected);
	CHECK(want > 0 && json_array_size(ids) == want);
	free(expected);
	free(abandoned);
	json_decref(ids);
}

/* ---------------------------------------------------------------- */
/* current_branch / switch_to                                        */
/* ---------------------------------------------------------------- */

static char *branch(struct tether_vcs *v)
{
	char *name = NULL;
	int rc = ops->current_branch(v, &name);

	if (rc != 0)
		fprintf(stderr, "  (current_branch: %s)\n", tether_error_last());
	return name;
}

static void test_branches(const char *repo, struct tether_vcs *v, const char *first)
{
	char *name, *ops_before, *ops_after, *at, id[41];

	sh("%s -R '%s' --quiet bookmark delete b1", jj, repo);
	name = branch(v);
	CHECK(name == NULL); /* the default workspace, no bookmark near */
	free(name);
	sh("%s -R '%s' --quiet bookmark create main -r @-", jj, repo);
	CHECK_OUT(branch(v), "main");
	sh("%s -R '%s' --quiet bookmark create wip -r @", jj, repo);
	CHECK_OUT(branch(v), "wip"); /* the one on @ is carried forward */
	sh("%s -R '%s' --quiet bookmark create also -r @", jj, repo);
	{
		/* Every bookmark the checkout stands on: @'s, then @-'s. */
		json_t *here = NULL;
		CHECK(ops->checkout_bookmarks(v, &here) == 0);
		CHECK(json_array_size(here) == 3);
		CHECK_STR(json_string_value(json_array_get(here, 0)), "also");
		CHECK_STR(json_string_value(json_array_get(here, 1)), "wip");
		CHECK_STR(json_string_value(json_array_get(here, 2)), "main");
		json_decref(here);
	}
	sh("%s -R '%s' --quiet bookmark delete also", jj, repo);
	sh("%s -R '%s' --quiet bookmark delete wip", jj, repo);

	/* switch_to(NULL, NULL) stays: not even an operation. */
	ops_before = out("%s -R '%s' op log --no-graph -n1 -T 'id'", jj, repo);
	CHECK(ops->switch_to(v, NULL, NULL) == 0);
	ops_after = out("%s -R '%s' op log --no-graph -n1 -T 'id'", jj, repo);
	CHECK_STR(ops_after, ops_before);
	free(ops_before);
	free(ops_after);

	/* jj new FIRST: @- is first; the old working copy stays in its change. */
	put(repo, "wip.txt", "uncommitted\n");
	CHECK(ops->switch_to(v, first, NULL) == 0);
	CHECK_OUT(commit_of(repo, "@-"), first);
	CHECK(access(path_in(repo, "wip.txt"), F_OK) != 0);
	CHECK_OUT(out("%s -R '%s' log --ignore-working-copy --no-graph -r 'description(\"\") & "
	              "~empty() & ~@' -T 'commit_id ++ \"\\n\"' | wc -l",
	              jj, repo),
	          "1");

	/* A new bookmark goes on @ and moves with the next commit. */
	CHECK(ops->switch_to(v, NULL, "feature") == 0);
	CHECK_OUT(branch(v), "feature");
	put(repo, "ds/tether.toml", "[dataset]\nfeature = 1\n");
	CHECK(commit_one(v, "ds", "on feature", id) == 0);
	CHECK_OUT(commit_of(repo, "feature"), id);
	CHECK_OUT(branch(v), "feature");

	/* Refused before anything moves. */
	at = commit_of(repo, "@");
	CHECK(ops->switch_to(v, "main", "feature") == TETHER_EREFUSED);
	CHECK(ops->switch_to(v, "main", "bad name") == TETHER_EUSAGE);
	CHECK(ops->switch_to(v, "no-such-rev", NULL) == TETHER_ENOTFOUND);
	CHECK_OUT(commit_of(repo, "@"), at);
	free(at);

	CHECK(ops->switch_to(v, "main", "other") == 0);
	char *main_id = commit_of(repo, "main");
	CHECK_OUT(commit_of(repo, "@-"), main_id);
	free(main_id);
	CHECK_OUT(branch(v), "other");

	/* The live bookmarks: a deleted one is gone at once. */
	json_t *names = NULL;
	sh("%s -R '%s' --quiet bookmark delete feature", jj, repo);
	CHECK(ops->list_bookmarks(v, &names) == 0);
	CHECK(json_array_size(names) == 2);
	CHECK_STR(json_string_value(json_array_get(names, 0)), "main");
	CHECK_STR(json_string_value(json_array_get(names, 1)), "other");
	json_decref(names);
}

/* position / return_to: `jj op restore` takes back the new change and the
 * bookmark made on it, and the working copy holds what it held. */
static void test_return_to(const char *repo, struct tether_vcs *v, const char *first)
{
	json_t *pos = NULL;
	put(repo, "wip.txt", "not committed\n");
	CHECK(ops->position(v, &pos) == 0);
	CHECK(json_is_string(json_object_get(pos, "operation")));
	char *change = jj_log(repo, "@", "change_id"), *parent = commit_of(repo, "@-");
	CHECK(ops->switch_to(v, first, "undone") == 0);
	CHECK_OUT(branch(v), "undone");
	CHECK(access(path_in(repo, "wip.txt"), F_OK) != 0);
	CHECK(ops->return_to(v, pos, "undone") == 0);
	CHECK_OUT(jj_log(repo, "@", "change_id"), change);
	CHECK_OUT(commit_of(repo, "@-"), parent);
	CHECK_OUT(out("cat '%s'", path_in(repo, "wip.txt")), "not committed");
	CHECK_OUT(out("%s -R '%s' bookmark list --ignore-working-copy -T 'name ++ \"\\n\"' | grep -c '^undone$'",
	              jj, repo),
	          "0");
	free(change);
	free(parent);
	json_decref(pos);
}

/* A second workspace commits on its own @-, and is named by its
 * workspace when no bookmark is near. */
static void test_workspace(const char *repo)
{
	char wsdir[PATH_MAX], id[41], *main_before, *name;
	struct tether_vcs *w;

	snprintf(wsdir, sizeof wsdir, "%s-second", repo);
	sh("cd '%s' && %s --quiet workspace add --name second -r 'root()' '%s'", repo, jj, wsdir);
	w = open_at(wsdir);
	CHECK(w != NULL);
	if (!w)
		return;
	name = branch(w);
	CHECK_STR(name, "second");
	free(name);
	main_before = commit_of(repo, "@-");
	put(wsdir, "ds/tether.toml", "[dataset]\nfrom = \"second\"\n");
	put(wsdir, "scratch.txt", "stays in second's @\n");
	CHECK(commit_one(w, "ds", "from the second workspace", id) == 0);
	CHECK_OUT(commit_of(wsdir, "@-"), id);
	CHECK_OUT(summary(wsdir, "@-"), "A ds/tether.toml");
	CHECK_OUT(commit_of(repo, "@-"), main_before);
	CHECK_OUT(resolved(w, "HEAD"), id);
	char *at = commit_of(wsdir, "@");
	CHECK_OUT(resolved(w, "second@"), at);
	free(at);
	free(main_before);
	ops->close(w);
}

/* The whole sequence in one repository. */
static void run_all(const char *name, int colocate)
{
	char *repo = mkrepo(name, colocate);
	char first[41] = "", second[41] = "";
	struct tether_vcs *v = open_at(repo);

	CHECK(v != NULL);
	if (!v) {
		free(repo);
		return;
	}
	test_commit_basics(repo, v, first, second);
	test_resolve(repo, v, first, second);
	test_reads(v, first, second);
	test_commit_edges(repo, v);
	test_each_commit(repo, v);
	test_branches(repo, v, first);
	test_return_to(repo, v, first);
	test_workspace(repo);
	ops->close(v);
	free(repo);
}

static void test_missing_jj(void)
{
	char *repo = mkrepo("missing-jj", 0);
	struct tether_vcs *v = open_at(repo);
	char id[41];

	setenv("TETHER_JJ", "/nonexistent/jj", 1);
	CHECK(v && ops->resolve(v, "@", id) == TETHER_ECONFIG);
	CHECK(has(tether_error_last(), "cannot run jj"));
	setenv("TETHER_JJ", jj, 1);
	CHECK(v && ops->resolve(v, "@", id) == 0);
	if (v)
		ops->close(v);
	free(repo);
}

/* ---------------------------------------------------------------- */

/* The jj to test with: $TETHER_JJ, else jj on PATH; 0 when there is none. */
static int find_jj(void)
{
	const char *env = getenv("TETHER_JJ");
	char *found;

	if (env && *env) {
		snprintf(jj, sizeof jj, "%s", env);
		return access(jj, X_OK) == 0;
	}
	found = out("command -v jj 2>/dev/null");
	snprintf(jj, sizeof jj, "%s", found);
	free(found);
	if (!*jj)
		return 0;
	setenv("TETHER_JJ", jj, 1); /* the module runs the very same one */
	return 1;
}

static void isolate_environment(void)
{
	char home[PATH_MAX], config[PATH_MAX];

	snprintf(home, sizeof home, "%s/home", scratch);
	snprintf(config, sizeof config, "%s/jj-config.toml", scratch);
	mkdir(home, 0700);
	put(scratch, "jj-config.toml", "");
	setenv("HOME", home, 1);
	setenv("JJ_CONFIG", config, 1);
	setenv("JJ_USER", "Jay Jay", 1);
	setenv("JJ_EMAIL", "jay@example.org", 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CEILING_DIRECTORIES", scratch, 1);
	setenv("LC_ALL", "C", 1);
	setenv("TZ", "UTC", 1);
	unsetenv("XDG_CONFIG_HOME");
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char templ[PATH_MAX], real[PATH_MAX];

	if (!find_jj()) {
		/* `make check` sets TETHER_REQUIRE_TOOLS=1: there a missing jj
		 * fails the run rather than skipping what it cannot test. */
		const char *require = getenv("TETHER_REQUIRE_TOOLS");
		int required = require && strcmp(require, "1") == 0;
		printf("%s: jj is not installed (put it on PATH or set TETHER_JJ)\n", required ? "FAIL" : "SKIP");
		return required ? 1 : 77;
	}
	snprintf(templ, sizeof templ, "%s/tether-vcs-jj-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(templ) || !realpath(templ, real) || strlen(real) >= sizeof scratch) {
		perror("mkdtemp");
		return 2;
	}
	memcpy(scratch, real, strlen(real) + 1);
	isolate_environment();
	ops = tether_vcs_module[0];
	CHECK(ops && ops->version == TETHER_VCS_OPS_VERSION && ops->size == sizeof *ops && tether_vcs_module[1] == NULL);
	CHECK_STR(ops->name, "jj");

	test_open();
	run_all("non-colocated", 0);
	run_all("colocated", 1);
	test_missing_jj();

	git_libgit2_shutdown(); /* frees libgit2's globals for LeakSanitizer */
	if (check_failed)
		fprintf(stderr, "repositories kept in %s\n", scratch);
	else
		sh("rm -rf '%s'", scratch);
	CHECK_DONE();
}
