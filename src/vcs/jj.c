/* tether-vcs-jj: the VCS interface (vcs.h) for jj (Jujutsu) repositories.
 *
 * jj keeps its commits in a git store (a colocated workspace's .git, or
 * .jj/repo/store/git), so every read -- files, trees, logs, history
 * walks -- is git.c's libgit2 code run on that store (git_store.h): the
 * handle this module hands out is a git store handle, with this module's
 * state in its owner slot. Everything that evaluates a revset or changes
 * the repository goes through the jj command line (jj_run.h), so jj's own
 * rules hold for tether's commits too: its operation log (`jj undo` undoes
 * a tether commit), working-copy snapshots, bookmarks, immutable commits.
 *
 * tether's "HEAD" is the last committed state, which in jj is @-: the
 * working-copy commit @ holds whatever is not committed yet (vcs.h). */
#include "util/fail.h"
#include "util/fsutil.h"
#include "util/tempname.h"
#include "vcs/git_store.h"
#include "vcs/git_walk.h"
#include "vcs/jj_run.h"
#include "vcs/vcs.h"

#include <tether/backend.h>

#include <git2.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What the jj module keeps beside the git store handle. */
struct jj {
	char *root;     /* the workspace root (the directory holding .jj), realpath'd */
	char *repo_dir; /* the repository directory all workspaces share, realpath'd */
};

/* jj's root commit: every history starts there, but it is virtual (not in
 * the git store) and holds nothing: a HEAD there is git's unborn branch. */
static const char ROOT_ID[] = "0000000000000000000000000000000000000000";

/* Revsets deeper than this many parents are refused rather than spelled
 * out ("@-" + N dashes must fit in one argument). */
#define MAX_GENERATIONS 10000

#define N_ARGS(a) (sizeof(a) / sizeof((a)[0]))

static struct jj *jj_of(struct tether_vcs *v)
{
	return tt_git_store_owner(v);
}

static int is_full_id(const char *s)
{
	size_t i;

	for (i = 0; i < 40; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return s[i] == '\0';
}

/* ------------------------------------------------------------------ */
/* Running jj                                                          */
/* ------------------------------------------------------------------ */

/* Which tether error a jj failure is, from what jj said. */
static int code_for(const char *err)
{
	if (strstr(err, "doesn't exist") || strstr(err, "No such"))
		return TETHER_ENOTFOUND;
	if (strstr(err, "stale") || strstr(err, "already exists") || strstr(err, "immutable") ||
	    strstr(err, "conflict"))
		return TETHER_EREFUSED;
	if (strstr(err, "parse") || strstr(err, "Syntax error") || strstr(err, "invalid value"))
		return TETHER_EUSAGE;
	return TETHER_ERROR;
}

/* A failed run as an error: our context, jj's message, jj's hint. */
static int fail_jj(const struct tt_jj_result *res, const char *what)
{
	char msg[1024], hint[512];
	int rc;

	tt_jj_message(res, "Error: ", msg, sizeof msg);
	rc = tether_error_set(code_for(res->err), "%s: %s", what, msg);
	if (tt_jj_message(res, "Hint: ", hint, sizeof hint))
		tether_error_set_hint("%s", hint);
	return rc;
}

/* Run jj in v's workspace; any exit but 0 becomes an error about `what`
 * (res is then already freed). */
static int jj_call(struct tether_vcs *v, const char *what, const char *const *args,
                   struct tt_jj_result *res)
{
	int rc = tt_jj_run(jj_of(v)->root, args, res);

	if (rc)
		return rc;
	if (res->status == 0)
		return 0;
	rc = fail_jj(res, what);
	tt_jj_result_free(res);
	return rc;
}

/* The next line of *cursor (NUL-terminated in place), or NULL at the end. */
static char *next_line(char **cursor)
{
	char *line = *cursor, *nl;

	if (!line || !*line)
		return NULL;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*cursor = nl + 1;
	} else {
		*cursor = line + strlen(line);
	}
	return line;
}

/* A jj string literal: "..." with '"', '\' and control characters escaped,
 * so a revset or fileset never re-parses a name or path. */
static char *jj_quote(const char *s)
{
	size_t n = strlen(s);
	char *q = malloc(4 * n + 3), *o = q;

	if (!q)
		return NULL;
	*o++ = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += sprintf(o, "\\x%02x", c);
		} else {
			*o++ = (char)c;
		}
	}
	*o++ = '"';
	*o = '\0';
	return q;
}

/* ------------------------------------------------------------------ */
/* open / close                                                        */
/* ------------------------------------------------------------------ */

static void jj_free(void *p)
{
	struct jj *j = p;

	if (!j)
		return;
	free(j->root);
	free(j->repo_dir);
	free(j);
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A small file's text without trailing whitespace, or NULL. */
static char *read_small(const char *path)
{
	char *buf = tt_read_small(path, PATH_MAX);
	size_t n = buf ? strlen(buf) : 0;

	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return buf;
}

/* `target` as jj writes it in its pointer files: absolute, or relative to
 * the directory holding the file. realpath'd; NULL when it does not exist. */
static char *resolve_target(const char *base_dir, const char *target)
{
	char *joined = target[0] == '/' ? strdup(target) : tt_path_join(base_dir, target);
	char *real = joined ? realpath(joined, NULL) : NULL;

	free(joined);
	return real;
}

/* The nearest directory at or above `start` (realpath'd) holding .jj. */
static char *find_workspace_root(const char *start)
{
	char *cur = strdup(start);

	while (cur) {
		char *dotjj = tt_path_join(cur, ".jj");
		int found = dotjj && is_dir(dotjj);
		char *slash = strrchr(cur, '/');

		free(dotjj);
		if (found)
			return cur;
		if (!slash || cur[1] == '\0') {
			free(cur);
			return NULL;
		}
		slash[slash == cur ? 1 : 0] = '\0';
	}
	return NULL;
}

/* .jj/repo: the repository itself in the workspace jj was initialised in,
 * a file naming it in a workspace added with `jj workspace add`. */
static char *find_repo_dir(const char *root)
{
	char *dotjj = tt_path_join(root, ".jj");
	char *link = dotjj ? tt_path_join(dotjj, "repo") : NULL;
	char *repo = NULL, *target;

	if (link && is_dir(link)) {
		repo = realpath(link, NULL);
	} else if (link && (target = read_small(link))) {
		repo = *target ? resolve_target(dotjj, target) : NULL;
		free(target);
	}
	free(link);
	free(dotjj);
	return repo;
}

/* The git directory the store keeps its commits in: store/git_target
 * names it relative to store/ (".../.git" when colocated, "git" when not). */
static int find_git_store(const char *repo_dir, char **gitdir)
{
	char *store = tt_path_join(repo_dir, "store");
	char *type_file = store ? tt_path_join(store, "type") : NULL;
	char *target_file = store ? tt_path_join(store, "git_target") : NULL;
	char *type = type_file ? read_small(type_file) : NULL;
	char *target = target_file ? read_small(target_file) : NULL;
	int rc = 0;

	*gitdir = NULL;
	if (!store || !type_file || !target_file)
		rc = tt_fail_oom();
	else if (!type || strcmp(type, "git") != 0 || !target)
		rc = tether_error_set(TETHER_ENOREPO,
		                      "the jj repository %s is not backed by git (store type '%s'): "
		                      "tether reads jj's git store",
		                      repo_dir, type ? type : "unknown");
	else if (!(*gitdir = resolve_target(store, target)))
		rc = tether_error_set(TETHER_ENOREPO,
		                      "the git store of the jj repository %s (%s) is missing",
		                      repo_dir, target);
	free(store);
	free(type_file);
	free(target_file);
	free(type);
	free(target);
	return rc;
}

/* The common git directory a checkout's .git names (a directory, or the
 * file of a worktree), realpath'd; NULL when there is no .git. */
static char *dotgit_common(const char *root)
{
	char *dotgit = tt_path_join(root, ".git");
	char *gitdir = NULL, *link, *commondir, *rel, *common;

	if (dotgit && is_dir(dotgit)) {
		gitdir = realpath(dotgit, NULL);
	} else if (dotgit && (link = read_small(dotgit))) {
		if (strncmp(link, "gitdir: ", 8) == 0)
			gitdir = resolve_target(root, link + 8);
		free(link);
	}
	free(dotgit);
	if (!gitdir)
		return NULL;
	commondir = tt_path_join(gitdir, "commondir");
	rel = commondir ? read_small(commondir) : NULL;
	common = rel && *rel ? resolve_target(gitdir, rel) : NULL;
	free(commondir);
	free(rel);
	if (common) {
		free(gitdir);
		return common;
	}
	return gitdir;
}

/* A colocated workspace (.git beside .jj) must keep its commits in that
 * .git: a .jj whose store names another git directory is not the
 * repository this checkout is. */
static int check_colocated(const struct jj *j, const char *store_gitdir)
{
	char *common = dotgit_common(j->root);
	int rc = 0;

	if (common && strcmp(common, store_gitdir) != 0)
		rc = tether_error_set(TETHER_EREFUSED,
		                      "the jj repository at %s keeps its commits in %s, but the checkout's "
		                      ".git is %s: a .jj that disagrees with .git is refused",
		                      j->root, store_gitdir, common);
	free(common);
	return rc;
}

/* The workspace enclosing start_dir and its repository directory. */
static int locate(const char *start_dir, struct jj *j)
{
	char *start = realpath(start_dir, NULL);

	if (!start)
		return tether_error_set(TETHER_EIO, "cannot open '%s': %s", start_dir, strerror(errno));
	j->root = find_workspace_root(start);
	if (!j->root) {
		int rc = tether_error_set(TETHER_ENOREPO, "not inside a jj repository: %s", start);
		free(start);
		return rc;
	}
	free(start);
	j->repo_dir = find_repo_dir(j->root);
	if (!j->repo_dir)
		return tether_error_set(TETHER_ENOREPO,
		                        "the jj workspace %s has no repository (.jj/repo is missing "
		                        "or names a directory that is gone)",
		                        j->root);
	return 0;
}

static int set_outputs(const struct jj *j, char **workdir, char **common_dir)
{
	if (workdir && !(*workdir = strdup(j->root)))
		return tt_fail_oom();
	if (common_dir && !(*common_dir = strdup(j->repo_dir))) {
		if (workdir) {
			free(*workdir);
			*workdir = NULL;
		}
		return tt_fail_oom();
	}
	return 0;
}

/* Opening never starts jj: a command that only reads stays cheap, and a
 * missing jj is reported by the first operation that needs it. */
static int jj_open(const char *start_dir, struct tether_vcs **out, char **workdir,
                   char **common_dir)
{
	struct jj *j = calloc(1, sizeof *j);
	char *gitdir = NULL;
	int rc;

	if (!j)
		return tt_fail_oom();
	rc = locate(start_dir ? start_dir : ".", j);
	if (rc == 0)
		rc = find_git_store(j->repo_dir, &gitdir);
	if (rc == 0)
		rc = check_colocated(j, gitdir);
	if (rc == 0)
		rc = tt_git_store_open(gitdir, j->root, out);
	free(gitdir);
	if (rc) {
		jj_free(j);
		return rc;
	}
	tt_git_store_set_owner(*out, j, jj_free);
	rc = set_outputs(j, workdir, common_dir);
	if (rc) {
		tt_git_ops.close(*out);
		*out = NULL;
	}
	return rc;
}

static void jj_close(struct tether_vcs *v)
{
	tt_git_ops.close(v); /* frees our state too */
}

/* ------------------------------------------------------------------ */
/* Revisions                                                           */
/* ------------------------------------------------------------------ */

/* A full commit id with git's parent suffixes ("<id>^", "<id>~2"): the
 * engine's own spellings. jj's parents are git's parents, so libgit2
 * answers them in the store without starting jj. */
static int is_git_spelled_id(const char *rev)
{
	size_t i;

	for (i = 0; i < 40; i++)
		if (!isxdigit((unsigned char)rev[i]))
			return 0;
	return rev[i + strspn(rev + i, "~^0123456789")] == '\0';
}

/* One "~N" or "^N" step of a git-style suffix: *gens grows by its
 * generations. 1 when parsed, 0 when p is no such step, < 0 refused. */
static int parse_step(const char *rev, const char **p, unsigned long *gens)
{
	char op = **p;
	unsigned long n = 1;
	char *end;

	if (op != '~' && op != '^')
		return 0;
	(*p)++;
	if (isdigit((unsigned char)**p)) {
		errno = 0;
		n = strtoul(*p, &end, 10);
		if (errno)
			n = ULONG_MAX;
		*p = end;
	}
	if (op == '^' && n > 1)
		return tether_error_set(TETHER_EUSAGE,
		                        "'%s': jj has no spelling for a parent by number; name the "
		                        "commit with a revset (e.g. 'parents(@-)')",
		                        rev);
	if (n > MAX_GENERATIONS || *gens + n > MAX_GENERATIONS)
		return tether_error_set(TETHER_EUSAGE, "'%s' goes back too far", rev);
	*gens += n;
	return 1;
}

/* git's "HEAD", "HEAD~N", "HEAD^", "HEAD^^", "HEAD~2^"... as a revset: "@-"
 * and one more "-" per generation back. 1 with *out when rev is spelled so,
 * 0 when it is not (a revset, used as it is), < 0 when refused. */
static int head_revset(const char *rev, char **out)
{
	const char *p = rev + 4;
	unsigned long gens = 1;
	int rc;

	*out = NULL;
	if (strncmp(rev, "HEAD", 4) != 0)
		return 0;
	while (*p)
		if ((rc = parse_step(rev, &p, &gens)) <= 0)
			return rc;
	*out = malloc(gens + 2);
	if (!*out)
		return tt_fail_oom();
	(*out)[0] = '@';
	memset(*out + 1, '-', gens);
	(*out)[gens + 1] = '\0';
	return 1;
}

/* git's full ref names, which the engine uses to ask whether a name is a
 * branch: "refs/heads/NAME" is jj's bookmark NAME, exactly (a bare NAME
 * could also match a tag or a change id), "refs/tags/NAME" its tag. 1
 * with *out when rev is spelled so, 0 when not. */
static int ref_revset(const char *rev, char **out)
{
	static const struct {
		const char *prefix, *function;
	} kinds[] = { { "refs/heads/", "bookmarks" }, { "refs/tags/", "tags" } };
	char *quoted;

	*out = NULL;
	for (size_t i = 0; i < N_ARGS(kinds); i++) {
		size_t n = strlen(kinds[i].prefix);

		if (strncmp(rev, kinds[i].prefix, n) != 0 || !rev[n])
			continue;
		if (!(quoted = jj_quote(rev + n)))
			return tt_fail_oom();
		*out = tt_strdupf("%s(exact:%s)", kinds[i].function, quoted);
		free(quoted);
		return *out ? 1 : tt_fail_oom();
	}
	return 0;
}

static int unborn(const char *rev, int is_head)
{
	if (is_head)
		return tether_error_set(TETHER_ENOTFOUND,
		                        "HEAD has no commits yet (@- is jj's root commit)");
	return tether_error_set(TETHER_ENOTFOUND,
	                        "'%s' is jj's root commit, which holds nothing", rev);
}

/* The one commit a revset names: exactly one, else an error naming rev. */
static int one_commit(struct tether_vcs *v, const char *rev, const char *revset, int is_head,
                      char id[41])
{
	char *arg = tt_strdupf("--revisions=%s", revset);
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", "--limit=2",
		               arg, "--template=commit_id ++ \"\\n\"", NULL };
	struct tt_jj_result res;
	char what[600], *cursor, *first, *second;
	int rc;

	if (!arg)
		return tt_fail_oom();
	snprintf(what, sizeof what, "revision '%s'", rev);
	rc = jj_call(v, what, args, &res);
	free(arg);
	if (rc)
		return rc == TETHER_ERROR ? TETHER_EUSAGE : rc;
	cursor = res.out;
	first = next_line(&cursor);
	second = next_line(&cursor);
	if (!first)
		rc = tether_error_set(TETHER_ENOTFOUND, "revision '%s' names no commit", rev);
	else if (second)
		rc = tether_error_set(TETHER_EUSAGE,
		                      "revision '%s' names more than one commit; name exactly one",
		                      rev);
	else if (!is_full_id(first))
		rc = tether_error_set(TETHER_ERROR, "jj printed '%s' for revision '%s'", first, rev);
	else if (strcmp(first, ROOT_ID) == 0)
		rc = unborn(rev, is_head);
	else
		memcpy(id, first, 41);
	tt_jj_result_free(&res);
	return rc;
}

static int jj_resolve(struct tether_vcs *v, const char *rev, char id[41])
{
	char *translated = NULL, found[41];
	int rc;

	if (!rev || !*rev)
		return tether_error_set(TETHER_EUSAGE, "no revision given");
	if (is_git_spelled_id(rev))
		return tt_git_ops.resolve(v, rev, id);
	int is_head = head_revset(rev, &translated);
	rc = is_head ? is_head : ref_revset(rev, &translated);
	if (rc < 0)
		return rc;
	rc = one_commit(v, rev, translated ? translated : rev, is_head == 1, found);
	free(translated);
	/* The final lookup in the store: what jj named must be there to read. */
	return rc ? rc : tt_git_ops.resolve(v, found, id);
}

/* Does a path name something inside .jj (any component, as git.c refuses
 * .git)? Checked without allocating: reads are the hot path of history
 * walks. */
static int names_dotjj(const char *path)
{
	for (const char *p = path; p && *p; p += strcspn(p, "/"), p += *p == '/')
		if (strncmp(p, ".jj", 3) == 0 && (p[3] == '/' || p[3] == '\0'))
			return 1;
	return 0;
}

static int refuse_dotjj(const char *path)
{
	if (!names_dotjj(path))
		return 0;
	return tether_error_set(TETHER_EUSAGE, "'%s': paths may not contain '.jj'", path);
}

/* A full id for reading: as given when it already is one. */
static int full_id(struct tether_vcs *v, const char *rev, char id[41])
{
	if (rev && is_full_id(rev)) {
		memcpy(id, rev, 41);
		return 0;
	}
	return jj_resolve(v, rev, id);
}

/* ------------------------------------------------------------------ */
/* Reads: git.c on the store                                           */
/* ------------------------------------------------------------------ */

static int jj_read_file(struct tether_vcs *v, const char *rev, const char *path, char **data,
                        size_t *len)
{
	char id[41];
	int rc = refuse_dotjj(path);

	if (rc == 0)
		rc = full_id(v, rev, id);
	return rc ? rc : tt_git_ops.read_file(v, id, path, data, len);
}

static int jj_read_tree(struct tether_vcs *v, const char *rev, const char *dir,
                        tether_vcs_file_cb cb, void *ud)
{
	char id[41];
	int rc = refuse_dotjj(dir);

	if (rc == 0)
		rc = full_id(v, rev, id);
	return rc ? rc : tt_git_ops.read_tree(v, id, dir, cb, ud);
}

static int jj_tree_id(struct tether_vcs *v, const char *rev, const char *dir, char tree[41])
{
	char id[41];
	int rc = refuse_dotjj(dir);

	tree[0] = '\0';
	if (rc == 0)
		rc = full_id(v, rev, id);
	return rc ? rc : tt_git_ops.tree_id(v, id, dir, tree);
}

static int jj_log(struct tether_vcs *v, const char *rev, const char *path, int max,
                  json_t **commits)
{
	char id[41];
	int rc = path ? refuse_dotjj(path) : 0;

	if (rc == 0)
		rc = full_id(v, rev ? rev : "HEAD", id);
	return rc ? rc : tt_git_ops.log(v, id, path, max, commits);
}

/* The tips of everything visible: working-copy commits of every
 * workspace, bookmarks, tags, remote bookmarks. Not the refs under refs/jj/keep: jj
 * keeps abandoned commits there, and to tether they are gone. */
static const char VISIBLE_TIPS[] =
	"--revisions=visible_heads() | bookmarks() | tags() | remote_bookmarks()";

static int collect_tips(char *out, const char ***tips, size_t *n)
{
	size_t cap = 16;
	char *line, *cursor = out;

	*n = 0;
	*tips = malloc(cap * sizeof **tips);
	if (!*tips)
		return tt_fail_oom();
	while ((line = next_line(&cursor))) {
		if (!is_full_id(line) || strcmp(line, ROOT_ID) == 0)
			continue; /* the root is virtual: no commit to walk */
		if (*n == cap) {
			const char **grown = realloc(*tips, 2 * cap * sizeof **tips);
			if (!grown)
				return tt_fail_oom();
			*tips = grown;
			cap *= 2;
		}
		(*tips)[(*n)++] = line;
	}
	return 0;
}

/* The visible tips, for a walk from them. */
static int visible_tips(struct tether_vcs *v, struct tt_jj_result *res, const char ***tips, size_t *n)
{
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", VISIBLE_TIPS,
		               "--template=commit_id ++ \"\\n\"", NULL };
	int rc = jj_call(v, "cannot list the visible commits", args, res);

	*tips = NULL;
	*n = 0;
	if (rc == 0 && (rc = collect_tips(res->out, tips, n)) != 0) {
		free(*tips);
		*tips = NULL;
		tt_jj_result_free(res);
	}
	return rc;
}

static int jj_each_commit(struct tether_vcs *v, int (*cb)(void *ud, const char *id), void *ud)
{
	struct tt_jj_result res;
	const char **tips;
	size_t n;
	int rc = visible_tips(v, &res, &tips, &n);

	if (rc)
		return rc;
	rc = tt_git_store_walk_from(v, tips, n, cb, ud);
	free(tips);
	tt_jj_result_free(&res);
	return rc;
}

static int jj_history_files(struct tether_vcs *v, const char *dir, const char *cache_path,
                            tether_vcs_history_cb cb, void *ud, size_t *commits)
{
	struct tt_jj_result res;
	const char **tips;
	size_t n;
	int rc = refuse_dotjj(dir);

	*commits = 0;
	if (rc == 0)
		rc = visible_tips(v, &res, &tips, &n);
	if (rc)
		return rc;
	rc = tt_git_store_history(v, tips, n, dir, cache_path, &(struct tt_walk_wants){.files = cb, .ud = ud}, commits);
	free(tips);
	tt_jj_result_free(&res);
	return rc;
}

/* From the visible commits' tips, or from the given ones. */
static int jj_history_trees(struct tether_vcs *v, const char *const *given, size_t ngiven, const char *dir,
                            const char *cache_path, const struct tether_vcs_tree_walk *cb, void *ud,
                            size_t *commits)
{
	struct tt_jj_result res;
	const char **tips = NULL;
	size_t n = 0;
	int rc = refuse_dotjj(dir);

	*commits = 0;
	if (rc == 0 && !given)
		rc = visible_tips(v, &res, &tips, &n);
	if (rc)
		return rc;
	rc = tt_git_store_history(v, given ? given : tips, given ? ngiven : n, dir, cache_path,
	                          &(struct tt_walk_wants){.trees = cb, .ud = ud}, commits);
	if (!given) {
		free(tips);
		tt_jj_result_free(&res);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Paths                                                               */
/* ------------------------------------------------------------------ */

/* git.c's normalisation, and .jj refused as .git is. */
static int normalize(const char *in, char **out)
{
	int rc = tt_git_normalize_path(in, out);

	if (rc == 0 && names_dotjj(*out)) {
		free(*out);
		*out = NULL;
		rc = refuse_dotjj(in);
	}
	return rc;
}

/* `path` as a glob matching itself only: each metacharacter in a class
 * of its own. malloc'd. */
static char *glob_literal(const char *path)
{
	char *out = malloc(4 * strlen(path) + 1), *o = out;

	if (!out)
		return NULL;
	for (const char *p = path; *p; p++) {
		if (strchr("*?[]{}\\", *p)) {
			*o++ = '[';
			*o++ = *p;
			*o++ = ']';
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
}

/* A fileset naming exactly `path` (normalised): a file by itself, or
 * everything under a directory (or a path gone from the disk, which may
 * have been either) but tether's temporary files (TT_TEMP_GLOB), which
 * are never committed. Quoted: glob characters in a name are literal. */
static char *fileset_for(const struct jj *j, const char *path)
{
	char *full = tt_path_join(j->root, path), *quoted = jj_quote(path), *set = NULL;
	char *literal = glob_literal(path), *temps = NULL, *temps_quoted = NULL;
	struct stat st;
	int file = full && lstat(full, &st) == 0 && !S_ISDIR(st.st_mode);

	if (literal)
		temps = tt_strdupf("%s/**/" TT_TEMP_GLOB, literal);
	if (temps)
		temps_quoted = jj_quote(temps);
	if (quoted && file)
		set = tt_strdupf("root-file:%s", quoted);
	else if (quoted && temps_quoted)
		set = tt_strdupf("root:%s ~ root-glob:%s", quoted, temps_quoted);
	free(full);
	free(quoted);
	free(literal);
	free(temps);
	free(temps_quoted);
	return set;
}

struct filesets {
	char **v;
	size_t n;
};

static void filesets_free(struct filesets *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	free(f->v);
}

static int make_filesets(const struct jj *j, const char *const *paths, size_t n,
                         struct filesets *f)
{
	char *norm;
	int rc;

	f->n = 0;
	if (n == 0)
		return tether_error_set(TETHER_EUSAGE, "no paths to commit");
	if (!(f->v = calloc(n, sizeof *f->v)))
		return tt_fail_oom();
	for (size_t i = 0; i < n; i++) {
		if ((rc = normalize(paths[i], &norm)) < 0)
			return rc;
		if (!*norm) {
			free(norm);
			return tether_error_set(TETHER_EUSAGE,
			                        "cannot commit the whole workspace: name the paths");
		}
		f->v[i] = fileset_for(j, norm);
		free(norm);
		if (!f->v[i])
			return tt_fail_oom();
		f->n++;
	}
	return 0;
}

/* fixed..., "--", filesets..., NULL */
static const char **with_filesets(const char *const *fixed, size_t nfixed,
                                  const struct filesets *f)
{
	const char **args = calloc(nfixed + f->n + 2, sizeof *args);
	size_t k = 0;

	if (!args)
		return NULL;
	for (size_t i = 0; i < nfixed; i++)
		args[k++] = fixed[i];
	args[k++] = "--";
	for (size_t i = 0; i < f->n; i++)
		args[k++] = f->v[i];
	args[k] = NULL;
	return args;
}

/* Run jj with fixed arguments, then the filesets. */
static int call_on_paths(struct tether_vcs *v, const char *what, const char *const *fixed,
                         size_t nfixed, const struct filesets *f, struct tt_jj_result *res)
{
	const char **args = with_filesets(fixed, nfixed, f);
	int rc;

	if (!args)
		return tt_fail_oom();
	rc = jj_call(v, what, args, res);
	free(args);
	return rc;
}

/* ------------------------------------------------------------------ */
/* commit_paths                                                        */
/* ------------------------------------------------------------------ */

/* As `git commit` cleans a message (git.c does the same): trailing spaces
 * and blank lines go, it ends with one newline. */
static int clean_message(const char *message, git_buf *out)
{
	if (!message)
		return tether_error_set(TETHER_EUSAGE, "no commit message");
	if (git_message_prettify(out, message, 0, '#') < 0)
		return tether_error_set(TETHER_ERROR, "cannot prepare the commit message");
	if (out->size == 0)
		return tether_error_set(TETHER_EUSAGE, "the commit message is empty");
	return 0;
}

/* Track every file under the paths, whatever ignore rules or jj's size
 * limit for new files say (the caller names exactly what belongs: a
 * user's "*.toml" must not drop a manifest, a big listing must not stay
 * out). jj 0.45 records such a file as tracked here but puts its content
 * in @ only at the next snapshot: inspect_at is that snapshot. */
static int track_paths(struct tether_vcs *v, const struct filesets *f)
{
	static const char *const fixed[] = { "file", "track", "--include-ignored" };
	struct tt_jj_result res;
	int rc = call_on_paths(v, "cannot track the paths to commit", fixed, N_ARGS(fixed), f, &res);

	if (rc == 0)
		tt_jj_result_free(&res);
	return rc;
}

/* @'s change id when @ changes any of the paths (*changed), and whether
 * jj knows who is committing. Snapshots the working copy (see
 * track_paths). */
struct pending {
	int changed;
	char change_id[65];
	int has_identity;
};

static const char INSPECT_TEMPLATE[] =
	"--template=change_id ++ \"\\x1f\" ++ config(\"user.name\") ++ \"\\x1f\" ++ "
	"config(\"user.email\") ++ \"\\n\"";

static int inspect_at(struct tether_vcs *v, const struct filesets *f, struct pending *p)
{
	static const char *const fixed[] = { "log", "--no-graph", "--revisions=@", INSPECT_TEMPLATE };
	struct tt_jj_result res;
	char *cursor, *line, *name, *email;
	int rc = call_on_paths(v, "cannot inspect the working-copy commit", fixed, N_ARGS(fixed), f,
	                       &res);

	if (rc)
		return rc;
	memset(p, 0, sizeof *p);
	cursor = res.out;
	line = next_line(&cursor); /* none: @ leaves the paths as @- has them */
	name = line ? strchr(line, '\x1f') : NULL;
	email = name ? strchr(name + 1, '\x1f') : NULL;
	if (line && (!email || (size_t)(name - line) >= sizeof p->change_id)) {
		rc = tether_error_set(TETHER_ERROR, "unexpected output from jj log: %s", line);
	} else if (line) {
		*name++ = '\0';
		*email++ = '\0';
		p->changed = 1;
		memcpy(p->change_id, line, strlen(line) + 1);
		/* config() prints TOML: an unset identity is "" */
		p->has_identity = strcmp(name, "\"\"") != 0 && strcmp(email, "\"\"") != 0;
	}
	tt_jj_result_free(&res);
	return rc;
}

static int missing_identity(void)
{
	int rc = tether_error_set(TETHER_ECONFIG,
	                          "jj does not know who you are: set user.name and user.email "
	                          "to commit");
	tether_error_set_hint("jj config set --user user.name \"Your Name\" && "
	                      "jj config set --user user.email you@example.com");
	return rc;
}

static int run_commit(struct tether_vcs *v, const struct filesets *f, const char *message)
{
	char *arg = tt_strdupf("--message=%s", message);
	const char *fixed[] = { "commit", arg };
	struct tt_jj_result res;
	int rc;

	if (!arg)
		return tt_fail_oom();
	rc = call_on_paths(v, "jj commit failed", fixed, N_ARGS(fixed), f, &res);
	free(arg);
	if (rc == 0)
		tt_jj_result_free(&res);
	return rc;
}

/* The commit id of the change just committed, wherever it is now: the
 * commit stands even when @- is no longer it, and its id goes back with
 * the error. Nothing when it cannot be read. */
static void id_of_change(struct tether_vcs *v, const char *change_id, int code, char id[41])
{
	char *rev = tt_strdupf("--revisions=change_id(%s)", change_id);
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", rev,
		               "--template=commit_id ++ \"\\n\"", NULL };
	struct tt_jj_result res;
	char *cursor, *line;
	char keep[1024];

	snprintf(keep, sizeof keep, "%s", tether_error_last());
	if (rev && jj_call(v, "cannot read the new commit", args, &res) == 0) {
		cursor = res.out;
		line = next_line(&cursor);
		if (line && is_full_id(line) && !next_line(&cursor))
			memcpy(id, line, 41);
		tt_jj_result_free(&res);
	}
	free(rev);
	tether_error_set(code, "%s", keep);
}

/* The commit just made is @- now; it must be the change that was @. */
static int committed_id(struct tether_vcs *v, const char *change_id, char id[41])
{
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", "--revisions=@-",
		               "--template=commit_id ++ \"\\x1f\" ++ change_id ++ \"\\n\"", NULL };
	struct tt_jj_result res;
	char *cursor, *line, *sep;
	int rc = jj_call(v, "cannot read the new commit", args, &res);

	if (rc)
		return rc;
	cursor = res.out;
	line = next_line(&cursor);
	sep = line ? strchr(line, '\x1f') : NULL;
	if (sep)
		*sep = '\0';
	if (!sep || !is_full_id(line) || strcmp(sep + 1, change_id) != 0 || next_line(&cursor))
		rc = tether_error_set(TETHER_EREFUSED,
		                      "committed change %.12s, but @- is no longer it: the working "
		                      "copy moved meanwhile (see `jj log`)",
		                      change_id);
	else
		memcpy(id, line, 41);
	tt_jj_result_free(&res);
	return rc;
}

/* `jj commit -m MSG -- PATHS`: the changes @ holds under the paths become
 * a commit (the change that was @, now @-), and everything else the
 * working copy holds moves on to the new @, untouched. */
static int jj_commit_paths(struct tether_vcs *v, const char *const *paths, size_t npaths,
                           const char *message, char id[41])
{
	struct filesets f = { 0 };
	struct pending p = { 0 };
	git_buf msg = GIT_BUF_INIT;
	int rc = clean_message(message, &msg);

	id[0] = '\0';
	if (rc == 0)
		rc = make_filesets(jj_of(v), paths, npaths, &f);
	if (rc == 0)
		rc = track_paths(v, &f);
	if (rc == 0)
		rc = inspect_at(v, &f, &p);
	if (rc == 0 && p.changed && !p.has_identity)
		rc = missing_identity();
	if (rc == 0 && p.changed)
		rc = run_commit(v, &f, msg.ptr);
	if (rc == 0 && p.changed && (rc = committed_id(v, p.change_id, id)) != 0)
		id_of_change(v, p.change_id, rc, id);
	if (rc == 0 && !p.changed)
		id[0] = '\0';
	filesets_free(&f);
	git_buf_dispose(&msg);
	return rc;
}

/* ------------------------------------------------------------------ */
/* current_branch / is_tracked                                         */
/* ------------------------------------------------------------------ */

/* One JSON object per commit of "@ | @-": is it @, its bookmarks (not
 * conflicted ones), the workspaces whose working-copy commit it is. */
static const char REFS_TEMPLATE[] =
	"--template=\"{\\\"wc\\\":\" ++ json(current_working_copy) ++ \",\\\"b\\\":\" ++ "
	"json(local_bookmarks.filter(|b| !b.conflict()).map(|b| b.name())) ++ "
	"\",\\\"w\\\":\" ++ json(working_copies.map(|w| w.name())) ++ \"}\\n\"";

struct refs_here {
	json_t *at, *parent; /* the rows for @ and @- (the first parent) */
};

static int read_refs(char *out, struct refs_here *r)
{
	char *cursor = out, *line;

	while ((line = next_line(&cursor))) {
		json_t *row = json_loads(line, 0, NULL);

		if (!json_is_object(row)) {
			json_decref(row);
			return tether_error_set(TETHER_ERROR, "unexpected output from jj log: %s", line);
		}
		json_t **slot = json_is_true(json_object_get(row, "wc")) ? &r->at : &r->parent;
		if (*slot)
			json_decref(row);
		else
			*slot = row;
	}
	return 0;
}

static const char *first_of(const json_t *row, const char *key)
{
	return json_string_value(json_array_get(json_object_get(row, key), 0));
}

/* A bookmark on @ first: it is the one a commit carries forward (see
 * switch_to); then one on @-; then the workspace's name when it is not
 * "default" (and only @ is that workspace's: several workspaces on one
 * commit cannot be told apart). */
static const char *pick_branch(const struct refs_here *r)
{
	const char *name = first_of(r->at, "b");
	json_t *ws = json_object_get(r->at, "w");

	if (!name)
		name = first_of(r->parent, "b");
	if (!name && json_array_size(ws) == 1 && strcmp(first_of(r->at, "w"), "default") != 0)
		name = first_of(r->at, "w");
	return name;
}

static int jj_current_branch(struct tether_vcs *v, char **name)
{
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", "--revisions=@ | @-",
		               REFS_TEMPLATE, NULL };
	struct refs_here r = { 0 };
	struct tt_jj_result res;
	const char *pick;
	int rc = jj_call(v, "cannot read the bookmarks", args, &res);

	*name = NULL;
	if (rc)
		return rc;
	rc = read_refs(res.out, &r);
	pick = rc ? NULL : pick_branch(&r);
	if (pick && !(*name = strdup(pick)))
		rc = tt_fail_oom();
	json_decref(r.at);
	json_decref(r.parent);
	tt_jj_result_free(&res);
	return rc;
}

/* Every bookmark on @, then every one on @- (each once). */
static int jj_checkout_bookmarks(struct tether_vcs *v, json_t **names)
{
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", "--revisions=@ | @-",
		               REFS_TEMPLATE, NULL };
	struct refs_here r = { 0 };
	struct tt_jj_result res;
	int rc = jj_call(v, "cannot read the bookmarks", args, &res);

	*names = NULL;
	if (rc)
		return rc;
	rc = read_refs(res.out, &r);
	if (!rc) {
		const json_t *rows[2] = { r.at, r.parent };

		*names = json_array();
		for (size_t k = 0; k < 2; k++) {
			size_t i;
			json_t *b;

			json_array_foreach(json_object_get(rows[k], "b"), i, b) {
				int seen = 0;
				size_t j;
				json_t *n;

				json_array_foreach(*names, j, n)
					seen |= json_equal(n, b);
				if (json_is_string(b) && !seen)
					json_array_append(*names, b);
			}
		}
	}
	json_decref(r.at);
	json_decref(r.parent);
	tt_jj_result_free(&res);
	return rc;
}

/* `jj bookmark list` also lists remote bookmarks and local ones that are
 * deleted but still tracked; only present local ones are live. */
static int jj_list_bookmarks(struct tether_vcs *v, json_t **names)
{
	const char *args[] = { "bookmark", "list", "--ignore-working-copy",
		               "--template=if(!remote && present, name ++ \"\\n\")", NULL };
	struct tt_jj_result res;
	char *line, *cursor;
	int rc = jj_call(v, "cannot list the bookmarks", args, &res);

	if (rc)
		return rc;
	*names = json_array();
	cursor = res.out;
	while (*names && (line = next_line(&cursor)))
		if (*line && json_array_append_new(*names, json_string(line)) < 0)
			rc = tt_fail_oom();
	tt_jj_result_free(&res);
	if (!*names)
		return tt_fail_oom();
	if (rc) {
		json_decref(*names);
		*names = NULL;
	}
	return rc;
}

/* In @'s tree (as last snapshotted: asking must not snapshot) or in @-'s. */
static int jj_is_tracked(struct tether_vcs *v, const char *path, int *tracked)
{
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", "--revisions=@ | @-",
		               "--template=commit_id ++ \"\\n\"", NULL };
	struct tt_jj_result res;
	char *norm = NULL, *cursor, *line;
	int rc = normalize(path, &norm);

	*tracked = 0;
	if (rc == 0)
		rc = jj_call(v, "cannot read the working-copy commit", args, &res);
	if (rc) {
		free(norm);
		return rc;
	}
	cursor = res.out;
	while (rc == 0 && !*tracked && (line = next_line(&cursor)))
		if (is_full_id(line) && strcmp(line, ROOT_ID) != 0)
			rc = tt_git_store_has_path(v, line, norm, tracked);
	tt_jj_result_free(&res);
	free(norm);
	return rc;
}

/* ------------------------------------------------------------------ */
/* switch_to                                                           */
/* ------------------------------------------------------------------ */

/* A new bookmark's name must also be a valid git branch name (jj exports
 * bookmarks to git) and not exist yet: checked before anything moves. */
static int check_new_bookmark(struct tether_vcs *v, const char *name, char **quoted)
{
	char *ref = tt_strdupf("refs/heads/%s", name), *pattern;
	int valid = 0, rc;

	if (ref && strlen(name) < 400 && git_reference_name_is_valid(&valid, ref) < 0)
		valid = 0;
	free(ref);
	if (!valid)
		return tether_error_set(TETHER_EUSAGE, "'%s' is not a valid bookmark name", name);
	if (!(*quoted = jj_quote(name)) || !(pattern = tt_strdupf("exact:%s", *quoted)))
		return tt_fail_oom();
	const char *args[] = { "bookmark", "list", "--ignore-working-copy",
		               "--template=name ++ \"\\n\"", "--", pattern, NULL };
	struct tt_jj_result res;
	rc = jj_call(v, "cannot list the bookmarks", args, &res);
	free(pattern);
	if (rc)
		return rc;
	if (res.out_len > 0)
		rc = tether_error_set(TETHER_EREFUSED, "bookmark '%s' already exists", name);
	tt_jj_result_free(&res);
	return rc;
}

static int simple_call(struct tether_vcs *v, const char *what, const char *const *args)
{
	struct tt_jj_result res;
	int rc = jj_call(v, what, args, &res);

	if (rc == 0)
		tt_jj_result_free(&res);
	return rc;
}

/* As `jj new REV`: a new, empty working-copy commit on top of rev; what
 * the working copy held stays in the change it was in (jj never carries
 * it along, and never refuses). With new_branch, that bookmark is created
 * on the new @, so the next commit carries it forward as git's branch
 * moves with its commits (jj commit keeps bookmarks on the change they
 * were on, and the committed change is the one that was @). */
static int jj_switch_to(struct tether_vcs *v, const char *rev, const char *new_branch)
{
	char id[41], what[600], *quoted = NULL;
	int rc = 0;

	if (!rev && !new_branch)
		return 0; /* stay */
	if (new_branch)
		rc = check_new_bookmark(v, new_branch, &quoted);
	if (rc == 0 && rev)
		rc = jj_resolve(v, rev, id);
	if (rc == 0 && rev) {
		const char *args[] = { "new", "--", id, NULL };
		snprintf(what, sizeof what, "cannot start a new change on '%s'", rev);
		rc = simple_call(v, what, args);
	}
	if (rc == 0 && new_branch) {
		const char *args[] = { "bookmark", "create", "--revision=@", "--", quoted, NULL };
		snprintf(what, sizeof what, "cannot create bookmark '%s'", new_branch);
		rc = simple_call(v, what, args);
	}
	free(quoted);
	return rc;
}

/* The operation the repository is at, once the working copy is
 * snapshotted into @: restoring it brings back exactly this checkout. */
static int jj_position(struct tether_vcs *v, json_t **pos)
{
	const char *snapshot[] = { "log", "--no-graph", "--revisions=@", "--template=commit_id", NULL };
	const char *op[] = { "operation", "log", "--ignore-working-copy", "--no-graph", "--limit=1",
		             "--template=id", NULL };
	struct tt_jj_result res;
	int rc = simple_call(v, "cannot snapshot the working copy", snapshot);

	*pos = NULL;
	if (rc == 0)
		rc = jj_call(v, "cannot read the operation log", op, &res);
	if (rc)
		return rc;
	char *id = res.out, *end = id + strcspn(id, " \n");
	*end = '\0';
	*pos = *id ? json_pack("{s:s}", "operation", id) : NULL;
	tt_jj_result_free(&res);
	return *pos ? 0 : tether_error_set(TETHER_ERROR, "jj gave no current operation");
}

/* `jj op restore`: @, the bookmarks and the working copy as they were at
 * that operation, so the new change and a bookmark made on it go too. (A jj
 * command run meanwhile by hand, outside tether's lock, is undone as well;
 * the window is the few milliseconds of one `new`.) */
static int jj_return_to(struct tether_vcs *v, const json_t *pos, const char *created_branch)
{
	const char *op = json_string_value(json_object_get(pos, "operation"));
	(void)created_branch; /* restored away with everything after the operation */
	if (!op)
		return tether_error_set(TETHER_ERROR, "no position to return to");
	const char *args[] = { "operation", "restore", "--", op, NULL };
	return simple_call(v, "cannot move the working copy back", args);
}

/* ------------------------------------------------------------------ */
/* History surgery: containing_refs, abandon                           */
/* ------------------------------------------------------------------ */

/* One line per commit of `id::` that a ref names: its local bookmarks,
 * its remote bookmarks as name@remote, its tags, tab-separated lists. */
static const char CONTAINING_TEMPLATE[] =
	"--template=local_bookmarks.map(|b| b.name()).join(\" \") ++ \"\\t\" ++ "
	"remote_bookmarks.map(|b| b.name() ++ \"@\" ++ b.remote()).join(\" \") ++ \"\\t\" ++ "
	"tags.map(|t| t.name()).join(\" \") ++ \"\\n\"";

static void add_refs(json_t *out, char *list, int remote, const char *skip)
{
	for (char *name = strtok(list, " "); name; name = strtok(NULL, " ")) {
		size_t len = strlen(name);
		/* a colocated repository's @git entries mirror the local bookmarks */
		if (remote && len > 4 && strcmp(name + len - 4, "@git") == 0)
			continue;
		if (!remote && skip && strcmp(name, skip) == 0)
			continue;
		json_array_append_new(out, json_pack("{s:s, s:b}", "ref", name, "remote", remote));
	}
}

static int jj_containing_refs(struct tether_vcs *v, const char *id, json_t **refs)
{
	*refs = NULL;
	if (!is_full_id(id))
		return tether_error_set(TETHER_EUSAGE, "'%s' is not a full commit id", id);
	char *current = NULL;
	int rc = jj_current_branch(v, &current);
	if (rc)
		return rc;
	char *revset = tt_strdupf("--revisions=%s:: & (bookmarks() | remote_bookmarks() | tags())", id);
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", revset, CONTAINING_TEMPLATE, NULL };
	struct tt_jj_result res;
	rc = jj_call(v, "cannot list the refs on the commit's descendants", args, &res);
	free(revset);
	if (rc) {
		free(current);
		return rc;
	}
	json_t *out = json_array();
	char *cursor = res.out, *line;
	while ((line = next_line(&cursor))) {
		char *remote = strchr(line, '\t'), *tags = remote ? strchr(remote + 1, '\t') : NULL;
		if (!tags)
			continue;
		*remote++ = '\0';
		*tags++ = '\0';
		add_refs(out, line, 0, current);
		add_refs(out, remote, 1, NULL);
		add_refs(out, tags, 0, NULL);
	}
	tt_jj_result_free(&res);
	free(current);
	*refs = out;
	return 0;
}

/* The working-copy commit @, snapshotted first: what it holds is the
 * uncommitted work, which the rewrite carries along. */
static int working_copy_commit(struct tether_vcs *v, char id[41])
{
	const char *args[] = { "log", "--no-graph", "--revisions=@", "--template=commit_id", NULL };
	struct tt_jj_result res;
	int rc = jj_call(v, "cannot snapshot the working copy", args, &res);
	if (rc)
		return rc;
	if (!is_full_id(res.out))
		rc = tether_error_set(TETHER_ERROR, "jj printed '%s' for the working-copy commit", res.out);
	else
		memcpy(id, res.out, 41);
	tt_jj_result_free(&res);
	return rc;
}

/* The change id of commit `id` (visible or not). */
static int change_of(struct tether_vcs *v, const char *id, char **change)
{
	char *arg = tt_strdupf("--revisions=%s", id);
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", arg, "--template=change_id", NULL };
	struct tt_jj_result res;
	int rc = jj_call(v, "cannot read a change id", args, &res);
	free(arg);
	*change = NULL;
	if (rc)
		return rc;
	if (!res.out_len || !(*change = strdup(res.out)))
		rc = tether_error_set(TETHER_ERROR, "jj gave no change id for %.12s", id);
	tt_jj_result_free(&res);
	return rc;
}

/* After the rewrite, each descendant that wins an owned path gets its own
 * version of it back: `jj restore --from OLD --into CHANGE -- PATHS`
 * (oldest first, so the later ones rebase cleanly onto it). */
static int restore_winners(struct tether_vcs *v, const json_t *fixups, json_t *changes)
{
	size_t i, k;
	json_t *f, *p;
	int rc = 0;
	json_array_foreach(fixups, i, f) {
		if (rc)
			break;
		const json_t *paths = json_object_get(f, "paths");
		const char **list = calloc(json_array_size(paths) + 1, sizeof *list);
		if (!list)
			return tt_fail_oom();
		json_array_foreach(paths, k, p) list[k] = json_string_value(p);
		struct filesets fs = { 0 };
		rc = make_filesets(jj_of(v), list, json_array_size(paths), &fs);
		free(list);
		char *from = tt_strdupf("--from=%s", json_string_value(json_object_get(f, "commit")));
		char *into = tt_strdupf("--into=%s", json_string_value(json_array_get(changes, i)));
		const char *fixed[] = { "restore", from, into };
		struct tt_jj_result res;
		if (!rc)
			rc = call_on_paths(v, "cannot keep a later commit's version of the dataset", fixed, 3, &fs, &res);
		if (!rc)
			tt_jj_result_free(&res);
		free(from);
		free(into);
		filesets_free(&fs);
	}
	return rc;
}

static int jj_abandon(struct tether_vcs *v, const char *id, const char *expect_head, int check_only,
                      const char *const *own, size_t nown, char new_head[41])
{
	char head[41];
	new_head[0] = '\0';
	if (!is_full_id(id))
		return tether_error_set(TETHER_EUSAGE, "'%s' is not a full commit id", id);
	char at[41];
	int rc = working_copy_commit(v, at);
	if (!rc)
		rc = jj_resolve(v, "HEAD", head);
	if (!rc && expect_head && strcmp(head, expect_head) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "HEAD (@-) moved: it is %.12s, not %.12s as planned", head,
		                      expect_head);
	/* From @: uncommitted work that changes what `id` changed would be
	 * left conflicted by the rebase (git refuses a dirty tree instead). */
	if (!rc && strcmp(at, id) == 0)
		rc = tether_error_set(TETHER_EUSAGE, "%.12s is the working-copy commit @, which holds what is not "
		                      "committed: abandon takes a commit", id);
	json_t *fixups = NULL;
	if (!rc)
		rc = tt_git_abandon_check(v, at, id, 0, own, nown, &fixups);
	if (rc == TETHER_EREFUSED && strstr(tether_error_last(), at))
		tether_error_set_hint("@ is the working copy: its uncommitted changes touch what the commit changed");
	/* @ wins nothing: what it holds is not committed, and must not clash. */
	size_t i;
	json_t *f;
	json_array_foreach(fixups, i, f) {
		if (!rc && strcmp(json_string_value(json_object_get(f, "commit")), at) == 0) {
			rc = tether_error_set(TETHER_EREFUSED, "the working copy (@) has uncommitted changes to %s, which "
			                      "%.12s changed", json_string_value(json_array_get(json_object_get(f, "paths"), 0)),
			                      id);
			tether_error_set_hint("commit them first (`tether commit` or `jj commit`); `jj diff` lists them");
		}
	}
	json_t *changes = json_array();
	json_array_foreach(fixups, i, f) {
		char *change = NULL;
		if (!rc && !check_only && (rc = change_of(v, json_string_value(json_object_get(f, "commit")), &change)) == 0)
			json_array_append_new(changes, json_string(change));
		free(change);
	}
	if (!rc && !check_only) {
		const char *args[] = { "abandon", "--", id, NULL };
		char what[128];
		snprintf(what, sizeof what, "cannot abandon %.12s", id);
		rc = simple_call(v, what, args);
		if (!rc)
			rc = restore_winners(v, fixups, changes);
		if (!rc)
			rc = jj_resolve(v, "HEAD", new_head);
	}
	json_decref(changes);
	json_decref(fixups);
	return rc;
}

/* ------------------------------------------------------------------ */
/* export: commits_info, list_refs                                     */
/* ------------------------------------------------------------------ */

/* git's facts of each commit, and jj's change id beside them: one jj call
 * for every visible commit's, whatever the number asked. */
static int jj_commits_info(struct tether_vcs *v, const char *const *ids, size_t n, json_t **infos)
{
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph", "--revisions=all()",
		               "--template=commit_id ++ \" \" ++ change_id ++ \"\\n\"", NULL };
	struct tt_jj_result res;
	int rc = tt_git_commits_info(v, ids, n, infos);
	if (rc || n == 0)
		return rc;
	if ((rc = jj_call(v, "cannot read the change ids", args, &res)) != 0) {
		json_decref(*infos);
		*infos = NULL;
		return rc;
	}
	json_t *change = json_object();
	char *cursor = res.out, *line;
	while ((line = next_line(&cursor))) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		json_object_set_new(change, line, json_string(sp + 1));
	}
	size_t i;
	json_t *info;
	json_array_foreach(*infos, i, info) {
		json_t *c = json_object_get(change, json_string_value(json_object_get(info, "id")));
		if (c)
			json_object_set(info, "change_id", c);
	}
	json_decref(change);
	tt_jj_result_free(&res);
	return 0;
}

/* One line per commit a ref names: its id, then CONTAINING_TEMPLATE's
 * three lists. */
static const char EXPORT_REFS_TEMPLATE[] =
	"--template=commit_id ++ \"\\t\" ++ "
	"local_bookmarks.map(|b| b.name()).join(\" \") ++ \"\\t\" ++ "
	"remote_bookmarks.filter(|b| b.remote() != \"git\").map(|b| b.name() ++ \"@\" ++ b.remote()).join(\" \") ++ "
	"\"\\t\" ++ tags.map(|t| t.name()).join(\" \") ++ \"\\n\"";

static void add_export_refs(json_t *out, const char *commit, char *list, const char *type)
{
	char *save = NULL;
	for (char *name = strtok_r(list, " ", &save); name; name = strtok_r(NULL, " ", &save))
		json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "name", name, "type", type, "commit", commit));
}

static int jj_list_refs(struct tether_vcs *v, json_t **refs)
{
	const char *args[] = { "log", "--ignore-working-copy", "--no-graph",
		               "--revisions=bookmarks() | remote_bookmarks() | tags()", EXPORT_REFS_TEMPLATE, NULL };
	struct tt_jj_result res;
	int rc = jj_call(v, "cannot list the bookmarks and tags", args, &res);
	*refs = NULL;
	if (rc)
		return rc;
	json_t *out = json_array();
	char *cursor = res.out, *line;
	while ((line = next_line(&cursor))) {
		char *local = strchr(line, '\t'), *remote = local ? strchr(local + 1, '\t') : NULL,
		     *tags = remote ? strchr(remote + 1, '\t') : NULL;
		if (!tags)
			continue;
		*local++ = *remote++ = *tags++ = '\0';
		if (!is_full_id(line))
			continue;
		add_export_refs(out, line, local, "bookmark");
		add_export_refs(out, line, remote, "remote");
		add_export_refs(out, line, tags, "tag");
	}
	tt_jj_result_free(&res);
	rc = tt_vcs_refs_sort(out);
	if (rc)
		json_decref(out);
	else
		*refs = out;
	return rc;
}

/* ------------------------------------------------------------------ */
/* The module                                                          */
/* ------------------------------------------------------------------ */

static const struct tether_vcs_ops jj_ops = {
	TETHER_VCS_OPS_INIT,
	.name = "jj",
	.open = jj_open,
	.close = jj_close,
	.resolve = jj_resolve,
	.read_file = jj_read_file,
	.read_tree = jj_read_tree,
	.log = jj_log,
	.commit_paths = jj_commit_paths,
	.current_branch = jj_current_branch,
	.each_commit = jj_each_commit,
	.tree_id = jj_tree_id,
	.switch_to = jj_switch_to,
	.is_tracked = jj_is_tracked,
	.list_bookmarks = jj_list_bookmarks,
	.checkout_bookmarks = jj_checkout_bookmarks,
	.history_files = jj_history_files,
	.history_trees = jj_history_trees,
	.position = jj_position,
	.return_to = jj_return_to,
	.containing_refs = jj_containing_refs,
	.abandon = jj_abandon,
	.commits_info = jj_commits_info,
	.list_refs = jj_list_refs,
};

TETHER_API tether_vcs_module_t tether_vcs_module = { &jj_ops, NULL };
