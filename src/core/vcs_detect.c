/* Which VCS holds a dataset, decided so that a clone cannot choose it.
 *
 * The nearest .jj or .git walking up from the dataset decides, jj when both
 * are at one level (a colocated repository). But a git clone can commit a
 * `.jj/` directory (git refuses only `.git`): its `.jj/repo/store` would
 * then name a git directory of the clone's choice for every jj command,
 * and tether's shared state (tether.lock, the journal, the history-walk
 * cache) would live in `.jj/repo`, inside committed content. So a `.jj`
 * counts only when no git repository enclosing it tracks anything under it;
 * a tracked one is ordinary content and the walk goes on. Asking needs the
 * git module (the index, HEAD's tree), and only a `.jj` ever makes us ask:
 * a plain git checkout, and status's library-free probe, never load it for
 * this. */
#include "core/vcs_detect.h"

#include <tether/backend.h>

#include "core/abi.h"
#include "core/module.h"
#include "util/fsutil.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int has_entry(const char *dir, const char *name)
{
	char *path = tt_path_join(dir, name);
	struct stat st;
	int found = lstat(path, &st) == 0;
	free(path);
	return found;
}

static const struct tether_vcs_ops *ops_of(const char *module)
{
	char *path = NULL;
	void *h = tt_module_open(module, &path, NULL);
	const struct tether_vcs_ops *const *list = h ? tt_module_find(h, "tether_vcs_module") : NULL;
	const struct tether_vcs_ops *ops = list ? list[0] : NULL;
	if (h && !ops)
		tether_error_set(TETHER_ERROR, "module %s has no usable tether_vcs_module", path);
	else if (ops && tt_abi_check("struct tether_vcs_ops", path, ops->version, ops->size, 3,
	                             TETHER_VCS_OPS_VERSION, TT_VCS_OPS_V3_SIZE, sizeof *ops))
		ops = NULL;
	free(path);
	return ops;
}

/* Is anything under level/.jj tracked by the git repository enclosing
 * level (when there is one)? */
static int dotjj_is_committed(const char *level, int *committed)
{
	*committed = 0;
	const struct tether_vcs_ops *git = ops_of("tether-vcs-git.so");
	if (!git)
		return TETHER_ERROR;
	struct tether_vcs *vh = NULL;
	char *workdir = NULL, *common = NULL;
	int rc = git->open(level, &vh, &workdir, &common);
	if (rc == TETHER_ENOREPO) {
		tether_error_clear(); /* no git repository around it: jj's own */
		return 0;
	}
	if (rc)
		return rc;
	size_t wl = strlen(workdir);
	if (strncmp(level, workdir, wl) == 0 && (level[wl] == '\0' || level[wl] == '/')) {
		char *rel = level[wl] ? tt_strdupf("%s/.jj", level + wl + 1) : strdup(".jj");
		rc = git->is_tracked(vh, rel, committed);
		free(rel);
	}
	git->close(vh);
	free(workdir);
	free(common);
	return rc;
}

int tt_vcs_detect(const char *root, const struct tether_vcs_ops **ops, char **start)
{
	*ops = NULL;
	*start = NULL;
	char *cur = strdup(root);
	const char *module = "tether-vcs-git.so";
	char *jj_level = NULL;
	int rc = 0;
	for (;;) {
		if (has_entry(cur, ".jj")) {
			int committed = 0;
			if ((rc = dotjj_is_committed(cur, &committed)) != 0)
				break;
			if (!committed) {
				module = "tether-vcs-jj.so";
				jj_level = strdup(cur);
				break;
			}
		}
		char *slash = strrchr(cur, '/');
		if (has_entry(cur, ".git") || !slash || slash == cur)
			break;
		*slash = '\0';
	}
	free(cur);
	if (rc) {
		free(jj_level);
		return rc;
	}
	*ops = ops_of(module);
	if (!*ops) {
		free(jj_level);
		return TETHER_ERROR;
	}
	/* jj is opened at the workspace chosen here, not at whatever .jj is
	 * nearest the dataset (a committed one may be nearer). */
	*start = jj_level ? jj_level : strdup(root);
	return 0;
}

static char *resolved(const char *path)
{
	char *r = realpath(path, NULL);
	size_t n = r ? strlen(r) : 0;
	while (n > 1 && r[n - 1] == '/')
		r[--n] = '\0';
	return r;
}

int tt_vcs_check_shared_dir(const char *workdir, const char *common_dir)
{
	char *top = resolved(workdir), *common = resolved(common_dir);
	int rc = 0;
	if (!top || !common) {
		rc = tether_error_set(TETHER_EIO, "cannot resolve the checkout %s or its shared directory %s: %s",
		                      workdir, common_dir, strerror(errno));
	} else {
		size_t n = strlen(top);
		const char *rest = common + n + (strcmp(top, "/") != 0);
		int inside = strncmp(common, top, n) == 0 && (common[n] == '/' || (n == 1 && common[1]));
		int vcs_own = inside && ((strncmp(rest, ".git", 4) == 0 && (rest[4] == '\0' || rest[4] == '/')) ||
		                         (strncmp(rest, ".jj", 3) == 0 && (rest[3] == '\0' || rest[3] == '/')));
		if ((inside && !vcs_own) || strcmp(common, top) == 0)
			rc = tether_error_set(TETHER_EREFUSED,
			                      "the repository's shared directory %s is inside the checkout %s, outside "
			                      "its .git and .jj: it would be committed content, and tether keeps its "
			                      "locks and journal there; refused",
			                      common, top);
	}
	free(top);
	free(common);
	return rc;
}

char *tt_vcs_untrack_command(const struct tether_vcs_ops *ops, const char *path, const char *vcs_rel)
{
	/* jj untracks only an ignored file (.tether/.gitignore ignores them);
	 * its root: fileset names the path whatever the current directory. */
	if (strcmp(ops->name, "jj") == 0)
		return tt_strdupf("jj file untrack 'root:\"%s\"' && jj commit -m 'untrack %s'", vcs_rel, vcs_rel);
	return tt_strdupf("git rm -q --cached -- '%s' && git commit -m 'untrack %s'", path, vcs_rel);
}
