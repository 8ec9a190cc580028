/* Where an object's repository really is, and whether a clone chose it.
 *
 * A locator is committed content: a clone can name any path, through a
 * symbolic link or a /proc magic link (/proc/self/cwd/evil), and can commit
 * a directory that is a git directory under another name than .git (with
 * core.bare = false and a core.worktree of its choice). Its config then
 * chooses the remotes tether pushes to. So every check runs on resolved
 * paths (the locator's, the git directory's, the common directory's, the
 * work tree's), and a repository is refused when any of them lies in the
 * dataset's checkout, or when its git directory is content that an
 * enclosing git repository tracks. Run at `add` and at every open, by both
 * of the backend's modules on what their reader opened (gitbe_read.h); the
 * question whether an enclosing repository tracks a path is the reader's
 * (gb_rd_tracked_by). */
#include "backends/git/gitbe_read.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *gb_resolved(const char *path)
{
	char *r = path ? realpath(path, NULL) : NULL;
	size_t n = r ? strlen(r) : 0;

	while (n > 1 && r[n - 1] == '/')
		r[--n] = '\0';
	return r;
}

static int is_proc_path(const char *path)
{
	return strcmp(path, "/proc") == 0 || strncmp(path, "/proc/", 6) == 0;
}

int gb_resolve_path(struct gb_obj *o, int code)
{
	int err;

	free(o->real);
	o->real = gb_resolved(o->path);
	err = errno;
	if (!o->real && (err == ENOENT || err == ENOTDIR))
		return tether_error_set(code == TETHER_EREFUSED ? TETHER_ENOTFOUND : code,
		                        "%s is not a git repository (the top of a checkout)", o->path);
	if (!o->real)
		return tether_error_set(TETHER_EIO, "cannot resolve %s: %s", o->path, strerror(err));
	/* What is left under /proc after resolving is no place for a repository. */
	if (is_proc_path(o->real)) {
		int rc = tether_error_set(code, "git repository %s resolves to %s under /proc: refused",
		                          o->path, o->real);
		free(o->real);
		o->real = NULL;
		return rc;
	}
	return 0;
}

static int has_entry(const char *dir, const char *name)
{
	char *path = gb_strdupf("%s/%s", dir, name);
	struct stat st;
	int found = path && lstat(path, &st) == 0;

	free(path);
	return found;
}

/* The top of the checkout holding the dataset: the nearest directory at
 * or above it with a .git or .jj, as the engine finds a dataset's
 * checkout. NULL when there is none. */
static char *checkout_top_of(const char *dataset_root)
{
	char *cur = gb_resolved(dataset_root);

	while (cur) {
		char *slash;

		if (has_entry(cur, ".git") || has_entry(cur, ".jj"))
			return cur;
		slash = strrchr(cur, '/');
		if (!slash || slash == cur) {
			free(cur);
			return NULL;
		}
		*slash = '\0';
	}
	return NULL;
}

/* The dataset's checkout, or the dataset itself when it is in none. */
static char *dataset_checkout(const struct tether_bctx *ctx)
{
	char *top;

	if (!ctx || !ctx->dataset_root)
		return NULL;
	top = checkout_top_of(ctx->dataset_root);
	return top ? top : gb_resolved(ctx->dataset_root);
}

int gb_is_at_or_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/' || (n == 1 && dir[0] == '/'));
}

static int refuse_in_checkout(const struct gb_obj *o, const char *what, const char *path,
                              const char *top, int code)
{
	if (!path || !top || !(gb_is_at_or_under(path, top) || gb_is_at_or_under(top, path)))
		return 0;
	return tether_error_set(code,
	                        "git repository %s and the dataset's checkout %s are inside one "
	                        "another (its %s is %s): a git object must live outside the "
	                        "dataset's own checkout",
	                        o->path, top, what, path);
}

static int refuse_committed(const struct gb_obj *o, const char *what, const char *path, int code)
{
	char *by = NULL;
	int rc = path ? gb_rd_tracked_by(path, &by) : 0;

	if (rc == 0 && by)
		rc = tether_error_set(code,
		                      "git repository %s: its %s %s is committed content of the git "
		                      "repository at %s: a clone may not choose a repository's "
		                      "configuration; refused",
		                      o->path, what, path, by);
	free(by);
	return rc;
}

/* The checks on a repository as its reader found it: `gitdir`,
 * `commondir` and `workdir` are what it opened, every link resolved. */
int gb_refuse_resolved_place(const struct tether_bctx *ctx, const struct gb_obj *o, const char *gitdir,
                             const char *common, const char *workdir, int code)
{
	char *top = dataset_checkout(ctx);
	int rc = 0;

	if (is_proc_path(gitdir) || is_proc_path(common) || is_proc_path(workdir))
		rc = tether_error_set(code, "git repository %s lives under /proc: refused", o->path);
	if (rc == 0)
		rc = refuse_in_checkout(o, "path", o->real, top, code);
	if (rc == 0)
		rc = refuse_in_checkout(o, "git directory", gitdir, top, code);
	if (rc == 0)
		rc = refuse_in_checkout(o, "common git directory", common, top, code);
	if (rc == 0)
		rc = refuse_in_checkout(o, "work tree", workdir, top, code);
	if (rc == 0)
		rc = refuse_committed(o, "git directory", gitdir, code);
	if (rc == 0 && strcmp(common, gitdir) != 0)
		rc = refuse_committed(o, "common git directory", common, code);
	free(top);
	return rc;
}

/* The same on paths as the reader names them (resolved here). */
int gb_refuse_place(const struct tether_bctx *ctx, const struct gb_obj *o, const char *gitdir_path,
                    const char *common_path, const char *workdir_path, int code)
{
	char *gitdir = gb_resolved(gitdir_path);
	char *common = gb_resolved(common_path);
	char *workdir = gb_resolved(workdir_path);
	int rc = 0;

	if (!gitdir || !common || !workdir)
		rc = tether_error_set(TETHER_EIO, "git repository %s: cannot resolve its git directory "
		                      "or work tree", o->path);
	if (rc == 0)
		rc = gb_refuse_resolved_place(ctx, o, gitdir, common, workdir, code);
	free(gitdir);
	free(common);
	free(workdir);
	return rc;
}

/* A repository tether will create: the path with its deepest existing
 * ancestor resolved must not be in the dataset's checkout either. */
int gb_refuse_create_place(const struct tether_bctx *ctx, const struct gb_obj *o)
{
	char *top = dataset_checkout(ctx);
	char *head = strdup(o->path), *real = NULL, *full = NULL;
	int rc = head ? 0 : gb_fail_oom();

	while (rc == 0 && !(real = gb_resolved(head))) {
		char *slash = strrchr(head, '/');

		if (!slash || slash == head) {
			real = strdup("/");
			break;
		}
		*slash = '\0';
	}
	if (rc == 0 && real && !(full = gb_strdupf("%s%s", strcmp(real, "/") ? real : "", o->path + strlen(head))))
		rc = gb_fail_oom();
	if (rc == 0 && full && is_proc_path(full))
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s resolves to %s under /proc: refused",
		                      o->path, full);
	if (rc == 0 && full)
		rc = refuse_in_checkout(o, "path", full, top, TETHER_EREFUSED);
	free(head);
	free(real);
	free(full);
	free(top);
	return rc;
}
