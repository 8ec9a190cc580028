/* Tests for the git backend (src/backends/git/), linked in directly and
 * driven through its module symbol, as the engine would after dlopen.
 *
 * Every repository is made, and every result checked, with the real git
 * command line, so the backend is held to what git itself sees. The last
 * test gives a repository hooks, an fsmonitor, filter drivers and an ext::
 * remote that would each leave a marker file if anything ran them. */
#include "check.h"

#include <tether/backend.h>

#include <git2.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The backend on libgit2 (tether-gitbe-libgit2.so), linked in. */
extern const struct tether_backend *const tether_gitbe_libgit2;

static const struct tether_backend *be;
static struct tether_bctx ctx;
static char scratch[1024]; /* realpath'd; every repository lives here */
static char dataset[1200];
static int fake_clock;

#define DATASET_ID "0123456789abcdef0123456789abcdef"
#define OTHER_DATASET_ID "fedcba9876543210fedcba9876543210"

/* ---------------------------------------------------------------- */
/* Shell helpers                                                     */
/* ---------------------------------------------------------------- */

static void vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, size, fmt, ap);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "command too long: %s\n", fmt);
		exit(2);
	}
}

/* Run a shell command; its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int status;

	va_start(ap, fmt);
	vformat(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	status = system(cmd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run a command that must succeed. */
static void must(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void must(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int status;

	va_start(ap, fmt);
	vformat(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	status = system(cmd);
	if (status != 0) {
		fprintf(stderr, "setup command failed (%d): %s\n", status, cmd);
		exit(2);
	}
}

/* Strings the helpers return live until the end of the run. */
static char **pool;
static size_t pool_len, pool_cap;

static char *pooled(char *s)
{
	if (pool_len == pool_cap) {
		pool_cap = pool_cap ? pool_cap * 2 : 256;
		pool = realloc(pool, pool_cap * sizeof *pool);
		if (!pool)
			exit(2);
	}
	return pool[pool_len++] = s;
}

static void pool_free(void)
{
	while (pool_len)
		free(pool[--pool_len]);
	free(pool);
}

/* A shell command's standard output, without its final newline. */
static char *out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *out(const char *fmt, ...)
{
	char cmd[8192];
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	va_list ap;
	FILE *p;

	va_start(ap, fmt);
	vformat(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p)
		return pooled(strdup(""));
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			if (!buf)
				exit(2);
		}
		n = fread(buf + len, 1, 4096, p);
		len += n;
	} while (n > 0);
	pclose(p);
	while (len && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	return pooled(buf);
}

static int has(const char *haystack, const char *needle)
{
	return haystack && needle && strstr(haystack, needle) != NULL;
}

/* Write `content` to dir/rel, making the directories on the way. */
static void put(const char *dir, const char *rel, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, rel);
	must("mkdir -p \"$(dirname '%s')\"", path);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		exit(2);
	}
	fputs(content, f);
	fclose(f);
}

static int exists(const char *dir, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, rel);
	return lstat(path, &st) == 0;
}

static char *in_scratch(const char *name)
{
	char *p = malloc(PATH_MAX);

	snprintf(p, PATH_MAX, "%s/%s", scratch, name);
	return p;
}

/* A fresh repository scratch/name on branch main with one commit. */
static char *mkrepo(const char *name)
{
	char *dir = in_scratch(name);

	must("git init -q -b main '%s' && git -C '%s' config user.name 'Test User' && "
	     "git -C '%s' config user.email test@example.com",
	     dir, dir, dir);
	return dir;
}

/* `git add -A && git commit` with a date one minute after the last. */
static void commit_all(const char *repo, const char *message)
{
	fake_clock++;
	must("cd '%s' && git add -A && GIT_AUTHOR_DATE='@%d +0000' GIT_COMMITTER_DATE='@%d +0000' "
	     "git commit -q --no-verify -m '%s'",
	     repo, 1700000000 + fake_clock * 60, 1700000000 + fake_clock * 60, message);
}

static const char *rev(const char *repo, const char *name)
{
	return out("git -C '%s' rev-parse --verify -q '%s^{commit}' 2>/dev/null", repo, name);
}

static const char *status_of(const char *dir)
{
	return out("git -C '%s' status --porcelain --untracked-files=all", dir);
}

/* ---------------------------------------------------------------- */
/* Backend helpers                                                   */
/* ---------------------------------------------------------------- */

/* make_locator with options (stolen); NULL with the error printed. */
static json_t *locator_for(const char *path, json_t *options)
{
	json_t *loc = NULL;
	int rc = be->make_locator(&ctx, path, options, scratch, &loc);

	json_decref(options);
	if (rc < 0)
		fprintf(stderr, "  make_locator(%s): %s\n", path, tether_error_last());
	return loc;
}

static int locator_rc(const char *path, json_t *options)
{
	json_t *loc = NULL;
	int rc = be->make_locator(&ctx, path, options, scratch, &loc);

	json_decref(options);
	json_decref(loc);
	return rc;
}

static json_t *state_of(const json_t *loc)
{
	struct tether_fingerprint fp;
	int rc = be->fingerprint(&ctx, loc, NULL, &fp);

	if (rc < 0) {
		fprintf(stderr, "  fingerprint: %s\n", tether_error_last());
		return NULL;
	}
	free(fp.listing);
	return fp.state;
}

static const char *sha_of(const json_t *j)
{
	return json_string_value(json_object_get(j, "sha"));
}

static int last_created = -1; /* pin()'s *created */

static json_t *pin(const json_t *loc, const json_t *state, const char *id)
{
	json_t *ref = NULL;
	int rc = be->pin(&ctx, loc, state, id, &ref, &last_created);

	if (rc < 0)
		fprintf(stderr, "  pin %s: %s\n", id, tether_error_last());
	return ref;
}

static json_t *sha_json(const char *sha)
{
	return json_pack("{s:s}", "sha", sha);
}

/* A repository with a base branch main checked out and a branch `work`
 * one commit ahead of it (a.txt changed), made with git. */
static char *repo_with_work(const char *name)
{
	char *repo = mkrepo(name);

	put(repo, "a.txt", "one\ntwo\nthree\n");
	put(repo, "c.txt", "shared\n");
	commit_all(repo, "base");
	must("git -C '%s' checkout -q -b work", repo);
	put(repo, "a.txt", "one\ntwo\nthree\nfour\n");
	commit_all(repo, "work: four");
	must("git -C '%s' checkout -q main", repo);
	return repo;
}

/* ---------------------------------------------------------------- */
/* Locators                                                          */
/* ---------------------------------------------------------------- */

static void test_locator_refusals(void)
{
	char *repo = mkrepo("loc");
	char *plain = in_scratch("plain");
	char *bare = in_scratch("bare.git");
	char *inside = malloc(PATH_MAX), *sub = malloc(PATH_MAX);

	put(repo, "f.txt", "x\n");
	commit_all(repo, "one");
	must("mkdir -p '%s/sub' '%s' && git init -q --bare '%s'", repo, plain, bare);
	snprintf(sub, PATH_MAX, "%s/sub", repo);

	CHECK(locator_rc(plain, NULL) == TETHER_EUSAGE);
	CHECK(has(tether_error_last(), plain) && has(tether_error_last(), "not a git repository"));
	CHECK(locator_rc(sub, NULL) == TETHER_EUSAGE);
	CHECK(has(tether_error_hint(), repo));
	CHECK(locator_rc(bare, NULL) == TETHER_EUSAGE);
	CHECK(has(tether_error_last(), "bare"));
	CHECK(locator_rc("https://example.com/x.git", NULL) == TETHER_EUSAGE);

	/* Inside the dataset, and the dataset inside the repository. */
	snprintf(inside, PATH_MAX, "%s/code", dataset);
	must("git init -q '%s'", inside);
	CHECK(locator_rc(inside, NULL) == TETHER_EUSAGE);
	CHECK(has(tether_error_last(), "dataset"));
	{
		struct tether_bctx saved = ctx;
		char *root = malloc(PATH_MAX);

		snprintf(root, PATH_MAX, "%s/sub", repo);
		ctx.dataset_root = root;
		CHECK(locator_rc(repo, NULL) == TETHER_EUSAGE);
		CHECK(has(tether_error_last(), "inside one another"));
		ctx = saved;
		free(root);
	}

	/* Remotes: a URL or a path is refused with where it belongs. */
	CHECK(locator_rc(repo, json_pack("{s:s}", "remote", "https://example.com/x.git")) == TETHER_EUSAGE);
	CHECK(has(tether_error_last(), ".tether/secrets.toml"));
	CHECK(locator_rc(repo, json_pack("{s:s}", "remote", "/srv/x.git")) == TETHER_EUSAGE);
	CHECK(locator_rc(repo, json_pack("{s:s}", "remote", "../x.git")) == TETHER_EUSAGE);
	CHECK(locator_rc(repo, json_pack("{s:s}", "remote", "git@host:x.git")) == TETHER_EUSAGE);
	CHECK(locator_rc(repo, json_pack("{s:s}", "remote", "nosuch")) == TETHER_EUSAGE);
	CHECK(has(tether_error_last(), "no remote named \"nosuch\""));

	/* Refs and options. */
	CHECK(locator_rc(repo, json_pack("{s:s}", "ref", "nosuch")) == TETHER_ENOTFOUND);
	CHECK(has(tether_error_last(), "'nosuch'") && has(tether_error_last(), repo));
	CHECK(locator_rc(repo, json_pack("{s:s}", "at", "deadbeef")) == TETHER_ENOTFOUND);
	CHECK(locator_rc(repo, json_pack("{s:s}", "branch", "x")) == TETHER_EUSAGE);
	CHECK(locator_rc(repo, json_pack("{s:s}", "allow_dirty", "yes")) == TETHER_EUSAGE);
	CHECK(locator_rc(repo, NULL) == 0);

	free(repo);
	free(plain);
	free(bare);
	free(inside);
	free(sub);
}

static void test_locator_accepted(void)
{
	char *repo = mkrepo("acc");
	json_t *loc, *id = NULL;
	char *gitdir = malloc(PATH_MAX);

	put(repo, "f.txt", "x\n");
	commit_all(repo, "one");
	must("git -C '%s' remote add origin '%s/nowhere.git'", repo, scratch);

	loc = locator_for("acc", json_pack("{s:s, s:b, s:s}", "remote", "origin", "allow_dirty", 1, "ref", "main"));
	CHECK(loc != NULL);
	CHECK_STR(json_string_value(json_object_get(loc, "path")), repo);
	CHECK_STR(json_string_value(json_object_get(loc, "ref")), "main");
	CHECK_STR(json_string_value(json_object_get(loc, "remote")), "origin");
	CHECK(json_is_true(json_object_get(loc, "allow_dirty")));
	CHECK(be->identity(&ctx, loc, &id) == 0);
	CHECK(json_object_size(id) == 1);
	CHECK_STR(json_string_value(json_object_get(id, "path")), repo);
	json_decref(id);
	json_decref(loc);

	/* The .git directory and a file:// URI name the same checkout;
	 * allow_dirty as the command line spells it. */
	snprintf(gitdir, PATH_MAX, "file://%s/.git", repo);
	loc = locator_for(gitdir, json_pack("{s:s}", "allow_dirty", "false"));
	CHECK_STR(json_string_value(json_object_get(loc, "path")), repo);
	CHECK_STR(json_string_value(json_object_get(loc, "ref")), "HEAD");
	CHECK(json_object_get(loc, "allow_dirty") == NULL);
	CHECK(json_object_get(loc, "remote") == NULL);
	json_decref(loc);
	free(gitdir);
	free(repo);
}

/* A committed locator is untrusted: a URL remote is refused at every use. */
static void test_committed_url_remote(void)
{
	char *repo = mkrepo("urlrem");
	json_t *loc, *state, *ref = NULL, *refs = NULL, *res = NULL;
	struct tether_fingerprint fp;
	int ok = 0;
	char *detail = NULL;

	put(repo, "f.txt", "x\n");
	commit_all(repo, "one");
	state = sha_json(rev(repo, "HEAD"));
	loc = json_pack("{s:s, s:s, s:s}", "path", repo, "ref", "HEAD", "remote", "ext::sh -c touch% /tmp/x");
	CHECK(be->fingerprint(&ctx, loc, NULL, &fp) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), ".tether/secrets.toml"));
	CHECK(be->pin(&ctx, loc, state, "ds.1", &ref, &last_created) == TETHER_EREFUSED);
	CHECK(be->list_pins(&ctx, loc, &refs) == TETHER_EREFUSED);
	CHECK(be->verify(&ctx, loc, state, NULL, &ok, &detail) == TETHER_EREFUSED);
	CHECK(be->identity(&ctx, loc, &refs) == TETHER_EREFUSED);
	json_object_set_new(loc, "remote", json_string("./relative"));
	CHECK(be->fork(&ctx, loc, state, NULL, "b", NULL, &ref) == TETHER_EREFUSED);
	json_object_set_new(loc, "remote", json_string("https://example.com/x.git"));
	ref = json_pack("{s:s}", "branch", "b");
	CHECK(be->promote(&ctx, loc, ref, NULL, &res) == TETHER_EREFUSED);
	json_decref(ref);
	CHECK(strcmp(out("git -C '%s' tag -l", repo), "") == 0);

	/* A locator naming the dataset itself, edited in by hand. */
	json_object_set_new(loc, "path", json_string(dataset));
	json_object_del(loc, "remote");
	CHECK(be->fingerprint(&ctx, loc, NULL, &fp) == TETHER_EREFUSED);
	json_decref(loc);
	json_decref(state);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* Fingerprints                                                      */
/* ---------------------------------------------------------------- */

static void test_fingerprint(void)
{
	char *repo = mkrepo("fp");
	json_t *loc, *st;

	put(repo, "f.txt", "one\n");
	put(repo, ".gitignore", "*.log\n");
	commit_all(repo, "one");
	put(repo, "f.txt", "two\n");
	commit_all(repo, "two");
	must("git -C '%s' tag v1 HEAD~1", repo);
	loc = locator_for(repo, NULL);

	st = state_of(loc);
	CHECK_STR(sha_of(st), rev(repo, "HEAD"));
	CHECK(json_is_false(json_object_get(st, "dirty")));
	CHECK(json_object_get(st, "change_id") == NULL);
	json_decref(st);

	put(repo, "f.txt", "changed\n");
	st = state_of(loc);
	CHECK(json_is_true(json_object_get(st, "dirty")));
	json_decref(st);
	must("git -C '%s' checkout -q -- f.txt", repo);

	put(repo, "new.txt", "untracked\n");
	st = state_of(loc);
	CHECK(json_is_true(json_object_get(st, "dirty")));
	json_decref(st);
	must("rm '%s/new.txt'", repo);

	put(repo, "debug.log", "ignored\n");
	st = state_of(loc);
	CHECK(json_is_false(json_object_get(st, "dirty")));
	json_decref(st);

	put(repo, "staged.txt", "s\n");
	must("git -C '%s' add staged.txt", repo);
	st = state_of(loc);
	CHECK(json_is_true(json_object_get(st, "dirty")));
	json_decref(st);
	must("git -C '%s' rm -q --cached staged.txt && rm '%s/staged.txt'", repo, repo);
	json_decref(loc);

	/* The checked-out branch by name: dirty is computed. A tag, or `at`:
	 * not checked out, so no dirty at all. */
	loc = locator_for(repo, json_pack("{s:s}", "ref", "main"));
	st = state_of(loc);
	CHECK(json_is_false(json_object_get(st, "dirty")));
	json_decref(st);
	json_decref(loc);
	loc = locator_for(repo, json_pack("{s:s}", "ref", "v1"));
	st = state_of(loc);
	CHECK_STR(sha_of(st), rev(repo, "v1"));
	CHECK(json_object_get(st, "dirty") == NULL);
	json_decref(st);
	json_decref(loc);
	loc = locator_for(repo, json_pack("{s:s}", "at", "HEAD~1"));
	st = state_of(loc);
	CHECK_STR(sha_of(st), rev(repo, "HEAD~1"));
	json_decref(st);
	json_decref(loc);

	/* The ref vanishes after add: not found, naming it. */
	must("git -C '%s' branch -q gone", repo);
	loc = locator_for(repo, json_pack("{s:s}", "ref", "gone"));
	must("git -C '%s' branch -q -D gone", repo);
	{
		struct tether_fingerprint fp;

		CHECK(be->fingerprint(&ctx, loc, NULL, &fp) == TETHER_ENOTFOUND);
		CHECK(has(tether_error_last(), "'gone'"));
	}
	json_decref(loc);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* Pins                                                              */
/* ---------------------------------------------------------------- */

static void test_pin_local(void)
{
	char *repo = mkrepo("pin");
	json_t *loc, *st, *ref, *ref2, *refs = NULL, *dirty_loc;

	put(repo, "f.txt", "one\n");
	commit_all(repo, "one");
	loc = locator_for(repo, NULL);
	st = state_of(loc);

	ref = pin(loc, st, "ds.aaaa");
	CHECK(last_created == 1);
	CHECK_STR(json_string_value(json_object_get(ref, "tag")), "tether.ds.aaaa");
	CHECK_STR(json_string_value(json_object_get(ref, "pin")), "ds.aaaa");
	CHECK_STR(sha_of(ref), sha_of(st));
	CHECK(json_object_get(ref, "remote") == NULL);
	CHECK_STR(out("git -C '%s' tag -l 'tether.*'", repo), "tether.ds.aaaa");
	CHECK_STR(rev(repo, "tether.ds.aaaa"), sha_of(st));
	CHECK_STR(out("git -C '%s' cat-file -t tether.ds.aaaa", repo), "commit"); /* lightweight */

	/* Idempotent at the same sha; refused at another. */
	ref2 = pin(loc, st, "ds.aaaa");
	CHECK(ref2 && json_equal(ref, ref2));
	CHECK(last_created == 0); /* it was there: a failed commit must not release it */
	json_decref(ref2);
	put(repo, "f.txt", "two\n");
	commit_all(repo, "two");
	{
		json_t *st2 = state_of(loc);

		CHECK(be->pin(&ctx, loc, st2, "ds.aaaa", &ref2, &last_created) == TETHER_EREFUSED);
		CHECK(has(tether_error_last(), "tether.ds.aaaa"));
		CHECK_STR(rev(repo, "tether.ds.aaaa"), sha_of(st));
		json_decref(st2);
	}

	/* A dirty tree is refused unless allow_dirty. */
	put(repo, "f.txt", "dirty\n");
	json_decref(st);
	st = state_of(loc);
	CHECK(json_is_true(json_object_get(st, "dirty")));
	CHECK(be->pin(&ctx, loc, st, "ds.bbbb", &ref2, &last_created) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "uncommitted") && has(tether_error_last(), repo));
	CHECK_STR(out("git -C '%s' tag -l tether.ds.bbbb", repo), "");
	dirty_loc = locator_for(repo, json_pack("{s:s}", "allow_dirty", "true"));
	ref2 = pin(dirty_loc, st, "ds.bbbb");
	CHECK(ref2 != NULL);
	CHECK_STR(rev(repo, "tether.ds.bbbb"), rev(repo, "HEAD"));
	json_decref(ref2);

	/* A sha the repository does not hold. */
	{
		json_t *bogus = sha_json("0123456789012345678901234567890123456789");

		CHECK(be->pin(&ctx, loc, bogus, "ds.cccc", &ref2, &last_created) == TETHER_ENOTFOUND);
		json_decref(bogus);
	}

	/* list_pins sees both; unpin removes one, and again is fine. */
	CHECK(be->list_pins(&ctx, loc, &refs) == 0);
	CHECK(json_array_size(refs) == 2);
	json_decref(refs);
	CHECK(be->unpin(&ctx, loc, ref) == 0);
	CHECK_STR(out("git -C '%s' tag -l 'tether.*'", repo), "tether.ds.bbbb");
	CHECK(be->unpin(&ctx, loc, ref) == 0);
	{
		json_t *foreign = json_pack("{s:s}", "tag", "v1.0");

		CHECK(be->unpin(&ctx, loc, foreign) == TETHER_EREFUSED);
		json_decref(foreign);
	}
	must("git -C '%s' checkout -q -- f.txt", repo);
	json_decref(dirty_loc);
	json_decref(ref);
	json_decref(st);
	json_decref(loc);
	free(repo);
}

static const char *ls_remote_tags(const char *remote)
{
	return out("git ls-remote --tags '%s' 2>/dev/null | cut -f2", remote);
}

static void test_pin_remote(void)
{
	char *repo = mkrepo("pinrem");
	char *bare = in_scratch("pinrem-remote.git");
	json_t *loc, *broken_loc, *plain_loc, *st, *ref, *ref2 = NULL;

	put(repo, "f.txt", "one\n");
	commit_all(repo, "one");
	must("git init -q --bare '%s' && git -C '%s' remote add origin '%s' && "
	     "git -C '%s' remote add broken '%s/does-not-exist.git'",
	     bare, repo, bare, repo, scratch);
	loc = locator_for(repo, json_pack("{s:s}", "remote", "origin"));
	broken_loc = locator_for(repo, json_pack("{s:s}", "remote", "broken"));
	plain_loc = locator_for(repo, NULL);
	st = state_of(loc);

	/* The push carries the tag. */
	ref = pin(loc, st, "ds.1111");
	CHECK_STR(json_string_value(json_object_get(ref, "remote")), "origin");
	CHECK_STR(ls_remote_tags(bare), "refs/tags/tether.ds.1111");
	CHECK_STR(out("git -C '%s' rev-parse tether.ds.1111", bare), sha_of(st));
	/* Pinning again pushes again, harmlessly. */
	ref2 = pin(loc, st, "ds.1111");
	CHECK(ref2 != NULL);
	json_decref(ref2);

	/* A failing push fails the pin and leaves no local tag. */
	CHECK(be->pin(&ctx, broken_loc, st, "ds.2222", &ref2, &last_created) < 0 && last_created == 0);
	CHECK(has(tether_error_last(), "broken"));
	CHECK_STR(out("git -C '%s' tag -l tether.ds.2222", repo), "");

	/* unpin deletes on the remote, then locally; a failing remote keeps
	 * the local tag. */
	{
		json_t *via_broken = json_pack("{s:s, s:s}", "tag", "tether.ds.1111", "remote", "broken");

		CHECK(be->unpin(&ctx, loc, via_broken) < 0);
		CHECK(has(tether_error_last(), "broken"));
		CHECK_STR(out("git -C '%s' tag -l tether.ds.1111", repo), "tether.ds.1111");
		CHECK_STR(ls_remote_tags(bare), "refs/tags/tether.ds.1111");
		json_decref(via_broken);
	}
	CHECK(be->unpin(&ctx, loc, ref) == 0);
	CHECK_STR(ls_remote_tags(bare), "");
	CHECK_STR(out("git -C '%s' tag -l tether.ds.1111", repo), "");
	/* Unpinning a tag the remote no longer has is fine. */
	must("git -C '%s' tag tether.ds.3333", repo);
	{
		json_t *r3 = json_pack("{s:s, s:s}", "tag", "tether.ds.3333", "remote", "origin");

		CHECK(be->unpin(&ctx, plain_loc, r3) == 0);
		if (be->unpin(&ctx, plain_loc, r3) != 0)
			fprintf(stderr, "  unpin: %s\n", tether_error_last());
		CHECK_STR(out("git -C '%s' tag -l tether.ds.3333", repo), "");
		json_decref(r3);
	}

	/* The remote already has the pin's tag at another commit: refused,
	 * never moved. */
	put(repo, "f.txt", "two\n");
	commit_all(repo, "two");
	must("git -C '%s' push -q origin HEAD~1:refs/tags/tether.ds.4444", repo);
	{
		json_t *st2 = state_of(loc);

		CHECK(be->pin(&ctx, loc, st2, "ds.4444", &ref2, &last_created) == TETHER_EREFUSED);
		CHECK_STR(out("git -C '%s' rev-parse tether.ds.4444", bare), rev(repo, "HEAD~1"));
		CHECK_STR(out("git -C '%s' tag -l tether.ds.4444", repo), "");
		json_decref(st2);
	}

	/* url.<base>.insteadOf and pushInsteadOf rewrite a remote's URL as in
	 * git; pushInsteadOf wins for a push. */
	must("git -C '%s' remote add aliased alias: && git -C '%s' config 'url.%s/nowhere.git.insteadOf' alias: && "
	     "git -C '%s' config 'url.%s.pushInsteadOf' alias:",
	     repo, repo, scratch, repo, bare);
	{
		json_t *aliased = locator_for(repo, json_pack("{s:s}", "remote", "aliased"));
		json_t *r = pin(aliased, st, "ds.6666");

		CHECK(r != NULL);
		CHECK(has(ls_remote_tags(bare), "refs/tags/tether.ds.6666"));
		json_decref(r);
		json_decref(aliased);
	}

	/* A URL from .tether/secrets.toml overrides the committed remote and
	 * never appears in the pin ref. */
	{
		char *other = in_scratch("pinrem-secret.git");
		json_t *secrets = json_pack("{s:s}", "remote", other);
		json_t *r;

		must("git init -q --bare '%s'", other);
		ctx.secrets = secrets;
		r = pin(broken_loc, st, "ds.5555");
		CHECK(r != NULL);
		CHECK_STR(ls_remote_tags(other), "refs/tags/tether.ds.5555");
		CHECK(!has(pooled(json_dumps(r, 0)), other));
		CHECK(be->unpin(&ctx, broken_loc, r) == 0);
		CHECK_STR(ls_remote_tags(other), "");
		ctx.secrets = NULL;
		json_decref(r);
		json_decref(secrets);
		free(other);
	}

	json_decref(ref);
	json_decref(st);
	json_decref(loc);
	json_decref(broken_loc);
	json_decref(plain_loc);
	free(bare);
	free(repo);
}

static void test_verify(void)
{
	char *repo = mkrepo("verify");
	json_t *loc, *st, *ref;
	char *detail = NULL;
	int ok = 0;

	put(repo, "f.txt", "one\n");
	commit_all(repo, "one");
	loc = locator_for(repo, NULL);
	st = state_of(loc);
	ref = pin(loc, st, "ds.v");

	CHECK(be->verify(&ctx, loc, st, ref, &ok, &detail) == 0 && ok == 1 && detail == NULL);
	CHECK(be->verify(&ctx, loc, st, NULL, &ok, &detail) == 0 && ok == 1);

	put(repo, "f.txt", "two\n");
	commit_all(repo, "two");
	must("git -C '%s' tag -f tether.ds.v HEAD >/dev/null", repo);
	CHECK(be->verify(&ctx, loc, st, ref, &ok, &detail) == 0 && ok == 0);
	CHECK(has(detail, "moved"));
	free(detail);

	must("git -C '%s' tag -d tether.ds.v >/dev/null", repo);
	CHECK(be->verify(&ctx, loc, st, ref, &ok, &detail) == 0 && ok == 0);
	CHECK(has(detail, "missing") && has(detail, "tether.ds.v"));
	free(detail);

	{
		json_t *gone = sha_json("0123456789012345678901234567890123456789");

		CHECK(be->verify(&ctx, loc, gone, NULL, &ok, &detail) == 0 && ok == 0);
		CHECK(has(detail, "gone"));
		free(detail);
		json_decref(gone);
	}
	must("mv '%s' '%s.moved'", repo, repo);
	CHECK(be->verify(&ctx, loc, st, NULL, &ok, &detail) == 0 && ok == 0);
	CHECK(has(detail, repo));
	free(detail);
	must("mv '%s.moved' '%s'", repo, repo);

	json_decref(ref);
	json_decref(st);
	json_decref(loc);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* Forks and handles                                                 */
/* ---------------------------------------------------------------- */

static void test_fork(void)
{
	char *repo = repo_with_work("fork");
	char *wt = in_scratch("fork-wt");
	json_t *loc = locator_for(repo, NULL);
	json_t *st = state_of(loc), *wref = NULL, *expect, *h = NULL;
	const char *base = rev(repo, "main"), *ahead = rev(repo, "work");
	json_t *ahead_state = sha_json(ahead);

	CHECK(be->fork(&ctx, loc, st, NULL, "feature", NULL, &wref) == 0);
	CHECK_STR(json_string_value(json_object_get(wref, "branch")), "feature");
	CHECK_STR(rev(repo, "feature"), base);
	json_decref(wref);
	/* Again at the same sha: nothing to do. At another, without the head
	 * it was seen at: refused. */
	CHECK(be->fork(&ctx, loc, st, NULL, "feature", NULL, &wref) == 0);
	json_decref(wref);
	CHECK(be->fork(&ctx, loc, ahead_state, NULL, "feature", NULL, &wref) == TETHER_EREFUSED);
	CHECK_STR(rev(repo, "feature"), base);

	/* Compare-and-swap moves. */
	expect = sha_json(ahead); /* wrong: feature is at base */
	CHECK(be->fork(&ctx, loc, ahead_state, NULL, "feature", expect, &wref) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "moved"));
	CHECK_STR(rev(repo, "feature"), base);
	json_decref(expect);
	expect = sha_json(base);
	CHECK(be->fork(&ctx, loc, ahead_state, NULL, "feature", expect, &wref) == 0);
	CHECK_STR(rev(repo, "feature"), ahead);
	json_decref(wref);
	json_decref(expect);
	expect = json_null();
	CHECK(be->fork(&ctx, loc, st, NULL, "feature", expect, &wref) == TETHER_EREFUSED);
	CHECK(be->fork(&ctx, loc, st, NULL, "fresh", expect, &wref) == 0);
	CHECK_STR(rev(repo, "fresh"), base);
	json_decref(wref);
	json_decref(expect);

	/* The working ref is an overlay: merged into the locator, it reads the
	 * working branch; once deleted, there is nothing to read. */
	{
		json_t *overlay = json_deep_copy(loc), *at;

		json_object_set_new(overlay, "branch", json_string("feature"));
		at = state_of(overlay);
		CHECK_STR(sha_of(at), ahead);
		CHECK(json_object_get(at, "dirty") == NULL); /* not checked out */
		json_decref(at);
		CHECK(be->history(&ctx, overlay, 1, &at) == 0);
		CHECK_STR(json_string_value(json_object_get(json_array_get(at, 0), "id")), ahead);
		json_decref(at);
		json_object_set_new(overlay, "branch", json_string("nosuch"));
		{
			struct tether_fingerprint fp;

			CHECK(be->fingerprint(&ctx, overlay, NULL, &fp) == TETHER_ENOTFOUND);
			CHECK(has(tether_error_last(), "nosuch"));
		}
		json_decref(overlay);
	}

	/* Checked out here, or in a linked worktree: refused. */
	CHECK(be->fork(&ctx, loc, ahead_state, NULL, "main", NULL, &wref) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "checked out"));
	must("git -C '%s' worktree add -q -b linked '%s' main 2>/dev/null", repo, wt);
	expect = sha_json(base);
	CHECK(be->fork(&ctx, loc, ahead_state, NULL, "linked", expect, &wref) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), wt));
	CHECK_STR(rev(repo, "linked"), base);
	/* A fork that leaves a checked-out branch where it is moves nothing,
	 * so the checkout does not refuse it (commit's re-fork does this). */
	CHECK(be->fork(&ctx, loc, st, NULL, "linked", expect, &wref) == 0);
	CHECK_STR(rev(repo, "linked"), base);
	json_decref(wref);
	json_decref(expect);
	CHECK(be->fork(&ctx, loc, st, NULL, "bad..name", NULL, &wref) == TETHER_EUSAGE);

	/* Handles. */
	{
		json_t *pref = pin(loc, st, "ds.h");

		CHECK(be->open(&ctx, loc, st, pref, NULL, 1, &h) == 0);
		CHECK_STR(json_string_value(json_object_get(h, "kind")), "git");
		CHECK_STR(json_string_value(json_object_get(h, "path")), repo);
		CHECK_STR(json_string_value(json_object_get(h, "uri")), repo);
		CHECK_STR(json_string_value(json_object_get(h, "ref")), "tether.ds.h");
		CHECK_STR(sha_of(h), base);
		CHECK(json_is_true(json_object_get(h, "read_only")));
		json_decref(h);
		json_decref(pref);
	}
	wref = json_pack("{s:s}", "branch", "feature");
	CHECK(be->open(&ctx, loc, st, NULL, wref, 0, &h) == 0);
	CHECK_STR(json_string_value(json_object_get(h, "ref")), "feature");
	CHECK_STR(sha_of(h), ahead);
	CHECK(json_is_null(json_object_get(h, "worktree")));
	CHECK(json_is_false(json_object_get(h, "read_only")));
	json_decref(h);
	json_decref(wref);
	wref = json_pack("{s:s}", "branch", "linked");
	CHECK(be->open(&ctx, loc, st, NULL, wref, 0, &h) == 0);
	CHECK_STR(json_string_value(json_object_get(h, "worktree")), wt);
	json_decref(h);

	/* delete_working_ref: not a checked-out branch, not the base. */
	CHECK(be->delete_working_ref(&ctx, loc, wref) == TETHER_EREFUSED);
	CHECK_STR(rev(repo, "linked"), base);
	json_decref(wref);
	wref = json_pack("{s:s}", "branch", "main");
	CHECK(be->delete_working_ref(&ctx, loc, wref) == TETHER_EREFUSED);
	json_decref(wref);
	wref = json_pack("{s:s}", "branch", "feature");
	CHECK(be->delete_working_ref(&ctx, loc, wref) == 0);
	CHECK_STR(rev(repo, "feature"), "");
	CHECK(be->delete_working_ref(&ctx, loc, wref) == 0);
	json_decref(wref);

	json_decref(ahead_state);
	json_decref(st);
	json_decref(loc);
	free(wt);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* promote and merge                                                 */
/* ---------------------------------------------------------------- */

static void test_promote(void)
{
	char *repo = repo_with_work("promote");
	json_t *loc = locator_for(repo, NULL);
	json_t *wref = json_pack("{s:s}", "branch", "work"), *res = NULL, *expect;
	const char *base = rev(repo, "main"), *ahead = rev(repo, "work");

	/* A base that moved since the caller looked: refused. */
	expect = sha_json(ahead);
	CHECK(be->promote(&ctx, loc, wref, expect, &res) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "moved"));
	json_decref(expect);

	/* A dirty checkout of the base: refused, nothing moves. */
	put(repo, "stray.txt", "x\n");
	CHECK(be->promote(&ctx, loc, wref, NULL, &res) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), repo));
	CHECK_STR(rev(repo, "main"), base);
	must("rm '%s/stray.txt'", repo);

	/* Fast-forward, the checkout brought along and left clean. */
	expect = sha_json(base);
	CHECK(be->promote(&ctx, loc, wref, expect, &res) == 0);
	CHECK_STR(rev(repo, "main"), ahead);
	CHECK_STR(json_string_value(json_object_get(res, "branch")), "main");
	CHECK_STR(json_string_value(json_object_get(res, "from")), base);
	CHECK_STR(json_string_value(json_object_get(res, "to")), ahead);
	CHECK_STR(json_string_value(json_object_get(res, "worktree")), repo);
	CHECK_STR(status_of(repo), "");
	CHECK_STR(out("cat '%s/a.txt'", repo), "one\ntwo\nthree\nfour");
	json_decref(res);
	json_decref(expect);

	/* Non-fast-forward: refused. */
	put(repo, "b.txt", "main only\n");
	commit_all(repo, "main diverges");
	must("git -C '%s' checkout -q work", repo);
	put(repo, "c.txt", "work only\n");
	commit_all(repo, "work diverges");
	must("git -C '%s' checkout -q main", repo);
	base = rev(repo, "main");
	CHECK(be->promote(&ctx, loc, wref, NULL, &res) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "fast-forward"));
	CHECK_STR(rev(repo, "main"), base);
	json_decref(loc);

	/* A base not checked out anywhere just moves. */
	must("git -C '%s' branch -q dev main~1", repo);
	loc = locator_for(repo, json_pack("{s:s}", "ref", "dev"));
	json_decref(wref);
	wref = json_pack("{s:s}", "branch", "main");
	CHECK(be->promote(&ctx, loc, wref, NULL, &res) == 0);
	json_decref(wref);
	wref = json_pack("{s:s}", "branch", "work");
	CHECK_STR(rev(repo, "dev"), base);
	CHECK(json_is_null(json_object_get(res, "worktree")));
	json_decref(res);
	json_decref(loc);

	/* A detached HEAD has no base branch. */
	must("git -C '%s' checkout -q --detach", repo);
	loc = locator_for(repo, NULL);
	CHECK(be->promote(&ctx, loc, wref, NULL, &res) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "set ref to the branch name"));
	CHECK(be->merge(&ctx, loc, wref, NULL, &res) == TETHER_EREFUSED);
	must("git -C '%s' checkout -q main", repo);
	json_decref(loc);

	json_decref(wref);
	free(repo);
}

static void test_merge(void)
{
	char *repo = repo_with_work("merge");
	json_t *loc = locator_for(repo, NULL);
	json_t *wref = json_pack("{s:s}", "branch", "work"), *res = NULL;
	const char *base, *work, *parents;
	char *want;

	/* Diverged without conflict: a merge commit with both parents. */
	put(repo, "b.txt", "main only\n");
	commit_all(repo, "main: b");
	base = rev(repo, "main");
	work = rev(repo, "work");
	CHECK(be->merge(&ctx, loc, wref, "merge work", &res) == 0);
	parents = out("git -C '%s' rev-list --parents -n 1 main", repo);
	want = malloc(200);
	snprintf(want, 200, "%s %s %s", json_string_value(json_object_get(res, "to")), base, work);
	CHECK_STR(parents, want);
	CHECK_STR(out("git -C '%s' log -1 --format=%%s main", repo), "merge work");
	CHECK(json_is_false(json_object_get(res, "fast_forward")));
	CHECK_STR(status_of(repo), "");
	CHECK_STR(out("cat '%s/a.txt' '%s/b.txt'", repo, repo), "one\ntwo\nthree\nfour\nmain only");
	CHECK(sh("git -C '%s' fsck --strict --no-dangling >/dev/null 2>&1", repo) == 0);
	json_decref(res);
	free(want);

	/* Already merged: nothing moves. */
	base = rev(repo, "main");
	CHECK(be->merge(&ctx, loc, wref, NULL, &res) == 0);
	CHECK(json_is_false(json_object_get(res, "moved")));
	CHECK_STR(rev(repo, "main"), base);
	json_decref(res);

	/* Conflict: refused with the path, nothing written. */
	put(repo, "c.txt", "main says\n");
	commit_all(repo, "main: c");
	must("git -C '%s' checkout -q work", repo);
	put(repo, "c.txt", "work says\n");
	commit_all(repo, "work: c");
	must("git -C '%s' checkout -q main", repo);
	base = rev(repo, "main");
	CHECK(be->merge(&ctx, loc, wref, NULL, &res) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "c.txt") && has(tether_error_last(), "conflict"));
	CHECK_STR(rev(repo, "main"), base);
	CHECK_STR(status_of(repo), "");
	CHECK_STR(out("cat '%s/c.txt'", repo), "main says");
	CHECK(!exists(repo, ".git/MERGE_HEAD"));

	/* Behind: a fast-forward, as git merge does. */
	must("git -C '%s' branch -q ahead work", repo);
	must("git -C '%s' checkout -q -b behind work~1 && git -C '%s' checkout -q main", repo, repo);
	json_decref(loc);
	loc = locator_for(repo, json_pack("{s:s}", "ref", "behind"));
	json_decref(wref);
	wref = json_pack("{s:s}", "branch", "ahead");
	CHECK(be->merge(&ctx, loc, wref, NULL, &res) == 0);
	CHECK(json_is_true(json_object_get(res, "fast_forward")));
	work = rev(repo, "ahead");
	CHECK_STR(rev(repo, "behind"), work);
	json_decref(res);

	json_decref(wref);
	json_decref(loc);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* diff and history                                                  */
/* ---------------------------------------------------------------- */

static const json_t *entry_for(const json_t *diff, const char *path)
{
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(diff, "entries"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "path")), path) == 0)
			return e;
	return NULL;
}

static json_int_t num(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static void test_diff(void)
{
	char *repo = mkrepo("diff");
	json_t *loc, *a, *b, *d = NULL;
	const json_t *e;

	put(repo, "a.txt", "1\n2\n3\n");
	put(repo, "big.txt", "line one of a file long enough to be found as renamed\nline two\nline three\nline four\n");
	put(repo, "c.txt", "c1\nc2\n");
	commit_all(repo, "A");
	loc = locator_for(repo, NULL);
	a = state_of(loc);
	put(repo, "a.txt", "1\ntwo\n3\n");
	must("git -C '%s' mv big.txt moved.txt && git -C '%s' rm -q c.txt", repo, repo);
	put(repo, "d.txt", "d1\nd2\nd3\n");
	commit_all(repo, "B");
	b = state_of(loc);

	CHECK(be->diff(&ctx, loc, a, b, NULL, 0, NULL, 0, 100, &d) == 0);
	CHECK_STR(json_string_value(json_object_get(d, "unit")), "files");
	CHECK(json_array_size(json_object_get(d, "entries")) == 4);
	e = entry_for(d, "a.txt");
	CHECK_STR(json_string_value(json_object_get(e, "change")), "modified");
	CHECK(num(e, "lines_added") == 1 && num(e, "lines_deleted") == 1 && num(e, "size_delta") == 0);
	e = entry_for(d, "moved.txt");
	CHECK_STR(json_string_value(json_object_get(e, "change")), "renamed");
	CHECK_STR(json_string_value(json_object_get(e, "old_path")), "big.txt");
	CHECK(num(e, "lines_added") == 0);
	e = entry_for(d, "c.txt");
	CHECK_STR(json_string_value(json_object_get(e, "change")), "removed");
	CHECK(num(e, "lines_deleted") == 2 && num(e, "size_delta") == -2);
	e = entry_for(d, "d.txt");
	CHECK_STR(json_string_value(json_object_get(e, "change")), "added");
	CHECK(num(e, "lines_added") == 3 && num(e, "size") == 3);
	e = json_object_get(d, "totals");
	CHECK(num(e, "added") == 1 && num(e, "removed") == 1 && num(e, "modified") == 2);
	CHECK(num(e, "size_delta") == 1 - 1 - 2 + 3);
	CHECK(json_is_false(json_object_get(d, "truncated")));
	CHECK(has(json_string_value(json_object_get(d, "summary")), "1 added"));
	json_decref(d);

	/* Capped entries, exact totals. */
	CHECK(be->diff(&ctx, loc, a, b, NULL, 0, NULL, 0, 2, &d) == 0);
	CHECK(json_array_size(json_object_get(d, "entries")) == 2);
	CHECK(json_is_true(json_object_get(d, "truncated")));
	CHECK(num(json_object_get(d, "totals"), "modified") == 2);
	json_decref(d);

	CHECK(be->diff(&ctx, loc, a, a, NULL, 0, NULL, 0, 100, &d) == 0);
	CHECK(json_array_size(json_object_get(d, "entries")) == 0);
	json_decref(d);

	json_decref(a);
	json_decref(b);
	json_decref(loc);
	free(repo);
}

static void test_history(void)
{
	char *repo = mkrepo("hist");
	json_t *loc, *h = NULL, *first, *refs;

	put(repo, "f", "1\n");
	commit_all(repo, "first\n\nbody text");
	put(repo, "f", "2\n");
	commit_all(repo, "second");
	put(repo, "f", "3\n");
	commit_all(repo, "third");
	must("git -C '%s' tag v2 HEAD~1 && git -C '%s' tag -a -m annotated v3 HEAD", repo, repo);
	loc = locator_for(repo, NULL);

	CHECK(be->history(&ctx, loc, 0, &h) == 0);
	CHECK(json_array_size(h) == 3);
	first = json_array_get(h, 0);
	CHECK_STR(json_string_value(json_object_get(first, "id")), rev(repo, "HEAD"));
	CHECK_STR(json_string_value(json_object_get(first, "message")), "third");
	CHECK_STR(json_string_value(json_object_get(first, "author")), "Test User");
	CHECK(json_integer_value(json_object_get(first, "time")) > 1700000000);
	refs = json_object_get(first, "refs");
	CHECK(json_array_size(refs) == 2); /* main and the annotated v3 */
	CHECK_STR(json_string_value(json_object_get(json_array_get(h, 1), "message")), "second");
	CHECK_STR(json_string_value(json_array_get(json_object_get(json_array_get(h, 1), "refs"), 0)), "v2");
	CHECK_STR(json_string_value(json_object_get(json_array_get(h, 2), "message")), "first");
	CHECK(json_array_size(json_object_get(json_array_get(h, 2), "refs")) == 0);
	json_decref(h);

	CHECK(be->history(&ctx, loc, 2, &h) == 0);
	CHECK(json_array_size(h) == 2);
	json_decref(h);
	json_decref(loc);

	/* From `at`. */
	loc = locator_for(repo, json_pack("{s:s}", "at", "v2"));
	CHECK(be->history(&ctx, loc, 0, &h) == 0);
	CHECK(json_array_size(h) == 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(h, 0), "message")), "second");
	json_decref(h);
	json_decref(loc);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* create_store / delete_store                                       */
/* ---------------------------------------------------------------- */

static json_t *store_locator(const char *path, const char *ref)
{
	return ref ? json_pack("{s:s, s:s}", "path", path, "ref", ref) : json_pack("{s:s}", "path", path);
}

static void test_create_store(void)
{
	char *one = in_scratch("store-one"), *two = in_scratch("deeper/store-two");
	char *three = in_scratch("store-three"), *full = in_scratch("store-full");
	json_t *l1 = store_locator(one, NULL), *l2 = store_locator(two, "HEAD"), *l3 = store_locator(three, "trunk");
	json_t *lfull = store_locator(full, NULL);
	const char *root, *expected;

	CHECK(be->create_store(&ctx, l1) == 0);
	CHECK(be->create_store(&ctx, l2) == 0);
	CHECK(be->create_store(&ctx, l3) == 0);
	root = rev(one, "HEAD");
	CHECK(strlen(root) == 40);
	CHECK_STR(rev(two, "HEAD"), root);
	CHECK_STR(rev(three, "HEAD"), root);
	/* The same commit git makes from the same parts. */
	expected = out("cd '%s' && GIT_AUTHOR_NAME=tether GIT_AUTHOR_EMAIL=tether@localhost "
	               "GIT_AUTHOR_DATE='@0 +0000' GIT_COMMITTER_NAME=tether GIT_COMMITTER_EMAIL=tether@localhost "
	               "GIT_COMMITTER_DATE='@0 +0000' git commit-tree -m 'tether: empty root' "
	               "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
	               one);
	CHECK_STR(root, expected);
	CHECK_STR(out("git -C '%s' symbolic-ref HEAD", one), "refs/heads/main");
	CHECK_STR(out("git -C '%s' symbolic-ref HEAD", three), "refs/heads/trunk");
	CHECK_STR(out("git -C '%s' config --local tether.owner", one), DATASET_ID);
	CHECK_STR(status_of(one), "");
	CHECK(sh("git -C '%s' fsck --strict --no-dangling >/dev/null 2>&1", one) == 0);

	/* Never over something that is there. */
	CHECK(be->create_store(&ctx, l1) == TETHER_EREFUSED);
	put(full, "x", "data\n");
	CHECK(be->create_store(&ctx, lfull) == TETHER_EREFUSED);
	CHECK(!exists(full, ".git"));

	/* It is a git object like any other. */
	{
		json_t *loc = locator_for(one, NULL), *st = state_of(loc);

		CHECK_STR(sha_of(st), root);
		json_decref(st);
		json_decref(loc);
	}

	json_decref(l1);
	json_decref(l2);
	json_decref(l3);
	json_decref(lfull);
	free(one);
	free(two);
	free(three);
	free(full);
}

static void check_delete_refused(const json_t *loc, const char *why)
{
	int rc = be->delete_store(&ctx, loc);

	CHECK(rc == TETHER_EREFUSED);
	if (!has(tether_error_last(), why))
		fprintf(stderr, "  delete_store refused with: %s (wanted: %s)\n", tether_error_last(), why);
	CHECK(has(tether_error_last(), why));
}

static void test_delete_store(void)
{
	char *path = in_scratch("store-del");
	json_t *loc = store_locator(path, NULL);

	CHECK(be->create_store(&ctx, loc) == 0);
	put(path, "untracked.txt", "data\n");
	check_delete_refused(loc, "untracked.txt");
	must("git -C '%s' add untracked.txt", path);
	check_delete_refused(loc, "untracked.txt"); /* staged */
	must("git -C '%s' rm -q --cached untracked.txt && rm '%s/untracked.txt'", path, path);
	must("echo '*.bin' >> '%s/.git/info/exclude'", path);
	put(path, "model.bin", "weights\n");
	check_delete_refused(loc, "model.bin");
	must("rm '%s/model.bin'", path);

	must("git -C '%s' tag keep", path);
	check_delete_refused(loc, "refs/tags/keep");
	must("git -C '%s' tag -d keep >/dev/null && git -C '%s' branch side", path, path);
	check_delete_refused(loc, "refs/heads/side");
	must("git -C '%s' branch -q -D side", path);
	put(path, "f", "x\n");
	must("git -C '%s' -c user.name=T -c user.email=t@e add f && git -C '%s' -c user.name=T -c user.email=t@e "
	     "commit -q -m c",
	     path, path);
	check_delete_refused(loc, "beyond the empty root");
	must("git -C '%s' reset -q --hard HEAD~1", path);

	ctx.dataset_id = OTHER_DATASET_ID;
	check_delete_refused(loc, "not created by this dataset");
	ctx.dataset_id = DATASET_ID;
	/* tether.owner from the user's configuration does not count. */
	must("git -C '%s' config --local --unset tether.owner && git config --global tether.owner %s", path, DATASET_ID);
	check_delete_refused(loc, "not created by this dataset");
	must("git config --global --unset tether.owner && git -C '%s' config --local tether.owner %s", path, DATASET_ID);
	CHECK(exists(path, ".git/HEAD"));

	/* Empty again: deleted, and nothing left beside it. */
	CHECK(be->delete_store(&ctx, loc) == 0);
	CHECK(!exists(path, ""));
	CHECK_STR(out("ls -a '%s' | grep tether-deleting", scratch), "");

	/* A repository tether did not create. */
	{
		char *repo = mkrepo("store-foreign");
		json_t *floc = store_locator(repo, NULL);

		put(repo, "f", "x\n");
		commit_all(repo, "one");
		check_delete_refused(floc, "not created by this dataset");
		CHECK(exists(repo, "f"));
		json_decref(floc);
		free(repo);
	}
	json_decref(loc);
	free(path);
}

/* ---------------------------------------------------------------- */
/* Concurrent calls on different objects                             */
/* ---------------------------------------------------------------- */

#define WORKERS 4

struct worker {
	const char *repo;
	int failures;
};

static void *work_on(void *arg)
{
	struct worker *w = arg;
	json_t *loc = json_pack("{s:s, s:s}", "path", w->repo, "ref", "HEAD");

	for (int i = 0; i < 10; i++) {
		struct tether_fingerprint fp;
		json_t *ref = NULL, *h = NULL;
		char id[32];

		int created = -1; /* this thread's own: the workers run at once */
		snprintf(id, sizeof id, "ds.c%d", i);
		if (be->fingerprint(&ctx, loc, NULL, &fp) < 0 || be->pin(&ctx, loc, fp.state, id, &ref, &created) < 0 ||
		    be->history(&ctx, loc, 0, &h) < 0 || be->unpin(&ctx, loc, ref) < 0)
			w->failures++;
		json_decref(fp.state);
		json_decref(ref);
		json_decref(h);
	}
	json_decref(loc);
	return NULL;
}

static void test_concurrent_objects(void)
{
	struct worker workers[WORKERS];
	pthread_t threads[WORKERS];
	char *repos[WORKERS];

	for (int i = 0; i < WORKERS; i++) {
		char name[32];

		snprintf(name, sizeof name, "conc%d", i);
		repos[i] = mkrepo(name);
		put(repos[i], "f", name);
		commit_all(repos[i], name);
		workers[i].repo = repos[i];
		workers[i].failures = 0;
	}
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_create(&threads[i], NULL, work_on, &workers[i]) == 0);
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(threads[i], NULL);
		CHECK(workers[i].failures == 0);
		CHECK_STR(out("git -C '%s' tag -l", repos[i]), "");
		free(repos[i]);
	}
}

/* ---------------------------------------------------------------- */
/* A hostile repository runs nothing                                  */
/* ---------------------------------------------------------------- */

static void install_hostile_config(const char *repo, const char *marker)
{
	static const char *const hooks[] = {
		"pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-merge",
		"pre-push", "pre-merge-commit", "commit-msg", "prepare-commit-msg", "post-rewrite",
		"pre-auto-gc", "push-to-checkout", "fsmonitor-watchman",
	};

	for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++) {
		char rel[128], body[PATH_MAX + 64];

		snprintf(rel, sizeof rel, ".git/hooks/%s", hooks[i]);
		snprintf(body, sizeof body, "#!/bin/sh\ntouch '%s.%s'\n", marker, hooks[i]);
		put(repo, rel, body);
		must("chmod +x '%s/%s'", repo, rel);
	}
	must("git -C '%s' config core.fsmonitor \"touch '%s.fsmonitor'; false\"", repo, marker);
	must("git -C '%s' config filter.evil.clean \"touch '%s.clean'; cat\"", repo, marker);
	must("git -C '%s' config filter.evil.smudge \"touch '%s.smudge'; cat\"", repo, marker);
	must("git -C '%s' config merge.evil.driver \"touch '%s.merge'; false\"", repo, marker);
	must("git -C '%s' config credential.helper \"!touch '%s.credential'\"", repo, marker);
	must("git -C '%s' config core.sshCommand \"touch '%s.ssh'\"", repo, marker);
	must("git -C '%s' remote add evil 'ext::sh -c touch%% %s.ext'", repo, marker);
	must("git -C '%s' remote add evilssh 'ssh://127.0.0.1:1/x.git'", repo); /* refused at once */
	put(repo, ".git/info/attributes", "* filter=evil merge=evil\n");
}

static int no_markers(const char *marker)
{
	const char *found = out("ls '%s'* 2>/dev/null", marker);
	int none = *found == '\0';

	if (!none)
		fprintf(stderr, "  marker files created: %s\n", found);
	return none;
}

static void test_hostile_repository(void)
{
	char *repo = repo_with_work("hostile");
	char *marker = in_scratch("MARKER");
	json_t *loc, *evil_loc, *ssh_loc, *st, *ref, *wref, *res = NULL, *expect;
	const char *base;

	/* Everything the test needs from git first: git itself would run it. */
	must("git -C '%s' branch -q side work", repo);
	must("git -C '%s' checkout -q -b diverged main && echo other > '%s/c.txt' && git -C '%s' commit -q -am d "
	     "&& git -C '%s' checkout -q main",
	     repo, repo, repo, repo);
	base = rev(repo, "main");
	loc = locator_for(repo, NULL);
	install_hostile_config(repo, marker);
	evil_loc = json_pack("{s:s, s:s, s:s}", "path", repo, "ref", "HEAD", "remote", "evil");
	ssh_loc = json_pack("{s:s, s:s, s:s}", "path", repo, "ref", "HEAD", "remote", "evilssh");
	CHECK(no_markers(marker));

	put(repo, "c.txt", "modified, so status hashes it\n");
	st = state_of(loc);
	CHECK(st && json_is_true(json_object_get(st, "dirty")));
	json_decref(st);
	put(repo, "c.txt", "shared\n"); /* back as committed, with a new mtime: status hashes it again */
	st = state_of(loc);
	CHECK(st && json_is_false(json_object_get(st, "dirty")));

	ref = pin(loc, st, "ds.hostile");
	CHECK(ref != NULL);
	json_decref(ref);
	CHECK(be->pin(&ctx, evil_loc, st, "ds.evil", &ref, &last_created) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "ext::") && has(tether_error_last(), "evil"));
	CHECK(be->pin(&ctx, ssh_loc, st, "ds.ssh", &ref, &last_created) < 0);
	CHECK(has(tether_error_last(), "evilssh"));
	CHECK(be->fork(&ctx, loc, st, NULL, "forked", NULL, &ref) == 0);
	json_decref(ref);

	wref = json_pack("{s:s}", "branch", "side");
	expect = sha_json(base);
	CHECK(be->promote(&ctx, loc, wref, expect, &res) == 0);
	json_decref(res);
	json_decref(expect);
	json_decref(wref);
	wref = json_pack("{s:s}", "branch", "diverged");
	CHECK(be->merge(&ctx, loc, wref, NULL, &res) == 0);
	json_decref(res);
	json_decref(wref);
	{
		json_t *h = NULL;

		CHECK(be->history(&ctx, loc, 0, &h) == 0);
		json_decref(h);
	}
	CHECK(no_markers(marker));
	/* The backend never left a tag the failed pushes made. */
	CHECK_STR(out("git -C '%s' tag -l 'tether.ds.evil' 'tether.ds.ssh'", repo), "");

	json_decref(st);
	json_decref(loc);
	json_decref(evil_loc);
	json_decref(ssh_loc);
	free(marker);
	free(repo);
}

/* ---------------------------------------------------------------- */

/* Keep the user's git configuration and environment out of the tests. */
static void isolate_environment(void)
{
	static const char *const unset[] = {
		"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
		"GIT_COMMON_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_AUTHOR_NAME",
		"GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
		"GIT_COMMITTER_DATE", "EMAIL", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL",
	};
	char home[PATH_MAX];

	for (size_t i = 0; i < sizeof unset / sizeof *unset; i++)
		unsetenv(unset[i]);
	snprintf(home, sizeof home, "%s/home", scratch);
	mkdir(home, 0700);
	setenv("HOME", home, 1); /* before libgit2 first looks for ~/.gitconfig */
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CEILING_DIRECTORIES", scratch, 1);
	setenv("LC_ALL", "C", 1);
	setenv("TZ", "UTC", 1);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char templ[PATH_MAX], real[PATH_MAX];

	snprintf(templ, sizeof templ, "%s/tether-backend-git-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(templ) || !realpath(templ, real) || strlen(real) >= sizeof scratch) {
		perror("mkdtemp");
		return 2;
	}
	memcpy(scratch, real, strlen(real) + 1);
	isolate_environment();
	snprintf(dataset, sizeof dataset, "%s/dataset", scratch);
	must("git init -q '%s'", dataset);
	ctx.dataset_root = dataset;
	ctx.dataset_id = DATASET_ID;
	ctx.threads = 1;

	be = tether_gitbe_libgit2;
	CHECK(be != NULL);
	CHECK(be->version == TETHER_BACKEND_VERSION && be->size == sizeof *be);
	CHECK_STR(be->kind, "git");
	CHECK_STR(be->maturity, "stable");
	CHECK((be->caps & TETHER_TIER_MASK) == (TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN |
	                                         TETHER_CAP_FORK));
	CHECK((be->caps & TETHER_CAP_MERGE) && (be->caps & TETHER_CAP_PROMOTE) && (be->caps & TETHER_CAP_CREATE));
	CHECK_STR(be->volatile_keys[0], "dirty");
	CHECK_STR(be->volatile_keys[1], "change_id");
	CHECK(tether_backend_register(be) == 0);

	test_locator_refusals();
	test_locator_accepted();
	test_committed_url_remote();
	test_fingerprint();
	test_pin_local();
	test_pin_remote();
	test_verify();
	test_fork();
	test_promote();
	test_merge();
	test_diff();
	test_history();
	test_create_store();
	test_delete_store();
	test_concurrent_objects();
	test_hostile_repository();

	git_libgit2_shutdown(); /* frees libgit2's globals for LeakSanitizer */
	pool_free();
	if (check_failed)
		fprintf(stderr, "repositories kept in %s\n", scratch);
	else
		sh("rm -rf '%s'", scratch);
	CHECK_DONE();
}
