/* tether_vcs_ops.rewrite_files on libgit2 (vcs.h): the history rewrite
 * behind `upgrade --all-history`.
 *
 * The current branch's commits are replayed oldest first. For each, the
 * tree at the dataset directory is looked up in a map from tree id to its
 * rewritten id, so a commit that did not touch the directory costs one
 * lookup; a tree met for the first time has the files under the named
 * paths handed to the callback, each distinct blob once (a second map).
 * The new tree is made with git_tree_create_updated, which changes only
 * the entries named; the root takes the new directory tree the same way.
 * A commit whose directory tree and parents all stay is kept.
 *
 * A dry run (no expect_head) computes the same "does it change" answers
 * from the blobs' would-be ids (git_odb_hash) and writes no object. */
#include "util/git_error.h"
#include "vcs/git_store.h"

#include <tether/backend.h>

#include <git2.h>

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* A map from object id to (new id, changed)                           */
/* ------------------------------------------------------------------ */

struct oid_slot {
	git_oid key, val;
	int used, changed;
};

struct oid_map {
	struct oid_slot *v;
	size_t cap, n; /* cap a power of two */
};

static size_t slot_of(const struct oid_map *m, const git_oid *id)
{
	size_t h = ((size_t)id->id[0] << 24 | (size_t)id->id[1] << 16 | (size_t)id->id[2] << 8 | id->id[3]);
	size_t i = h & (m->cap - 1);
	while (m->v[i].used && !git_oid_equal(&m->v[i].key, id))
		i = (i + 1) & (m->cap - 1);
	return i;
}

static struct oid_slot *map_get(const struct oid_map *m, const git_oid *id)
{
	if (!m->cap)
		return NULL;
	struct oid_slot *s = &m->v[slot_of(m, id)];
	return s->used ? s : NULL;
}

static void map_put(struct oid_map *m, const git_oid *id, const git_oid *val, int changed)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct oid_map bigger = {calloc(m->cap ? m->cap * 2 : 256, sizeof(struct oid_slot)),
		                         m->cap ? m->cap * 2 : 256, 0};
		if (!bigger.v)
			abort();
		for (size_t i = 0; i < m->cap; i++)
			if (m->v[i].used)
				bigger.v[slot_of(&bigger, &m->v[i].key)] = m->v[i], bigger.n++;
		free(m->v);
		*m = bigger;
	}
	struct oid_slot *s = &m->v[slot_of(m, id)];
	if (!s->used)
		m->n++;
	*s = (struct oid_slot){*id, val ? *val : *id, 1, changed};
}

/* ------------------------------------------------------------------ */
/* One rewrite                                                         */
/* ------------------------------------------------------------------ */

struct rewrite {
	git_repository *repo;
	const char *dir; /* normalised; "" is the top */
	const char *const *paths;
	size_t npaths;
	tether_vcs_rewrite_cb cb;
	void *ud;
	int write;
	struct oid_map blobs, trees, commits;
	/* the changed blobs of the tree being rewritten, for its update */
	git_tree_update *updates;
	char **update_paths;
	size_t nupdates, capupdates;
};

static void rewrite_free(struct rewrite *r)
{
	free(r->blobs.v);
	free(r->trees.v);
	free(r->commits.v);
	for (size_t i = 0; i < r->nupdates; i++)
		free(r->update_paths[i]);
	free(r->update_paths);
	free(r->updates);
}

static void clear_updates(struct rewrite *r)
{
	for (size_t i = 0; i < r->nupdates; i++)
		free(r->update_paths[i]);
	r->nupdates = 0;
}

static void add_update(struct rewrite *r, const char *path, const git_oid *id, git_filemode_t mode)
{
	if (r->nupdates == r->capupdates) {
		r->capupdates = r->capupdates ? r->capupdates * 2 : 16;
		r->updates = realloc(r->updates, r->capupdates * sizeof *r->updates);
		r->update_paths = realloc(r->update_paths, r->capupdates * sizeof *r->update_paths);
		if (!r->updates || !r->update_paths)
			abort();
	}
	r->update_paths[r->nupdates] = strdup(path);
	r->updates[r->nupdates] = (git_tree_update){.action = GIT_TREE_UPDATE_UPSERT, .id = *id, .filemode = mode,
	                                            .path = r->update_paths[r->nupdates]};
	r->nupdates++;
}

/* One file (path relative to dir): what the callback makes of its blob,
 * remembered by blob id; *changed when it differs. */
static int rewrite_blob(struct rewrite *r, const char *path, const git_oid *id, git_filemode_t mode, int *changed)
{
	struct oid_slot *s = map_get(&r->blobs, id);
	if (!s) {
		git_blob *blob;
		int rc = git_blob_lookup(&blob, r->repo, id);
		if (rc < 0)
			return tt_git_fail(rc, "cannot read %s", path);
		char *out = NULL;
		size_t outlen = 0;
		rc = r->cb(r->ud, path, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), &out, &outlen);
		git_blob_free(blob);
		if (rc)
			return rc;
		git_oid nid = *id;
		if (out) {
			rc = r->write ? git_blob_create_from_buffer(&nid, r->repo, out, outlen)
			              : git_odb_hash(&nid, out, outlen, GIT_OBJECT_BLOB);
			free(out);
			if (rc < 0)
				return tt_git_fail(rc, "cannot store the new %s", path);
		}
		map_put(&r->blobs, id, &nid, !git_oid_equal(&nid, id));
		s = map_get(&r->blobs, id);
	}
	if (s->changed) {
		*changed = 1;
		add_update(r, path, &s->val, mode);
	}
	return 0;
}

struct subwalk {
	struct rewrite *r;
	const char *base; /* the path walked, relative to dir */
	int *changed;
	int rc;
};

static int subwalk_entry(const char *root, const git_tree_entry *e, void *payload)
{
	struct subwalk *w = payload;
	git_filemode_t mode = git_tree_entry_filemode(e);
	if (git_tree_entry_type(e) != GIT_OBJECT_BLOB || mode == GIT_FILEMODE_LINK)
		return 0;
	size_t n = strlen(w->base) + strlen(root) + strlen(git_tree_entry_name(e)) + 2;
	char *path = malloc(n);
	if (!path)
		abort();
	snprintf(path, n, "%s/%s%s", w->base, root, git_tree_entry_name(e));
	w->rc = rewrite_blob(w->r, path, git_tree_entry_id(e), mode, w->changed);
	free(path);
	return w->rc ? -1 : 0;
}

/* The dataset directory's tree: its rewritten id, remembered by tree id. */
static int rewrite_dir_tree(struct rewrite *r, const git_oid *tree_id, git_oid *out, int *changed)
{
	struct oid_slot *s = map_get(&r->trees, tree_id);
	if (s) {
		*out = s->val;
		*changed = s->changed;
		return 0;
	}
	git_tree *tree;
	int rc = git_tree_lookup(&tree, r->repo, tree_id);
	if (rc < 0)
		return tt_git_fail(rc, "cannot read the tree of %s", *r->dir ? r->dir : "the top");
	clear_updates(r);
	*changed = 0;
	for (size_t i = 0; !rc && i < r->npaths; i++) {
		git_tree_entry *e = NULL;
		if (git_tree_entry_bypath(&e, tree, r->paths[i]) != 0)
			continue; /* not in this commit */
		if (git_tree_entry_type(e) == GIT_OBJECT_BLOB && git_tree_entry_filemode(e) != GIT_FILEMODE_LINK) {
			rc = rewrite_blob(r, r->paths[i], git_tree_entry_id(e), git_tree_entry_filemode(e), changed);
		} else if (git_tree_entry_type(e) == GIT_OBJECT_TREE) {
			git_tree *sub;
			rc = git_tree_lookup(&sub, r->repo, git_tree_entry_id(e));
			if (rc < 0) {
				rc = tt_git_fail(rc, "cannot read the tree %s", r->paths[i]);
			} else {
				struct subwalk w = {r, r->paths[i], changed, 0};
				int wrc = git_tree_walk(sub, GIT_TREEWALK_PRE, subwalk_entry, &w);
				rc = w.rc ? w.rc : wrc < 0 ? tt_git_fail(wrc, "cannot walk %s", r->paths[i]) : 0;
				git_tree_free(sub);
			}
		}
		git_tree_entry_free(e);
	}
	git_oid nid = *tree_id;
	if (!rc && *changed && r->write) {
		rc = git_tree_create_updated(&nid, r->repo, tree, r->nupdates, r->updates);
		if (rc < 0)
			rc = tt_git_fail(rc, "cannot write the rewritten tree of %s", *r->dir ? r->dir : "the top");
	}
	git_tree_free(tree);
	if (rc)
		return rc;
	map_put(&r->trees, tree_id, &nid, *changed);
	*out = nid;
	return 0;
}

static json_t *oid_json(const git_oid *id)
{
	char hex[GIT_OID_HEXSZ + 1];
	git_oid_tostr(hex, sizeof hex, id);
	return json_string(hex);
}

/* One commit, its parents already done. Appends to `list` when it is
 * re-created. */
static int rewrite_commit(struct rewrite *r, const git_oid *id, json_t *list)
{
	git_commit *c;
	int rc = git_commit_lookup(&c, r->repo, id);
	if (rc < 0)
		return tt_git_fail(rc, "cannot read a commit");
	unsigned np = git_commit_parentcount(c);
	git_oid *parents = calloc(np ? np : 1, sizeof *parents);
	if (!parents)
		abort();
	int changed = 0;
	for (unsigned i = 0; i < np; i++) {
		const git_oid *p = git_commit_parent_id(c, i);
		struct oid_slot *s = map_get(&r->commits, p);
		parents[i] = s ? s->val : *p;
		changed |= s && s->changed;
	}
	git_tree *root = NULL;
	rc = git_commit_tree(&root, c);
	if (rc < 0)
		rc = tt_git_fail(rc, "cannot read a commit's tree");
	git_oid dir_id, new_dir, new_root = *git_commit_tree_id(c);
	int have_dir = 0, dir_changed = 0;
	if (!rc && !*r->dir) {
		dir_id = *git_tree_id(root);
		have_dir = 1;
	} else if (!rc) {
		git_tree_entry *e = NULL;
		if (git_tree_entry_bypath(&e, root, r->dir) == 0 && git_tree_entry_type(e) == GIT_OBJECT_TREE) {
			dir_id = *git_tree_entry_id(e);
			have_dir = 1;
		}
		git_tree_entry_free(e);
	}
	if (!rc && have_dir)
		rc = rewrite_dir_tree(r, &dir_id, &new_dir, &dir_changed);
	if (!rc && dir_changed && r->write) {
		if (!*r->dir) {
			new_root = new_dir;
		} else {
			git_tree_update up = {.action = GIT_TREE_UPDATE_UPSERT, .id = new_dir,
			                      .filemode = GIT_FILEMODE_TREE, .path = r->dir};
			rc = git_tree_create_updated(&new_root, r->repo, root, 1, &up);
			if (rc < 0)
				rc = tt_git_fail(rc, "cannot write a rewritten tree");
		}
	}
	changed |= dir_changed;
	git_oid nid = *id;
	if (!rc && changed && r->write) {
		git_tree *tree = NULL;
		const git_commit **pc = calloc(np ? np : 1, sizeof *pc);
		if (!pc)
			abort();
		rc = git_tree_lookup(&tree, r->repo, &new_root);
		for (unsigned i = 0; rc >= 0 && i < np; i++)
			rc = git_commit_lookup((git_commit **)&pc[i], r->repo, &parents[i]);
		if (rc >= 0)
			rc = git_commit_create(&nid, r->repo, NULL, git_commit_author(c), git_commit_committer(c),
			                       git_commit_message_encoding(c), git_commit_message_raw(c), tree, np, pc);
		if (rc < 0)
			rc = tt_git_fail(rc, "cannot write a rewritten commit");
		for (unsigned i = 0; i < np; i++)
			git_commit_free((git_commit *)pc[i]);
		free(pc);
		git_tree_free(tree);
	}
	if (!rc) {
		map_put(&r->commits, id, &nid, changed);
		if (changed) {
			const char *summary = git_commit_summary(c);
			json_array_append_new(list, json_pack("{s:o, s:o, s:s}", "id", oid_json(id), "new",
			                                      r->write ? oid_json(&nid) : json_null(), "summary",
			                                      summary ? summary : ""));
		}
	}
	git_tree_free(root);
	free(parents);
	git_commit_free(c);
	return rc;
}

/* Which of the re-created commits a remote-tracking ref reaches: one
 * entry per commit, with the first such ref found. */
static int remote_reach(struct rewrite *r, json_t **out)
{
	*out = json_array();
	git_reference_iterator *it;
	int rc = git_reference_iterator_glob_new(&it, r->repo, "refs/remotes/*");
	if (rc < 0)
		return tt_git_fail(rc, "cannot list the remote-tracking refs");
	struct oid_map seen = {0};
	git_reference *ref;
	while (rc >= 0 && git_reference_next(&ref, it) == 0) {
		git_oid tip;
		const char *name = git_reference_name(ref);
		if (git_reference_name_to_id(&tip, r->repo, name) == 0) {
			git_revwalk *walk;
			rc = git_revwalk_new(&walk, r->repo);
			if (rc >= 0 && git_revwalk_push(walk, &tip) == 0) {
				git_oid id;
				while (git_revwalk_next(&id, walk) == 0) {
					struct oid_slot *s = map_get(&r->commits, &id);
					if (s && s->changed && !map_get(&seen, &id)) {
						map_put(&seen, &id, NULL, 0);
						json_array_append_new(*out, json_pack("{s:o, s:s}", "id", oid_json(&id), "ref", name));
					}
				}
			}
			git_revwalk_free(walk);
		}
		git_reference_free(ref);
	}
	git_reference_iterator_free(it);
	free(seen.v);
	return rc < 0 ? tt_git_fail(rc, "cannot walk a remote-tracking ref") : 0;
}

/* Index entries under the rewritten paths that hold a blob the rewrite
 * replaced take the replacement: what was staged stays staged, as the
 * same content in the new layout. */
static int update_index(struct rewrite *r)
{
	git_index *index;
	int rc = git_repository_index(&index, r->repo);
	if (rc < 0)
		return tt_git_fail(rc, "cannot read the index");
	size_t dl = strlen(r->dir);
	for (size_t i = 0; rc >= 0 && i < git_index_entrycount(index); i++) {
		const git_index_entry *e = git_index_get_byindex(index, i);
		const char *rel = e->path;
		if (dl && (strncmp(rel, r->dir, dl) != 0 || rel[dl] != '/'))
			continue;
		rel += dl ? dl + 1 : 0;
		int under = 0;
		for (size_t p = 0; !under && p < r->npaths; p++) {
			size_t pl = strlen(r->paths[p]);
			under = strncmp(rel, r->paths[p], pl) == 0 && (rel[pl] == '\0' || rel[pl] == '/');
		}
		struct oid_slot *s = under ? map_get(&r->blobs, &e->id) : NULL;
		if (!s || !s->changed)
			continue;
		git_index_entry copy = *e;
		copy.id = s->val;
		memset(&copy.ctime, 0, sizeof copy.ctime); /* stat data no longer describes it: git re-reads */
		memset(&copy.mtime, 0, sizeof copy.mtime);
		copy.file_size = 0;
		rc = git_index_add(index, &copy);
	}
	if (rc >= 0)
		rc = git_index_write(index);
	git_index_free(index);
	return rc < 0 ? tt_git_fail(rc, "cannot update the index after the rewrite") : 0;
}

int tt_git_rewrite_files(struct tether_vcs *v, const char *dir, const char *const *paths, size_t npaths,
                         tether_vcs_rewrite_cb cb, void *ud, const char *expect_head, json_t **report)
{
	*report = NULL;
	char *ndir = NULL;
	int rc = *dir ? tt_git_normalize_path(dir, &ndir) : 0;
	if (rc)
		return rc;
	struct rewrite r = {.repo = tt_git_store_repository(v), .dir = ndir ? ndir : "", .paths = paths,
	                    .npaths = npaths, .cb = cb, .ud = ud, .write = expect_head != NULL};
	git_reference *head = NULL;
	const char *branch = NULL;
	git_oid tip;
	if (git_reference_lookup(&head, r.repo, "HEAD") < 0 || git_reference_type(head) != GIT_REFERENCE_SYMBOLIC)
		rc = tether_error_set(TETHER_EREFUSED, "HEAD is detached: a history rewrite moves a branch, so check one out");
	else if (branch = git_reference_symbolic_target(head), git_reference_name_to_id(&tip, r.repo, branch) < 0) {
		/* An unborn branch: no history, nothing to rewrite. */
		*report = json_pack("{s:s, s:n, s:[], s:[]}", "branch", branch, "head", "commits", "remote");
		git_reference_free(head);
		free(ndir);
		return 0;
	}
	char tiphex[GIT_OID_HEXSZ + 1] = "";
	if (!rc)
		git_oid_tostr(tiphex, sizeof tiphex, &tip);
	if (!rc && expect_head && strcmp(expect_head, tiphex) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "%s moved to %.12s since the rewrite was reviewed (at %.12s)", branch,
		                      tiphex, expect_head);
	git_revwalk *walk = NULL;
	if (!rc && ((rc = git_revwalk_new(&walk, r.repo)) < 0 ||
	            (rc = git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE)) < 0 ||
	            (rc = git_revwalk_push(walk, &tip)) < 0))
		rc = tt_git_fail(rc, "cannot walk %s", branch);
	json_t *list = json_array(), *remote = NULL;
	git_oid id;
	while (!rc && git_revwalk_next(&id, walk) == 0)
		rc = rewrite_commit(&r, &id, list);
	git_revwalk_free(walk);
	if (!rc)
		rc = remote_reach(&r, &remote);
	git_oid new_tip = tip;
	struct oid_slot *s = rc ? NULL : map_get(&r.commits, &tip);
	if (s)
		new_tip = s->val;
	if (!rc && expect_head && !git_oid_equal(&new_tip, &tip)) {
		git_reference *moved = NULL;
		int grc = git_reference_create_matching(&moved, r.repo, branch, &new_tip, 1, &tip,
		                                        "tether upgrade --all-history");
		if (grc == GIT_EMODIFIED)
			rc = tether_error_set(TETHER_EREFUSED, "%s moved while its history was rewritten: nothing moved", branch);
		else if (grc < 0)
			rc = tt_git_fail(grc, "cannot move %s", branch);
		git_reference_free(moved);
		if (!rc)
			rc = update_index(&r);
	}
	if (!rc)
		*report = json_pack("{s:s, s:o, s:O, s:O}", "branch", branch, "head", oid_json(&new_tip), "commits", list,
		                    "remote", remote);
	json_decref(list);
	json_decref(remote);
	git_reference_free(head);
	rewrite_free(&r);
	free(ndir);
	return rc;
}
