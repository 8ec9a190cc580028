/* What changed between two snapshots of a catalog, per table: created,
 * dropped, altered, and rows inserted and deleted, from metadata only.
 *
 * Over (lo, hi] (the two snapshots in order): tables visible at one end and
 * not the other were created or dropped; a table at both ends is modified
 * when a snapshot in between altered it (altered_table:<id> in its
 * changes), renamed it, or changed its rows. Rows inserted are the data
 * files and inlined rows that began in (lo, hi]; rows deleted follow from
 * live(lo) + inserted - live(hi). Compaction rewrites files (the spec's
 * merge_adjacent back-dates them), so a split can count a rewritten file
 * on both sides; the net live(hi) - live(lo) is exact. A diff from a newer
 * snapshot to an older one is the same comparison read backwards. */
#include "backends/ducklake/dl.h"
#include "util/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int state_snapshot(const json_t *state, const char *which, int64_t *id)
{
	json_t *v = json_object_get(state, "snapshot_id");
	if (!json_is_integer(v))
		return tether_error_set(TETHER_ECONFIG, "ducklake diff: state %s has no snapshot_id", which);
	*id = json_integer_value(v);
	return 0;
}

struct altered {
	int64_t *ids;
	size_t n;
};

static int take_changes(void *ud, int n, const char *const *vals)
{
	struct altered *a = ud;
	return n > 0 && vals[0] ? dl_changes_altered(vals[0], &a->ids, &a->n) : 0;
}

static int was_altered(const struct altered *a, int64_t id)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->ids[i] == id)
			return 1;
	return 0;
}

struct totals {
	json_int_t created, dropped, modified, renamed, inserted, deleted;
};

static int add_entry(json_t *entries, size_t max, int *truncated, const char *change, const struct dl_table *t,
                     const char *old_name, int64_t inserted, int64_t deleted, int altered)
{
	if (json_array_size(entries) >= max) {
		*truncated = 1;
		return 0;
	}
	char *path = dl_table_name(t->schema, t->name);
	char detail[160];
	if (strcmp(change, "added") == 0)
		snprintf(detail, sizeof detail, "created, %" PRId64 " rows", inserted);
	else if (strcmp(change, "removed") == 0)
		snprintf(detail, sizeof detail, "dropped, %" PRId64 " rows", deleted);
	else
		snprintf(detail, sizeof detail, "%s+%" PRId64 " rows, -%" PRId64 " rows", altered ? "altered, " : "",
		         inserted, deleted);
	json_t *e = path ? json_pack("{s:s, s:s, s:s, s:I, s:I, s:b}", "path", path, "change", change, "detail", detail,
	                             "inserted", (json_int_t)inserted, "deleted", (json_int_t)deleted, "altered",
	                             altered)
	                 : NULL;
	free(path);
	if (e && old_name)
		json_object_set_new(e, "old_path", json_string(old_name));
	if (!e || json_array_append_new(entries, e) != 0)
		return tether_error_set(TETHER_ERROR, "out of memory");
	return 0;
}

static int compare(struct dl_conn *c, int64_t a, int64_t b, size_t max, json_t *entries, int *truncated,
                   struct totals *tot)
{
	int reversed = a > b;
	int64_t lo = reversed ? b : a, hi = reversed ? a : b;
	struct dl_tables at_lo = {0}, at_hi = {0};
	struct altered alt = {0};
	int rc = dl_tables_at(c, lo, &at_lo);
	if (!rc)
		rc = dl_tables_at(c, hi, &at_hi);
	char *sql = tt_strdupf("SELECT changes_made FROM ducklake_snapshot_changes WHERE snapshot_id > %" PRId64
	                       " AND snapshot_id <= %" PRId64,
	                       lo, hi);
	if (!rc)
		rc = sql ? dl_conn_query(c, sql, take_changes, &alt) : tether_error_set(TETHER_ERROR, "out of memory");
	free(sql);
	/* Tables at the newer end: created, or at both ends and changed. */
	for (size_t i = 0; !rc && i < at_hi.n; i++) {
		const struct dl_table *t = &at_hi.v[i];
		const struct dl_table *old = dl_tables_find(&at_lo, t->id);
		int64_t live_lo = 0, live_hi = 0, inserted = 0;
		rc = dl_live_rows(c, t->id, hi, &live_hi);
		if (!rc && old)
			rc = dl_live_rows(c, t->id, lo, &live_lo);
		if (!rc && old)
			rc = dl_inserted_rows(c, t->id, lo, hi, &inserted);
		if (rc)
			break;
		if (!old) {
			if (reversed) {
				tot->dropped++;
				tot->deleted += live_hi;
				rc = add_entry(entries, max, truncated, "removed", t, NULL, 0, live_hi, 0);
			} else {
				tot->created++;
				tot->inserted += live_hi;
				rc = add_entry(entries, max, truncated, "added", t, NULL, live_hi, 0, 0);
			}
			continue;
		}
		int64_t deleted = inserted + live_lo - live_hi;
		if (deleted < 0) /* a count the catalog cannot account for; keep the net exact */
			inserted -= deleted, deleted = 0;
		int renamed = strcmp(old->schema, t->schema) != 0 || strcmp(old->name, t->name) != 0;
		int altered = was_altered(&alt, t->id);
		if (!inserted && !deleted && !renamed && !altered)
			continue;
		if (reversed) {
			int64_t x = inserted;
			inserted = deleted;
			deleted = x;
		}
		tot->modified++;
		tot->renamed += renamed;
		tot->inserted += inserted;
		tot->deleted += deleted;
		char *other = renamed ? dl_table_name(reversed ? t->schema : old->schema, reversed ? t->name : old->name)
		                      : NULL;
		rc = add_entry(entries, max, truncated, "modified", reversed ? old : t, other, inserted, deleted, altered);
		free(other);
	}
	/* Tables only at the older end: dropped (or, read backwards, created). */
	for (size_t i = 0; !rc && i < at_lo.n; i++) {
		const struct dl_table *t = &at_lo.v[i];
		if (dl_tables_find(&at_hi, t->id))
			continue;
		int64_t live = 0;
		rc = dl_live_rows(c, t->id, lo, &live);
		if (rc)
			break;
		if (reversed) {
			tot->created++;
			tot->inserted += live;
			rc = add_entry(entries, max, truncated, "added", t, NULL, live, 0, 0);
		} else {
			tot->dropped++;
			tot->deleted += live;
			rc = add_entry(entries, max, truncated, "removed", t, NULL, 0, live, 0);
		}
	}
	dl_tables_free(&at_lo);
	dl_tables_free(&at_hi);
	free(alt.ids);
	return rc;
}

int dl_diff(struct dl_conn *c, int64_t a, int64_t b, size_t max_entries, json_t **diff)
{
	json_t *entries = json_array();
	if (!entries)
		return tether_error_set(TETHER_ERROR, "out of memory");
	int truncated = 0;
	struct totals tot = {0};
	int rc = a == b ? 0 : compare(c, a, b, max_entries, entries, &truncated, &tot);
	if (rc) {
		json_decref(entries);
		return rc;
	}
	char summary[256];
	snprintf(summary, sizeof summary,
	         "snapshot %" PRId64 " -> %" PRId64 ": %" JSON_INTEGER_FORMAT " tables created, %" JSON_INTEGER_FORMAT
	         " dropped, %" JSON_INTEGER_FORMAT " modified; +%" JSON_INTEGER_FORMAT " rows, -%" JSON_INTEGER_FORMAT
	         " rows",
	         a, b, tot.created, tot.dropped, tot.modified, tot.inserted, tot.deleted);
	/* totals in the engine's terms (added, removed, modified, renamed:
	 * tables), and the rows besides. */
	*diff = json_pack("{s:s, s:s, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:b}", "unit", "tables", "summary",
	                  summary, "entries", entries, "totals", "added", tot.created, "removed", tot.dropped,
	                  "modified", tot.modified, "renamed", tot.renamed, "rows_inserted", tot.inserted,
	                  "rows_deleted", tot.deleted, "truncated", truncated);
	return *diff ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

int dl_diff_states(struct dl_conn *c, const json_t *a, const json_t *b, size_t max_entries, json_t **diff)
{
	int64_t ia, ib;
	int rc = state_snapshot(a, "a", &ia);
	if (!rc)
		rc = state_snapshot(b, "b", &ib);
	return rc ? rc : dl_diff(c, ia, ib, max_entries, diff);
}
