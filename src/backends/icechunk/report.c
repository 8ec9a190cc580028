/* `diff --content` for Icechunk objects: Repository.diff's answer (diff.c)
 * as tether's per-entry report, one entry per node:
 *
 *   added /a (array)      removed /g (group)      renamed /x -> /y
 *   modified /a (array metadata, 2 chunks)        modified /g (group metadata)
 *
 * Icechunk diffs only along one line of history. Two snapshots on
 * diverged branches are compared through their newest common ancestor:
 * what only `b`'s side changed is reported as it is, what only `a`'s side
 * changed inverted (what `a` added, `b` lacks), what both changed as
 * modified. */
#include "backends/icechunk/ic.h"
#include "util/plural.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum change { ADDED, REMOVED, MODIFIED, RENAMED };
static const char *const change_names[] = {"added", "removed", "modified", "renamed"};

/* path -> [change, detail], later categories overriding earlier ones. */
static int put(json_t *by_path, const char *path, enum change c, const char *detail)
{
	json_t *v = json_pack("[i, s]", (int)c, detail);
	return v && json_object_set_new(by_path, path, v) == 0 ? 0 : ic_fail_oom();
}

static int entries_of(const json_t *native, json_t **out)
{
	json_t *by = json_object(), *chunks = json_object_get(native, "updated_chunks");
	int rc = by ? 0 : ic_fail_oom();
	static const struct {
		const char *key;
		enum change c;
		const char *detail;
	} simple[] = {{"new_groups", ADDED, "group"},
	              {"new_arrays", ADDED, "array"},
	              {"deleted_groups", REMOVED, "group"},
	              {"deleted_arrays", REMOVED, "array"},
	              {"updated_groups", MODIFIED, "group metadata"}};
	for (size_t k = 0; rc == 0 && k < sizeof simple / sizeof simple[0]; k++) {
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(native, simple[k].key), i, p) {
			if (rc == 0)
				rc = put(by, json_string_value(p), simple[k].c, simple[k].detail);
		}
	}
	/* Arrays whose metadata or chunks changed, unless already named: a
	 * new array's chunks make it added, not modified. */
	json_t *touched = json_object();
	size_t i;
	json_t *p;
	const char *path;
	json_array_foreach(json_object_get(native, "updated_arrays"), i, p)
		json_object_set_new(touched, json_string_value(p), json_true());
	json_object_foreach(chunks, path, p)
		json_object_set_new(touched, path, json_true());
	json_object_foreach(touched, path, p) {
		if (rc || json_object_get(by, path))
			continue;
		int meta = 0;
		size_t j;
		json_t *q;
		json_array_foreach(json_object_get(native, "updated_arrays"), j, q)
			meta |= strcmp(json_string_value(q), path) == 0;
		json_t *n = json_object_get(chunks, path);
		char detail[96];
		if (meta && n)
			snprintf(detail, sizeof detail, "array metadata, %lld %s", (long long)json_integer_value(n),
			         tt_plural(json_integer_value(n), "chunk", "chunks"));
		else if (n)
			snprintf(detail, sizeof detail, "%lld %s", (long long)json_integer_value(n),
			         tt_plural(json_integer_value(n), "chunk", "chunks"));
		else
			snprintf(detail, sizeof detail, "array metadata");
		rc = put(by, path, MODIFIED, detail);
	}
	json_decref(touched);
	json_array_foreach(json_object_get(native, "moved_nodes"), i, p) {
		char *key = tt_strdupf("%s -> %s", json_string_value(json_array_get(p, 0)),
		                       json_string_value(json_array_get(p, 1)));
		rc = rc ? rc : key ? put(by, key, RENAMED, "") : ic_fail_oom();
		free(key);
	}
	if (rc) {
		json_decref(by);
		return rc;
	}
	*out = by;
	return 0;
}

static int chunks_in(const char *detail)
{
	const char *p = strstr(detail, " chunk"); /* " chunk" or " chunks" */
	if (!p)
		return -1;
	while (p > detail && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return atoi(p);
}

/* Both sides' wording once, their chunk counts summed. */
static void join_details(const char *a, const char *b, char *out, size_t len)
{
	int ca = chunks_in(a), cb = chunks_in(b);
	int meta = strstr(a, "metadata") || strstr(b, "metadata");
	const char *what = strstr(a, "group") || strstr(b, "group") ? "group metadata" : "array metadata";
	int total = (ca > 0 ? ca : 0) + (cb > 0 ? cb : 0);
	if (meta && total)
		snprintf(out, len, "%s, %d %s", what, total, tt_plural(total, "chunk", "chunks"));
	else if (meta)
		snprintf(out, len, "%s", what);
	else if (total)
		snprintf(out, len, "%d %s", total, tt_plural(total, "chunk", "chunks"));
	else
		snprintf(out, len, "%s", *a ? a : b);
}

static int merge_sides(const json_t *side_a, const json_t *side_b, json_t **out)
{
	json_t *merged = json_object();
	const char *path;
	json_t *v;
	int rc = merged ? 0 : ic_fail_oom();
	json_object_foreach((json_t *)side_b, path, v) {
		if (rc == 0 && !json_object_get(side_a, path))
			rc = json_object_set(merged, path, v) ? ic_fail_oom() : 0;
	}
	json_object_foreach((json_t *)side_a, path, v) {
		if (rc)
			break;
		int ca = (int)json_integer_value(json_array_get(v, 0));
		const char *da = json_string_value(json_array_get(v, 1));
		json_t *w = json_object_get(side_b, path);
		if (!w) {
			enum change inv = ca == ADDED ? REMOVED : ca == REMOVED ? ADDED : (enum change)ca;
			rc = put(merged, path, inv, da);
			continue;
		}
		int cb = (int)json_integer_value(json_array_get(w, 0));
		const char *db = json_string_value(json_array_get(w, 1));
		if (ca == REMOVED && cb == REMOVED)
			continue; /* gone on both sides */
		if (cb == REMOVED)
			rc = put(merged, path, REMOVED, db); /* `a` still has it */
		else if (ca == REMOVED)
			rc = put(merged, path, ADDED, db); /* only `b` has it */
		else {
			char detail[160];
			join_details(da, db, detail, sizeof detail);
			rc = put(merged, path, MODIFIED, detail);
		}
	}
	if (rc) {
		json_decref(merged);
		return rc;
	}
	*out = merged;
	return 0;
}

struct row {
	const char *path;
	int change;
	const char *detail;
};

static int cmp_rows(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->change != b->change)
		return a->change - b->change;
	return strcmp(a->path, b->path);
}

static int report(const json_t *by_path, const json_t *native, const char *note, size_t max_entries, json_t **diff)
{
	size_t n = json_object_size(by_path), k = 0;
	struct row *rows = calloc(n ? n : 1, sizeof *rows);
	if (!rows)
		return ic_fail_oom();
	const char *path;
	json_t *v;
	json_object_foreach((json_t *)by_path, path, v)
		rows[k++] = (struct row){path, (int)json_integer_value(json_array_get(v, 0)),
		                         json_string_value(json_array_get(v, 1))};
	qsort(rows, n, sizeof *rows, cmp_rows);
	json_int_t counts[4] = {0, 0, 0, 0};
	json_t *entries = json_array();
	for (size_t i = 0; i < n && entries; i++) {
		counts[rows[i].change]++;
		if (json_array_size(entries) >= max_entries)
			continue;
		json_t *e;
		if (rows[i].change == RENAMED) {
			const char *arrow = strstr(rows[i].path, " -> ");
			e = json_pack("{s:s%, s:s, s:s}", "old_path", rows[i].path, (size_t)(arrow - rows[i].path), "path",
			              arrow + 4, "change", "renamed");
		} else {
			e = json_pack("{s:s, s:s, s:s}", "path", rows[i].path, "change", change_names[rows[i].change], "detail",
			              rows[i].detail);
		}
		json_array_append_new(entries, e);
	}
	free(rows);
	char summary[160];
	snprintf(summary, sizeof summary, "%lld added, %lld removed, %lld modified, %lld renamed", (long long)counts[0],
	         (long long)counts[1], (long long)counts[2], (long long)counts[3]);
	*diff = json_pack("{s:s, s:s, s:o, s:{s:I, s:I, s:I, s:I}, s:b}", "unit", "nodes", "summary", summary, "entries",
	                  entries, "totals", "added", counts[0], "removed", counts[1], "modified", counts[2], "renamed",
	                  counts[3], "truncated", (size_t)(counts[0] + counts[1] + counts[2] + counts[3]) > max_entries);
	if (*diff && native)
		json_object_set(*diff, "native", (json_t *)native);
	if (*diff && note)
		json_object_set_new(*diff, "note", json_string(note));
	return *diff ? 0 : ic_fail_oom();
}

/* The newest snapshot in both histories. */
static int common_ancestor(struct ic_repository *repo, const struct ic_id *a, const struct ic_id *b, struct ic_id *out,
                           int *found)
{
	json_t *ca = NULL, *cb = NULL;
	*found = 0;
	int rc = ic_ancestry(repo, a, 0, &ca);
	if (rc == 0)
		rc = ic_ancestry(repo, b, 0, &cb);
	json_t *in_b = json_object();
	size_t i;
	json_t *e;
	json_array_foreach(cb, i, e)
		json_object_set_new(in_b, json_string_value(json_object_get(e, "id")), json_true());
	json_array_foreach(ca, i, e) {
		const char *id = json_string_value(json_object_get(e, "id"));
		if (!*found && json_object_get(in_b, id)) {
			*found = 1;
			ic_id_parse(id, out);
		}
	}
	json_decref(in_b);
	json_decref(ca);
	json_decref(cb);
	return rc;
}

static int side(struct ic_repository *repo, const struct ic_id *base, const struct ic_id *to, json_t **out)
{
	if (memcmp(base->b, to->b, IC_ID_BYTES) == 0) {
		*out = json_object();
		return *out ? 0 : ic_fail_oom();
	}
	json_t *native = NULL;
	int rc = ic_native_diff(repo, base, to, &native);
	if (rc == 0)
		rc = entries_of(native, out);
	json_decref(native);
	return rc;
}

static int diverged(struct ic_repository *repo, const struct ic_id *a, const struct ic_id *b, size_t max_entries,
                    json_t **diff)
{
	struct ic_id base;
	int found = 0;
	int rc = common_ancestor(repo, a, b, &base, &found);
	if (rc == 0 && !found) {
		char ta[IC_ID_CHARS + 1], tb[IC_ID_CHARS + 1];
		ic_id_text(a, ta);
		ic_id_text(b, tb);
		return tether_error_set(TETHER_ERROR, "%s: snapshots %s and %s share no history", repo->uri, ta, tb);
	}
	json_t *sa = NULL, *sb = NULL, *merged = NULL;
	if (rc == 0)
		rc = side(repo, &base, a, &sa);
	if (rc == 0)
		rc = side(repo, &base, b, &sb);
	if (rc == 0)
		rc = merge_sides(sa, sb, &merged);
	char text[IC_ID_CHARS + 1], note[96];
	ic_id_text(&base, text);
	snprintf(note, sizeof note, "diverged at snapshot %s; changes on either side", text);
	if (rc == 0)
		rc = report(merged, NULL, note, max_entries, diff);
	json_decref(sa);
	json_decref(sb);
	json_decref(merged);
	return rc;
}

int ic_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
            json_t **diff)
{
	(void)listing_a;
	(void)len_a;
	(void)listing_b;
	(void)len_b;
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id ia, ib;
	json_t *native = NULL, *by = NULL;
	*diff = NULL;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	if ((rc = ic_state_snapshot(a, repo.uri, &ia)) == 0 && (rc = ic_state_snapshot(b, repo.uri, &ib)) == 0) {
		if (memcmp(ia.b, ib.b, IC_ID_BYTES) == 0) {
			by = json_object();
			rc = by ? report(by, NULL, NULL, max_entries, diff) : ic_fail_oom();
		} else if ((rc = ic_native_diff(&repo, &ia, &ib, &native)) == 0) {
			rc = entries_of(native, &by);
			if (rc == 0)
				rc = report(by, native, NULL, max_entries, diff);
		} else if (rc == TETHER_EREFUSED) {
			tether_error_clear();
			rc = diverged(&repo, &ia, &ib, max_entries, diff);
		}
	}
	json_decref(native);
	json_decref(by);
	ic_repository_close(&repo);
	return rc;
}
