/* The dataset's history as tables (export_tables.h), for export and
 * publish. The commits (every commit reachable from any ref, or the
 * ancestors of the revisions given) come from the VCS's batched history
 * walk (history_trees), which reads each distinct .tether/objects tree and
 * each distinct manifest once and says which commit holds which tree; each
 * distinct manifest is parsed once, into the cells of its object row, which
 * every commit holding it shares. Then the listings the manifests name, the
 * refs, and meta. Rows are sorted, so the same history gives the same
 * tables. Cells and their strings live in one arena (export_cells.h). */
#include "core/export.h"

#include "core/export_cells.h"
#include "core/history.h"

#include "core/cancel.h"
#include "core/listing_read.h"
#include "core/listing_stream.h"
#include "format/cjson.h"
#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T TT_COL_TEXT
#define I TT_COL_INT
#define B TT_COL_BOOL

static const struct tt_export_column commits_cols[] = {
	{ "commit_id", T, 0 },       { "change_id", T, 1 },   { "parents", T, 0 },
	{ "author_name", T, 0 },     { "author_email", T, 0 }, { "author_time", I, 0 },
	{ "author_tz_minutes", I, 0 }, { "committer_name", T, 0 }, { "committer_email", T, 0 },
	{ "commit_time", I, 0 },     { "message", T, 0 },
};
static const struct tt_export_column objects_cols[] = {
	{ "commit_id", T, 0 }, { "key", T, 0 },         { "kind", T, 0 },   { "uri", T, 1 },
	{ "locator", T, 0 },   { "policy", T, 0 },      { "write", T, 1 },  { "pin_policy", T, 1 },
	{ "state_id", T, 1 },  { "state", T, 1 },       { "pin", T, 1 },    { "recoverable", B, 1 },
	{ "listing", T, 1 },
};
static const struct tt_export_column states_cols[] = {
	{ "state_id", T, 0 }, { "kind", T, 0 },    { "uri", T, 1 },         { "locator", T, 0 },
	{ "state", T, 0 },    { "pin", T, 1 },     { "pin_ref", T, 1 },     { "recoverable", B, 1 },
	{ "listing", T, 1 },
};
static const struct tt_export_column refs_cols[] = {
	{ "type", T, 0 },
	{ "name", T, 0 },
	{ "commit_id", T, 0 },
};
static const struct tt_export_column listings_cols[] = {
	{ "listing", T, 0 },
	{ "files", I, 0 },
	{ "bytes", I, 0 },
};
static const struct tt_export_column entries_cols[] = {
	{ "listing", T, 0 },
	{ "path", T, 0 },
	{ "content", T, 0 },
	{ "size", I, 0 },
};
static const struct tt_export_column meta_cols[] = {
	{ "name", T, 0 },
	{ "value", T, 0 },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *name;
	const struct tt_export_column *cols;
	size_t ncols, nkey;
} schema[TT_T_COUNT] = {
	[TT_T_COMMITS] = { "commits", commits_cols, N(commits_cols), 1 },
	[TT_T_OBJECTS] = { "objects", objects_cols, N(objects_cols), 2 },
	[TT_T_OBJECT_STATES] = { "object_states", states_cols, N(states_cols), 1 },
	[TT_T_REFS] = { "refs", refs_cols, N(refs_cols), 2 },
	[TT_T_LISTINGS] = { "listings", listings_cols, N(listings_cols), 1 },
	[TT_T_LISTING_ENTRIES] = { "listing_entries", entries_cols, N(entries_cols), 2 },
	[TT_T_META] = { "meta", meta_cols, N(meta_cols), 1 },
};

/* ---- what a manifest gives ---------------------------------------------- */

/* An object row without its commit id: key, kind, uri, locator, policy,
 * write, pin_policy, state_id, state, pin, recoverable, listing. */
#define MROW (N(objects_cols) - 1)
struct mrow {
	struct tt_cell c[MROW];
};

/* The canonical JSON text of v in the arena, or null when v is absent. */
static struct tt_cell cjson_cell(struct tt_arena *a, const json_t *v)
{
	if (!v)
		return tt_cell_null();
	char *s = tt_cjson(v);
	if (!s)
		abort();
	struct tt_cell c = tt_cell_text(a, s);
	free(s);
	return c;
}

static struct tt_cell string_cell(struct tt_arena *a, const json_t *v)
{
	return json_is_string(v) ? tt_cell_textn(a, json_string_value(v), json_string_length(v)) : tt_cell_null();
}

/* The system's address: a locator's "uri", else its "path" (git). */
static struct tt_cell uri_cell(struct tt_arena *a, const json_t *locator)
{
	json_t *u = json_object_get(locator, "uri");
	return string_cell(a, u ? u : json_object_get(locator, "path"));
}

struct tables {
	struct tt_arena *a;
	struct tt_cell_rows rows[TT_T_COUNT]; /* every table but objects */
	/* objects: row r is commit obj_commit[r] (a cell) and manifest
	 * obj_mrow[r]'s cells */
	struct mrow *mrows;
	size_t nmrows, capmrows;
	struct tt_cell *commit_cells;
	uint32_t *obj_commit, *obj_mrow;
	size_t nobj;
};

static void objects_row(const struct tt_export_table *t, size_t r, struct tt_cell *out)
{
	const struct tables *d = t->src;
	out[0] = d->commit_cells[d->obj_commit[r]];
	memcpy(out + 1, d->mrows[d->obj_mrow[r]].c, sizeof d->mrows[0].c);
}

/* One manifest into a new mrow, and its object_states row when it records
 * a state (the first time that state is met). */
static int parse_manifest(struct tables *d, json_t *state_ids, const char *key, const char *data, size_t len,
                          const char *commit, const char *dir, size_t *index)
{
	char *name = tt_strdupf("%s/%s.toml at %.12s", dir, key, commit);
	struct tt_manifest m;
	int rc = tt_manifest_parse_nodigest(key, data, len, name, &m);
	free(name);
	if (rc)
		return rc;
	struct tt_arena *a = d->a;
	json_t *locator = tt_manifest_locator(&m), *policy = tt_manifest_policy(&m), *state = tt_manifest_state(&m);
	json_t *pin_ref = json_object_get(m.doc, "pin_ref"), *rec = json_object_get(m.doc, "recoverable");
	struct tt_cell kind = tt_cell_text(a, tt_manifest_kind(&m)), uri = uri_cell(a, locator),
	               loc = cjson_cell(a, locator), st = cjson_cell(a, state),
	               pin = tt_cell_text(a, tt_manifest_pin(&m)), listing = tt_cell_text(a, tt_manifest_listing(&m)),
	               recoverable = json_is_boolean(rec) ? tt_cell_bool(json_is_true(rec)) : tt_cell_null(),
	               state_id = tt_cell_null();
	if (state) {
		/* A version of a system: the same (kind, locator, state, pin
		 * ref) recorded by any number of commits is one row. */
		json_t *ident = json_pack("{s:s, s:O, s:O}", "kind", tt_manifest_kind(&m), "locator", locator, "state",
		                          state);
		if (ident && pin_ref)
			json_object_set(ident, "pin_ref", pin_ref);
		char hex[65];
		if (!ident || tt_cjson_sha256(ident, hex) != 0)
			abort();
		json_decref(ident);
		state_id = tt_cell_text(a, hex);
		if (!json_object_get(state_ids, hex)) {
			json_object_set_new_nocheck(state_ids, hex, json_true());
			struct tt_cell *row = tt_cell_rows_add(&d->rows[TT_T_OBJECT_STATES]);
			row[0] = state_id;
			row[1] = kind;
			row[2] = uri;
			row[3] = loc;
			row[4] = st;
			row[5] = pin;
			row[6] = cjson_cell(a, pin_ref);
			row[7] = recoverable;
			row[8] = listing;
		}
	}
	if (d->nmrows == d->capmrows) {
		d->capmrows = d->capmrows ? 2 * d->capmrows : 64;
		if (!(d->mrows = realloc(d->mrows, d->capmrows * sizeof *d->mrows)))
			abort();
	}
	struct tt_cell *c = d->mrows[d->nmrows].c;
	c[0] = tt_cell_text(a, key);
	c[1] = kind;
	c[2] = uri;
	c[3] = loc;
	/* a manifest may leave [policy] out (the defaults): the column is
	 * NOT NULL, so the empty policy */
	c[4] = policy ? cjson_cell(a, policy) : tt_cell_kept("{}");
	c[5] = string_cell(a, json_object_get(policy, "write"));
	c[6] = string_cell(a, json_object_get(policy, "pin"));
	c[7] = state_id;
	c[8] = st;
	c[9] = pin;
	c[10] = recoverable;
	c[11] = listing;
	*index = d->nmrows++;
	tt_manifest_free(&m);
	return 0;
}

/* ---- the walk ----------------------------------------------------------- */

/* A commit of the walk: its id (in the arena) and the tree it holds. */
struct commit {
	const char *id;
	int64_t tree; /* index into trees, or -1: no .tether/objects */
};

/* A distinct tree: its manifests are members[start, start + n), by key. */
struct tree {
	size_t start, n;
};

struct walk {
	struct tables *d;
	char *dir;        /* .tether/objects relative to the checkout top */
	json_t *memo;     /* {path "\n" blob: mrow index} */
	json_t *tree_ids; /* {tree id: index into trees} */
	json_t *state_ids;
	json_t *listings; /* {digest: a commit holding it} */
	struct commit *commits;
	size_t ncommits, capcommits;
	struct tree *trees;
	size_t ntrees, captrees;
	uint32_t *members;
	size_t nmembers, capmembers;
	int filling; /* the last tree is fresh: its files are coming */
};

static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap ? 2 * *cap : 64;
	v = realloc(v, *cap * size);
	if (!v)
		abort();
	return v;
}

static int member_by_key(const void *a, const void *b, void *ud)
{
	const struct mrow *m = ud;
	return strcmp(m[*(const uint32_t *)a].c[0].s, m[*(const uint32_t *)b].c[0].s);
}

/* Sort members[lo, hi) by key: git's tree order is not key order ("a-b"
 * before "a" as paths, "a-b.toml" < "a.toml"). An insertion sort: a
 * tree's manifests come nearly sorted. */
static void sort_members(struct walk *w, size_t lo, size_t hi)
{
	for (size_t i = lo + 1; i < hi; i++) {
		uint32_t x = w->members[i];
		size_t j = i;
		while (j > lo && member_by_key(&w->members[j - 1], &x, w->d->mrows) > 0) {
			w->members[j] = w->members[j - 1];
			j--;
		}
		w->members[j] = x;
	}
}

static void end_tree(struct walk *w)
{
	if (!w->filling)
		return;
	struct tree *t = &w->trees[w->ntrees - 1];
	t->n = w->nmembers - t->start;
	sort_members(w, t->start, w->nmembers);
	w->filling = 0;
}

static int on_commit(void *ud, const char *commit, const char *tree, int fresh)
{
	struct walk *w = ud;
	if (tt_cancelled())
		return tt_cancel_error("exporting");
	end_tree(w);
	w->commits = grow(w->commits, &w->capcommits, w->ncommits, sizeof *w->commits);
	struct commit *c = &w->commits[w->ncommits++];
	c->id = tt_arena_strn(w->d->a, commit, strlen(commit));
	c->tree = -1;
	if (!*tree)
		return 0;
	if (fresh) {
		w->trees = grow(w->trees, &w->captrees, w->ntrees, sizeof *w->trees);
		w->trees[w->ntrees] = (struct tree){ w->nmembers, 0 };
		json_object_set_new_nocheck(w->tree_ids, tree, json_integer((json_int_t)w->ntrees));
		c->tree = (int64_t)w->ntrees++;
		w->filling = 1;
		return 0;
	}
	json_t *known = json_object_get(w->tree_ids, tree);
	if (!known)
		return tether_error_set(TETHER_ERROR, "the history walk named tree %s at %.12s before listing it", tree,
		                        commit);
	c->tree = json_integer_value(known);
	return 0;
}

static int on_file(void *ud, const char *path, const char *blob, const char *data, size_t len)
{
	struct walk *w = ud;
	size_t pl = strlen(path);
	if (pl <= 5 || strcmp(path + pl - 5, ".toml") != 0)
		return 0;
	char *memo = tt_strdupf("%s\n%s", path, blob);
	json_t *known = json_object_get(w->memo, memo);
	size_t index = 0;
	int rc = 0;
	const char *commit = w->commits[w->ncommits - 1].id;
	if (known) {
		index = (size_t)json_integer_value(known);
	} else if (data) {
		char *key = strndup(path, pl - 5);
		if (!key)
			abort();
		rc = parse_manifest(w->d, w->state_ids, key, data, len, commit, w->dir, &index);
		free(key);
		if (!rc) {
			json_object_set_new_nocheck(w->memo, memo, json_integer((json_int_t)index));
			const struct tt_cell *listing = &w->d->mrows[index].c[11];
			if (!listing->null && !json_object_get(w->listings, listing->s))
				json_object_set_new_nocheck(w->listings, listing->s, json_string_nocheck(commit));
		}
	} else {
		rc = tether_error_set(TETHER_ERROR, "the history walk named %s/%s at %.12s before reading it", w->dir, path,
		                      commit);
	}
	free(memo);
	if (rc)
		return rc;
	w->members = grow(w->members, &w->capmembers, w->nmembers, sizeof *w->members);
	w->members[w->nmembers++] = (uint32_t)index;
	return 0;
}

static const struct tether_vcs_tree_walk walk_cbs = { on_commit, on_file };

/* The walk from every ref (nrevs 0) or from the revisions given. */
static int walk_history(struct tether_repo *repo, const char *const *revs, size_t nrevs, struct walk *w)
{
	char(*ids)[41] = nrevs ? calloc(nrevs, sizeof *ids) : NULL;
	const char **tips = nrevs ? calloc(nrevs, sizeof *tips) : NULL;
	int rc = 0;
	if (nrevs && (!ids || !tips))
		abort();
	for (size_t i = 0; !rc && i < nrevs; i++) {
		rc = repo->vcs->resolve(repo->vh, revs[i], ids[i]);
		tips[i] = ids[i];
	}
	char *cache = tt_history_cache_path(repo);
	size_t walked = 0;
	if (!rc)
		rc = TT_VCS_GET(repo->vcs, history_trees)(repo->vh, tips, nrevs, w->dir, cache, &walk_cbs, w, &walked);
	end_tree(w);
	free(cache);
	free(ids);
	free(tips);
	return rc;
}

static int commit_by_id(const void *a, const void *b)
{
	return strcmp(((const struct commit *)a)->id, ((const struct commit *)b)->id);
}

/* The objects table: by commit id, then key (each tree's members are). */
static void objects_table(struct walk *w)
{
	struct tables *d = w->d;
	if (w->ncommits) /* before the first commit, commits is NULL: no qsort */
		qsort(w->commits, w->ncommits, sizeof *w->commits, commit_by_id);
	size_t n = 0;
	for (size_t i = 0; i < w->ncommits; i++)
		if (w->commits[i].tree >= 0)
			n += w->trees[w->commits[i].tree].n;
	d->commit_cells = calloc(w->ncommits ? w->ncommits : 1, sizeof *d->commit_cells);
	d->obj_commit = malloc((n ? n : 1) * sizeof *d->obj_commit);
	d->obj_mrow = malloc((n ? n : 1) * sizeof *d->obj_mrow);
	if (!d->commit_cells || !d->obj_commit || !d->obj_mrow)
		abort();
	for (size_t i = 0; i < w->ncommits; i++) {
		d->commit_cells[i] = tt_cell_kept(w->commits[i].id);
		if (w->commits[i].tree < 0)
			continue;
		const struct tree *t = &w->trees[w->commits[i].tree];
		for (size_t j = 0; j < t->n; j++) {
			d->obj_commit[d->nobj] = (uint32_t)i;
			d->obj_mrow[d->nobj++] = w->members[t->start + j];
		}
	}
}

/* ---- the commits' facts ------------------------------------------------- */

static const char *info_string(struct tt_arena *a, const json_t *c, const char *name)
{
	json_t *v = json_object_get(c, name);
	return json_is_string(v) ? tt_arena_strn(a, json_string_value(v), json_string_length(v)) : NULL;
}

struct commit_info {
	int64_t time;
	const char *id;
	struct tt_cell *row; /* filled below */
};

static int by_time(const void *a, const void *b)
{
	const struct commit_info *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* The commits table, by commit time, then id; *newest: the newest time. */
static int commits_table(struct tether_repo *repo, struct walk *w, int64_t *newest)
{
	struct tables *d = w->d;
	const char **ids = malloc((w->ncommits + 1) * sizeof *ids);
	if (!ids)
		abort();
	for (size_t i = 0; i < w->ncommits; i++)
		ids[i] = w->commits[i].id;
	json_t *infos = NULL;
	int rc = w->ncommits ? TT_VCS_GET(repo->vcs, commits_info)(repo->vh, ids, w->ncommits, &infos) : 0;
	free(ids);
	if (rc)
		return rc;
	size_t n = json_array_size(infos), i;
	struct commit_info *order = calloc(n ? n : 1, sizeof *order);
	struct tt_cell_rows rows = { .ncols = d->rows[TT_T_COMMITS].ncols };
	json_t *c;
	if (!order)
		abort();
	*newest = 0;
	json_array_foreach(infos, i, c) {
		struct tt_arena *a = d->a;
		json_t *parents = json_object_get(c, "parents"), *p;
		size_t np = json_array_size(parents), k;
		char *joined = calloc(1, np * 41 + 1);
		if (!joined)
			abort();
		json_array_foreach(parents, k, p) {
			if (k)
				strcat(joined, " ");
			strcat(joined, json_string_value(p));
		}
		struct tt_cell *row = tt_cell_rows_add(&rows);
		row[0] = tt_cell_kept(info_string(a, c, "id"));
		row[1] = tt_cell_kept(info_string(a, c, "change_id"));
		row[2] = tt_cell_text(a, joined);
		row[3] = tt_cell_kept(info_string(a, c, "author"));
		row[4] = tt_cell_kept(info_string(a, c, "email"));
		row[5] = tt_cell_int(json_integer_value(json_object_get(c, "time")));
		row[6] = tt_cell_int(json_integer_value(json_object_get(c, "tz")));
		row[7] = tt_cell_kept(info_string(a, c, "committer"));
		row[8] = tt_cell_kept(info_string(a, c, "committer_email"));
		row[9] = tt_cell_int(json_integer_value(json_object_get(c, "commit_time")));
		row[10] = tt_cell_kept(info_string(a, c, "message"));
		free(joined);
		order[i] = (struct commit_info){ row[9].i, row[0].s, NULL };
		if (row[9].i > *newest)
			*newest = row[9].i;
	}
	json_decref(infos);
	/* rows by time: a permutation of the rows made above */
	for (i = 0; i < n; i++)
		order[i].row = rows.v + i * rows.ncols;
	qsort(order, n, sizeof *order, by_time);
	for (i = 0; i < n; i++)
		memcpy(tt_cell_rows_add(&d->rows[TT_T_COMMITS]), order[i].row, rows.ncols * sizeof *rows.v);
	free(order);
	tt_cell_rows_free(&rows);
	return 0;
}

/* ---- listings ----------------------------------------------------------- */

/* A name as text: as a report shows it (listing_read.h), since a text
 * column cannot hold bytes that are not UTF-8. */
static struct tt_cell path_cell(struct tt_arena *a, const char *s, size_t n)
{
	char *hex = NULL, *shown = tt_listing_display_name(s, n, &hex);
	if (!shown)
		abort();
	free(hex);
	struct tt_cell c = tt_cell_text(a, shown);
	free(shown);
	return c;
}

static int read_listing(struct tether_repo *repo, struct tables *d, const char *digest, const char *commit)
{
	struct tt_listing_stream *s = NULL;
	int rc = tt_listing_stream_open(repo, commit, digest, &s);
	if (rc)
		return rc;
	struct tt_listing_reader *r = tt_listing_reader_from(tt_listing_stream_fill, s);
	const struct tt_listing_line *line;
	int64_t files = 0, bytes = 0;
	struct tt_cell name = tt_cell_text(d->a, digest);
	while ((rc = tt_listing_reader_next(r, &line)) == 1) {
		struct tt_cell *row = tt_cell_rows_add(&d->rows[TT_T_LISTING_ENTRIES]);
		row[0] = name;
		row[1] = path_cell(d->a, line->path, line->path_len);
		row[2] = path_cell(d->a, line->token, line->token_len);
		row[3] = tt_cell_int((int64_t)line->size);
		files++;
		bytes += (int64_t)line->size;
	}
	if (rc == TT_LISTING_SOURCE)
		rc = tt_listing_reader_source_rc(r);
	else if (rc < 0)
		rc = tether_error_set(TETHER_ECONFIG, "listing %s at %.12s: line %zu is not a listing line", digest, commit,
		                      tt_listing_reader_lineno(r));
	tt_listing_reader_free(r);
	tt_listing_stream_close(s);
	if (!rc) {
		struct tt_cell *row = tt_cell_rows_add(&d->rows[TT_T_LISTINGS]);
		row[0] = name;
		row[1] = tt_cell_int(files);
		row[2] = tt_cell_int(bytes);
	}
	return rc;
}

/* ---- the tables --------------------------------------------------------- */

static void meta_row(struct tables *d, const char *name, const char *value)
{
	struct tt_cell *row = tt_cell_rows_add(&d->rows[TT_T_META]);
	row[0] = tt_cell_text(d->a, name);
	row[1] = tt_cell_text(d->a, value);
}

/* When the export says it was made: $SOURCE_DATE_EPOCH when set, else the
 * newest commit time exported, so a rerun over the same history writes the
 * same bytes. */
static void export_time(int64_t newest, char out[32])
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	time_t t = (time_t)newest;
	if (sde && *sde)
		t = (time_t)strtoll(sde, NULL, 10);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int exported(const struct walk *w, const char *id)
{
	struct commit key = { id, 0 };
	return id && w->ncommits && bsearch(&key, w->commits, w->ncommits, sizeof key, commit_by_id) != NULL;
}

static int refs_and_meta(struct tether_repo *repo, struct walk *w, const char *const *revs, size_t nrevs,
                         int64_t newest)
{
	struct tables *d = w->d;
	json_t *refs = NULL, *c;
	int rc = TT_VCS_GET(repo->vcs, list_refs)(repo->vh, &refs);
	size_t i;
	if (rc)
		return rc;
	json_array_foreach(refs, i, c) {
		/* only refs naming an exported commit: --rev limits them too */
		if (!exported(w, json_string_value(json_object_get(c, "commit"))))
			continue;
		struct tt_cell *row = tt_cell_rows_add(&d->rows[TT_T_REFS]);
		row[0] = string_cell(d->a, json_object_get(c, "type"));
		row[1] = string_cell(d->a, json_object_get(c, "name"));
		row[2] = string_cell(d->a, json_object_get(c, "commit"));
	}
	json_decref(refs);
	char when[32], schema_version[16];
	export_time(newest, when);
	snprintf(schema_version, sizeof schema_version, "%d", TT_EXPORT_SCHEMA_VERSION);
	json_t *revlist = json_array();
	for (size_t r = 0; r < nrevs; r++)
		json_array_append_new(revlist, json_string(revs[r]));
	char *revtext = tt_cjson(revlist);
	json_decref(revlist);
	meta_row(d, "dataset_id", repo->id);
	meta_row(d, "export_time", when);
	meta_row(d, "revisions", nrevs ? revtext : "all refs");
	meta_row(d, "schema_version", schema_version);
	meta_row(d, "tether_version", TETHER_VERSION);
	meta_row(d, "vcs", repo->vcs->name);
	free(revtext);
	return 0;
}

static void walk_free(struct walk *w)
{
	json_decref(w->memo);
	json_decref(w->tree_ids);
	json_decref(w->state_ids);
	json_decref(w->listings);
	free(w->commits);
	free(w->trees);
	free(w->members);
	free(w->dir);
}

int tt_export_collect(struct tether_repo *repo, const char *const *revs, size_t nrevs, struct tt_export_data *out)
{
	memset(out, 0, sizeof *out);
	struct tables *d = calloc(1, sizeof *d);
	if (!d)
		abort();
	d->a = tt_arena_new();
	out->own = d;
	for (size_t t = 0; t < TT_T_COUNT; t++) {
		d->rows[t].ncols = schema[t].ncols;
		out->t[t] = (struct tt_export_table){ schema[t].name, schema[t].cols, schema[t].ncols, schema[t].nkey,
			                              0, tt_cell_rows_row, &d->rows[t] };
	}
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	if (!TT_VCS_GET(repo->vcs, commits_info) || !TT_VCS_GET(repo->vcs, list_refs) ||
	    !TT_VCS_GET(repo->vcs, history_trees))
		return tether_error_set(TETHER_ECONFIG, "the %s module is too old to export (no history_trees)",
		                        repo->vcs->name);
	struct walk w = { .d = d, .dir = tt_repo_vcs_path(repo, ".tether/objects"), .memo = json_object(),
		          .tree_ids = json_object(), .state_ids = json_object(), .listings = json_object() };
	rc = walk_history(repo, revs, nrevs, &w);
	int64_t newest = 0;
	if (!rc) {
		objects_table(&w);
		rc = commits_table(repo, &w, &newest);
	}
	if (!rc) {
		const char *digest;
		json_t *at;
		json_object_foreach(w.listings, digest, at) {
			if ((rc = read_listing(repo, d, digest, json_string_value(at))) != 0)
				break;
		}
	}
	if (!rc)
		rc = refs_and_meta(repo, &w, revs, nrevs, newest);
	if (!rc) {
		tt_cell_rows_sort(&d->rows[TT_T_OBJECT_STATES]);
		tt_cell_rows_sort(&d->rows[TT_T_LISTINGS]);
		tt_cell_rows_sort(&d->rows[TT_T_LISTING_ENTRIES]);
		for (size_t t = 0; t < TT_T_COUNT; t++)
			out->t[t].nrows = d->rows[t].n;
		out->t[TT_T_OBJECTS].nrows = d->nobj;
		out->t[TT_T_OBJECTS].row = objects_row;
		out->t[TT_T_OBJECTS].src = d;
	}
	walk_free(&w);
	return rc;
}

void tt_export_data_free(struct tt_export_data *d)
{
	struct tables *t = d->own;
	if (t) {
		for (size_t i = 0; i < TT_T_COUNT; i++)
			tt_cell_rows_free(&t->rows[i]);
		free(t->mrows);
		free(t->commit_cells);
		free(t->obj_commit);
		free(t->obj_mrow);
		tt_arena_free(t->a);
		free(t);
	}
	memset(d, 0, sizeof *d);
}
