/* place.c's questions that need libgit2: whether an enclosing repository
 * tracks a path (its index or HEAD's tree), and the paths of an open
 * repository. */
#include "backends/git/gitbe.h"

#include <stdlib.h>
#include <string.h>

/* Is `rel` (a path in the repository's work tree) in its index or in
 * HEAD's tree? A directory counts when anything under it does. */
static int tracked_in(git_repository *repo, const char *rel)
{
	git_index *index = NULL;
	git_reference *head = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	char *prefix = gb_strdupf("%s/", rel);
	size_t pos;
	int tracked = 0;

	if (prefix && git_repository_index(&index, repo) == 0)
		tracked = git_index_find_prefix(&pos, index, prefix) == 0;
	if (!tracked && git_repository_head(&head, repo) == 0 &&
	    git_commit_lookup(&commit, repo, git_reference_target(head)) == 0 &&
	    git_commit_tree(&tree, commit) == 0)
		tracked = git_tree_entry_bypath(&entry, tree, rel) == 0;
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_commit_free(commit);
	git_reference_free(head);
	git_index_free(index);
	free(prefix);
	return tracked;
}

/* The work tree of a repository enclosing `dir` that tracks it, or NULL:
 * every repository whose checkout holds `dir`, nearest first, is asked. */
int gb_rd_tracked_by(const char *dir, char **out)
{
	char *cur = strdup(dir);
	char *by = NULL;

	while (cur && !by) {
		char *slash = strrchr(cur, '/');
		git_repository *r = NULL;

		if (!slash || cur[1] == '\0')
			break;
		slash[slash == cur ? 1 : 0] = '\0';
		if (git_repository_open_ext(&r, cur, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) == 0) {
			char *gitdir = gb_resolved(git_repository_path(r));
			char *top = gb_resolved(git_repository_workdir(r));

			if (top && gitdir && strcmp(gitdir, dir) != 0 && gb_is_at_or_under(dir, top) &&
			    strcmp(dir, top) != 0 && tracked_in(r, dir + strlen(top) + (strcmp(top, "/") != 0)))
				by = top;
			else
				free(top);
			free(gitdir);
			git_repository_free(r);
		}
	}
	free(cur);
	*out = by;
	return 0;
}

int gb_refuse_untrusted_place(const struct tether_bctx *ctx, const struct gb_obj *o, int code)
{
	return gb_refuse_place(ctx, o, git_repository_path(o->repo), git_repository_commondir(o->repo),
	                       git_repository_workdir(o->repo), code);
}
