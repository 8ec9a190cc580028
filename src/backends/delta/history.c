/* History (`tether log KEY`) and diff (`tether diff --content`): the
 * commits of the log, newest first, each with its operation and metrics
 * from its commitInfo; a diff is the commits in (a, b]. Only the commits
 * the log still holds are listed: cleanup takes commitInfo with the JSON
 * (checkpoints carry none). */
#include "backends/delta/delta.h"

#include "util/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dl_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	*entries = NULL;
	struct dl_loc loc;
	struct dl_log log;
	int rc = dl_read_locator(locator, &loc);
	if (!rc)
		rc = dl_log_open(ctx, locator, loc.uri, 1, &log);
	if (rc)
		return rc;
	rc = dl_log_load_state(&log);
	int64_t top = loc.at >= 0 ? loc.at : log.latest;
	if (!rc && top > log.latest)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no version %" PRId64 " (latest: %" PRId64 ")", log.uri, top,
		                      log.latest);
	json_t *out = rc ? NULL : json_array();
	if (!rc && !out)
		rc = dl_fail_oom();
	for (int64_t v = top; rc == 0 && v >= 0 && dl_log_has_json(&log, v); v--) {
		if (max_count > 0 && json_array_size(out) >= (size_t)max_count)
			break;
		if (tether_bctx_cancelled(ctx)) {
			rc = tether_bctx_cancel(ctx, "reading the Delta log");
			break;
		}
		json_t *actions = NULL;
		rc = dl_read_commit(log.store, log.uri, v, &actions);
		json_t *e = rc ? NULL : dl_history_entry(v, actions);
		json_decref(actions);
		if (!rc && (!e || json_array_append_new(out, e)))
			rc = dl_fail_oom();
	}
	/* The newest entry is where the table is now. */
	if (!rc && loc.at < 0 && json_array_size(out))
		json_array_append_new(json_object_get(json_array_get(out, 0), "refs"), json_string("latest"));
	dl_log_close(&log);
	if (rc)
		json_decref(out);
	else
		*entries = out;
	return rc;
}

static void add_total(json_t *totals, const char *key, const json_t *metrics)
{
	const json_t *v = json_object_get(metrics, key);
	if (json_is_integer(v))
		json_object_set_new(totals, key, json_integer(json_integer_value(json_object_get(totals, key)) +
		                                              json_integer_value(v)));
}

static char *totals_summary(size_t commits, size_t gone, const json_t *totals)
{
	char *metrics = dl_commit_summary("", totals);
	/* dl_commit_summary puts "(no commitInfo)" for an empty operation,
	 * then ": ..." for the counts: keep only the counts. */
	const char *counts = strstr(metrics, ": ");
	char *s = tt_strdupf("%zu commit%s%s%s%s", commits, commits == 1 ? "" : "s", counts ? ": " : "",
	                     counts ? counts + 2 : "", "");
	free(metrics);
	if (s && gone) {
		char *t = tt_strdupf("%s (%zu more no longer in the log)", s, gone);
		free(s);
		s = t;
	}
	return s;
}

int dl_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
            json_t **diff)
{
	(void)listing_a, (void)len_a, (void)listing_b, (void)len_b;
	*diff = NULL;
	struct dl_loc loc;
	int64_t va, vb;
	const char *ida, *idb;
	int rc = dl_read_locator(locator, &loc);
	if (!rc)
		rc = dl_state_read(a, "diff", &va, &ida);
	if (!rc)
		rc = dl_state_read(b, "diff", &vb, &idb);
	if (rc)
		return rc;
	if (strcmp(ida, idb) != 0) {
		char *summary = tt_strdupf("table recreated: id %s -> %s (version %" PRId64 " -> %" PRId64 ")", ida, idb,
		                           va, vb);
		*diff = json_pack("{s:s, s:s?, s:[], s:n, s:b}", "unit", "commits", "summary", summary, "entries",
		                  "totals", "truncated", 0);
		free(summary);
		return *diff ? 0 : dl_fail_oom();
	}
	if (vb <= va) {
		char *summary = tt_strdupf(vb == va ? "no commits (version %" PRId64 ")"
		                                    : "back from version %" PRId64 " to %" PRId64,
		                           va, vb);
		*diff = json_pack("{s:s, s:s?, s:[], s:n, s:{s:i}, s:b}", "unit", "commits", "summary", summary, "entries",
		                  "totals", "native", "commits", 0, "truncated", 0);
		free(summary);
		return *diff ? 0 : dl_fail_oom();
	}
	struct dl_log log;
	if ((rc = dl_log_open(ctx, locator, loc.uri, 1, &log)))
		return rc;
	json_t *entries = json_array(), *totals = json_object();
	size_t commits = 0, gone = 0;
	if (!entries || !totals)
		rc = dl_fail_oom();
	for (int64_t v = vb; rc == 0 && v > va; v--) {
		if (tether_bctx_cancelled(ctx)) {
			rc = tether_bctx_cancel(ctx, "reading the Delta log");
			break;
		}
		json_t *actions = NULL;
		if (!dl_log_has_json(&log, v)) {
			gone++;
			continue;
		}
		rc = dl_read_commit(log.store, log.uri, v, &actions);
		json_t *e = rc ? NULL : dl_history_entry(v, actions);
		json_decref(actions);
		if (!rc && !e)
			rc = dl_fail_oom();
		if (rc)
			break;
		commits++;
		const json_t *m = json_object_get(e, "metrics");
		static const char *const keys[] = {"rows_added",    "rows_deleted", "rows_updated", "files_added",
		                                   "files_removed", "bytes_added",  "bytes_removed"};
		for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
			add_total(totals, keys[k], m);
		if (json_array_size(entries) < max_entries) {
			char path[32];
			snprintf(path, sizeof path, "version %" PRId64, v);
			json_t *entry = json_pack("{s:s, s:s, s:I, s:O, s:O}", "path", path, "change", "commit", "version",
			                          (json_int_t)v, "detail", json_object_get(e, "message"), "metrics", m);
			if (entry && json_object_get(e, "operation"))
				json_object_set(entry, "operation", json_object_get(e, "operation"));
			json_array_append_new(entries, entry);
		}
		json_decref(e);
	}
	dl_log_close(&log);
	if (!rc) {
		char *summary = totals_summary(commits, gone, totals);
		json_object_set_new(totals, "commits", json_integer((json_int_t)commits));
		if (gone)
			json_object_set_new(totals, "commits_gone", json_integer((json_int_t)gone));
		/* The counts are commits', not files': they go in "native", and
		 * the summary says them (totals are the files' shape). */
		*diff = json_pack("{s:s, s:s?, s:O, s:n, s:O, s:b}", "unit", "commits", "summary", summary, "entries",
		                  entries, "totals", "native", totals, "truncated", commits > json_array_size(entries));
		free(summary);
		if (!*diff)
			rc = dl_fail_oom();
	}
	json_decref(entries);
	json_decref(totals);
	return rc;
}
