/* The native history walk (src/vcs/git_native_walk.c, gitrevwalk.c)
 * against libgit2's (git_history_libgit2.c), on the same repositories made
 * by real git: linear, merges, clock skew, equal times, annotated tags (and
 * a tag of a tag), a tag of a blob, many branches (loose and packed refs
 * mixed), an unborn HEAD with branches. For each, each_commit must give
 * the same ids in the same order, and history_files the same callbacks
 * (commit, path, bytes, in order), without a cache file, with a cache file
 * the walk makes, and with the cache file the other walk made. The native
 * walk must really have run (not handed over to libgit2). Refs the native
 * walk leaves to libgit2 (a dangling symbolic ref, a dot-file ref) must be
 * handed over, and a damaged commit refused with a message naming it. */
#include "check.h"
#include "shell.h"

#include "vcs/git_native_walk.h"
#include "vcs/git_store.h"
#include "vcs/gitodb.h"
#include "vcs/gitrefs.h"

#include <tether.h>
#include <tether/backend.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char scratch[PATH_MAX / 2];

/* What a walk handed over, as text. */
struct log {
	char *s;
	size_t len, cap;
};

static void log_add(struct log *l, const char *a, const char *b, const char *data, size_t n)
{
	size_t need = l->len + strlen(a) + strlen(b) + n + 8;
	if (need > l->cap) {
		l->cap = need * 2;
		l->s = realloc(l->s, l->cap);
	}
	l->len += (size_t)sprintf(l->s + l->len, "%s %s %zu:", a, b, n);
	memcpy(l->s + l->len, data, n);
	l->len += n;
	l->s[l->len++] = '\n';
	l->s[l->len] = '\0';
}

static int on_commit(void *ud, const char *id)
{
	log_add(ud, "commit", id, "", 0);
	return 0;
}

static int on_file(void *ud, const char *commit, const char *path, const char *data, size_t len)
{
	log_add(ud, commit, path, data, len);
	return 0;
}

struct native {
	struct tt_grepo repo;
	struct tt_godb *db;
};

static int native_open(const char *dir, struct native *n)
{
	char objects[PATH_MAX];
	memset(n, 0, sizeof *n);
	if (tt_grepo_find(dir, &n->repo) != 0)
		return -1;
	snprintf(objects, sizeof objects, "%s/objects", n->repo.commondir);
	return tt_godb_open(objects, &n->db);
}

static void native_close(struct native *n)
{
	tt_godb_free(n->db);
	tt_grepo_clear(&n->repo);
}

/* The libgit2 walk's log, or NULL when it fails. */
static char *libgit2_commits(const char *dir)
{
	struct tether_vcs *v = NULL;
	struct log l = {0};
	if (tt_git_ops.open(dir, &v, NULL, NULL) != 0)
		return NULL;
	int rc = tt_git_ops.each_commit(v, on_commit, &l);
	tt_git_ops.close(v);
	if (rc != 0) {
		free(l.s);
		return NULL;
	}
	return l.s ? l.s : strdup("");
}

static char *libgit2_files(const char *dir, const char *sub, const char *cache, size_t *commits)
{
	struct tether_vcs *v = NULL;
	struct log l = {0};
	if (tt_git_ops.open(dir, &v, NULL, NULL) != 0)
		return NULL;
	int rc = tt_git_ops.history_files(v, sub, cache, on_file, &l, commits);
	tt_git_ops.close(v);
	if (rc != 0) {
		free(l.s);
		return NULL;
	}
	return l.s ? l.s : strdup("");
}

/* The native walk's log; *handed_over when it left the walk to libgit2. */
static char *native_commits(const char *dir, int *handed_over)
{
	struct native n;
	struct log l = {0};
	*handed_over = -1;
	if (native_open(dir, &n) != 0)
		return NULL;
	int rc = tt_native_each_commit(&n.repo, n.db, on_commit, &l, handed_over);
	native_close(&n);
	if (rc != 0) {
		free(l.s);
		return NULL;
	}
	return l.s ? l.s : strdup("");
}

static char *native_files(const char *dir, const char *sub, const char *cache, size_t *commits, int *handed_over)
{
	struct native n;
	struct log l = {0};
	*handed_over = -1;
	if (native_open(dir, &n) != 0)
		return NULL;
	int rc = tt_native_history(&n.repo, n.db, sub, cache, &(struct tt_walk_wants){.files = on_file, .ud = &l},
	                           commits, handed_over);
	native_close(&n);
	if (rc != 0) {
		free(l.s);
		return NULL;
	}
	return l.s ? l.s : strdup("");
}

/* Both walks of `dir` agree, on every way of running them. */
static void check_same(const char *dir, const char *what)
{
	int handed = -1;
	size_t c1 = 0, c2 = 0;
	char *want = libgit2_commits(dir), *got = native_commits(dir, &handed);
	fprintf(stderr, "# %s\n", what);
	CHECK(want != NULL && got != NULL);
	CHECK(handed == 0);
	CHECK(want && strlen(want) > 0);
	CHECK_STR(got, want);
	free(want);
	free(got);

	char *files = libgit2_files(dir, "d", NULL, &c1), *nfiles = native_files(dir, "d", NULL, &c2, &handed);
	CHECK(files != NULL && nfiles != NULL && handed == 0);
	CHECK_STR(nfiles, files);
	CHECK(c1 == c2 && c1 > 0);
	free(nfiles);

	/* Cache files: each walk makes its own (cold), reads it (warm), and
	 * reads the one the other made. */
	char lcache[PATH_MAX], ncache[PATH_MAX];
	snprintf(lcache, sizeof lcache, "%s/lg2.cache", scratch);
	snprintf(ncache, sizeof ncache, "%s/native.cache", scratch);
	unlink(lcache);
	unlink(ncache);
	for (int round = 0; round < 2; round++) {
		char *a = libgit2_files(dir, "d", lcache, &c1), *b = native_files(dir, "d", ncache, &c2, &handed);
		CHECK(handed == 0);
		CHECK_STR(a, files);
		CHECK_STR(b, files);
		CHECK(c1 == c2);
		free(a);
		free(b);
		CHECK(access(lcache, F_OK) == 0 && access(ncache, F_OK) == 0);
	}
	char *a = libgit2_files(dir, "d", ncache, &c1), *b = native_files(dir, "d", lcache, &c2, &handed);
	CHECK_STR(a, files);
	CHECK_STR(b, files);
	CHECK(sh("cmp -s '%s' '%s'", lcache, ncache) == 0); /* the same file, byte for byte */
	free(a);
	free(b);
	free(files);
}

static char *mkrepo(const char *name)
{
	return git_repo_at(scratch, name);
}

/* A commit at time t that changes d/<file> (and sometimes d/sub/x). */
static void commit_at(const char *repo, long t, const char *file, const char *msg)
{
	sh("cd '%s' && mkdir -p d/sub && echo '%s %ld' >>'d/%s' && echo %ld >d/sub/x.%ld && git add -A && "
	   "GIT_AUTHOR_DATE='@%ld +0000' GIT_COMMITTER_DATE='@%ld +0000' git commit -q -m '%s'",
	   repo, msg, t, file, t % 3, t % 2, t, t, msg);
}

static void test_linear(void)
{
	char *r = mkrepo("linear");
	for (int i = 0; i < 12; i++)
		commit_at(r, 1700000000 + 60 * i, i % 2 ? "a" : "b", "c");
	check_same(r, "linear, loose");
	sh("git -C '%s' gc -q", r);
	check_same(r, "linear, packed (with a commit-graph)");
	free(r);
}

static void test_merges_skew_equal_times(void)
{
	char *r = mkrepo("merges");
	long t = 1700000000;
	commit_at(r, t, "a", "root");
	sh("git -C '%s' branch side && git -C '%s' branch third", r, r);
	commit_at(r, t + 100, "a", "m1");
	commit_at(r, t + 50, "a", "m2 skewed older than its parent");
	sh("git -C '%s' checkout -q side", r);
	commit_at(r, t + 100, "s", "s1 same time as m1");
	commit_at(r, t + 100, "s", "s2 same time");
	sh("git -C '%s' checkout -q third", r);
	commit_at(r, t + 500, "t", "t1 newer");
	commit_at(r, t + 10, "t", "t2 far older");
	sh("git -C '%s' checkout -q main && GIT_COMMITTER_DATE='@%ld +0000' git -C '%s' merge -q --no-ff --no-edit -s ours side "
	   "&& GIT_COMMITTER_DATE='@%ld +0000' git -C '%s' merge -q --no-ff --no-edit -s ours third",
	   r, t + 100, r, t + 100, r);
	CHECK(sh("test $(git -C '%s' rev-list --merges --count main) = 2", r) == 0);
	check_same(r, "merges, clock skew, equal times");
	/* an octopus merge, on a detached HEAD */
	sh("cd '%s' && git checkout -q --detach third~1 && git merge -q --no-ff --no-edit -s ours side main~2", r);
	CHECK(sh("test $(git -C '%s' rev-list --min-parents=3 --count HEAD) = 1", r) == 0);
	check_same(r, "detached HEAD at an octopus");
	sh("git -C '%s' pack-refs --all && git -C '%s' branch late main~1", r, r);
	check_same(r, "packed refs and a loose one");
	free(r);
}

static void test_tags_and_branches(void)
{
	char *r = mkrepo("tags");
	long t = 1700000000;
	for (int i = 0; i < 6; i++)
		commit_at(r, t + 10 * i, "a", "c");
	sh("cd '%s' && git tag -a -m ann v1 HEAD~3 && git -c advice.nestedTag=false tag -a -m ann2 v2 v1 && git tag light HEAD~5 && "
	   "blob=$(echo hi | git hash-object -w --stdin) && git tag blobtag $blob && git tag -a -m b ablob $blob && "
	   "git tag treetag HEAD^{tree}",
	   r);
	/* Many branches, each with a commit of its own, some at equal times. */
	for (int i = 0; i < 30; i++)
		sh("cd '%s' && git checkout -q -b b%02d main~%d && echo %d >d/br && git add -A && "
		   "GIT_COMMITTER_DATE='@%ld +0000' git commit -q -m b%d",
		   r, i, i % 6, i, t + 5 * (i % 4), i);
	sh("git -C '%s' checkout -q main", r);
	check_same(r, "annotated tags, a tag of a tag, tags of a blob and a tree, 30 branches");
	sh("git -C '%s' pack-refs --all && git -C '%s' update-ref refs/heads/b07 b03 && git -C '%s' branch zz b11", r, r,
	   r);
	check_same(r, "the same, packed, with loose refs hiding packed ones");
	free(r);
}

static void test_unborn_head(void)
{
	char *r = mkrepo("unborn");
	commit_at(r, 1700000000, "a", "one");
	commit_at(r, 1700000100, "a", "two");
	sh("git -C '%s' branch other HEAD~1 && git -C '%s' symbolic-ref HEAD refs/heads/nothing", r, r);
	check_same(r, "an unborn HEAD with branches");
	free(r);
}

/* Refs libgit2 might read otherwise go to libgit2; damage is refused. */
static void test_handed_over_and_damage(void)
{
	char *r = mkrepo("odd");
	int handed = -1;
	commit_at(r, 1700000000, "a", "one");
	sh("git -C '%s' symbolic-ref refs/heads/dangling refs/heads/none", r);
	char *got = native_commits(r, &handed);
	CHECK(got != NULL && handed == 1 && strcmp(got, "") == 0);
	free(got);
	sh("rm '%s/.git/refs/heads/dangling' && git -C '%s' rev-parse HEAD >'%s/.git/refs/heads/.dot'", r, r, r);
	got = native_commits(r, &handed);
	CHECK(got != NULL && handed == 1);
	free(got);
	sh("rm '%s/.git/refs/heads/.dot'", r);

	/* A commit whose committer line has no e-mail, reachable from main. */
	sh("cd '%s' && c=$(printf 'tree %%s\\nparent %%s\\nauthor A <a@b> 1 +0000\\ncommitter nobody 2 +0000\\n\\nx\\n' "
	   "$(git rev-parse HEAD^{tree}) $(git rev-parse HEAD) | git hash-object -t commit -w --stdin --literally) && "
	   "git update-ref refs/heads/bad $c",
	   r);
	got = native_commits(r, &handed);
	CHECK(got == NULL);
	CHECK(strstr(tether_error_last(), "cannot walk the history: commit ") != NULL);
	CHECK(strstr(tether_error_last(), "malformed e-mail") != NULL);
	fprintf(stderr, "# refused: %s\n", tether_error_last());
	free(got);
	free(r);
}

int main(void)
{
	char tmpl[] = "/tmp/tether-gitwalk-XXXXXX";
	char real[PATH_MAX];
	if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof scratch)
		return 2;
	memcpy(scratch, real, strlen(real) + 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("HOME", scratch, 1);
	unsetenv("GIT_DIR");
	test_linear();
	test_merges_skew_equal_times();
	test_tags_and_branches();
	test_unborn_head();
	test_handed_over_and_damage();
	sh("rm -rf '%s'", scratch);
	CHECK_DONE();
}
