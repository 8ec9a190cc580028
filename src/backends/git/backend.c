/* The `git` backend: a git repository as a data object, to pin the code
 * (or any git-tracked data) that produced a dataset. This is its libgit2
 * implementation, the module tether-gitbe-libgit2.so, which the front
 * tether-backend-git.so (front.c) loads on first need: the front answers
 * the reads of history itself, without libgit2.
 *
 * Everything goes through libgit2 here (the front reads refs and objects in
 * C), never the git command line. libgit2 runs no hooks, has no fsmonitor,
 * runs no filter, merge or diff drivers nor credential helpers, and has no
 * ext:: transport; that is how tether guarantees that a hostile
 * repository's configuration runs nothing.
 *
 * This file holds the backend's description, opening a locator's
 * repository and make_locator. The other files hold one job each:
 * locator.c (locators, states, pin refs; shared with the front), state.c
 * (fingerprint), pin.c (pins and their pushes), verify.c (whether
 * recorded states are still held; shared), read_libgit2.c (the shared
 * code's reader), place.c and place_libgit2.c (where a repository is),
 * fork.c (working branches and handles), merge.c (promote and
 * merge), worktree.c (checkouts), diff.c (diff and history), create.c
 * (stores tether creates). */
#include "backends/git/gitbe.h"
#include "util/backend_args.h"

#include <limits.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

static char *workdir_of(git_repository *repo)
{
	char *r = realpath(git_repository_workdir(repo), NULL);
	size_t n = r ? strlen(r) : 0;

	while (n > 1 && r[n - 1] == '/')
		r[--n] = '\0';
	return r;
}

static int open_repository(struct gb_obj *o, int code)
{
	git_repository *enclosing = NULL;
	/* The resolved path: what the checks see is what is opened. */
	int rc = gb_resolve_path(o, code);

	if (rc < 0)
		return rc;
	rc = git_repository_open_ext(&o->repo, o->real, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc == GIT_ENOTFOUND) {
		rc = tether_error_set(code == TETHER_EREFUSED ? TETHER_ENOTFOUND : code,
		                      "%s is not a git repository (the top of a checkout)", o->path);
		if (git_repository_open_ext(&enclosing, o->path, 0, NULL) == 0) {
			tether_error_set_hint("it is inside the repository at %s: give that path",
			                      git_repository_workdir(enclosing) ? git_repository_workdir(enclosing)
			                                                        : git_repository_path(enclosing));
			git_repository_free(enclosing);
		}
		return rc;
	}
	if (rc < 0)
		return tt_git_fail(rc, "cannot open git repository %s", o->path);
	if (git_repository_is_bare(o->repo)) {
		git_repository_free(o->repo);
		o->repo = NULL;
		rc = tether_error_set(code, "%s is a bare git repository: kind git needs a checkout "
		                      "with a working tree", o->path);
		tether_error_set_hint("give a checkout of it instead (`git clone %s DIR`)", o->path);
		return rc;
	}
	return 0;
}

static int open_checked(const struct tether_bctx *ctx, struct gb_obj *o, int code)
{
	int rc = gb_libgit2_ready();

	if (rc == 0)
		rc = gb_refuse_url_remote(o, code);
	if (rc == 0)
		rc = open_repository(o, code);
	if (rc == 0)
		rc = gb_refuse_untrusted_place(ctx, o, code);
	if (rc < 0)
		gb_close(o);
	return rc;
}

/* Open the object's repository. A committed locator is untrusted input, so
 * everything `tether add` checked is checked again here. */
int gb_open(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o)
{
	int rc = gb_parse_locator(locator, o);

	return rc < 0 ? rc : open_checked(ctx, o, TETHER_EREFUSED);
}

/* A locator for a repository that need not exist yet (create_store): the
 * same checks, short of opening it. */
int gb_read_locator(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o)
{
	int rc = gb_libgit2_ready();

	if (rc == 0)
		rc = gb_parse_locator(locator, o);
	if (rc == 0)
		rc = gb_refuse_url_remote(o, TETHER_EREFUSED);
	if (rc == 0)
		rc = gb_refuse_create_place(ctx, o);
	return rc;
}

static void free_repository(struct git_repository *repo)
{
	git_repository_free(repo);
}

void gb_close(struct gb_obj *o)
{
	/* A repository from or for the session goes back to its pool, still
	 * checked for this locator's path in this command. */
	if (o->repo && !(o->pool && gb_session_give(o->pool, o->path, o->repo, free_repository) == 0))
		git_repository_free(o->repo);
	o->repo = NULL;
	o->pool = NULL;
	free(o->real);
	o->real = NULL;
}

/* The session's pool (session.c) replaces the per-thread cache there was:
 * a repository that passed every check of a fresh open in this command,
 * for this dataset, is taken from it; the locator's own checks are made
 * again. Without a session (a call outside a command) every open is
 * fresh. */
int gb_open_cached(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o)
{
	int rc = gb_parse_locator(locator, o);
	if (rc < 0)
		return rc;
	struct gb_session *s = ctx ? ctx->session : NULL;
	struct git_repository *pooled = s ? gb_session_take(s, o->path) : NULL;
	if (pooled) {
		o->repo = pooled;
		o->pool = s;
		return gb_refuse_url_remote(o, TETHER_EREFUSED);
	}
	rc = open_checked(ctx, o, TETHER_EREFUSED);
	if (rc == 0)
		o->pool = s;
	return rc;
}

/* ------------------------------------------------------------------ */
/* make_locator and identity                                           */
/* ------------------------------------------------------------------ */

static int check_options(const json_t *options)
{
	static const char *const known[] = {"ref", "remote", "allow_dirty", "at", "create", NULL};
	static const char *const flags[] = {"allow_dirty", "create", NULL};
	return tt_backend_options_check(options, "git", known, flags);
}

/* A linked worktree of the dataset's own repository is outside the
 * dataset's checkout but shares its refs: refused as well. */
static int refuse_dataset_repository(const struct tether_bctx *ctx, const struct gb_obj *o)
{
	git_repository *dataset = NULL;
	char *mine, *theirs;
	int same;

	if (!ctx || !ctx->dataset_root || git_repository_open_ext(&dataset, ctx->dataset_root, 0, NULL) < 0)
		return 0;
	mine = realpath(git_repository_commondir(o->repo), NULL);
	theirs = realpath(git_repository_commondir(dataset), NULL);
	same = mine && theirs && strcmp(mine, theirs) == 0;
	free(mine);
	free(theirs);
	git_repository_free(dataset);
	if (same)
		return tether_error_set(TETHER_EUSAGE,
		                        "git repository %s shares its refs with the dataset's own repository "
		                        "(%s): a git object must be another repository",
		                        o->path, ctx->dataset_root);
	return 0;
}

static int check_remote_configured(const struct gb_obj *o)
{
	int exists = 0;
	int rc = o->remote ? gb_remote_exists(o->repo, o->remote, &exists) : 0;

	if (rc == 0 && o->remote && !exists)
		return tether_error_set(TETHER_EUSAGE, "git repository %s has no remote named \"%s\"",
		                        o->path, o->remote);
	return rc;
}

static int check_resolves(const struct gb_obj *o, const char *rev)
{
	git_commit *commit = NULL;
	int rc;

	if (!rev)
		return 0;
	rc = gb_resolve_commit(o, rev, &commit);
	git_commit_free(commit);
	return rc;
}

static json_t *build_locator(const struct gb_obj *o)
{
	json_t *loc = json_pack("{s:s, s:s}", "path", o->path, "ref", o->ref);

	if (loc && o->at)
		json_object_set_new(loc, "at", json_string(o->at));
	if (loc && o->remote)
		json_object_set_new(loc, "remote", json_string(o->remote));
	if (loc && o->allow_dirty)
		json_object_set_new(loc, "allow_dirty", json_true());
	return loc;
}

static int fill_from_options(const json_t *options, struct gb_obj *o)
{
	int rc = check_options(options);

	if (rc < 0)
		return rc;
	o->ref = json_string_value(json_object_get(options, "ref"));
	o->at = json_string_value(json_object_get(options, "at"));
	o->remote = json_string_value(json_object_get(options, "remote"));
	if (!o->ref)
		o->ref = "HEAD";
	return gb_parse_flag(json_object_get(options, "allow_dirty"), "allow_dirty", TETHER_EUSAGE,
	                     &o->allow_dirty);
}

/* Checks that need the open repository; the locator stores its checkout
 * top, so "/repo/.git" and "/repo" are one object. */
static int finish_locator(const struct tether_bctx *ctx, struct gb_obj *o, json_t **locator)
{
	char *top = workdir_of(o->repo);
	int rc = top ? 0 : tether_error_set(TETHER_EIO, "cannot resolve the checkout of %s", o->path);

	if (rc == 0) {
		o->path = top;
		rc = refuse_dataset_repository(ctx, o);
	}
	if (rc == 0)
		rc = check_remote_configured(o);
	if (rc == 0)
		rc = check_resolves(o, o->ref);
	if (rc == 0)
		rc = check_resolves(o, o->at);
	if (rc == 0 && !(*locator = build_locator(o)))
		rc = gb_fail_oom();
	free(top);
	return rc;
}

static int gb_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options,
                           const char *cwd, json_t **locator)
{
	struct gb_obj o;
	char *path;
	int rc;

	memset(&o, 0, sizeof o);
	if ((rc = fill_from_options(options, &o)) < 0)
		return rc;
	if (!uri || !*uri)
		return tether_error_set(TETHER_EUSAGE, "kind git needs a path: tether add KEY PATH --kind git");
	if (strstr(uri, "://") && strncmp(uri, "file://", 7) != 0)
		return tether_error_set(TETHER_EUSAGE, "'%s': remote-only (url) git repositories are not "
		                        "supported yet; give a local checkout", uri);
	if (!(path = gb_path_resolve(uri, cwd)))
		return gb_fail_oom();
	o.path = path;
	/* `add --create`: the repository does not exist yet; create_store
	 * makes it (and refuses a path that holds anything). */
	if (json_is_true(json_object_get(options, "create"))) {
		if (o.remote || o.at)
			rc = tether_error_set(TETHER_EUSAGE, "--create makes an empty repository: it has no remote or history yet");
		else if (!(*locator = build_locator(&o)))
			rc = gb_fail_oom();
		free(path);
		return rc;
	}
	rc = open_checked(ctx, &o, TETHER_EUSAGE);
	if (rc == 0) {
		rc = finish_locator(ctx, &o, locator);
		gb_close(&o);
	}
	free(path);
	return rc;
}

static int gb_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	int rc = gb_libgit2_ready();

	return rc < 0 ? rc : gb_identity_do(ctx, locator, identity);
}

static int gb_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	return gb_list_pins_do(ctx, locator, pin_refs);
}

static int gb_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                     const json_t *pin_ref, int *ok, char **detail)
{
	return gb_verify_do(ctx, locator, state, pin_ref, ok, detail);
}

static int gb_verify_many(const struct tether_bctx *ctx, struct tether_verify_item *items, size_t n)
{
	return gb_verify_many_do(ctx, items, n);
}

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */

const struct tether_backend tt_backend_git = {
	TETHER_BACKEND_INIT,
	.kind = "git",
	.maturity = "stable",
	.summary = GB_SUMMARY,
	.caps = GB_CAPS,
	.volatile_keys = gb_volatile_keys,
	.make_locator = gb_make_locator,
	.identity = gb_identity,
	.fingerprint = gb_fingerprint,
	.pin = gb_pin,
	.unpin = gb_unpin,
	.list_pins = gb_list_pins,
	.verify = gb_verify,
	.fork = gb_fork,
	.delete_working_ref = gb_delete_working_ref,
	.open = gb_open_handle,
	.diff = gb_diff,
	.history = gb_history,
	.promote = gb_promote,
	.merge = gb_merge,
	.create_store = gb_create_store,
	.delete_store = gb_delete_store,
	.list_working_refs = gb_list_working_refs,
	.verify_many = gb_verify_many,
	.check_state = gb_check_state,
	.secret_keys = gb_secret_keys,
	.add_options = gb_add_options,
	.open_store = gb_open_store,
	.close_store = gb_close_store,
	.verify_deep = gb_verify_deep,
	.descends = gb_descends,
	.delete_working_ref_if = gb_delete_working_ref_if,
	.move_base = gb_move_base,
};

/* What the front (front.c) looks up after loading this module. Not
 * tether_backend_module: this module is no kind of its own. */
TETHER_API const struct tether_backend *const tether_gitbe_libgit2 = &tt_backend_git;
