/* The dataset's history as tables (export_tables.h), for export and
 * publish: the commits to export (every commit reachable from any ref, or
 * the ancestors of the revisions given), each commit's .tether/objects tree
 * read once per distinct tree id and each distinct manifest parsed once,
 * the listings the manifests name, the refs, and meta. Rows are sorted, so
 * the same history gives the same tables. */
#include "core/export.h"

#include "core/cancel.h"
#include "core/listing_read.h"
#include "core/listing_stream.h"
#include "format/cjson.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/jsonsort.h"

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

/* The canonical JSON text of v, or JSON null when v is absent. */
static json_t *cjson_or_null(const json_t *v)
{
	if (!v)
		return json_null();
	char *s = tt_cjson(v);
	if (!s)
		abort();
	json_t *j = json_string_nocheck(s);
	free(s);
	return j;
}

static json_t *string_or_null(const json_t *v)
{
	return json_is_string(v) ? json_incref((json_t *)v) : json_null();
}

/* The system's address: a locator's "uri", else its "path" (git). */
static json_t *uri_of(const json_t *locator)
{
	json_t *u = json_object_get(locator, "uri");
	return string_or_null(u ? u : json_object_get(locator, "path"));
}

/* One manifest as the object row without its commit id (cells 1..), and
 * its object_states row when it records a state. */
struct parsed {
	json_t *object; /* [key, kind, uri, ...] */
	json_t *state;  /* the object_states row, or NULL */
};

static int parse_manifest(const char *key, const char *data, size_t len, const char *commit, const char *dir,
                          struct parsed *out)
{
	char *name = tt_strdupf("%s/%s.toml at %.12s", dir, key, commit);
	struct tt_manifest m;
	int rc = tt_manifest_parse_nodigest(key, data, len, name, &m);
	free(name);
	if (rc)
		return rc;
	json_t *locator = tt_manifest_locator(&m), *policy = tt_manifest_policy(&m), *state = tt_manifest_state(&m);
	json_t *pin_ref = json_object_get(m.doc, "pin_ref"), *rec = json_object_get(m.doc, "recoverable");
	const char *pin = tt_manifest_pin(&m), *listing = tt_manifest_listing(&m);
	json_t *state_id = json_null();
	out->state = NULL;
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
		state_id = json_string_nocheck(hex);
		out->state = json_pack("[O, s, o, o, o, s?, o, o, s?]", state_id, tt_manifest_kind(&m), uri_of(locator),
		                       cjson_or_null(locator), cjson_or_null(state), pin, cjson_or_null(pin_ref),
		                       json_is_boolean(rec) ? json_incref(rec) : json_null(), listing);
	}
	out->object = json_pack("[s, s, o, o, o, o, o, o, o, s?, o, s?]", key, tt_manifest_kind(&m), uri_of(locator),
	                        cjson_or_null(locator), cjson_or_null(policy),
	                        string_or_null(json_object_get(policy, "write")),
	                        string_or_null(json_object_get(policy, "pin")), state_id, cjson_or_null(state), pin,
	                        json_is_boolean(rec) ? json_incref(rec) : json_null(), listing);
	tt_manifest_free(&m);
	if (!out->object || (state && !out->state))
		abort();
	return 0;
}

/* ---- the walk ----------------------------------------------------------- */

struct walk {
	struct tether_repo *repo;
	char *dir;          /* .tether/objects relative to the checkout top */
	json_t *trees;      /* {tree id: [object row without commit id, ...]} */
	json_t *manifests;  /* {key "\n" bytes: object row without commit} */
	json_t *states;     /* {state id: row} */
	json_t *listings;   /* {digest: a commit holding it} */
	json_t *entries;    /* the tree being read: its manifests' rows (no commit id) */
	const char *commit; /* the commit being read */
};

static int on_file(void *ud, const char *path, const char *data, size_t len)
{
	struct walk *w = ud;
	size_t pl = strlen(path);
	if (pl <= 5 || strcmp(path + pl - 5, ".toml") != 0)
		return 0;
	char *key = strndup(path, pl - 5);
	size_t ml = pl - 5 + 1 + len;
	char *memo = malloc(ml + 1);
	if (!key || !memo)
		abort();
	memcpy(memo, key, pl - 5);
	memo[pl - 5] = '\n';
	memcpy(memo + pl - 4, data, len);
	memo[ml] = '\0';
	int rc = 0;
	if (!json_object_getn(w->manifests, memo, ml)) {
		struct parsed p;
		rc = parse_manifest(key, data, len, w->commit, w->dir, &p);
		if (!rc) {
			json_object_setn_new_nocheck(w->manifests, memo, ml, p.object);
			if (p.state) {
				const char *id = json_string_value(json_array_get(p.state, 0));
				if (!json_object_get(w->states, id))
					json_object_set_new_nocheck(w->states, id, p.state);
				else
					json_decref(p.state);
			}
			const char *listing = json_string_value(json_array_get(p.object, 11));
			if (listing && !json_object_get(w->listings, listing))
				json_object_set_new_nocheck(w->listings, listing, json_string_nocheck(w->commit));
		}
	}
	if (!rc)
		json_array_append(w->entries, json_object_getn(w->manifests, memo, ml));
	free(key);
	free(memo);
	return rc;
}

/* Rows by their first two cells (text). */
static int by_first_cells(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	for (size_t i = 0; i < 2; i++) {
		const char *s = json_string_value(json_array_get(x, i)), *t = json_string_value(json_array_get(y, i));
		int c = strcmp(s ? s : "", t ? t : "");
		if (c)
			return c;
	}
	return 0;
}

/* The manifests of `commit`: its tree read once per tree id. */
static int commit_objects(struct walk *w, const char *commit, json_t **entries)
{
	char tree[41];
	int rc = w->repo->vcs->tree_id(w->repo->vh, commit, w->dir, tree);
	if (rc)
		return rc;
	if (!*tree) {
		*entries = NULL;
		return 0;
	}
	json_t *known = json_object_get(w->trees, tree);
	if (!known) {
		w->entries = json_array();
		w->commit = commit;
		rc = w->repo->vcs->read_tree(w->repo->vh, commit, w->dir, on_file, w);
		if (rc) {
			json_decref(w->entries);
			return rc;
		}
		tt_json_array_sort(w->entries, by_first_cells); /* by key: read_tree's is git's tree order */
		json_object_set_new_nocheck(w->trees, tree, w->entries);
		known = w->entries;
	}
	*entries = known;
	return 0;
}

/* ---- which commits ------------------------------------------------------ */

static int add_id(void *ud, const char *id)
{
	if (tt_cancelled())
		return tt_cancel_error("listing the commits");
	json_object_set_new_nocheck(ud, id, json_null());
	return 0;
}

/* Facts of the ids in `want` not yet in `have` (filled in), in batches. */
static int fetch_infos(struct tether_repo *repo, json_t *want, json_t *have)
{
	const char **ids = malloc((json_object_size(want) + 1) * sizeof *ids);
	size_t n = 0;
	const char *id;
	json_t *v;
	if (!ids)
		abort();
	json_object_foreach(want, id, v) if (!json_object_get(have, id)) ids[n++] = id;
	json_t *infos = NULL;
	int rc = n ? TT_VCS_GET(repo->vcs, commits_info)(repo->vh, ids, n, &infos) : 0;
	size_t i;
	json_array_foreach(infos, i, v) json_object_set(have, json_string_value(json_object_get(v, "id")), v);
	json_decref(infos);
	free(ids);
	return rc;
}

/* {id: info} of every commit to export. */
static int choose_commits(struct tether_repo *repo, const char *const *revs, size_t nrevs, json_t **out)
{
	json_t *infos = json_object(), *frontier = json_object();
	int rc = 0;
	if (!nrevs) {
		rc = repo->vcs->each_commit(repo->vh, add_id, frontier);
		if (!rc)
			rc = fetch_infos(repo, frontier, infos);
	} else {
		for (size_t i = 0; !rc && i < nrevs; i++) {
			char id[41];
			rc = repo->vcs->resolve(repo->vh, revs[i], id);
			if (!rc)
				json_object_set_new_nocheck(frontier, id, json_null());
		}
		/* the ancestors, a generation at a time */
		while (!rc && json_object_size(frontier)) {
			rc = fetch_infos(repo, frontier, infos);
			json_t *next = json_object();
			const char *id;
			json_t *v;
			json_object_foreach(frontier, id, v) {
				size_t i;
				json_t *p;
				json_array_foreach(json_object_get(json_object_get(infos, id), "parents"), i, p)
					if (!json_object_get(infos, json_string_value(p)))
						json_object_set_new_nocheck(next, json_string_value(p), json_null());
			}
			json_decref(frontier);
			frontier = next;
			if (!rc && tt_cancelled())
				rc = tt_cancel_error("listing the commits");
		}
	}
	json_decref(frontier);
	if (rc) {
		json_decref(infos);
		return rc;
	}
	*out = infos;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	return strcmp(json_string_value(json_object_get(x, "id")), json_string_value(json_object_get(y, "id")));
}

/* Commits by commit time, then id: the same history, the same order. */
static int by_time(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t tx = json_integer_value(json_object_get(x, "commit_time")),
	           ty = json_integer_value(json_object_get(y, "commit_time"));
	if (tx != ty)
		return tx < ty ? -1 : 1;
	return strcmp(json_string_value(json_object_get(x, "id")), json_string_value(json_object_get(y, "id")));
}

static json_t *commit_row(const json_t *c)
{
	json_t *parents = json_object_get(c, "parents");
	size_t n = json_array_size(parents), i;
	char *joined = calloc(1, n * 41 + 1);
	json_t *p;
	if (!joined)
		abort();
	json_array_foreach(parents, i, p) {
		if (i)
			strcat(joined, " ");
		strcat(joined, json_string_value(p));
	}
	json_t *row = json_pack("[O, O, s, O, O, O, O, O, O, O, O]", json_object_get(c, "id"),
	                        json_object_get(c, "change_id") ? json_object_get(c, "change_id") : json_null(),
	                        joined, json_object_get(c, "author"), json_object_get(c, "email"),
	                        json_object_get(c, "time"), json_object_get(c, "tz"), json_object_get(c, "committer"),
	                        json_object_get(c, "committer_email"), json_object_get(c, "commit_time"),
	                        json_object_get(c, "message"));
	free(joined);
	if (!row)
		abort();
	return row;
}

/* ---- listings ----------------------------------------------------------- */

/* A name as text: as a report shows it (listing_read.h), since a text
 * column cannot hold bytes that are not UTF-8. */
static json_t *path_text(const char *s, size_t n)
{
	char *hex = NULL, *shown = tt_listing_display_name(s, n, &hex);
	if (!shown)
		abort();
	free(hex);
	json_t *j = json_string(shown);
	free(shown);
	return j;
}

static int read_listing(struct tether_repo *repo, const char *digest, const char *commit, json_t *listings,
                        json_t *entries)
{
	struct tt_listing_stream *s = NULL;
	int rc = tt_listing_stream_open(repo, commit, digest, &s);
	if (rc)
		return rc;
	struct tt_listing_reader *r = tt_listing_reader_from(tt_listing_stream_fill, s);
	const struct tt_listing_line *line;
	json_int_t files = 0, bytes = 0;
	while ((rc = tt_listing_reader_next(r, &line)) == 1) {
		json_t *row = json_pack("[s, o, o, I]", digest, path_text(line->path, line->path_len),
		                        path_text(line->token, line->token_len), (json_int_t)line->size);
		if (!row)
			abort();
		json_array_append_new(entries, row);
		files++;
		bytes += line->size;
	}
	if (rc == TT_LISTING_SOURCE)
		rc = tt_listing_reader_source_rc(r);
	else if (rc < 0)
		rc = tether_error_set(TETHER_ECONFIG, "listing %s at %.12s: line %zu is not a listing line", digest, commit,
		                      tt_listing_reader_lineno(r));
	tt_listing_reader_free(r);
	tt_listing_stream_close(s);
	if (!rc)
		json_array_append_new(listings, json_pack("[s, I, I]", digest, files, bytes));
	return rc;
}

/* ---- the tables --------------------------------------------------------- */

static json_t *object_values_sorted(json_t *obj)
{
	json_t *rows = json_array();
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v) json_array_append(rows, v);
	tt_json_array_sort(rows, by_first_cells);
	return rows;
}

static void meta_row(json_t *rows, const char *name, const char *value)
{
	json_array_append_new(rows, json_pack("[s, s]", name, value));
}

/* When the export says it was made: $SOURCE_DATE_EPOCH when set, else the
 * newest commit time exported, so a rerun over the same history writes the
 * same bytes. */
static void export_time(json_int_t newest, char out[32])
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	time_t t = (time_t)newest;
	if (sde && *sde)
		t = (time_t)strtoll(sde, NULL, 10);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void json_row(const struct tt_export_table *t, size_t r, struct tt_cell *out)
{
	const json_t *row = json_array_get(t->src, r);
	for (size_t c = 0; c < t->ncols; c++) {
		const json_t *v = json_array_get(row, c);
		struct tt_cell *o = &out[c];
		memset(o, 0, sizeof *o);
		o->null = !v || json_is_null(v);
		if (json_is_string(v)) {
			o->s = json_string_value(v);
			o->len = json_string_length(v);
		} else if (json_is_integer(v))
			o->i = json_integer_value(v);
		else if (json_is_boolean(v))
			o->i = json_is_true(v);
	}
}

int tt_export_collect(struct tether_repo *repo, const char *const *revs, size_t nrevs, struct tt_export_data *out)
{
	memset(out, 0, sizeof *out);
	for (size_t t = 0; t < TT_T_COUNT; t++) {
		out->rows[t] = json_array();
		out->t[t] = (struct tt_export_table){ schema[t].name, schema[t].cols, schema[t].ncols, schema[t].nkey,
			                              0, json_row, NULL };
	}
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	if (!TT_VCS_GET(repo->vcs, commits_info) || !TT_VCS_GET(repo->vcs, list_refs))
		return tether_error_set(TETHER_ECONFIG, "the %s module is too old to export (no commits_info)",
		                        repo->vcs->name);
	json_t *infos = NULL;
	rc = choose_commits(repo, revs, nrevs, &infos);
	if (rc)
		return rc;

	struct walk w = { .repo = repo, .dir = tt_repo_vcs_path(repo, ".tether/objects"), .trees = json_object(),
		          .manifests = json_object(), .states = json_object(), .listings = json_object() };
	json_t *commits = json_array(), *c;
	const char *cid;
	json_object_foreach(infos, cid, c) json_array_append(commits, c);
	/* objects: by commit id, each tree's rows sorted by key once, when it
	 * is read, so the table comes out in its order with no sort of its own */
	tt_json_array_sort(commits, by_id);
	size_t i;
	json_array_foreach(commits, i, c) {
		json_t *commit_id = json_object_get(c, "id"), *entries = NULL;
		if ((rc = commit_objects(&w, json_string_value(commit_id), &entries)) != 0)
			break;
		size_t j;
		json_t *e;
		json_array_foreach(entries, j, e) {
			json_t *row = json_array();
			json_array_append(row, commit_id);
			json_array_extend(row, e);
			json_array_append_new(out->rows[TT_T_OBJECTS], row);
		}
		if (tt_cancelled()) {
			rc = tt_cancel_error("exporting");
			break;
		}
	}
	/* commits: by commit time, then id */
	tt_json_array_sort(commits, by_time);
	json_int_t newest = 0;
	json_array_foreach(commits, i, c) {
		json_array_append_new(out->rows[TT_T_COMMITS], commit_row(c));
		if (json_integer_value(json_object_get(c, "commit_time")) > newest)
			newest = json_integer_value(json_object_get(c, "commit_time"));
	}
	if (!rc) {
		json_t *states = object_values_sorted(w.states);
		json_decref(out->rows[TT_T_OBJECT_STATES]);
		out->rows[TT_T_OBJECT_STATES] = states;
		const char *digest;
		json_t *at;
		json_object_foreach(w.listings, digest, at) {
			rc = read_listing(repo, digest, json_string_value(at), out->rows[TT_T_LISTINGS],
			                  out->rows[TT_T_LISTING_ENTRIES]);
			if (rc)
				break;
		}
		tt_json_array_sort(out->rows[TT_T_LISTINGS], by_first_cells);
		tt_json_array_sort(out->rows[TT_T_LISTING_ENTRIES], by_first_cells);
	}
	json_t *refs = NULL;
	if (!rc)
		rc = TT_VCS_GET(repo->vcs, list_refs)(repo->vh, &refs);
	if (!rc) {
		json_array_foreach(refs, i, c) {
			/* only refs naming an exported commit: --rev limits them too */
			if (json_object_get(infos, json_string_value(json_object_get(c, "commit"))))
				json_array_append_new(out->rows[TT_T_REFS],
				                      json_pack("[O, O, O]", json_object_get(c, "type"),
				                                json_object_get(c, "name"), json_object_get(c, "commit")));
		}
		json_t *meta = out->rows[TT_T_META];
		char when[32], schema_version[16];
		export_time(newest, when);
		snprintf(schema_version, sizeof schema_version, "%d", TT_EXPORT_SCHEMA_VERSION);
		json_t *revlist = json_array();
		for (size_t r = 0; r < nrevs; r++)
			json_array_append_new(revlist, json_string(revs[r]));
		char *revtext = tt_cjson(revlist);
		json_decref(revlist);
		meta_row(meta, "dataset_id", repo->id);
		meta_row(meta, "export_time", when);
		meta_row(meta, "revisions", nrevs ? revtext : "all refs");
		meta_row(meta, "schema_version", schema_version);
		meta_row(meta, "tether_version", TETHER_VERSION);
		meta_row(meta, "vcs", repo->vcs->name);
		free(revtext);
	}
	for (size_t t = 0; t < TT_T_COUNT; t++) {
		out->t[t].nrows = json_array_size(out->rows[t]);
		out->t[t].src = out->rows[t];
	}
	json_decref(refs);
	json_decref(commits);
	json_decref(infos);
	json_decref(w.trees);
	json_decref(w.manifests);
	json_decref(w.states);
	json_decref(w.listings);
	free(w.dir);
	return rc;
}

void tt_export_data_free(struct tt_export_data *d)
{
	for (size_t t = 0; t < TT_T_COUNT; t++)
		json_decref(d->rows[t]);
	memset(d, 0, sizeof *d);
}
