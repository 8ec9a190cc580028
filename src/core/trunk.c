/* The trunk bookmark (trunk.h). Settled the way jj's trunk() alias is by
 * default: the first of the usual names that exists, so a repository made
 * with `git init` on master works without configuration; tether.toml's
 * `[new] trunk` overrides it for any other name. */
#include "core/trunk.h"

#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static const char *const usual_names[] = {"main", "master", "trunk"};

/* The first usual name that is a bookmark (asked one by one: a lookup of
 * one branch is what the VCS answers cheapest, without loading all of
 * them), else the first usual name (an unborn repository has no bookmark
 * yet). */
static char *detect(struct tether_repo *repo)
{
	const char *pick = usual_names[0];
	int vcs = tt_repo_vcs(repo) == 0;
	for (size_t i = 0; vcs && i < sizeof usual_names / sizeof usual_names[0]; i++) {
		char *ref = tt_strdupf("refs/heads/%s", usual_names[i]);
		char id[41];
		int found = repo->vcs->resolve(repo->vh, ref, id) == 0;
		free(ref);
		if (found) {
			pick = usual_names[i];
			break;
		}
	}
	tether_error_clear(); /* a name that is no bookmark is only not the trunk */
	return strdup(pick);
}

const char *tt_trunk(struct tether_repo *repo)
{
	if (!repo->trunk) {
		const char *set = json_string_value(json_object_get(json_object_get(repo->config, "new"), "trunk"));
		repo->trunk = set ? strdup(set) : detect(repo);
		if (!repo->trunk)
			abort();
	}
	return repo->trunk;
}

int tt_is_trunk(struct tether_repo *repo, const char *bookmark)
{
	return bookmark && strcmp(bookmark, tt_trunk(repo)) == 0;
}
