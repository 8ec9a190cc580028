/* diff and history, from metadata git already has: the trees of two
 * commits with renames found and lines counted (git diff -M --numstat),
 * and the commits of a ref with the branches and tags on each (git log
 * --decorate). libgit2 runs no external diff driver or textconv. */
#include "backends/git/gitbe.h"
#include <tether/listing.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* diff                                                                */
/* ------------------------------------------------------------------ */

struct diff_acc {
	json_t *entries;
	size_t max_entries;
	json_int_t added, removed, modified, renamed;
	json_int_t lines_added, lines_deleted;
	int truncated;
};

/* Renames and type changes count as modified, so that added + removed +
 * modified is the number of entries. */
static const char *change_name(const git_diff_delta *d, struct diff_acc *acc)
{
	switch (d->status) {
	case GIT_DELTA_ADDED:
	case GIT_DELTA_COPIED:
		acc->added++;
		return "added";
	case GIT_DELTA_DELETED:
		acc->removed++;
		return "removed";
	case GIT_DELTA_RENAMED:
		acc->modified++;
		acc->renamed++;
		return "renamed";
	default:
		acc->modified++;
		return "modified";
	}
}

/* Lines added and deleted in one file; a binary file has none. */
static int line_stats(git_diff *diff, size_t i, size_t *adds, size_t *dels)
{
	git_patch *patch = NULL;
	int rc = git_patch_from_diff(&patch, diff, i);

	*adds = *dels = 0;
	if (rc == 0 && patch)
		rc = git_patch_line_stats(NULL, adds, dels, patch);
	git_patch_free(patch);
	return rc < 0 ? tt_git_fail(rc, "cannot count the changed lines") : 0;
}

/* A path as the report shows it: a git path is bytes, and one that is not
 * UTF-8 would make json_pack fail and the entry vanish. Such a name is shown
 * with \xHH escapes and its bytes given in hex beside it (`bytes_key`), as
 * the file backend does for names inside a listing. */
static int set_path(json_t *e, const char *key, const char *bytes_key, const char *path)
{
	char *bytes_hex = NULL;
	char *shown = tether_listing_display_name(path, strlen(path), &bytes_hex);
	if (!shown)
		return -1;
	json_object_set_new(e, key, json_string(shown));
	if (bytes_hex)
		json_object_set_new(e, bytes_key, json_string(bytes_hex));
	free(shown);
	free(bytes_hex);
	return 0;
}

static json_t *diff_entry(const git_diff_delta *d, const char *change, size_t adds, size_t dels)
{
	const char *path = d->status == GIT_DELTA_DELETED ? d->old_file.path : d->new_file.path;
	json_int_t delta = (json_int_t)adds - (json_int_t)dels;
	json_t *e = json_pack("{s:s, s:I, s:I, s:I, s:I}", "change", change, "size", (json_int_t)adds, "size_delta",
	                      delta, "lines_added", (json_int_t)adds, "lines_deleted", (json_int_t)dels);

	if (e && set_path(e, "path", "path_bytes", path) != 0) {
		json_decref(e);
		return NULL;
	}
	if (e && d->status == GIT_DELTA_RENAMED && set_path(e, "old_path", "old_path_bytes", d->old_file.path) != 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}

static int add_delta(git_diff *diff, size_t i, struct diff_acc *acc)
{
	const git_diff_delta *d = git_diff_get_delta(diff, i);
	const char *change = change_name(d, acc);
	size_t adds, dels;
	int rc = line_stats(diff, i, &adds, &dels);

	if (rc < 0)
		return rc;
	acc->lines_added += (json_int_t)adds;
	acc->lines_deleted += (json_int_t)dels;
	if (json_array_size(acc->entries) >= acc->max_entries) {
		acc->truncated = 1;
		return 0;
	}
	if (json_array_append_new(acc->entries, diff_entry(d, change, adds, dels)) < 0)
		return gb_fail_oom();
	return 0;
}

static int tree_diff(const struct gb_obj *o, git_tree *a, git_tree *b, git_diff **out)
{
	git_diff_options opts;
	git_diff_find_options find;
	int rc;

	git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	git_diff_find_options_init(&find, GIT_DIFF_FIND_OPTIONS_VERSION);
	rc = git_diff_tree_to_tree(out, o->repo, a, b, &opts);
	if (rc == 0) {
		find.flags = GIT_DIFF_FIND_RENAMES;
		if ((rc = git_diff_find_similar(*out, &find)) < 0) {
			git_diff_free(*out);
			*out = NULL;
		}
	}
	return rc < 0 ? tt_git_fail(rc, "git repository %s: cannot diff two commits", o->path) : 0;
}

static json_t *diff_result(struct diff_acc *acc)
{
	char summary[256];

	snprintf(summary, sizeof summary,
	         "%" JSON_INTEGER_FORMAT " added, %" JSON_INTEGER_FORMAT " removed, %" JSON_INTEGER_FORMAT
	         " modified (%" JSON_INTEGER_FORMAT " renamed), +%" JSON_INTEGER_FORMAT " -%" JSON_INTEGER_FORMAT
	         " lines",
	         acc->added, acc->removed, acc->modified, acc->renamed, acc->lines_added, acc->lines_deleted);
	return json_pack("{s:s, s:s, s:O, s:{s:I, s:I, s:I, s:I}, s:b}", "unit", "files", "summary", summary,
	                 "entries", acc->entries, "totals", "added", acc->added, "removed", acc->removed,
	                 "modified", acc->modified, "size_delta", acc->lines_added - acc->lines_deleted,
	                 "truncated", acc->truncated);
}

static int commit_tree(const struct gb_obj *o, const json_t *state, const char *which, git_tree **tree)
{
	git_commit *commit = NULL;
	git_oid id;
	int rc = gb_parse_sha(state, which, &id);

	if (rc == 0)
		rc = gb_lookup_commit(o, &id, &commit);
	if (rc == 0 && (rc = git_commit_tree(tree, commit)) < 0)
		rc = tt_git_fail(rc, "git repository %s: cannot read a commit's tree", o->path);
	git_commit_free(commit);
	return rc;
}

static int diff_open(const struct gb_obj *o, const json_t *a, const json_t *b, size_t max_entries, json_t **out)
{
	struct diff_acc acc = {json_array(), max_entries, 0, 0, 0, 0, 0, 0, 0};
	git_tree *ta = NULL, *tb = NULL;
	git_diff *diff = NULL;
	int rc = acc.entries ? commit_tree(o, a, "first state", &ta) : gb_fail_oom();

	if (rc == 0)
		rc = commit_tree(o, b, "second state", &tb);
	if (rc == 0)
		rc = tree_diff(o, ta, tb, &diff);
	for (size_t i = 0; rc == 0 && i < git_diff_num_deltas(diff); i++)
		rc = add_delta(diff, i, &acc);
	if (rc == 0 && !(*out = diff_result(&acc)))
		rc = gb_fail_oom();
	git_diff_free(diff);
	git_tree_free(ta);
	git_tree_free(tb);
	json_decref(acc.entries);
	return rc;
}

int gb_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
            json_t **diff)
{
	struct gb_obj o;
	int rc = gb_open(ctx, locator, &o);

	(void)listing_a;
	(void)len_a;
	(void)listing_b;
	(void)len_b;
	if (rc < 0)
		return rc;
	rc = diff_open(&o, a, b, max_entries, diff);
	gb_close(&o);
	return rc;
}

/* ------------------------------------------------------------------ */
/* history                                                             */
/* ------------------------------------------------------------------ */

/* A JSON string from text git stored, which need not be UTF-8: bytes that
 * do not make valid UTF-8 become '?'. */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s ? s : "");
	char *copy;

	if (j || !s)
		return j;
	if (!(copy = strdup(s)))
		return NULL;
	for (size_t i = 0; copy[i]; i++)
		if ((unsigned char)copy[i] >= 0x80)
			copy[i] = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

static int is_decoration(const char *refname)
{
	return strncmp(refname, "refs/heads/", 11) == 0 || strncmp(refname, "refs/tags/", 10) == 0;
}

static int add_decoration(json_t *by_commit, git_reference *ref)
{
	git_object *peeled = NULL;
	char hex[GB_HEX_SIZE];
	json_t *names;

	if (!is_decoration(git_reference_name(ref)) || git_reference_peel(&peeled, ref, GIT_OBJECT_COMMIT) < 0)
		return 0; /* a tag of a tree or blob decorates no commit */
	gb_hex(git_object_id(peeled), hex);
	git_object_free(peeled);
	if (!(names = json_object_get(by_commit, hex))) {
		names = json_array();
		if (json_object_set_new(by_commit, hex, names) < 0)
			return gb_fail_oom();
	}
	return json_array_append_new(names, json_text(git_reference_shorthand(ref))) < 0 ? gb_fail_oom() : 0;
}

/* Branches and tags by the commit they name: {sha: [names]}. */
static int decorations(const struct gb_obj *o, json_t **out)
{
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	int rc = git_reference_iterator_new(&it, o->repo);

	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot list its refs", o->path);
	*out = json_object();
	rc = *out ? 0 : gb_fail_oom();
	while (rc == 0 && git_reference_next(&ref, it) == 0) {
		rc = add_decoration(*out, ref);
		git_reference_free(ref);
	}
	git_reference_iterator_free(it);
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static json_t *history_entry(git_commit *commit, const json_t *by_commit)
{
	const git_signature *author = git_commit_author(commit);
	char hex[GB_HEX_SIZE];
	json_t *refs;

	gb_hex(git_commit_id(commit), hex);
	refs = json_object_get(by_commit, hex);
	refs = refs ? json_incref(refs) : json_array();
	return json_pack("{s:s, s:I, s:o, s:o, s:o, s:o}", "id", hex, "time", (json_int_t)author->when.time,
	                 "message", json_text(git_commit_summary(commit)), "author", json_text(author->name),
	                 "email", json_text(author->email), "refs", refs);
}

static int start_walk(const struct gb_obj *o, git_revwalk **walk)
{
	git_commit *tip = NULL;
	int rc = gb_resolve_position(o, &tip);

	if (rc < 0)
		return rc;
	rc = git_revwalk_new(walk, o->repo);
	if (rc == 0)
		rc = git_revwalk_sorting(*walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
	if (rc == 0)
		rc = git_revwalk_push(*walk, git_commit_id(tip));
	git_commit_free(tip);
	if (rc < 0) {
		git_revwalk_free(*walk);
		*walk = NULL;
		return tt_git_fail(rc, "git repository %s: cannot walk the history of '%s'", o->path, gb_position(o));
	}
	return 0;
}

static int walk_history(const struct gb_obj *o, git_revwalk *walk, const json_t *by_commit, int max,
                        json_t *out)
{
	git_commit *commit = NULL;
	git_oid id;
	int rc;

	while (max <= 0 || (int)json_array_size(out) < max) {
		rc = git_revwalk_next(&id, walk);
		if (rc == GIT_ITEROVER)
			return 0;
		if (rc < 0)
			return tt_git_fail(rc, "git repository %s: cannot walk the history", o->path);
		if ((rc = gb_lookup_commit(o, &id, &commit)) < 0)
			return rc;
		rc = json_array_append_new(out, history_entry(commit, by_commit));
		git_commit_free(commit);
		if (rc < 0)
			return gb_fail_oom();
	}
	return 0;
}

static int history_open(const struct gb_obj *o, int max_count, json_t **entries)
{
	git_revwalk *walk = NULL;
	json_t *by_commit = NULL;
	int rc = start_walk(o, &walk);

	if (rc == 0)
		rc = decorations(o, &by_commit);
	if (rc == 0 && !(*entries = json_array()))
		rc = gb_fail_oom();
	if (rc == 0 && (rc = walk_history(o, walk, by_commit, max_count, *entries)) < 0) {
		json_decref(*entries);
		*entries = NULL;
	}
	json_decref(by_commit);
	git_revwalk_free(walk);
	return rc;
}

int gb_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	struct gb_obj o;
	int rc = gb_open(ctx, locator, &o);

	if (rc < 0)
		return rc;
	rc = history_open(&o, max_count, entries);
	gb_close(&o);
	return rc;
}
