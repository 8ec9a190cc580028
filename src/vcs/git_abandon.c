/* History surgery on libgit2: which refs hold a commit (containing_refs)
 * and dropping a commit from the current branch (abandon), the git side of
 * `tether abandon` and of `tether undo` of a commit.
 *
 * abandon is `git rebase --onto C^ C` done in memory: the branch's
 * first-parent line from HEAD down to C is checked (no merge commit, no
 * descendant touching a path C touched outside the caller's own paths, a
 * clean working tree), each descendant is cherry-picked onto the new
 * parent as a new commit with its author and message (a conflict in the
 * caller's paths resolved to the descendant's file: a dataset manifest is
 * a whole snapshot, and the later one stands), then the branch moves in one conditional ref update
 * and the checkout follows. Until that update nothing visible changed: the
 * commits made before it are unreachable objects. The checks are shared
 * with tether-vcs-jj (tt_git_abandon_check), which then lets `jj abandon`
 * do the rewrite. */
#include "util/fail.h"
#include "util/fsutil.h"
#include "util/git_error.h"
#include "vcs/git_store.h"

#include <tether/backend.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A first-parent line this long is refused rather than rewritten. */
#define MAX_CHAIN 100000

static int is_remote_ref(const char *name)
{
	return strncmp(name, "refs/remotes/", 13) == 0;
}

static int ref_holds(git_repository *repo, git_reference *ref, const git_oid *id, int *holds)
{
	git_object *peeled = NULL;
	*holds = 0;
	if (git_reference_peel(&peeled, ref, GIT_OBJECT_COMMIT) < 0) {
		git_error_clear();
		return 0; /* a ref to a tree or a blob holds no commit */
	}
	const git_oid *tip = git_object_id(peeled);
	int rc = git_oid_equal(tip, id) ? 1 : git_graph_descendant_of(repo, tip, id);
	git_object_free(peeled);
	if (rc < 0)
		return tt_git_fail(rc, "cannot walk the history of %s", git_reference_name(ref));
	*holds = rc;
	return 0;
}

/* The branch HEAD names ("refs/heads/x"), or "" when HEAD is detached. */
static void current_branch_ref(git_repository *repo, char *out, size_t n)
{
	git_reference *head = NULL;
	out[0] = '\0';
	if (git_reference_lookup(&head, repo, "HEAD") == 0 && git_reference_type(head) == GIT_REFERENCE_SYMBOLIC)
		snprintf(out, n, "%s", git_reference_symbolic_target(head));
	git_error_clear();
	git_reference_free(head);
}

int tt_git_containing_refs(struct tether_vcs *v, const char *id, json_t **refs)
{
	git_repository *repo = tt_git_store_repository(v);
	static const char *const globs[] = { "refs/heads/*", "refs/remotes/*", "refs/tags/*" };
	char current[1024];
	git_oid oid;
	*refs = NULL;
	if (git_oid_fromstr(&oid, id) < 0)
		return tether_error_set(TETHER_EUSAGE, "'%s' is not a full commit id", id);
	current_branch_ref(repo, current, sizeof current);
	json_t *out = json_array();
	int rc = 0;
	for (size_t g = 0; !rc && g < sizeof globs / sizeof globs[0]; g++) {
		git_reference_iterator *it = NULL;
		git_reference *ref = NULL;
		rc = git_reference_iterator_glob_new(&it, repo, globs[g]);
		if (rc < 0) {
			rc = tt_git_fail(rc, "cannot list %s", globs[g]);
			break;
		}
		while (!rc && git_reference_next(&ref, it) == 0) {
			const char *name = git_reference_name(ref);
			int holds = 0;
			/* refs/remotes/origin/HEAD only repeats the branch it names */
			size_t len = strlen(name);
			int remote_head = is_remote_ref(name) && len > 5 && strcmp(name + len - 5, "/HEAD") == 0;
			if (strcmp(name, current) != 0 && !remote_head)
				rc = ref_holds(repo, ref, &oid, &holds);
			if (!rc && holds)
				json_array_append_new(out, json_pack("{s:s, s:b}", "ref", name, "remote", is_remote_ref(name)));
			git_reference_free(ref);
			ref = NULL;
		}
		git_error_clear();
		git_reference_iterator_free(it);
	}
	if (rc) {
		json_decref(out);
		return rc;
	}
	*refs = out;
	return 0;
}

/* The paths a commit changes against its first parent (none: against the
 * empty tree), as a set {path: true}. */
static int changed_paths(git_repository *repo, git_commit *c, json_t **paths)
{
	git_tree *tree = NULL, *base = NULL;
	git_commit *parent = NULL;
	git_diff *diff = NULL;
	*paths = NULL;
	int rc = git_commit_tree(&tree, c);
	if (rc == 0 && git_commit_parentcount(c) > 0 && (rc = git_commit_parent(&parent, c, 0)) == 0)
		rc = git_commit_tree(&base, parent);
	if (rc == 0)
		rc = git_diff_tree_to_tree(&diff, repo, base, tree, NULL);
	if (rc < 0) {
		rc = tt_git_fail(rc, "cannot read what commit %s changes", git_oid_tostr_s(git_commit_id(c)));
	} else {
		*paths = json_object();
		for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
			const git_diff_delta *d = git_diff_get_delta(diff, i);
			json_object_set_new(*paths, d->old_file.path, json_true());
			json_object_set_new(*paths, d->new_file.path, json_true());
		}
	}
	git_diff_free(diff);
	git_tree_free(tree);
	git_tree_free(base);
	git_commit_free(parent);
	return rc;
}

/* The first-parent line from `head` down to `id`, newest first, `id`
 * last: every commit on it (id itself excepted) must have one parent. */
static int first_parent_line(git_repository *repo, const git_oid *head, const git_oid *id, git_commit ***line,
                             size_t *n)
{
	size_t cap = 16;
	git_commit **v = malloc(cap * sizeof *v);
	git_commit *c = NULL;
	int rc = v ? git_commit_lookup(&c, repo, head) : -1;
	*n = 0;
	*line = NULL;
	if (!v)
		return tt_fail_oom();
	if (rc < 0) {
		free(v);
		return tt_git_fail(rc, "cannot read HEAD's commit");
	}
	char idhex[GIT_OID_HEXSZ + 1];
	git_oid_tostr(idhex, sizeof idhex, id);
	for (;;) {
		if (*n == cap) {
			git_commit **grown = realloc(v, 2 * cap * sizeof *v);
			if (!grown) {
				rc = tt_fail_oom();
				break;
			}
			v = grown;
			cap *= 2;
		}
		v[(*n)++] = c;
		if (git_oid_equal(git_commit_id(c), id))
			break;
		if (git_commit_parentcount(c) > 1) {
			rc = tether_error_set(TETHER_EREFUSED, "commit %.12s, between HEAD and %.12s, is a merge: abandon "
			                      "rewrites linear history only", git_oid_tostr_s(git_commit_id(c)), idhex);
			break;
		}
		if (git_commit_parentcount(c) == 0 || *n >= MAX_CHAIN) {
			rc = tether_error_set(TETHER_EREFUSED, "commit %.12s is not on the current branch's first-parent "
			                      "history", idhex);
			break;
		}
		if ((rc = git_commit_parent(&c, c, 0)) < 0) {
			rc = tt_git_fail(rc, "cannot read a parent of %s", git_oid_tostr_s(git_commit_id(v[*n - 1])));
			break;
		}
	}
	if (rc) {
		for (size_t i = 0; i < *n; i++)
			git_commit_free(v[i]);
		free(v);
		*n = 0;
		return rc;
	}
	*line = v;
	return 0;
}

static void line_free(git_commit **line, size_t n)
{
	for (size_t i = 0; i < n; i++)
		git_commit_free(line[i]);
	free(line);
}

/* Is `path` one of `own` or under one? */
static int owned(const char *path, const char *const *own, size_t nown)
{
	for (size_t i = 0; i < nown; i++) {
		size_t n = strlen(own[i]);
		if (strncmp(path, own[i], n) == 0 && (path[n] == '\0' || path[n] == '/'))
			return 1;
	}
	return 0;
}

/* The checks abandon makes of the history (not of the working tree): the
 * line is linear, and a descendant that changes a path `id` changed does
 * so only under `own` (the dataset's snapshots, where the descendant's
 * version wins: it recorded the whole state); anywhere else the rebase
 * would conflict, and that is refused. With allow_root, `id` may be a
 * first commit (jj rebases its descendants onto its virtual root). With
 * fixups, it lists the descendants that win such paths: [{"commit",
 * "paths": [...]}], oldest first. */
static int check_line(git_repository *repo, git_commit **line, size_t n, int allow_root, const char *const *own,
                      size_t nown, json_t *fixups)
{
	git_commit *target = line[n - 1];
	const char *hex = git_oid_tostr_s(git_commit_id(target));
	if (git_commit_parentcount(target) > 1)
		return tether_error_set(TETHER_EREFUSED, "commit %.12s is a merge: abandon rewrites linear history only",
		                        hex);
	if (git_commit_parentcount(target) == 0 && !allow_root)
		return tether_error_set(TETHER_EREFUSED, "commit %.12s is the branch's first commit: there is no parent "
		                        "to rebase its descendants onto", hex);
	json_t *mine = NULL;
	int rc = changed_paths(repo, target, &mine);
	for (size_t i = n - 1; !rc && i-- > 0;) {
		json_t *theirs = NULL, *wins = json_array();
		const char *path;
		json_t *value;
		char d[GIT_OID_HEXSZ + 1], t[GIT_OID_HEXSZ + 1];
		git_oid_tostr(d, sizeof d, git_commit_id(line[i]));
		git_oid_tostr(t, sizeof t, git_commit_id(target));
		rc = changed_paths(repo, line[i], &theirs);
		json_object_foreach(theirs, path, value) {
			if (rc || !json_object_get(mine, path))
				continue;
			if (owned(path, own, nown))
				json_array_append_new(wins, json_string(path));
			else
				rc = tether_error_set(TETHER_EREFUSED, "commit %.12s, a descendant of %.12s, also changes %s: "
				                      "removing %.12s would conflict there", d, t, path, t);
		}
		if (!rc && fixups && json_array_size(wins))
			json_array_append_new(fixups, json_pack("{s:s, s:O}", "commit", d, "paths", wins));
		json_decref(wins);
		json_decref(theirs);
	}
	json_decref(mine);
	return rc;
}

int tt_git_abandon_check(struct tether_vcs *v, const char *head, const char *id, int allow_root,
                         const char *const *own, size_t nown, json_t **fixups)
{
	git_repository *repo = tt_git_store_repository(v);
	git_oid h, c;
	*fixups = NULL;
	if (git_oid_fromstr(&h, head) < 0 || git_oid_fromstr(&c, id) < 0)
		return tether_error_set(TETHER_EUSAGE, "abandon needs full commit ids");
	git_commit **line = NULL;
	size_t n = 0;
	json_t *out = json_array();
	int rc = first_parent_line(repo, &h, &c, &line, &n);
	if (!rc)
		rc = check_line(repo, line, n, allow_root, own, nown, out);
	line_free(line, n);
	if (rc)
		json_decref(out);
	else
		*fixups = out;
	return rc;
}

/* Uncommitted changes to tracked files (untracked ones stay where they
 * are: the checkout below refuses to overwrite one). */
static int refuse_dirty(git_repository *repo)
{
	git_status_options so;
	git_status_list *list = NULL;
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	int rc = git_status_list_new(&list, repo, &so);
	if (rc < 0)
		return tt_git_fail(rc, "cannot read the working tree's status");
	if (git_status_list_entrycount(list) > 0) {
		const git_status_entry *e = git_status_byindex(list, 0);
		const git_diff_delta *d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
		rc = tether_error_set(TETHER_EREFUSED, "the working tree has uncommitted changes (%s)",
		                      d && d->new_file.path ? d->new_file.path : "?");
		tether_error_set_hint("commit or stash them first (`git status` lists them)");
	}
	git_status_list_free(list);
	return rc;
}

static int refuse_unfinished(git_repository *repo)
{
	int state = git_repository_state(repo);
	if (state == GIT_REPOSITORY_STATE_NONE)
		return 0;
	return tether_error_set(TETHER_EREFUSED, "an operation (a merge, a rebase, ...) is in progress in this "
	                        "repository; finish or abort it first");
}

/* The committer of the re-created commits: the user, as git rebase does
 * (the original's when no identity is configured). */
static int committer_for(git_repository *repo, git_commit *orig, git_signature **out)
{
	if (git_signature_default(out, repo) == 0)
		return 0;
	git_error_clear();
	return git_signature_dup(out, git_commit_committer(orig));
}

/* A descendant's conflicts, each under `own` (check_line saw to that):
 * the descendant's version of the file wins, or its deletion. */
static int take_theirs(git_index *index, const char *const *own, size_t nown, git_commit *d, git_commit *target)
{
	git_index_conflict_iterator *it = NULL;
	const git_index_entry *anc, *ours, *theirs;
	json_t *wins = json_array();
	int rc = git_index_conflict_iterator_new(&it, index);
	while (rc == 0 && git_index_conflict_next(&anc, &ours, &theirs, it) == 0) {
		const git_index_entry *any = theirs ? theirs : ours ? ours : anc;
		if (!owned(any->path, own, nown)) {
			rc = tether_error_set(TETHER_EREFUSED, "commit %.12s does not apply without %.12s (%s conflicts)",
			                      git_oid_tostr_s(git_commit_id(d)), git_oid_tostr_s(git_commit_id(target)),
			                      any->path);
			break;
		}
		json_t *w = json_pack("{s:s}", "path", any->path);
		if (theirs) {
			json_object_set_new(w, "id", json_string(git_oid_tostr_s(&theirs->id)));
			json_object_set_new(w, "mode", json_integer(theirs->mode));
		}
		json_array_append_new(wins, w);
	}
	git_index_conflict_iterator_free(it);
	size_t i;
	json_t *w;
	json_array_foreach(wins, i, w) {
		const char *path = json_string_value(json_object_get(w, "path"));
		if (rc == 0)
			rc = git_index_conflict_remove(index, path);
		if (rc == 0 && json_object_get(w, "id")) {
			git_index_entry e;
			memset(&e, 0, sizeof e);
			e.path = path;
			e.mode = (uint32_t)json_integer_value(json_object_get(w, "mode"));
			git_oid_fromstr(&e.id, json_string_value(json_object_get(w, "id")));
			rc = git_index_add(index, &e);
		}
	}
	json_decref(wins);
	return rc;
}

/* Re-create line[n-2..0] (oldest first) onto `onto`: *tip the last. */
static int replay(git_repository *repo, git_commit **line, size_t n, git_commit *onto, const char *const *own,
                  size_t nown, git_oid *tip)
{
	git_commit *base = onto;
	int rc = 0;
	git_oid_cpy(tip, git_commit_id(onto));
	for (size_t i = n - 1; !rc && i-- > 0;) {
		git_commit *d = line[i];
		git_index *index = NULL;
		git_tree *tree = NULL;
		git_signature *committer = NULL;
		git_oid tree_id, made;
		rc = git_cherrypick_commit(&index, repo, d, base, 0, NULL);
		if (rc == 0 && git_index_has_conflicts(index))
			rc = take_theirs(index, own, nown, d, line[n - 1]);
		if (rc == 0)
			rc = git_index_write_tree_to(&tree_id, index, repo);
		if (rc == 0)
			rc = git_tree_lookup(&tree, repo, &tree_id);
		if (rc == 0)
			rc = committer_for(repo, d, &committer);
		if (rc == 0)
			rc = git_commit_create(&made, repo, NULL, git_commit_author(d), committer, git_commit_message_encoding(d),
			                       git_commit_message(d), tree, 1, (const git_commit **)&base);
		if (rc < 0)
			rc = tt_git_fail(rc, "cannot re-create commit %s", git_oid_tostr_s(git_commit_id(d)));
		git_signature_free(committer);
		git_tree_free(tree);
		git_index_free(index);
		if (base != onto)
			git_commit_free(base);
		base = NULL;
		if (rc == 0) {
			git_oid_cpy(tip, &made);
			rc = git_commit_lookup(&base, repo, &made);
		}
	}
	if (base && base != onto)
		git_commit_free(base);
	return rc;
}

/* The checkout follows the branch from `from` to `to`: only the files that
 * differ between the two trees are written (the tree is clean). */
static int checkout_move(git_repository *repo, const git_oid *from, const git_oid *to)
{
	git_commit *a = NULL, *b = NULL;
	git_tree *baseline = NULL;
	int rc = git_commit_lookup(&a, repo, from);
	if (rc == 0)
		rc = git_commit_lookup(&b, repo, to);
	if (rc == 0)
		rc = git_commit_tree(&baseline, a);
	if (rc == 0) {
		git_checkout_options co;
		git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
		co.checkout_strategy = GIT_CHECKOUT_SAFE;
		co.baseline = baseline;
		rc = git_checkout_tree(repo, (const git_object *)b, &co);
	}
	if (rc < 0)
		rc = tt_git_fail(rc, "cannot move the checkout to %s", git_oid_tostr_s(to));
	git_tree_free(baseline);
	git_commit_free(a);
	git_commit_free(b);
	return rc;
}

int tt_git_abandon(struct tether_vcs *v, const char *id, const char *expect_head, int check_only,
                   const char *const *own, size_t nown, char new_head[41])
{
	git_repository *repo = tt_git_store_repository(v);
	char branch[1024];
	git_oid head, target;
	new_head[0] = '\0';
	if (git_oid_fromstr(&target, id) < 0)
		return tether_error_set(TETHER_EUSAGE, "'%s' is not a full commit id", id);
	int rc = refuse_unfinished(repo);
	current_branch_ref(repo, branch, sizeof branch);
	if (!rc && !*branch)
		rc = tether_error_set(TETHER_EREFUSED, "HEAD is detached: abandon rewrites the current branch; check one "
		                      "out first");
	if (!rc && (rc = git_reference_name_to_id(&head, repo, "HEAD")) < 0)
		rc = tt_git_fail(rc, "cannot read HEAD");
	if (!rc && expect_head && strcmp(git_oid_tostr_s(&head), expect_head) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "HEAD moved: it is %.12s, not %.12s as planned",
		                      git_oid_tostr_s(&head), expect_head);
	git_commit **line = NULL;
	size_t n = 0;
	if (!rc)
		rc = first_parent_line(repo, &head, &target, &line, &n);
	if (!rc)
		rc = check_line(repo, line, n, 0, own, nown, NULL);
	if (!rc)
		rc = refuse_dirty(repo);
	if (rc || check_only) {
		line_free(line, n);
		return rc;
	}
	git_commit *onto = NULL;
	git_oid tip;
	rc = git_commit_parent(&onto, line[n - 1], 0);
	if (rc < 0)
		rc = tt_git_fail(rc, "cannot read the parent of %s", id);
	if (!rc)
		rc = replay(repo, line, n, onto, own, nown, &tip);
	git_commit_free(onto);
	line_free(line, n);
	git_reference *moved = NULL;
	char log[128];
	snprintf(log, sizeof log, "tether abandon %.12s", id);
	/* The one visible step: the branch moves only if it is still at HEAD. */
	if (!rc) {
		rc = git_reference_create_matching(&moved, repo, branch, &tip, 1, &head, log);
		if (rc == GIT_EMODIFIED)
			rc = tether_error_set(TETHER_EREFUSED, "%s moved meanwhile; nothing was changed", branch);
		else if (rc < 0)
			rc = tt_git_fail(rc, "cannot move %s", branch);
	}
	git_reference_free(moved);
	if (!rc && (rc = checkout_move(repo, &head, &tip)) != 0) {
		/* Put the branch back, so the checkout and the branch agree. */
		char why[512];
		snprintf(why, sizeof why, "%s", tether_error_last());
		git_reference *back = NULL;
		int undone = git_reference_create_matching(&back, repo, branch, &head, 1, &tip, "tether abandon: undone");
		git_reference_free(back);
		rc = tether_error_set(rc, "%s; %s", why, undone == 0 ? "the branch is back where it was"
		                                                        : "the branch could not be moved back");
	}
	if (!rc)
		git_oid_tostr(new_head, 41, &tip);
	return rc;
}
