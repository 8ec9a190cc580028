/* History and diff from the table metadata alone: the parent chain of
 * snapshots, each described by its summary (operation and the optional
 * counters of spec Appendix F: "append: +5 rows, +1 files"). Manifests
 * (Avro) are not read, so a snapshot whose summary lacks a counter shows
 * without it rather than with a guess. */
#include "backends/iceberg/ib.h"

#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "+5 rows, -2 rows, +1 files, -1 files", from the counters present. */
static void counts_text(const json_t *snap, char *out, size_t cap)
{
	static const struct {
		const char *key, *fmt;
	} parts[] = {
		{"added-records", "+%lld rows"},     {"deleted-records", "-%lld rows"},
		{"added-data-files", "+%lld files"}, {"deleted-data-files", "-%lld files"},
	};
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < sizeof parts / sizeof parts[0] && n < cap; i++) {
		int64_t v = ib_md_summary_count(snap, parts[i].key);
		if (v <= 0)
			continue;
		if (n)
			n += (size_t)snprintf(out + n, cap - n, ", ");
		if (n < cap)
			n += (size_t)snprintf(out + n, cap - n, parts[i].fmt, (long long)v);
	}
}

static const char *operation(const json_t *snap)
{
	const char *op = json_string_value(json_object_get(json_object_get(snap, "summary"), "operation"));
	return op ? op : "snapshot";
}

static json_t *refs_of(const json_t *md, int64_t id)
{
	json_t *out = json_array();
	const char *name;
	json_t *ref;
	json_object_foreach(json_object_get(md, "refs"), name, ref)
		if (out && ib_json_id(json_object_get(ref, "snapshot-id")) == id)
			json_array_append_new(out, json_string(name));
	if (out && !json_object_get(json_object_get(md, "refs"), "main") &&
	    ib_json_id(json_object_get(md, "current-snapshot-id")) == id)
		json_array_append_new(out, json_string("main"));
	return out;
}

int ib_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	struct ib_table t;
	int64_t id;
	*entries = NULL;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	json_t *out = json_array();
	if ((rc = ib_position_id(&t, &id)) == 0 && !out)
		rc = ib_fail_oom();
	/* A valid chain visits each snapshot once: a parent cycle in a
	 * damaged file ends there. */
	size_t left = json_array_size(json_object_get(t.md, "snapshots"));
	for (int n = 0; rc == 0 && id != -1 && left-- > 0 && (max_count <= 0 || n < max_count); n++) {
		const json_t *s = ib_md_snapshot(t.md, id);
		if (!s)
			break; /* expired: the chain ends here */
		char counts[160], msg[200], sid[24];
		counts_text(s, counts, sizeof counts);
		snprintf(msg, sizeof msg, "%s%s%s", operation(s), *counts ? ": " : "", counts);
		snprintf(sid, sizeof sid, "%lld", (long long)id);
		json_int_t ms = json_integer_value(json_object_get(s, "timestamp-ms"));
		json_t *e = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:o}", "id", sid, "short_id", sid, "time", ms / 1000,
		                      "time_ms", ms, "message", msg, "operation", operation(s), "refs", refs_of(t.md, id));
		int64_t records = ib_md_summary_count(s, "total-records");
		if (e && records >= 0)
			json_object_set_new(e, "total_records", json_integer(records));
		if (!e || json_array_append_new(out, e))
			rc = ib_fail_oom();
		id = ib_md_parent(s);
	}
	ib_table_close(&t);
	if (rc)
		json_decref(out);
	else
		*entries = out;
	return rc;
}

static json_t *snapshot_entry(const json_t *snap)
{
	char counts[160], sid[24], text[200];
	counts_text(snap, counts, sizeof counts);
	snprintf(sid, sizeof sid, "%lld", (long long)ib_json_id(json_object_get(snap, "snapshot-id")));
	snprintf(text, sizeof text, "%s%s%s", operation(snap), *counts ? ": " : "", counts);
	return json_pack("{s:s, s:s, s:s, s:s}", "change", operation(snap), "path", sid, "detail", counts, "text", text);
}

/* a is not an ancestor of b: the tables' total-* counters compared. */
static json_t *totals_compared(const json_t *sa, const json_t *sb)
{
	int64_t ra = sa ? ib_md_summary_count(sa, "total-records") : 0;
	int64_t rb = sb ? ib_md_summary_count(sb, "total-records") : 0;
	int64_t fa = sa ? ib_md_summary_count(sa, "total-data-files") : 0;
	int64_t fb = sb ? ib_md_summary_count(sb, "total-data-files") : 0;
	char summary[200];
	if (ra < 0 || rb < 0 || fa < 0 || fb < 0)
		snprintf(summary, sizeof summary, "diverged; the snapshots' summaries lack total counters");
	else
		snprintf(summary, sizeof summary, "diverged: %+lld rows, %+lld files (%lld -> %lld rows)",
		         (long long)(rb - ra), (long long)(fb - fa), (long long)ra, (long long)rb);
	return json_pack("{s:s, s:s, s:[], s:b, s:b}", "unit", "snapshots", "summary", summary, "entries", "truncated", 0,
	                 "diverged", 1);
}

int ib_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
            json_t **diff)
{
	(void)listing_a, (void)len_a, (void)listing_b, (void)len_b;
	struct ib_table t;
	int64_t ia, ib;
	*diff = NULL;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	if ((rc = ib_state_id(a, t.what, &ia)) || (rc = ib_state_id(b, t.what, &ib)))
		goto out;
	const json_t *sb = ib_md_snapshot(t.md, ib), *sa = ib_md_snapshot(t.md, ia);
	if ((ib != -1 && !sb) || (ia != -1 && !sa)) {
		rc = tether_error_set(TETHER_ENOTFOUND, "%s no longer holds snapshot %lld", t.what,
		                      (long long)(ib != -1 && !sb ? ib : ia));
		goto out;
	}
	if (ia != -1 && !ib_md_is_ancestor(t.md, ia, ib)) {
		*diff = totals_compared(sa, sb);
		goto out;
	}
	json_t *entries = json_array();
	size_t count = 0;
	int64_t rows = 0;
	size_t left = json_array_size(json_object_get(t.md, "snapshots"));
	for (int64_t cur = ib; entries && cur != -1 && cur != ia && left-- > 0;) {
		const json_t *s = ib_md_snapshot(t.md, cur);
		if (!s)
			break;
		int64_t added = ib_md_summary_count(s, "added-records"), deleted = ib_md_summary_count(s, "deleted-records");
		rows += (added > 0 ? added : 0) - (deleted > 0 ? deleted : 0);
		if (count++ < max_entries)
			json_array_append_new(entries, snapshot_entry(s));
		cur = ib_md_parent(s);
	}
	char summary[160];
	snprintf(summary, sizeof summary, "%zu %s, %+lld rows", count, count == 1 ? "snapshot" : "snapshots",
	         (long long)rows);
	*diff = entries ? json_pack("{s:s, s:s, s:o, s:b}", "unit", "snapshots", "summary", summary, "entries", entries,
	                            "truncated", count > max_entries)
	                : NULL;
	if (!*diff)
		rc = ib_fail_oom();
out:
	if (rc == 0 && !*diff)
		rc = ib_fail_oom();
	ib_table_close(&t);
	return rc;
}
