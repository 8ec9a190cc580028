/* Stale-workspace detection (workspace_check.h). */
#include "core/workspace_check.h"

#include "core/trunk.h"
#include "core/workspace.h"
#include "util/fsutil.h"
#include "util/safefs.h"

#include <stdlib.h>
#include <string.h>

/* How far back a checkout without a bookmark is searched for the recorded
 * commit: a jj user's `jj new` adds one commit, a long rebase many; past
 * this the workspace is called stale, and `new --adopt` settles it. */
enum { ANCESTRY_DEPTH = 1000 };

static int workspace_file_present(struct tether_repo *repo)
{
	char *path = tt_path_join(repo->tether_dir, "workspace.toml");
	int present = tt_safe_exists(repo->root, path) > 0;
	free(path);
	return present;
}

/* Is `old` the commit `now` or one of its ancestors? */
static int reaches(struct tether_repo *repo, const char *now, const char *old)
{
	json_t *commits = NULL;
	int found = 0;
	if (repo->vcs->log(repo->vh, now, NULL, ANCESTRY_DEPTH, &commits) != 0) {
		tether_error_clear(); /* unreadable history: cannot say it is current */
		return 0;
	}
	size_t i;
	json_t *c;
	json_array_foreach(commits, i, c)
		found |= json_is_string(json_object_get(c, "id")) && strcmp(json_string_value(json_object_get(c, "id")), old) == 0;
	json_decref(commits);
	return found;
}

int tt_workspace_position(struct tether_repo *repo, const json_t *ws, json_t **report)
{
	*report = NULL;
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	char *current = NULL;
	char head[41] = "";
	rc = repo->vcs->current_branch(repo->vh, &current);
	if (!rc && repo->vcs->resolve(repo->vh, "HEAD", head) != 0) {
		tether_error_clear(); /* an unborn branch */
		head[0] = '\0';
	}
	if (rc)
		return rc;
	const char *bookmark = json_string_value(json_object_get(ws, "bookmark"));
	const char *was = json_string_value(json_object_get(ws, "head"));
	char *reason = NULL;
	/* jj puts several bookmarks on one change: the workspace's being one of
	 * them is agreement, whichever current_branch picked. */
	int among = 0;
	json_t *here = NULL;
	if (bookmark && current && strcmp(current, bookmark) != 0 && TT_VCS_GET(repo->vcs, checkout_bookmarks)) {
		rc = TT_VCS_GET(repo->vcs, checkout_bookmarks)(repo->vh, &here);
		size_t i;
		json_t *n;
		json_array_foreach(here, i, n)
			among |= json_is_string(n) && strcmp(json_string_value(n), bookmark) == 0;
		json_decref(here);
		if (rc) {
			free(current);
			return rc;
		}
	}
	if (among) {
		free(current);
		current = strdup(bookmark);
	}
	if (bookmark && current && strcmp(current, bookmark) != 0)
		reason = tt_strdupf("the checkout is on %s, but .tether/workspace.toml works on %s", current, bookmark);
	else if (bookmark && !current && was && strcmp(was, head) != 0 && (!*head || !reaches(repo, head, was)))
		reason = tt_strdupf("the checkout is at %.12s, which names no bookmark and does not follow %.12s, "
		                    "where .tether/workspace.toml works on %s", *head ? head : "an unborn branch", was,
		                    bookmark);
	const char *on = bookmark ? bookmark : current;
	*report = json_pack("{s:s, s:s?, s:s?, s:{s:s?, s:s?}, s:s, s:b, s:b, s:s?}", "saved",
	                    workspace_file_present(repo) ? "present" : "missing", "bookmark", bookmark, "head", was,
	                    "checkout", "bookmark", current, "head", *head ? head : NULL, "trunk", tt_trunk(repo),
	                    "on_trunk", tt_is_trunk(repo, on), "stale", reason != NULL, "reason", reason);
	free(current);
	free(reason);
	return 0;
}

const char *tt_workspace_return_rev(const json_t *position)
{
	const char *bookmark = json_string_value(json_object_get(position, "bookmark"));
	const char *head = json_string_value(json_object_get(position, "head"));
	/* `new` names a detached checkout after its commit: go back by id. */
	if (bookmark && strncmp(bookmark, "detached-", 9) == 0 && head)
		return head;
	return bookmark ? bookmark : "?";
}

int tt_workspace_refuse_stale(struct tether_repo *repo, const char *what)
{
	json_t *ws = NULL, *pos = NULL;
	int rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_workspace_load(repo, &ws);
	/* A workspace `new` never put anywhere has nothing to disagree with. */
	if (!rc && json_object_get(ws, "bookmark"))
		rc = tt_workspace_position(repo, ws, &pos);
	if (!rc && json_is_true(json_object_get(pos, "stale"))) {
		const char *cur = json_string_value(json_object_get(json_object_get(pos, "checkout"), "bookmark"));
		rc = tether_error_set(TETHER_EREFUSED, "%s refused: the workspace is stale: %s", what,
		                      json_string_value(json_object_get(pos, "reason")));
		if (cur)
			tether_error_set_hint("run `tether new` to work on %s (forking its working branches), or `tether new "
			                      "--adopt` to take %s as the workspace, adopting the working branches it has",
			                      cur, cur);
		else
			tether_error_set_hint("run `tether new %s` to go back, `tether new` to work here (forking this "
			                      "commit's branches), or `tether new --adopt` to keep %s's working branches here",
			                      tt_workspace_return_rev(pos), json_string_value(json_object_get(pos, "bookmark")));
	}
	json_decref(pos);
	json_decref(ws);
	return rc;
}
