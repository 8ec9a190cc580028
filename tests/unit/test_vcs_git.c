/* Tests for the git VCS module (src/vcs/git.c), linked in directly.
 *
 * Every repository is made, and every result checked, with the real git
 * command line, so the module is held to what git itself sees: the user's
 * staged and unstaged changes survive commit_paths byte for byte, and the
 * repository stays fsck-clean. */
#include "check.h"
#include "shell.h"

#include "util/fsutil.h"
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

/* ---------------------------------------------------------------- */
/* Helpers                                                           */
/* ---------------------------------------------------------------- */

static char *mkrepo(const char *name)
{
	return git_repo_at(scratch, name);
}

static char *rev_parse(const char *repo, const char *rev)
{
	return out("git -C '%s' rev-parse --verify -q '%s'", repo, rev);
}

static struct tether_vcs *open_at(const char *dir)
{
	struct tether_vcs *v = NULL;
	int rc = ops->open(dir, &v, NULL, NULL);

	if (rc != 0)
		fprintf(stderr, "open %s: %s\n", dir, tether_error_last());
	return v;
}

static int has(const char *haystack, const char *needle)
{
	return haystack && strstr(haystack, needle) != NULL;
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

/* git fsck finds nothing wrong, not even a dangling object. */
static void check_fsck(const char *repo)
{
	CHECK_OUT(out("git -C '%s' fsck --strict --no-dangling --no-progress 2>&1; echo \"exit $?\"",
	              repo),
	          "exit 0");
}

/* ---------------------------------------------------------------- */
/* open                                                              */
/* ---------------------------------------------------------------- */

static void test_open(void)
{
	char *repo = mkrepo("open");
	char *workdir = NULL, *common = NULL;
	struct tether_vcs *v = NULL;

	put(repo, "a/b/file", "x\n");
	git_commit_all(repo, "first");

	CHECK(ops->open(path_in(repo, "a/b"), &v, &workdir, &common) == 0);
	CHECK_STR(workdir, repo);
	CHECK_STR(common, path_in(repo, ".git"));
	ops->close(v);
	free(workdir);
	free(common);

	/* A directory outside any repository. */
	sh("mkdir -p '%s/plain/sub'", scratch);
	v = NULL;
	CHECK(ops->open(path_in(scratch, "plain/sub"), &v, &workdir, &common) == TETHER_ENOREPO);
	CHECK(v == NULL);
	CHECK(has(tether_error_last(), "not inside a git repository"));

	/* A bare repository has no checkout to hold a dataset. */
	sh("git init -q --bare '%s/bare.git'", scratch);
	CHECK(ops->open(path_in(scratch, "bare.git"), &v, NULL, NULL) == TETHER_ENOREPO);
	CHECK(has(tether_error_last(), "bare"));

	CHECK(ops->open(path_in(scratch, "no/such/dir"), &v, NULL, NULL) == TETHER_EIO);
	free(repo);
}

static void test_open_worktree(void)
{
	char *repo = mkrepo("wt-main");
	char wt[PATH_MAX];
	char *workdir = NULL, *common = NULL, *branch = NULL;
	struct tether_vcs *v = NULL;
	char id[41];

	snprintf(wt, sizeof wt, "%s/wt-linked", scratch);
	put(repo, "ds/tether.toml", "v = 1\n");
	git_commit_all(repo, "first");
	sh("git -C '%s' worktree add -q -b side '%s'", repo, wt);

	CHECK(ops->open(path_in(wt, "ds"), &v, &workdir, &common) == 0);
	CHECK_STR(workdir, wt);
	CHECK_STR(common, path_in(repo, ".git"));
	CHECK(ops->current_branch(v, &branch) == 0);
	CHECK_STR(branch, "side");

	/* A commit in the worktree moves its branch, not main. */
	char *main_before = rev_parse(repo, "main");
	put(wt, "ds/tether.toml", "v = 2\n");
	CHECK(commit_one(v, "ds", "tether: in a worktree", id) == 0);
	CHECK_OUT(rev_parse(repo, "side"), id);
	CHECK_OUT(rev_parse(repo, "main"), main_before);
	CHECK_OUT(out("git -C '%s' status --porcelain", wt), "");

	ops->close(v);
	free(main_before);
	free(workdir);
	free(common);
	free(branch);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* resolve                                                           */
/* ---------------------------------------------------------------- */

static void check_resolves(struct tether_vcs *v, const char *repo, const char *rev,
                           const char *as)
{
	char id[41] = "";
	char *want = rev_parse(repo, as);

	CHECK(ops->resolve(v, rev, id) == 0);
	CHECK_STR(id, want);
	free(want);
}

static void test_resolve(void)
{
	char *repo = mkrepo("resolve");
	struct tether_vcs *v;
	char id[41], abbrev[10];

	for (int i = 0; i < 3; i++) {
		char n[16];
		snprintf(n, sizeof n, "%d\n", i);
		put(repo, "f", n);
		git_commit_all(repo, "step");
	}
	sh("git -C '%s' tag -a -m tagged v1 HEAD~1", repo);
	v = open_at(repo);

	check_resolves(v, repo, "HEAD", "HEAD");
	check_resolves(v, repo, "main", "HEAD");
	check_resolves(v, repo, "HEAD~1", "HEAD~1");
	check_resolves(v, repo, "v1", "HEAD~1"); /* an annotated tag peels to its commit */
	char *full = rev_parse(repo, "HEAD~2");
	snprintf(abbrev, sizeof abbrev, "%.9s", full);
	check_resolves(v, repo, abbrev, "HEAD~2");
	free(full);

	CHECK(ops->resolve(v, "xyz", id) == TETHER_ENOTFOUND);
	CHECK(has(tether_error_last(), "unknown revision 'xyz'"));
	CHECK(ops->resolve(v, "HEAD~9", id) == TETHER_ENOTFOUND);
	CHECK(has(tether_error_last(), "HEAD~9"));
	ops->close(v);

	char *unborn = mkrepo("resolve-unborn");
	v = open_at(unborn);
	CHECK(ops->resolve(v, "HEAD", id) == TETHER_ENOTFOUND);
	CHECK(has(tether_error_last(), "HEAD has no commits yet"));
	ops->close(v);
	free(unborn);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* read_file / read_tree                                             */
/* ---------------------------------------------------------------- */

struct collected {
	char text[1024];
	int calls;
	int stop_after;
};

static int collect(void *ud, const char *path, const char *data, size_t len)
{
	struct collected *c = ud;
	size_t used = strlen(c->text);

	snprintf(c->text + used, sizeof c->text - used, "%s%s=%.*s", used ? "|" : "", path,
	         (int)len, data);
	c->calls++;
	return c->stop_after && c->calls >= c->stop_after ? 7 : 0;
}

static void test_read(void)
{
	char *repo = mkrepo("read");
	struct tether_vcs *v;
	char c1[41], c2[41];
	char *data = NULL;
	size_t len = 0;

	put(repo, "tether.toml", "top");
	put(repo, "ds/a.toml", "A");
	put(repo, "ds/z.toml", "Z");
	put(repo, "ds/sub/b.toml", "B");
	put(repo, "ds/sub/deep/c.toml", "C");
	put(repo, "ds-x", "dash"); /* sorts between "ds" and "ds/..." */
	put(repo, "ds.txt", "dot");
	sh("ln -s a.toml '%s'", path_in(repo, "ds/link"));
	git_commit_all(repo, "first");
	put(repo, "ds/a.toml", "A2");
	git_commit_all(repo, "second");
	v = open_at(repo);
	CHECK(ops->resolve(v, "HEAD~1", c1) == 0);
	CHECK(ops->resolve(v, "HEAD", c2) == 0);

	CHECK(ops->read_file(v, c2, "ds/a.toml", &data, &len) == 0);
	CHECK_STR(data, "A2");
	CHECK(len == 2 && data && data[len] == '\0');
	free(data);
	CHECK(ops->read_file(v, c1, "./ds//a.toml", &data, &len) == 0);
	CHECK_STR(data, "A");
	free(data);
	CHECK(ops->read_file(v, "HEAD", "ds/sub/deep/c.toml", &data, NULL) == 0);
	CHECK_STR(data, "C");
	free(data);
	data = NULL;
	CHECK(ops->read_file(v, c2, "ds/none.toml", &data, &len) == TETHER_ENOTFOUND);
	CHECK(has(tether_error_last(), "ds/none.toml"));
	CHECK(ops->read_file(v, c2, "ds/sub", &data, &len) == TETHER_ENOTFOUND);
	CHECK(ops->read_file(v, c2, "tether.toml/x", &data, &len) == TETHER_ENOTFOUND);
	CHECK(data == NULL);

	/* Twice: the second walk comes from the cache and must be the same. */
	for (int round = 0; round < 2; round++) {
		struct collected c = { .text = "" };
		CHECK(ops->read_tree(v, c2, "ds", collect, &c) == 0);
		CHECK_STR(c.text, "a.toml=A2|link=a.toml|sub/b.toml=B|sub/deep/c.toml=C|z.toml=Z");
	}
	struct collected old = { .text = "" };
	CHECK(ops->read_tree(v, c1, "ds/sub/", collect, &old) == 0);
	CHECK_STR(old.text, "b.toml=B|deep/c.toml=C");

	struct collected none = { .text = "" };
	CHECK(ops->read_tree(v, c2, "missing", collect, &none) == 0);
	CHECK(none.calls == 0);
	CHECK(ops->read_tree(v, c2, "tether.toml", collect, &none) == 0);
	CHECK(none.calls == 0);

	struct collected stop = { .text = "", .stop_after = 2 };
	CHECK(ops->read_tree(v, c2, "ds", collect, &stop) == 7);
	CHECK(stop.calls == 2);

	struct collected all = { .text = "" };
	CHECK(ops->read_tree(v, c2, "", collect, &all) == 0);
	CHECK(all.calls == 8);
	CHECK(has(all.text, "ds-x=dash|ds.txt=dot|ds/a.toml=A2"));

	CHECK(ops->read_tree(v, "0123456789012345678901234567890123456789", "ds", collect, &none) ==
	      TETHER_ENOTFOUND);
	ops->close(v);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* history_files                                                     */
/* ---------------------------------------------------------------- */

struct history_calls {
	json_t *calls; /* [{"commit", "path", "data"}] */
	int stop_after;
};

static int collect_history(void *ud, const char *commit, const char *path, const char *data, size_t len)
{
	struct history_calls *h = ud;

	json_array_append_new(h->calls, json_pack("{s:s, s:s, s:s%}", "commit", commit, "path", path, "data",
	                                          data, len));
	return h->stop_after && (int)json_array_size(h->calls) >= h->stop_after ? 9 : 0;
}

/* The calls as sorted "path=data" pairs, each checked against git: the
 * commit it came with holds exactly that content at that path. */
static char *pairs(const char *repo, const char *dir, const json_t *calls)
{
	json_t *list = json_array();
	size_t i;
	json_t *c;

	json_array_foreach(calls, i, c) {
		const char *commit = json_string_value(json_object_get(c, "commit"));
		const char *path = json_string_value(json_object_get(c, "path"));
		const char *data = json_string_value(json_object_get(c, "data"));
		char *there = out("git -C '%s' show '%s:%s/%s'", repo, commit, dir, path);
		CHECK_STR(there, data);
		free(there);
		json_array_append_new(list, json_sprintf("%s=%s", path, data));
	}
	char *text = strdup("");
	while (json_array_size(list)) {
		size_t best = 0;
		json_array_foreach(list, i, c)
			if (strcmp(json_string_value(c), json_string_value(json_array_get(list, best))) < 0)
				best = i;
		char *longer = malloc(strlen(text) + strlen(json_string_value(json_array_get(list, best))) + 2);
		sprintf(longer, "%s%s%s", text, *text ? "|" : "", json_string_value(json_array_get(list, best)));
		free(text);
		text = longer;
		json_array_remove(list, best);
	}
	json_decref(list);
	return text;
}

/* The calls of one walk, as text, in the order they came. */
static char *walk_text(struct tether_vcs *v, const char *dir, const char *cache, size_t *walked, int *rc)
{
	struct history_calls h = { .calls = json_array() };
	*rc = ops->history_files(v, dir, cache, collect_history, &h, walked);
	char *text = json_dumps(h.calls, JSON_COMPACT);
	json_decref(h.calls);
	return text;
}

static char cache_buf[1 << 20];

static size_t read_cache(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(cache_buf, 1, sizeof cache_buf, f) : 0;
	if (f)
		fclose(f);
	return n;
}

static void write_cache(const char *path, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(cache_buf, 1, n, f) == n);
	if (f)
		fclose(f);
}

/* Replace the first `from` (n_from bytes) in the file's first segment by
 * `to` (as long), and make that segment's SHA-256 match again. */
static void rewrite_cache(const char *path, const char *from, const char *to, size_t n_from)
{
	size_t n = read_cache(path);
	size_t dirlen = n > 12 ? (size_t)(unsigned char)cache_buf[8] : 0;
	size_t seg = 8 + 4 + dirlen + 64; /* the first segment's length field */
	size_t len = n > seg + 4 ? (size_t)(unsigned char)cache_buf[seg] | (size_t)(unsigned char)cache_buf[seg + 1] << 8 |
	                                (size_t)(unsigned char)cache_buf[seg + 2] << 16
	                         : 0;
	char *at = NULL;
	for (size_t i = seg + 4; !at && len && i + n_from <= seg + 4 + len; i++)
		if (memcmp(cache_buf + i, from, n_from) == 0)
			at = cache_buf + i;
	CHECK(at != NULL);
	if (!at)
		return;
	memcpy(at, to, n_from);
	char hex[65];
	tether_sha256_hex(cache_buf + seg + 4, len, hex);
	memcpy(cache_buf + seg + 4 + len, hex, 64);
	write_cache(path, n);
}

/* history_files with a cache file: the same calls, cold and warm; a warm
 * walk takes the cached objects (a test that rewrites one sees its
 * rewrite); a damaged file, or one made for another directory, is read
 * around and replaced. */
static void test_history_cache(const char *repo, struct tether_vcs *v, size_t all)
{
	char cache[PATH_MAX];
	size_t walked = 0;
	int rc;
	snprintf(cache, sizeof cache, "%s/.git/tether/cache/test/history-walk", repo);
	char *plain = walk_text(v, "ds", NULL, &walked, &rc);
	CHECK(rc == 0 && !tt_exists(cache));
	char *cold = walk_text(v, "ds", cache, &walked, &rc);
	CHECK(rc == 0 && walked == all && tt_exists(cache));
	char *warm = walk_text(v, "ds", cache, &walked, &rc);
	CHECK(rc == 0 && walked == all);
	CHECK_STR(cold, plain);
	CHECK_STR(warm, plain);

	/* Warm, the walk reads the cache, not git: t.toml's blob (type 3, one
	 * byte long, "T") rewritten in the file is what it hands over. */
	rewrite_cache(cache, "\x03\x01\x00\x00\x00T", "\x03\x01\x00\x00\x00X", 6);
	char *rewritten = walk_text(v, "ds", cache, &walked, &rc);
	CHECK(rc == 0 && strstr(rewritten, "\"path\":\"t.toml\",\"data\":\"X\"") != NULL);
	free(rewritten);

	/* A damaged header is not trusted, and the walk writes a good file in
	 * its place. */
	sh("printf 'x' | dd of='%s' bs=1 seek=40 conv=notrunc status=none", cache);
	char *damaged = walk_text(v, "ds", cache, &walked, &rc);
	CHECK(rc == 0);
	CHECK_STR(damaged, plain);
	char *again = walk_text(v, "ds", cache, &walked, &rc);
	CHECK_STR(again, plain);
	size_t whole = read_cache(cache);

	/* A new commit adds a segment at the end; what was there stays. */
	static char before[1 << 20];
	memcpy(before, cache_buf, whole);
	put(repo, "ds/new.toml", "N");
	git_commit_all(repo, "five");
	char *more = walk_text(v, "ds", cache, &walked, &rc);
	CHECK(rc == 0 && strstr(more, "\"path\":\"new.toml\"") != NULL);
	size_t grown = read_cache(cache);
	CHECK(grown > whole && memcmp(before, cache_buf, whole) == 0);
	char *more_warm = walk_text(v, "ds", cache, &walked, &rc);
	CHECK_STR(more_warm, more);

	/* A segment cut short (a write that died) ends the file for readers,
	 * and the next save writes it whole again. */
	write_cache(cache, grown - 10);
	char *torn = walk_text(v, "ds", cache, &walked, &rc);
	CHECK_STR(torn, more);
	size_t rewritten_len = read_cache(cache);
	CHECK(rewritten_len > 0 && rewritten_len != grown - 10);
	char *after_torn = walk_text(v, "ds", cache, &walked, &rc);
	CHECK_STR(after_torn, more);
	sh("git -C '%s' reset -q --hard HEAD~1", repo);

	/* Another directory's cache is not this one's. */
	char *sub = walk_text(v, "ds/sub", NULL, &walked, &rc), *sub_cached = walk_text(v, "ds/sub", cache, &walked, &rc);
	CHECK(rc == 0);
	CHECK_STR(sub_cached, sub);
	char *back = walk_text(v, "ds", cache, &walked, &rc);
	CHECK_STR(back, plain);

	/* A callback that stops the walk leaves the file as it was. */
	sh("rm -f '%s'", cache);
	struct history_calls h = { .calls = json_array(), .stop_after = 1 };
	CHECK(ops->history_files(v, "ds", cache, collect_history, &h, &walked) == 9);
	CHECK(!tt_exists(cache));
	json_decref(h.calls);
	free(plain);
	free(cold);
	free(warm);
	free(damaged);
	free(again);
	free(more);
	free(more_warm);
	free(torn);
	free(after_torn);
	free(sub);
	free(sub_cached);
	free(back);
}

static int count_commit(void *ud, const char *id)
{
	(void)id;
	++*(size_t *)ud;
	return 0;
}


/* history_trees: each commit once, with its tree at the directory as git
 * names it, fresh the first time that tree is met; a fresh tree's files
 * follow in path order with their blob ids, the content given the first
 * time a (path, blob) is met. */
struct tree_calls {
	json_t *commits;  /* {commit: tree} */
	json_t *fresh;    /* {tree: "path blob|path blob|..."} */
	json_t *contents; /* {"path blob": content} */
	const char *tree; /* the fresh tree whose files come */
	char *listing;
	int stop_after, calls, errors;
};

static void flush_tree(struct tree_calls *t)
{
	if (t->tree)
		json_object_set_new(t->fresh, t->tree, json_string(t->listing ? t->listing : ""));
	free(t->listing);
	t->listing = NULL;
	t->tree = NULL;
}

static int on_tree_commit(void *ud, const char *commit, const char *tree, int fresh)
{
	struct tree_calls *t = ud;
	flush_tree(t);
	t->errors += json_object_get(t->commits, commit) != NULL; /* each commit once */
	t->errors += fresh != (*tree && !json_object_get(t->fresh, tree));
	json_object_set_new(t->commits, commit, json_string(tree));
	if (fresh) {
		json_object_set_new(t->fresh, tree, json_string("")); /* so a later fresh is caught */
		t->tree = json_string_value(json_object_get(t->commits, commit));
	}
	return t->stop_after && ++t->calls >= t->stop_after ? 9 : 0;
}

static int on_tree_file(void *ud, const char *path, const char *blob, const char *data, size_t len)
{
	struct tree_calls *t = ud;
	char key[1024];
	snprintf(key, sizeof key, "%s %s", path, blob);
	t->errors += !t->tree;
	t->errors += (data != NULL) == (json_object_get(t->contents, key) != NULL);
	if (data)
		json_object_set_new(t->contents, key, json_stringn(data, len));
	char *longer = malloc((t->listing ? strlen(t->listing) : 0) + strlen(key) + 2);
	sprintf(longer, "%s%s%s", t->listing ? t->listing : "", t->listing ? "|" : "", key);
	free(t->listing);
	t->listing = longer;
	return 0;
}

static const struct tether_vcs_tree_walk tree_cbs = { on_tree_commit, on_tree_file };

static void test_history_trees(const char *repo, struct tether_vcs *v, size_t all)
{
	struct tree_calls t = { .commits = json_object(), .fresh = json_object(), .contents = json_object() };
	size_t walked = 0;
	CHECK(ops->history_trees(v, NULL, 0, "ds", NULL, &tree_cbs, &t, &walked) == 0);
	flush_tree(&t);
	CHECK(walked == all && json_object_size(t.commits) == all && t.errors == 0);
	const char *commit, *tree;
	json_t *val;
	json_object_foreach(t.commits, commit, val) {
		char *there = out("git -C '%s' rev-parse -q --verify '%s:ds' || true", repo, commit);
		CHECK_STR(json_string_value(val), there);
		free(there);
	}
	json_object_foreach(t.fresh, tree, val) {
		char *listing = out("git -C '%s' ls-tree -r --format='%%(path) %%(objectname)' '%s' | paste -sd'|'",
		                    repo, tree);
		CHECK_STR(json_string_value(val), listing);
		free(listing);
	}
	const char *pb;
	json_object_foreach(t.contents, pb, val) {
		char *blob = strchr(pb, ' ') + 1;
		char *content = out("git -C '%s' cat-file blob %s", repo, blob);
		CHECK_STR(json_string_value(val), content);
		free(content);
	}
	/* "four" put a.toml back to A: a fresh tree, whose a.toml comes
	 * without content (met before at that path). */
	CHECK(json_object_size(t.contents) == 6);

	/* From one tip: its ancestors only. */
	char *head = rev_parse(repo, "HEAD~1");
	const char *tips[] = { head };
	json_object_clear(t.commits);
	json_object_clear(t.fresh);
	json_object_clear(t.contents);
	CHECK(ops->history_trees(v, tips, 1, "ds", NULL, &tree_cbs, &t, &walked) == 0);
	flush_tree(&t);
	CHECK(walked == 3 && json_object_size(t.commits) == 3 && t.errors == 0);
	free(head);

	/* A directory no commit has: every commit, with no tree; the
	 * callback's value stops the walk. */
	json_object_clear(t.commits);
	json_object_clear(t.fresh);
	CHECK(ops->history_trees(v, NULL, 0, "nowhere", NULL, &tree_cbs, &t, &walked) == 0);
	CHECK(walked == all && json_object_size(t.fresh) == 0);
	t.stop_after = 2;
	json_object_clear(t.commits);
	CHECK(ops->history_trees(v, NULL, 0, "ds", NULL, &tree_cbs, &t, &walked) == 9);
	flush_tree(&t);
	CHECK(json_object_size(t.commits) == 2);
	CHECK(ops->history_trees(v, NULL, 0, "../outside", NULL, &tree_cbs, &t, &walked) == TETHER_EUSAGE);
	json_decref(t.commits);
	json_decref(t.fresh);
	json_decref(t.contents);
}

static void test_history(void)
{
	char *repo = mkrepo("history");
	struct history_calls h = { .calls = json_array() };
	struct tether_vcs *v = open_at(repo);
	size_t walked = 99;

	/* An unborn repository has no history. */
	CHECK(ops->history_files(v, "ds", NULL, collect_history, &h, &walked) == 0);
	CHECK(walked == 0 && json_array_size(h.calls) == 0);
	ops->close(v);

	put(repo, "ds/a.toml", "A");
	put(repo, "ds/sub/b.toml", "B");
	put(repo, "other", "1");
	git_commit_all(repo, "one");
	put(repo, "ds/a.toml", "A2");
	git_commit_all(repo, "two");
	put(repo, "other", "2");
	git_commit_all(repo, "three: ds unchanged");
	put(repo, "ds/a.toml", "A");
	put(repo, "ds/b2.toml", "B");
	git_commit_all(repo, "four: a.toml back to A, the content of b.toml at a second path");
	/* A branch, and a commit only a tag reaches. */
	sh("git -C '%s' switch -q -c side HEAD~3", repo);
	put(repo, "ds/c.toml", "C");
	git_commit_all(repo, "side");
	sh("git -C '%s' switch -q --detach", repo);
	put(repo, "ds/t.toml", "T");
	git_commit_all(repo, "tagged");
	sh("git -C '%s' tag only-tag && git -C '%s' switch -q main", repo, repo);

	v = open_at(repo);
	char *count = out("git -C '%s' rev-list --all --count", repo);
	size_t all = (size_t)atoi(count);
	free(count);

	/* Each (path, content) once, however many commits hold it. */
	CHECK(ops->history_files(v, "ds", NULL, collect_history, &h, &walked) == 0);
	CHECK(walked == all && all == 6);
	char *got = pairs(repo, "ds", h.calls);
	CHECK_STR(got, "a.toml=A|a.toml=A2|b2.toml=B|c.toml=C|sub/b.toml=B|t.toml=T");
	free(got);

	/* A subdirectory; a normalised path; a directory no commit has. */
	json_array_clear(h.calls);
	CHECK(ops->history_files(v, "./ds//sub/", NULL, collect_history, &h, &walked) == 0);
	got = pairs(repo, "ds/sub", h.calls);
	CHECK_STR(got, "b.toml=B");
	free(got);
	json_array_clear(h.calls);
	CHECK(ops->history_files(v, "nowhere", NULL, collect_history, &h, &walked) == 0);
	CHECK(json_array_size(h.calls) == 0 && walked == all);

	/* The callback stops the walk, and its value comes back. */
	h.stop_after = 2;
	CHECK(ops->history_files(v, "ds", NULL, collect_history, &h, &walked) == 9);
	CHECK(json_array_size(h.calls) == 2);
	CHECK(ops->history_files(v, "../outside", NULL, collect_history, &h, &walked) == TETHER_EUSAGE);
	CHECK(ops->history_files(v, ".git", NULL, collect_history, &h, &walked) == TETHER_EUSAGE);

	/* each_commit visits the same commits. */
	size_t visited = 0;
	CHECK(ops->each_commit(v, count_commit, &visited) == 0);
	CHECK(visited == all);
	json_decref(h.calls);
	test_history_cache(repo, v, all);
	test_history_trees(repo, v, all);
	ops->close(v);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* log                                                               */
/* ---------------------------------------------------------------- */

static const char *log_id(const json_t *commits, size_t i)
{
	return json_string_value(json_object_get(json_array_get(commits, i), "id"));
}

static void test_log(void)
{
	char *repo = mkrepo("log");
	struct tether_vcs *v;
	json_t *commits = NULL;
	char *a, *c, *e;

	put(repo, "ds/x", "1");
	git_commit_all(repo, "A: add ds/x");
	a = rev_parse(repo, "HEAD");
	put(repo, "other", "1");
	git_commit_all(repo, "B: other");
	put(repo, "ds/y", "1");
	git_commit_all(repo, "C: add ds/y");
	c = rev_parse(repo, "HEAD");
	put(repo, "other", "2");
	git_commit_all(repo, "D: other");
	sh("git -C '%s' checkout -q -b side", repo);
	put(repo, "ds/x", "2");
	int e_time = git_next_date();
	sh("cd '%s' && git add -A && GIT_AUTHOR_DATE='@%d +0000' GIT_COMMITTER_DATE='@%d +0000' "
	   "git commit -q -m 'E: change ds/x' -m 'the body'",
	   repo, e_time, e_time);
	e = rev_parse(repo, "HEAD");
	sh("git -C '%s' checkout -q main", repo);
	put(repo, "other", "3");
	git_commit_all(repo, "F: other");
	/* The merge takes ds from side unchanged: it changes nothing under ds
	 * relative to side, so it is not a ds commit. */
	int m_time = git_next_date();
	sh("cd '%s' && GIT_AUTHOR_DATE='@%d +0000' GIT_COMMITTER_DATE='@%d +0000' "
	   "git merge -q --no-ff -m 'M: merge' side",
	   repo, m_time, m_time);
	v = open_at(repo);

	CHECK(ops->log(v, "HEAD", "ds", 0, &commits) == 0);
	CHECK(json_array_size(commits) == 3);
	CHECK_STR(log_id(commits, 0), e);
	CHECK_STR(log_id(commits, 1), c);
	CHECK_STR(log_id(commits, 2), a);
	json_t *first = json_array_get(commits, 0);
	const char *short_id = json_string_value(json_object_get(first, "short"));
	CHECK(short_id && strlen(short_id) >= 7 && strncmp(short_id, e, strlen(short_id)) == 0);
	CHECK_STR(json_string_value(json_object_get(first, "author")), "Test User");
	CHECK_STR(json_string_value(json_object_get(first, "email")), "test@example.com");
	CHECK_STR(json_string_value(json_object_get(first, "summary")), "E: change ds/x");
	CHECK_STR(json_string_value(json_object_get(first, "message")), "E: change ds/x\n\nthe body\n");
	CHECK(json_integer_value(json_object_get(first, "time")) == e_time);
	json_decref(commits);

	CHECK(ops->log(v, "HEAD", "ds/x/", 0, &commits) == 0);
	CHECK(json_array_size(commits) == 2);
	CHECK_STR(log_id(commits, 0), e);
	CHECK_STR(log_id(commits, 1), a);
	json_decref(commits);

	CHECK(ops->log(v, "HEAD", "ds", 2, &commits) == 0);
	CHECK(json_array_size(commits) == 2);
	CHECK_STR(log_id(commits, 1), c);
	json_decref(commits);

	CHECK(ops->log(v, NULL, NULL, 0, &commits) == 0);
	CHECK(json_array_size(commits) == 7);
	json_decref(commits);

	CHECK(ops->log(v, "HEAD~1", NULL, 0, &commits) == 0); /* F, D, C, B, A */
	CHECK(json_array_size(commits) == 5);
	json_decref(commits);

	CHECK(ops->log(v, "HEAD", "nowhere", 0, &commits) == 0);
	CHECK(json_array_size(commits) == 0);
	json_decref(commits);

	commits = NULL;
	CHECK(ops->log(v, "nope", "ds", 0, &commits) == TETHER_ENOTFOUND);
	CHECK(commits == NULL);
	ops->close(v);
	free(a);
	free(c);
	free(e);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* commits_info, list_refs (export)                                  */
/* ---------------------------------------------------------------- */

/* Run both through the module under test: the libgit2 one (vcs_git) and
 * the native reader (vcs_git_native) must give these same answers. */
static void test_export_facts(void)
{
	char *repo = mkrepo("facts");
	put(repo, "a", "1");
	sh("printf '\\n\\nroot\\n\\nbody\\n' > '%s/../facts.msg'", repo);
	sh("cd '%s' && git add -A && GIT_AUTHOR_NAME=' Ann  Author ' GIT_AUTHOR_EMAIL='ann@example.com' "
	   "GIT_AUTHOR_DATE='1700000000 +0130' GIT_COMMITTER_NAME='Carl' GIT_COMMITTER_EMAIL='carl@example.com' "
	   "GIT_COMMITTER_DATE='1700000100 -0245' git commit -q --cleanup=verbatim -F ../facts.msg",
	   repo);
	char *root = rev_parse(repo, "HEAD");
	sh("git -C '%s' checkout -q -b side", repo);
	put(repo, "b", "1");
	git_commit_all(repo, "side");
	sh("git -C '%s' checkout -q main", repo);
	put(repo, "c", "1");
	git_commit_all(repo, "main");
	sh("cd '%s' && git merge -q --no-ff -m merged side && git tag light && git tag -a -m rel annotated HEAD~1 && "
	   "git tag -a -m tree treetag 'HEAD^{tree}' && git update-ref refs/remotes/origin/main HEAD && "
	   "git symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main && git update-ref refs/notes/x HEAD",
	   repo);
	char *merge = rev_parse(repo, "HEAD"), *p1 = rev_parse(repo, "HEAD^1"), *p2 = rev_parse(repo, "HEAD^2");
	struct tether_vcs *v = open_at(repo);
	const char *ids[] = { root, merge };
	json_t *infos = NULL;
	CHECK(ops->commits_info(v, ids, 2, &infos) == 0);
	CHECK(json_array_size(infos) == 2);
	json_t *r = json_array_get(infos, 0), *m = json_array_get(infos, 1);
	CHECK_STR(json_string_value(json_object_get(r, "id")), root);
	CHECK(json_array_size(json_object_get(r, "parents")) == 0);
	CHECK_STR(json_string_value(json_object_get(r, "author")), "Ann  Author");
	CHECK_STR(json_string_value(json_object_get(r, "email")), "ann@example.com");
	CHECK(json_integer_value(json_object_get(r, "time")) == 1700000000);
	CHECK(json_integer_value(json_object_get(r, "tz")) == 90);
	CHECK_STR(json_string_value(json_object_get(r, "committer")), "Carl");
	CHECK_STR(json_string_value(json_object_get(r, "committer_email")), "carl@example.com");
	CHECK(json_integer_value(json_object_get(r, "commit_time")) == 1700000100);
	/* leading newlines are not the message's, as libgit2 reads it */
	CHECK_STR(json_string_value(json_object_get(r, "message")), "root\n\nbody\n");
	CHECK(json_array_size(json_object_get(m, "parents")) == 2);
	CHECK_STR(json_string_value(json_array_get(json_object_get(m, "parents"), 0)), p1);
	CHECK_STR(json_string_value(json_array_get(json_object_get(m, "parents"), 1)), p2);
	CHECK_STR(json_string_value(json_object_get(m, "message")), "merged\n");
	json_decref(infos);
	const char *missing[] = { "0123456789012345678901234567890123456789" };
	infos = NULL;
	CHECK(ops->commits_info(v, missing, 1, &infos) != 0 && infos == NULL);

	json_t *refs = NULL;
	CHECK(ops->list_refs(v, &refs) == 0);
	char *got = json_dumps(refs, JSON_COMPACT);
	char *want = tt_strdupf("[{\"name\":\"main\",\"type\":\"branch\",\"commit\":\"%s\"},"
	                        "{\"name\":\"side\",\"type\":\"branch\",\"commit\":\"%s\"},"
	                        "{\"name\":\"origin/main\",\"type\":\"remote\",\"commit\":\"%s\"},"
	                        "{\"name\":\"annotated\",\"type\":\"tag\",\"commit\":\"%s\"},"
	                        "{\"name\":\"light\",\"type\":\"tag\",\"commit\":\"%s\"}]",
	                        merge, p2, merge, p1, merge);
	CHECK_STR(got, want);
	free(got);
	free(want);
	json_decref(refs);
	/* packed refs and a packed annotated tag (peeled by packed-refs) */
	sh("git -C '%s' pack-refs --all", repo);
	CHECK(ops->list_refs(v, &refs) == 0);
	CHECK(json_array_size(refs) == 5);
	CHECK_STR(json_string_value(json_object_get(json_array_get(refs, 3), "commit")), p1);
	json_decref(refs);
	ops->close(v);
	free(root);
	free(merge);
	free(p1);
	free(p2);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* commit_paths                                                      */
/* ---------------------------------------------------------------- */

static void put_dataset(const char *repo)
{
	put(repo, "ds/tether.toml", "[dataset]\nid = \"x\"\n");
	put(repo, "ds/.tether/.gitignore", "workspace.toml\ncache/\n");
	put(repo, "ds/.tether/state.toml", "s = 1\n");
}

static void test_commit_unborn(void)
{
	char *repo = mkrepo("commit-unborn");
	struct tether_vcs *v;
	char id[41] = "x";
	char *branch = NULL;

	put_dataset(repo);
	put(repo, "other.txt", "not the dataset's\n");
	v = open_at(repo);

	/* An empty directory on an unborn branch: nothing to commit. */
	sh("mkdir -p '%s'", path_in(repo, "empty"));
	CHECK(commit_one(v, "empty", "nothing", id) == 0);
	CHECK_STR(id, "");
	CHECK(sh("! git -C '%s' rev-parse -q --verify HEAD >/dev/null", repo) == 0); /* unborn */

	CHECK(commit_one(v, "ds", "tether: first", id) == 0);
	CHECK(strlen(id) == 40);
	CHECK_OUT(rev_parse(repo, "HEAD"), id);
	CHECK_OUT(out("git -C '%s' rev-list --count HEAD", repo), "1");
	CHECK_OUT(out("git -C '%s' log -1 --format=%%s", repo), "tether: first");
	CHECK_OUT(out("git -C '%s' ls-tree -r --name-only HEAD", repo),
	          "ds/.tether/.gitignore\nds/.tether/state.toml\nds/tether.toml");
	/* The index holds what was committed. */
	CHECK_OUT(out("git -C '%s' status --porcelain", repo), "?? other.txt");
	CHECK_OUT(out("git -C '%s' diff --cached --name-status", repo), "");
	CHECK(ops->current_branch(v, &branch) == 0);
	CHECK_STR(branch, "main");
	free(branch);
	check_fsck(repo);
	ops->close(v);
	free(repo);
}

/* The user's own work: staged, unstaged, both on one file, a staged new
 * file, a staged deletion, an intent-to-add file, a file marked
 * assume-unchanged, an untracked file. */
static void make_user_changes(const char *repo)
{
	put(repo, "a.txt", "a staged\n");
	put(repo, "new.txt", "brand new\n");
	put(repo, "c.txt", "c staged\n");
	put(repo, "ita.txt", "intent to add\n");
	sh("cd '%s' && git add a.txt new.txt c.txt && git rm -q d.txt && git add -N ita.txt && "
	   "git update-index --assume-unchanged e.txt",
	   repo);
	put(repo, "c.txt", "c staged, then edited\n");
	put(repo, "b.txt", "b unstaged\n");
	put(repo, "e.txt", "e hidden by assume-unchanged\n");
	put(repo, "untracked.txt", "u\n");
}

struct user_view {
	char *staged_names, *unstaged_names, *staged_patch, *unstaged_patch, *untracked;
	char *entries; /* mode, id, stage and flags of every index entry */
};

/* What git shows of the user's work outside the datasets (ds, ds2). */
static struct user_view user_view(const char *repo)
{
	struct user_view u;

	u.staged_names = out("git -C '%s' diff --cached --name-status -- . ':!ds*'", repo);
	u.unstaged_names = out("git -C '%s' diff --name-status -- . ':!ds*'", repo);
	u.staged_patch = out("git -C '%s' diff --cached -- . ':!ds*'", repo);
	u.unstaged_patch = out("git -C '%s' diff -- . ':!ds*'", repo);
	u.untracked = out("git -C '%s' ls-files --others --exclude-standard -- . ':!ds*'", repo);
	u.entries = out("git -C '%s' ls-files -s -v -- . ':!ds*'", repo);
	return u;
}

static void free_user_view(struct user_view *u)
{
	free(u->staged_names);
	free(u->unstaged_names);
	free(u->staged_patch);
	free(u->unstaged_patch);
	free(u->untracked);
	free(u->entries);
}

/* The whole index and working tree now show exactly the user's changes:
 * nothing of the dataset is left staged or modified. */
static void check_user_view_kept(const char *repo, const struct user_view *before)
{
	CHECK_OUT(out("git -C '%s' diff --cached --name-status", repo), before->staged_names);
	CHECK_OUT(out("git -C '%s' diff --name-status", repo), before->unstaged_names);
	CHECK_OUT(out("git -C '%s' diff --cached", repo), before->staged_patch);
	CHECK_OUT(out("git -C '%s' diff", repo), before->unstaged_patch);
	CHECK_OUT(out("git -C '%s' ls-files --others --exclude-standard", repo), before->untracked);
	CHECK_OUT(out("git -C '%s' ls-files -s -v -- . ':!ds*'", repo), before->entries);
}

static void test_commit_keeps_user_changes(void)
{
	char *repo = mkrepo("commit-keep");
	struct tether_vcs *v;
	struct user_view before;
	char id[41];

	put_dataset(repo);
	put(repo, "ds/sub/deep/f.toml", "f\n");
	put(repo, "a.txt", "a\n");
	put(repo, "b.txt", "b\n");
	put(repo, "c.txt", "c\n");
	put(repo, "d.txt", "d\n");
	put(repo, "e.txt", "e\n");
	git_commit_all(repo, "base");
	char *parent = rev_parse(repo, "HEAD");

	make_user_changes(repo);
	/* The dataset changes, one of them staged by the user and edited on. */
	put(repo, "ds/tether.toml", "[dataset]\nid = \"staged\"\n");
	sh("git -C '%s' add ds/tether.toml", repo);
	put(repo, "ds/tether.toml", "[dataset]\nid = \"y\"\n");
	put(repo, "ds/.tether/new.toml", "n = 1\n");
	put(repo, "ds/run.sh", "#!/bin/sh\n");
	sh("chmod +x '%s'", path_in(repo, "ds/run.sh"));
	sh("ln -s tether.toml '%s'", path_in(repo, "ds/link"));
	before = user_view(repo);
	CHECK_OUT(strdup(before.staged_names), "M\ta.txt\nM\tc.txt\nD\td.txt\nA\tnew.txt");
	CHECK_OUT(strdup(before.unstaged_names), "M\tb.txt\nM\tc.txt\nA\tita.txt");

	v = open_at(path_in(repo, "ds"));
	CHECK(commit_one(v, "ds", "tether: commit", id) == 0);
	/* Before anything refreshes the index: the stat data written for the
	 * committed files already matches them, so git need not re-read them. */
	CHECK_OUT(out("git -C '%s' diff-files --name-only -- ds", repo), "");

	CHECK_OUT(rev_parse(repo, "HEAD"), id);
	CHECK_OUT(rev_parse(repo, "HEAD~1"), parent);
	CHECK_OUT(out("git -C '%s' show --name-status --format= HEAD", repo),
	          "A\tds/.tether/new.toml\nA\tds/link\nA\tds/run.sh\nM\tds/tether.toml");
	CHECK_OUT(out("git -C '%s' show --stat --format= HEAD | grep -v '^ ds/' | sed 's/^ *//'",
	              repo),
	          "4 files changed, 4 insertions(+), 1 deletion(-)");
	CHECK_OUT(out("git -C '%s' ls-tree HEAD ds/run.sh ds/link | cut -c1-6", repo),
	          "120000\n100755");
	CHECK_OUT(out("git -C '%s' cat-file -p HEAD:ds/link", repo), "tether.toml");
	CHECK_OUT(out("git -C '%s' show HEAD:ds/tether.toml", repo), "[dataset]\nid = \"y\"");
	check_user_view_kept(repo, &before);
	CHECK_OUT(out("git -C '%s' status --porcelain -- ds", repo), "");
	check_fsck(repo);

	/* Deleted files, a whole deleted directory among them, leave the
	 * commit and the index. */
	sh("rm -r '%s' '%s' '%s'", path_in(repo, "ds/.tether/new.toml"), path_in(repo, "ds/run.sh"),
	   path_in(repo, "ds/sub"));
	CHECK(commit_one(v, "ds", "tether: deletions", id) == 0);
	CHECK_OUT(out("git -C '%s' show --name-status --format= HEAD", repo),
	          "D\tds/.tether/new.toml\nD\tds/run.sh\nD\tds/sub/deep/f.toml");
	CHECK_OUT(out("git -C '%s' ls-files ds", repo),
	          "ds/.tether/.gitignore\nds/.tether/state.toml\nds/link\nds/tether.toml");
	check_user_view_kept(repo, &before);
	CHECK_OUT(out("git -C '%s' status --porcelain -- ds", repo), "");

	/* Nothing changed: no commit, and the index file is not rewritten. */
	struct stat st_before, st_after;
	char *head = rev_parse(repo, "HEAD");
	stat(path_in(repo, ".git/index"), &st_before);
	CHECK(commit_one(v, "ds", "tether: nothing", id) == 0);
	CHECK_STR(id, "");
	CHECK_OUT(rev_parse(repo, "HEAD"), head);
	stat(path_in(repo, ".git/index"), &st_after);
	CHECK(st_before.st_mtim.tv_sec == st_after.st_mtim.tv_sec &&
	      st_before.st_mtim.tv_nsec == st_after.st_mtim.tv_nsec);
	free(head);

	/* A file path commits that file only. */
	put(repo, "ds/tether.toml", "[dataset]\nid = \"z\"\n");
	/* A new size, so that git status sees the change even when it lands in
	 * the same second as the index (git's racy-clean check looks at the
	 * size first). */
	put(repo, "ds/.tether/state.toml", "s = 22\n");
	CHECK(commit_one(v, "ds/tether.toml", "tether: one file", id) == 0);
	CHECK_OUT(out("git -C '%s' show --name-status --format= HEAD", repo), "M\tds/tether.toml");
	CHECK_OUT(out("git -C '%s' status --porcelain -- ds", repo), " M ds/.tether/state.toml");

	/* Several paths in one commit, including one that is gone entirely. */
	put(repo, "ds2/tether.toml", "second\n");
	const char *paths[] = { "ds/.tether", "ds2", "never-existed", "gone/deeper/file" };
	CHECK(ops->commit_paths(v, paths, 4, "tether: several", id) == 0);
	CHECK_OUT(out("git -C '%s' show --name-status --format= HEAD", repo),
	          "M\tds/.tether/state.toml\nA\tds2/tether.toml");
	check_user_view_kept(repo, &before);
	check_fsck(repo);

	free_user_view(&before);
	free(parent);
	ops->close(v);
	free(repo);
}

/* No ignore rule applies to the named paths: a user's "*.toml" or a
 * pattern naming the dataset's directory must not drop a manifest. */
static void test_commit_ignores_no_rule(void)
{
	char *repo = mkrepo("commit-ignored");
	struct tether_vcs *v;
	char id[41];

	put(repo, ".gitignore", "*.toml\nds/\n");
	git_commit_all(repo, "base");
	put_dataset(repo);
	v = open_at(repo);
	CHECK(commit_one(v, "ds", "tether: despite ignores", id) == 0);
	CHECK_OUT(out("git -C '%s' show --name-status --format= HEAD", repo),
	          "A\tds/.tether/.gitignore\nA\tds/.tether/state.toml\nA\tds/tether.toml");
	check_fsck(repo);
	ops->close(v);
	free(repo);
}

/* Modes and filters as git applies them: core.fileMode=false keeps HEAD's
 * mode, core.autocrlf cleans line endings; a submodule's entry is left
 * alone. */
static void test_commit_modes_filters_submodules(void)
{
	char *repo = mkrepo("commit-modes");
	struct tether_vcs *v;
	char id[41];

	put(repo, "ds/plain.sh", "echo 1\n");
	put(repo, "ds/embedded/inner", "inner\n");
	sh("cd '%s' && git init -q -b main && git add -A && git -c user.name=x -c user.email=y "
	   "commit -q -m inner",
	   path_in(repo, "ds/embedded"));
	sh("cd '%s' && git -c advice.addEmbeddedRepo=false add ds/plain.sh ds/embedded 2>/dev/null && "
	   "git commit -q -m base",
	   repo);
	char *gitlink = out("git -C '%s' ls-tree HEAD ds/embedded", repo);
	CHECK(strncmp(gitlink, "160000 commit ", 14) == 0);

	sh("git -C '%s' config core.fileMode false && git -C '%s' config core.autocrlf input", repo,
	   repo);
	put(repo, "ds/plain.sh", "echo 2\r\n");
	sh("chmod +x '%s'", path_in(repo, "ds/plain.sh"));
	put(repo, "ds/new.txt", "one\r\ntwo\r\n");
	v = open_at(repo);
	CHECK(commit_one(v, "ds", "tether: modes", id) == 0);
	CHECK_OUT(out("git -C '%s' show --name-status --format= HEAD", repo),
	          "A\tds/new.txt\nM\tds/plain.sh");
	CHECK_OUT(out("git -C '%s' ls-tree HEAD ds/plain.sh | cut -c1-6", repo), "100644");
	CHECK_OUT(out("git -C '%s' cat-file -p HEAD:ds/new.txt | od -c | head -1", repo),
	          "0000000   o   n   e  \\n   t   w   o  \\n");
	CHECK_OUT(out("git -C '%s' ls-tree HEAD ds/embedded", repo), gitlink);
	CHECK_OUT(out("git -C '%s' status --porcelain", repo), "");
	check_fsck(repo);
	free(gitlink);
	ops->close(v);
	free(repo);
}

static void test_commit_refusals(void)
{
	char *repo = mkrepo("commit-refuse");
	struct tether_vcs *v;
	char id[41];

	put_dataset(repo);
	git_commit_all(repo, "base");
	put(repo, "ds/tether.toml", "changed\n");
	char *head = rev_parse(repo, "HEAD");
	v = open_at(repo);

	CHECK(commit_one(v, "../outside", "m", id) == TETHER_EUSAGE);
	CHECK(commit_one(v, "/etc", "m", id) == TETHER_EUSAGE);
	CHECK(commit_one(v, ".git/config", "m", id) == TETHER_EUSAGE);
	CHECK(commit_one(v, "ds", " \n\n", id) == TETHER_EUSAGE);
	CHECK(ops->commit_paths(v, NULL, 0, "m", id) == TETHER_EUSAGE);

	/* Past a symbolic link the path is not in this checkout: a layout
	 * refused (exit 3), not a usage mistake. */
	sh("ln -s ds '%s'", path_in(repo, "alias"));
	CHECK(commit_one(v, "alias/tether.toml", "m", id) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "symbolic link"));

	/* A merge in progress: a plain commit would drop its other parent. */
	sh("git -C '%s' rev-parse HEAD > '%s'", repo, path_in(repo, ".git/MERGE_HEAD"));
	CHECK(commit_one(v, "ds", "m", id) == TETHER_EREFUSED);
	CHECK(has(tether_error_last(), "merge"));
	unlink(path_in(repo, ".git/MERGE_HEAD"));

	/* No identity anywhere. */
	sh("git -C '%s' config --unset user.name && git -C '%s' config --unset user.email", repo,
	   repo);
	CHECK(commit_one(v, "ds", "m", id) == TETHER_ECONFIG);
	CHECK(has(tether_error_last(), "user.name"));
	CHECK(tether_error_hint() && has(tether_error_hint(), "git config"));
	CHECK_OUT(rev_parse(repo, "HEAD"), head);
	CHECK_OUT(out("git -C '%s' status --porcelain", repo), " M ds/tether.toml\n?? alias");

	/* The environment names author and committer, as for git. */
	setenv("GIT_AUTHOR_NAME", "Env Author", 1);
	setenv("GIT_AUTHOR_EMAIL", "author@example.com", 1);
	setenv("GIT_AUTHOR_DATE", "@1600000000 +0200", 1);
	setenv("GIT_COMMITTER_NAME", "Env Committer", 1);
	setenv("GIT_COMMITTER_EMAIL", "committer@example.com", 1);
	setenv("GIT_COMMITTER_DATE", "2021-01-02T03:04:05Z", 1);
	CHECK(commit_one(v, "ds", "tether: from the environment", id) == 0);
	CHECK_OUT(out("git -C '%s' log -1 --format='%%an|%%ae|%%at|%%ai|%%cn|%%ce|%%ct'", repo),
	          "Env Author|author@example.com|1600000000|2020-09-13 14:26:40 +0200|"
	          "Env Committer|committer@example.com|1609556645");
	setenv("GIT_AUTHOR_DATE", "last tuesday", 1);
	put(repo, "ds/tether.toml", "changed again\n");
	CHECK(commit_one(v, "ds", "m", id) == TETHER_EUSAGE);
	CHECK(has(tether_error_last(), "GIT_AUTHOR_DATE"));
	unsetenv("GIT_AUTHOR_NAME");
	unsetenv("GIT_AUTHOR_EMAIL");
	unsetenv("GIT_AUTHOR_DATE");
	unsetenv("GIT_COMMITTER_NAME");
	unsetenv("GIT_COMMITTER_EMAIL");
	unsetenv("GIT_COMMITTER_DATE");

	check_fsck(repo);
	free(head);
	ops->close(v);
	free(repo);
}

/* ---------------------------------------------------------------- */
/* current_branch / is_tracked                                       */
/* ---------------------------------------------------------------- */

static void check_branch(struct tether_vcs *v, const char *want)
{
	char *name = (char *)"unset";

	CHECK(ops->current_branch(v, &name) == 0);
	if (want)
		CHECK_STR(name, want);
	else
		CHECK(name == NULL);
	free(name);
}

/* The live bookmarks, sorted and joined by spaces, for comparing. */
static void check_bookmarks(struct tether_vcs *v, const char *want)
{
	json_t *names = NULL, *n;
	size_t i;
	char buf[256] = "";

	CHECK(ops->list_bookmarks(v, &names) == 0);
	json_array_foreach(names, i, n) {
		if (i)
			strcat(buf, " ");
		strcat(buf, json_string_value(n));
	}
	CHECK_STR(buf, want);
	json_decref(names);
}

/* The bookmarks the checkout stands on, joined by spaces. */
static void check_here(struct tether_vcs *v, const char *want)
{
	json_t *names = NULL, *n;
	size_t i;
	char buf[256] = "";

	CHECK(ops->checkout_bookmarks(v, &names) == 0);
	json_array_foreach(names, i, n) {
		if (i)
			strcat(buf, " ");
		strcat(buf, json_string_value(n));
	}
	CHECK_STR(buf, want);
	json_decref(names);
}

static void test_current_branch(void)
{
	char *repo = mkrepo("branch");
	struct tether_vcs *v;

	put(repo, "f", "1\n");
	git_commit_all(repo, "first");
	v = open_at(repo);
	check_branch(v, "main");
	check_here(v, "main");
	sh("git -C '%s' checkout -q --detach", repo);
	check_branch(v, NULL);
	check_here(v, ""); /* detached: on no branch, whatever points here */
	sh("git -C '%s' checkout -q -b feature/x", repo);
	check_branch(v, "feature/x");
	check_here(v, "feature/x"); /* main names the commit too, but HEAD is feature/x */
	/* Local branches only, in ref order; a remote-tracking one is not a
	 * bookmark of this checkout. */
	sh("git -C '%s' update-ref refs/remotes/origin/gone HEAD", repo);
	check_bookmarks(v, "feature/x main");
	sh("git -C '%s' branch -q -D main", repo);
	check_bookmarks(v, "feature/x");
	ops->close(v);

	sh("git init -q -b trunk '%s/branch-unborn'", scratch);
	v = open_at(path_in(scratch, "branch-unborn"));
	check_branch(v, "trunk");
	ops->close(v);
	free(repo);
}

/* position / return_to: back to a branch (deleting the one switch_to
 * made), back to a detached commit, with uncommitted changes carried. */
static void test_return_to(void)
{
	char *repo = mkrepo("return");
	struct tether_vcs *v;
	json_t *pos = NULL;
	char c1[41], c2[41];

	sh("git init -q -b main '%s/return-unborn'", scratch);
	v = open_at(path_in(scratch, "return-unborn"));
	CHECK(ops->position(v, &pos) == TETHER_ENOTFOUND && pos == NULL);
	ops->close(v);

	put(repo, "f", "1\n");
	git_commit_all(repo, "first");
	put(repo, "f", "2\n");
	git_commit_all(repo, "second");
	v = open_at(repo);
	CHECK(ops->resolve(v, "HEAD~1", c1) == 0 && ops->resolve(v, "HEAD", c2) == 0);
	put(repo, "notes", "uncommitted\n");

	CHECK(ops->position(v, &pos) == 0);
	CHECK_STR(json_string_value(json_object_get(pos, "branch")), "refs/heads/main");
	CHECK(ops->switch_to(v, c1, "feat") == 0);
	CHECK_OUT(out("git -C '%s' symbolic-ref --short HEAD", repo), "feat");
	CHECK(ops->return_to(v, pos, "feat") == 0);
	CHECK_OUT(out("git -C '%s' symbolic-ref --short HEAD", repo), "main");
	CHECK_OUT(out("git -C '%s' branch --format='%%(refname:short)'", repo), "main");
	CHECK_OUT(out("cat '%s/f' '%s/notes'", repo, repo), "2\nuncommitted");
	CHECK_OUT(out("git -C '%s' status --porcelain", repo), "?? notes");
	json_decref(pos);

	sh("git -C '%s' checkout -q --detach HEAD~1", repo);
	CHECK(ops->position(v, &pos) == 0);
	CHECK_STR(json_string_value(json_object_get(pos, "commit")), c1);
	CHECK(ops->switch_to(v, "main", NULL) == 0);
	CHECK(ops->return_to(v, pos, NULL) == 0);
	CHECK_OUT(out("git -C '%s' rev-parse HEAD", repo), c1);
	CHECK_OUT(out("git -C '%s' symbolic-ref -q HEAD || echo detached", repo), "detached");
	json_decref(pos);
	check_fsck(repo);
	ops->close(v);
	free(repo);
}

static int tracked(struct tether_vcs *v, const char *path)
{
	int t = -1;

	CHECK(ops->is_tracked(v, path, &t) == 0);
	return t;
}

static void test_is_tracked(void)
{
	char *repo = mkrepo("tracked");
	struct tether_vcs *v;

	put(repo, "unborn-staged", "s\n");
	sh("git -C '%s' add unborn-staged", repo);
	v = open_at(repo);
	CHECK(tracked(v, "unborn-staged") == 1); /* in the index, no HEAD yet */
	CHECK(tracked(v, "nothing") == 0);

	put(repo, "ds/tether.toml", "x\n");
	put(repo, "ds/gone-from-index", "x\n");
	git_commit_all(repo, "first");
	sh("git -C '%s' rm -q --cached ds/gone-from-index", repo);
	put(repo, "ds/staged-new", "x\n");
	sh("git -C '%s' add ds/staged-new", repo);
	put(repo, "ds/untracked", "x\n");
	put(repo, "ds-sibling", "x\n");

	CHECK(tracked(v, "ds/tether.toml") == 1);
	CHECK(tracked(v, "ds/gone-from-index") == 1); /* still in HEAD */
	CHECK(tracked(v, "ds/staged-new") == 1);      /* only in the index */
	CHECK(tracked(v, "ds/untracked") == 0);
	CHECK(tracked(v, "ds-sibling") == 0);
	CHECK(tracked(v, "ds") == 1);
	CHECK(tracked(v, "ds/") == 1);
	CHECK(tracked(v, "d") == 0);
	CHECK(tracked(v, "missing/file") == 0);
	ops->close(v);
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

	snprintf(templ, sizeof templ, "%s/tether-vcs-git-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(templ) || !realpath(templ, real) || strlen(real) >= sizeof scratch) {
		perror("mkdtemp");
		return 2;
	}
	memcpy(scratch, real, strlen(real) + 1);
	isolate_environment();
	ops = tether_vcs_module[0];
	CHECK(ops && ops->version == TETHER_VCS_OPS_VERSION && ops->size == sizeof *ops && tether_vcs_module[1] == NULL);
	CHECK_STR(ops->name, "git");

	test_open();
	test_open_worktree();
	test_resolve();
	test_read();
	test_history();
	test_log();
	test_export_facts();
	test_commit_unborn();
	test_commit_keeps_user_changes();
	test_commit_ignores_no_rule();
	test_commit_modes_filters_submodules();
	test_commit_refusals();
	test_current_branch();
	test_return_to();
	test_is_tracked();

	git_libgit2_shutdown(); /* frees libgit2's globals for LeakSanitizer */
	if (check_failed)
		fprintf(stderr, "repositories kept in %s\n", scratch);
	else
		sh("rm -rf '%s'", scratch);
	CHECK_DONE();
}
