/* History (dolt_log on the ref's revision database, decorated with the
 * branches and tags at each commit) and diff (per table, from
 * dolt_commit_diff_<table> and the table lists AS OF each commit).
 *
 * Both read system tables every Dolt server has: newer servers add the
 * DOLT_LOG(), dolt_diff_summary() and dolt_diff_stat() table functions,
 * which answer the same questions in one query, but v0.40.4 (the server
 * the tests run) has none of them, and a second path no test could run
 * would be untested. */
#include "backends/dolt/dolt.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {commit: [branch and tag names]}: branches first, then tags. */
static int refs_by_commit(struct dt_conn *c, json_t **out)
{
	json_t *by = json_object();
	int has_tags = 0, rc = dt_has_table(c, "dolt_tags", &has_tags);
	const char *queries[] = {"SELECT name, hash FROM dolt_branches ORDER BY name",
	                         has_tags ? "SELECT tag_name, tag_hash FROM dolt_tags ORDER BY tag_name" : NULL};
	for (size_t k = 0; rc == 0 && k < 2 && queries[k]; k++) {
		json_t *rows;
		if ((rc = dt_rows(c, strdup(queries[k]), "cannot read its branches and tags", &rows)))
			break;
		for (size_t i = 0; i < json_array_size(rows); i++) {
			const char *name = dt_cell(rows, i, 0), *hash = dt_cell(rows, i, 1);
			if (!name || !hash)
				continue;
			json_t *list = json_object_get(by, hash);
			if (!list) {
				list = json_array();
				json_object_set_new(by, hash, list);
			}
			json_array_append_new(list, json_string(name));
		}
		json_decref(rows);
	}
	if (rc)
		json_decref(by);
	else
		*out = by;
	return rc;
}

int dt_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	*entries = NULL;
	struct dt_loc loc;
	struct dt_conn c;
	int rc = dt_connect_locator(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char hash[DT_HASH_MAX];
	const char *ref = !loc.working_branch && loc.at ? loc.at : dt_work_branch(&loc);
	json_t *by = NULL;
	if ((rc = dt_resolve(&c, ref, hash)) == 0)
		rc = refs_by_commit(&c, &by);
	dt_release(&c, rc == 0);
	/* dolt_log lists the history of the revision database's ref. */
	if (rc || (rc = dt_connect(ctx, &loc, hash, &c))) {
		json_decref(by);
		return rc;
	}
	char *sql = max_count > 0 ? tt_strdupf("SELECT commit_hash, UNIX_TIMESTAMP(date), message FROM dolt_log LIMIT %d",
	                                       max_count)
	                          : strdup("SELECT commit_hash, UNIX_TIMESTAMP(date), message FROM dolt_log");
	json_t *rows = NULL, *out = json_array();
	rc = dt_rows(&c, sql, "cannot read dolt_log", &rows);
	for (size_t i = 0; i < json_array_size(rows); i++) {
		const char *id = dt_cell(rows, i, 0), *when = dt_cell(rows, i, 1), *msg = dt_cell(rows, i, 2);
		if (!id)
			continue;
		json_t *refs = json_object_get(by, id);
		json_array_append_new(out, json_pack("{s:s, s:I, s:s, s:o}", "id", id, "time",
		                                     (json_int_t)(when ? strtod(when, NULL) : 0), "message", msg ? msg : "",
		                                     "refs", refs ? json_incref(refs) : json_array()));
	}
	json_decref(rows);
	json_decref(by);
	return dt_finish(&c, rc, out, entries);
}

/* ------------------------------------------------------------------ */
/* Diff                                                                */
/* ------------------------------------------------------------------ */

static int tables_at(struct dt_conn *c, const char *commit, json_t **names)
{
	json_t *rows;
	int rc = dt_rows(c, dt_sql(c, "SHOW TABLES AS OF ?", commit), "cannot list its tables AS OF a recorded commit",
	                 &rows);
	if (rc)
		return rc;
	*names = json_object();
	for (size_t i = 0; i < json_array_size(rows); i++) {
		const char *t = dt_cell(rows, i, 0);
		if (t && strncmp(t, "dolt_", 5) != 0)
			json_object_set_new(*names, t, json_true());
	}
	json_decref(rows);
	return 0;
}

/* Rows added, deleted and modified in table t from a to b. */
static int table_counts(struct dt_conn *c, const char *t, const char *a, const char *b, json_int_t n[3])
{
	n[0] = n[1] = n[2] = 0;
	for (const char *p = t; *p; p++)
		if (*p == '`')
			return tether_error_set(TETHER_EIO, "dolt %s: table name %s holds a backquote", c->where, t);
	char *q = dt_sql(c, "SELECT diff_type, COUNT(*) FROM `dolt_commit_diff_%s` WHERE from_commit = ? AND to_commit = ? "
	                    "GROUP BY diff_type", a, b);
	char *sql = q ? tt_strdupf(q, t) : NULL;
	free(q);
	json_t *rows;
	int rc = dt_rows(c, sql, "cannot read dolt_commit_diff", &rows);
	if (rc)
		return rc;
	for (size_t i = 0; i < json_array_size(rows); i++) {
		const char *type = dt_cell(rows, i, 0);
		json_int_t k = strtoll(dt_cell(rows, i, 1) ?: "0", NULL, 10);
		if (type && !strcmp(type, "added"))
			n[0] += k;
		else if (type && !strcmp(type, "removed"))
			n[1] += k;
		else if (type && !strcmp(type, "modified"))
			n[2] += k;
	}
	json_decref(rows);
	return 0;
}

static int count_rows(struct dt_conn *c, const char *t, const char *commit, json_int_t *n)
{
	char *q = dt_sql(c, "SELECT COUNT(*) FROM `%s` AS OF ?", commit);
	char *sql = q ? tt_strdupf(q, t) : NULL;
	free(q);
	json_t *rows;
	int rc = dt_rows(c, sql, "cannot count a table's rows", &rows);
	if (rc)
		return rc;
	*n = strtoll(dt_cell(rows, 0, 0) ?: "0", NULL, 10);
	json_decref(rows);
	return 0;
}

int dt_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
            json_t **diff)
{
	(void)listing_a, (void)len_a, (void)listing_b, (void)len_b;
	*diff = NULL;
	struct dt_loc loc;
	struct dt_conn c;
	const char *ca, *cb;
	int rc = dt_read_locator(locator, &loc);
	if (rc || (rc = dt_state_commit(a, &ca)) || (rc = dt_state_commit(b, &cb)) ||
	    (rc = dt_connect(ctx, &loc, NULL, &c)))
		return rc;
	json_t *ta = NULL, *tb = NULL, *entries = json_array();
	json_int_t added = 0, removed = 0, modified = 0, delta = 0;
	int truncated = 0;
	if ((rc = tables_at(&c, ca, &ta)) == 0)
		rc = tables_at(&c, cb, &tb);
	/* Every table of either side, in name order. */
	json_t *all = json_object();
	if (rc == 0) {
		json_object_update(all, ta);
		json_object_update(all, tb);
	}
	const char **names = calloc(json_object_size(all) + 1, sizeof *names);
	size_t n = 0;
	const char *t;
	json_t *v;
	json_object_foreach(all, t, v) names[n++] = t;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *x = names[j];
			names[j] = names[j - 1];
			names[j - 1] = x;
		}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		t = names[i];
		int in_a = json_object_get(ta, t) != NULL, in_b = json_object_get(tb, t) != NULL;
		json_int_t k[3] = {0, 0, 0};
		const char *change;
		if (in_a && in_b) {
			if ((rc = table_counts(&c, t, ca, cb, k)))
				break;
			if (!k[0] && !k[1] && !k[2])
				continue;
			change = "modified";
			modified++;
		} else if (in_b) {
			if ((rc = count_rows(&c, t, cb, &k[0])))
				break;
			change = "added";
			added++;
		} else {
			if ((rc = count_rows(&c, t, ca, &k[1])))
				break;
			change = "dropped";
			removed++;
		}
		delta += k[0] - k[1];
		if (json_array_size(entries) >= max_entries && max_entries) {
			truncated = 1;
			continue;
		}
		json_array_append_new(entries, json_pack("{s:s, s:s, s:I, s:I, s:I}", "change", change, "table", t,
		                                         "rows_added", k[0], "rows_deleted", k[1], "rows_modified", k[2]));
	}
	free(names);
	json_decref(all);
	json_decref(ta);
	json_decref(tb);
	dt_release(&c, rc == 0);
	if (rc) {
		json_decref(entries);
		return rc;
	}
	char summary[256];
	snprintf(summary, sizeof summary,
	         "%" JSON_INTEGER_FORMAT " tables added, %" JSON_INTEGER_FORMAT " dropped, %" JSON_INTEGER_FORMAT
	         " modified, %+" JSON_INTEGER_FORMAT " rows",
	         added, removed, modified, delta);
	*diff = json_pack("{s:s, s:s, s:o, s:{s:I, s:I, s:I, s:I}, s:b}", "unit", "tables", "summary", summary, "entries",
	                  entries, "totals", "added", added, "removed", removed, "modified", modified, "size_delta", delta,
	                  "truncated", truncated);
	return *diff ? 0 : tt_fail_oom();
}
