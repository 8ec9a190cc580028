/* verify_deep: verify's answer, and then the pinned commit read back as a
 * checkout of it would read it: the commit object parsed, its tree and
 * every tree under it parsed, and every blob they name present (its
 * header read, which is where a truncated or foreign object shows). A tag
 * that still names the commit says nothing about a repository whose
 * objects were pruned or damaged since; this does.
 *
 * libgit2's only (the front forwards the call): the native reader looks
 * objects up, it does not parse trees. */
#include "backends/git/gitbe.h"

#include <stdlib.h>
#include <string.h>

struct walk {
	const struct gb_obj *o;
	git_odb *odb;
	char *detail; /* the first object that could not be read */
};

static int walk_entry(const char *root, const git_tree_entry *entry, void *ud)
{
	struct walk *w = ud;
	char hex[GB_HEX_SIZE];
	const git_oid *id = git_tree_entry_id(entry);
	git_object_t type = git_tree_entry_type(entry);
	int rc = 0;

	if (type == GIT_OBJECT_TREE) {
		git_tree *sub = NULL;
		rc = git_tree_lookup(&sub, w->o->repo, id);
		git_tree_free(sub);
	} else if (type == GIT_OBJECT_BLOB) {
		size_t len = 0;
		git_object_t got = GIT_OBJECT_INVALID;
		rc = git_odb_read_header(&len, &got, w->odb, id);
		if (rc == 0 && got != GIT_OBJECT_BLOB)
			rc = -1;
	} else {
		return 0; /* a submodule's commit lives in another repository */
	}
	if (rc < 0) {
		const git_error *e = git_error_last();
		w->detail = gb_strdupf("%s %s (%s%s) cannot be read%s%s", type == GIT_OBJECT_TREE ? "tree" : "blob",
		                       gb_hex(id, hex), root, git_tree_entry_name(entry), e && e->message ? ": " : "",
		                       e && e->message ? e->message : "");
		return -1; /* stop the walk */
	}
	return 0;
}

int gb_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, int *ok, char **detail)
{
	int rc = gb_verify_do(ctx, locator, state, pin_ref, ok, detail);
	if (rc != 0 || !*ok)
		return rc;
	unsigned char raw[GB_OID_SIZE];
	if ((rc = gb_parse_sha20(state, "state", raw)) < 0)
		return rc;
	struct gb_obj o;
	if ((rc = gb_open_cached(ctx, locator, &o)) != 0)
		return rc;
	git_oid id;
	git_oid_fromraw(&id, raw);
	char hex[GB_HEX_SIZE];
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	struct walk w = {.o = &o};
	const git_error *e;
	if (git_commit_lookup(&commit, o.repo, &id) < 0) {
		e = git_error_last();
		w.detail = gb_strdupf("commit %s cannot be read%s%s", gb_hex(&id, hex), e && e->message ? ": " : "",
		                      e && e->message ? e->message : "");
	} else if (git_commit_tree(&tree, commit) < 0) {
		e = git_error_last();
		char tree_hex[GB_HEX_SIZE];
		w.detail = gb_strdupf("tree %s of commit %s cannot be read%s%s", gb_hex(git_commit_tree_id(commit), tree_hex),
		                      gb_hex(&id, hex), e && e->message ? ": " : "", e && e->message ? e->message : "");
	} else if ((rc = git_repository_odb(&w.odb, o.repo)) < 0) {
		rc = tt_git_fail(rc, "git repository %s: cannot open its object database", o.path);
	} else {
		(void)git_tree_walk(tree, GIT_TREEWALK_PRE, walk_entry, &w);
		git_odb_free(w.odb);
	}
	git_tree_free(tree);
	git_commit_free(commit);
	if (rc >= 0 && w.detail) {
		*ok = 0;
		*detail = gb_strdupf("%s, in git repository %s", w.detail, o.path);
	}
	free(w.detail);
	gb_close(&o);
	if (rc < 0) {
		*ok = 0;
		return rc;
	}
	return 0;
}
