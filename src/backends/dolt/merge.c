/* Promote and merge: DOLT_MERGE of the working branch into the base,
 * inside an explicit transaction on the base's revision database, the
 * only way Dolt reports which tables conflict or violate a constraint;
 * those are reported per table and the transaction rolled back. */
#include "backends/dolt/dolt.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct heads {
	struct dt_loc loc;
	const char *work;
	char base_head[DT_HASH_MAX];
	char work_head[DT_HASH_MAX];
};

static int read_heads(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                      struct heads *h)
{
	int rc = dt_read_locator(locator, &h->loc);
	if (rc)
		return rc;
	h->work = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!h->work || !strcmp(h->work, h->loc.branch))
		return tether_error_set(TETHER_ECONFIG, "dolt working ref: \"working_branch\" must name a working branch");
	struct dt_conn c;
	if ((rc = dt_connect(ctx, &h->loc, NULL, &c)))
		return rc;
	int found = 0, dirty = 0;
	const char *missing = NULL;
	if ((rc = dt_branch_head(&c, h->loc.branch, h->base_head, &found, &dirty)) == 0 && !found)
		missing = h->loc.branch;
	if (rc == 0 && !missing && (rc = dt_branch_head(&c, h->work, h->work_head, &found, &dirty)) == 0 && !found)
		missing = h->work;
	if (rc == 0 && missing)
		rc = tether_error_set(TETHER_ENOTFOUND, "dolt %s has no branch \"%s\" (deleted outside tether?)", c.where,
		                      missing);
	dt_release(&c, rc == 0);
	return rc;
}

/* Is `ancestor` in the history of branch `branch`? */
static int in_history(const struct tether_bctx *ctx, const struct dt_loc *loc, const char *branch,
                      const char *ancestor, int *answer)
{
	struct dt_conn c;
	int rc = dt_connect(ctx, loc, branch, &c);
	if (rc)
		return rc;
	json_t *rows;
	rc = dt_rows(&c, dt_sql(&c, "SELECT COUNT(*) FROM dolt_log WHERE commit_hash = ?", ancestor),
	             "cannot read dolt_log", &rows);
	if (rc == 0) {
		const char *n = dt_cell(rows, 0, 0);
		*answer = n && strcmp(n, "0") != 0;
		json_decref(rows);
	}
	dt_release(&c, rc == 0);
	return rc;
}

static json_t *move_result(const struct heads *h, const char *to)
{
	return json_pack("{s:s, s:s, s:s, s:b}", "branch", h->loc.branch, "from", h->base_head, "to", to, "moved",
	                 strcmp(h->base_head, to) != 0);
}

/* The tables a failed merge left in conflict or in violation, as
 * "t (2 conflicts), u (1 constraint violation)". */
static char *conflict_tables(struct dt_conn *c)
{
	static const struct {
		const char *sql, *one, *many;
	} q[] = {
		{"SELECT `table`, num_conflicts FROM dolt_conflicts", "conflict", "conflicts"},
		{"SELECT `table`, num_violations FROM dolt_constraint_violations", "constraint violation",
		 "constraint violations"},
	};
	char *out = strdup("");
	for (size_t k = 0; out && k < sizeof q / sizeof q[0]; k++) {
		json_t *rows;
		if (dt_query(c, q[k].sql, &rows) != 0)
			continue;
		for (size_t i = 0; i < json_array_size(rows); i++) {
			const char *t = dt_cell(rows, i, 0), *n = dt_cell(rows, i, 1);
			if (!t || !n || !strcmp(n, "0"))
				continue;
			char *more = tt_strdupf("%s%s%s (%s %s)", out, *out ? ", " : "", t, n, strcmp(n, "1") ? q[k].many : q[k].one);
			free(out);
			out = more;
			if (!out)
				break;
		}
		json_decref(rows);
	}
	return out;
}

/* Did DOLT_MERGE's answer report conflicts? Its columns differ by
 * version (no_conflicts, or hash/fast_forward/conflicts/message), so the
 * answer is read by column name. */
static int merge_conflicted(const json_t *rows, const json_t *cols)
{
	size_t i;
	json_t *name;
	json_array_foreach(cols, i, name) {
		const char *v = dt_cell(rows, 0, i);
		if (!v)
			continue;
		if (!strcmp(json_string_value(name), "no_conflicts"))
			return strcmp(v, "0") == 0;
		if (!strcmp(json_string_value(name), "conflicts"))
			return strcmp(v, "0") != 0;
	}
	return 0;
}

static int rollback(struct dt_conn *c)
{
	return dt_exec(c, "ROLLBACK");
}

/* DOLT_MERGE of h->work into the base, in one transaction, from the base
 * head read before (h->base_head; one that moved since is refused);
 * `message` commits a merge that did not commit itself (older Dolt leaves
 * a non-fast-forward merge staged), and NULL (promote) allows only a
 * fast-forward to h->work_head. *to: the base's new head. */
static int merge_in_transaction(const struct tether_bctx *ctx, struct heads *h, const char *message,
                                char to[DT_HASH_MAX])
{
	struct dt_conn c;
	int rc = dt_connect(ctx, &h->loc, h->loc.branch, &c);
	if (rc)
		return rc;
	json_t *rows = NULL, *cols = NULL;
	char *sql = NULL;
	int found = 0, dirty = 0, begun = 0;
	if (dt_exec(&c, "SET autocommit = 0") != 0 || dt_exec(&c, "START TRANSACTION") != 0) {
		rc = dt_fail(&c, "cannot start a transaction");
		goto done;
	}
	begun = 1;
	if ((rc = dt_branch_head(&c, h->loc.branch, to, &found, &dirty)))
		goto done;
	if (!found || strcmp(to, h->base_head) != 0) {
		rc = tether_error_set(TETHER_EREFUSED, "dolt %s: %s moved: expected %s, found %s; nothing was changed",
		                      c.where, h->loc.branch, h->base_head, found ? to : "no branch");
		goto done;
	}
	sql = dt_sql(&c, "CALL DOLT_MERGE(?)", h->work);
	if ((rc = dt_query_cols(&c, sql, &rows, &cols)) == -1) {
		rc = dt_fail(&c, "CALL DOLT_MERGE");
		goto done;
	}
	free(sql);
	sql = NULL;
	char *tables = conflict_tables(&c);
	if (!tables) {
		rc = tt_fail_oom();
		goto done;
	}
	if (merge_conflicted(rows, cols) || *tables) {
		rc = tether_error_set(TETHER_EREFUSED, "dolt %s: merging %s into %s conflicts: %s; rolled back, nothing "
		                      "was changed", c.where, h->work, h->loc.branch, *tables ? tables : "(the server names no table)");
		free(tables);
		goto done;
	}
	free(tables);
	if ((rc = dt_branch_head(&c, h->loc.branch, to, &found, &dirty)))
		goto done;
	if (!message && strcmp(to, h->work_head) != 0) {
		rc = tether_error_set(TETHER_EREFUSED, "dolt %s: merging %s into %s was no fast-forward (a writer moved "
		                      "one of them); rolled back, nothing was changed", c.where, h->work, h->loc.branch);
		goto done;
	}
	if (!strcmp(to, h->base_head)) { /* merged into the working set, not committed */
		json_t *status = NULL;
		if (dt_query(&c, "SELECT COUNT(*) FROM dolt_status", &status) != 0) {
			rc = dt_fail(&c, "cannot read dolt_status");
			goto done;
		}
		int staged = strcmp(dt_cell(status, 0, 0) ?: "0", "0") != 0;
		json_decref(status);
		if (staged) {
			sql = dt_sql(&c, "CALL DOLT_COMMIT('-a', '-m', ?)", message);
			if (dt_exec(&c, sql) != 0 || (rc = dt_branch_head(&c, h->loc.branch, to, &found, &dirty))) {
				rc = rc ? rc : dt_fail(&c, "CALL DOLT_COMMIT of the merge");
				goto done;
			}
		}
	}
	if (dt_exec(&c, "COMMIT") != 0)
		rc = dt_fail(&c, "COMMIT of the merge");
	begun = rc != 0;
done:
	free(sql);
	json_decref(rows);
	json_decref(cols);
	if (begun && rc)
		rollback(&c);
	dt_release(&c, 0); /* autocommit is off on it */
	return rc;
}

int dt_promote(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref, const json_t *expect,
               json_t **result)
{
	*result = NULL;
	struct heads h;
	int rc = read_heads(ctx, locator, working_ref, &h);
	if (rc)
		return rc;
	const char *want = expect ? json_string_value(json_object_get(expect, "commit")) : NULL;
	char where[600];
	snprintf(where, sizeof where, "mysql://%s:%u/%s", h.loc.host, h.loc.port, h.loc.database);
	if (expect && (!want || strcmp(want, h.base_head) != 0))
		return tether_error_set(TETHER_EREFUSED, "dolt %s: %s moved: expected %s, found %s; nothing was changed",
		                        where, h.loc.branch, want ? want : "?", h.base_head);
	char to[DT_HASH_MAX];
	memcpy(to, h.base_head, sizeof to);
	if (strcmp(h.base_head, h.work_head) != 0) {
		int ff = 0;
		if ((rc = in_history(ctx, &h.loc, h.work, h.base_head, &ff)))
			return rc;
		if (!ff)
			return tether_error_set(TETHER_EREFUSED,
			                        "dolt %s: %s (%s) is not in the history of %s (%s): not a fast-forward; "
			                        "merge instead; nothing was changed",
			                        where, h.loc.branch, h.base_head, h.work, h.work_head);
		if ((rc = merge_in_transaction(ctx, &h, NULL, to)))
			return rc;
	}
	*result = move_result(&h, to);
	return *result ? 0 : tt_fail_oom();
}

int dt_merge(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref, const char *message,
             json_t **result)
{
	*result = NULL;
	struct heads h;
	int rc = read_heads(ctx, locator, working_ref, &h);
	if (rc)
		return rc;
	char to[DT_HASH_MAX];
	memcpy(to, h.base_head, sizeof to);
	char *msg = message && *message ? strdup(message) : tt_strdupf("tether: merge %s into %s", h.work, h.loc.branch);
	if (!msg)
		return tt_fail_oom();
	int ancestor = 0;
	rc = in_history(ctx, &h.loc, h.loc.branch, h.work_head, &ancestor);
	if (rc == 0 && !ancestor) /* something to merge */
		rc = merge_in_transaction(ctx, &h, msg, to);
	free(msg);
	if (rc)
		return rc;
	*result = move_result(&h, to);
	if (*result) /* the base went where the fork was: nothing needed merging */
		json_object_set_new(*result, "fast_forward", json_boolean(!strcmp(to, h.work_head)));
	return *result ? 0 : tt_fail_oom();
}

int dt_descends(const struct tether_bctx *ctx, const json_t *locator, const json_t *ancestor,
                const json_t *descendant, int *answer)
{
	*answer = 0;
	struct dt_loc loc;
	const char *a, *d;
	int rc = dt_read_locator(locator, &loc);
	if (rc || (rc = dt_state_commit(ancestor, &a)) || (rc = dt_state_commit(descendant, &d)))
		return rc;
	struct dt_conn c;
	if ((rc = dt_connect(ctx, &loc, NULL, &c)))
		return rc;
	int has_a = 0, has_d = 0;
	if ((rc = dt_commit_exists(&c, a, &has_a)) == 0 && (rc = dt_commit_exists(&c, d, &has_d)) == 0 &&
	    (!has_a || !has_d))
		rc = tether_error_set(TETHER_ENOTFOUND, "dolt %s has no commit %s", c.where, has_a ? d : a);
	dt_release(&c, rc == 0 || rc == TETHER_ENOTFOUND);
	if (rc)
		return rc;
	if (!strcmp(a, d)) {
		*answer = 1;
		return 0;
	}
	/* dolt_log on the descendant's revision database is its history. */
	return in_history(ctx, &loc, d, a, answer);
}

int dt_move_base(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *expect,
                 json_t **result)
{
	*result = NULL;
	struct heads h;
	memset(&h, 0, sizeof h);
	const char *to, *want = json_string_value(json_object_get(expect, "commit"));
	int rc = dt_read_locator(locator, &h.loc);
	if (rc || (rc = dt_state_commit(state, &to)))
		return rc;
	struct dt_conn c;
	if ((rc = dt_connect(ctx, &h.loc, h.loc.branch, &c)))
		return rc;
	int found = 0, dirty = 0, exists = 0;
	if ((rc = dt_branch_head(&c, h.loc.branch, h.base_head, &found, &dirty)) == 0 && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "dolt %s has no branch \"%s\"", c.where, h.loc.branch);
	if (rc == 0 && strcmp(h.base_head, to) != 0) {
		if (!want || strcmp(want, h.base_head) != 0)
			rc = tether_error_set(TETHER_EREFUSED, "dolt %s: %s moved: expected %s, found %s; nothing was changed",
			                      c.where, h.loc.branch, want ? want : "?", h.base_head);
		else if (dirty > 0)
			rc = tether_error_set(TETHER_EREFUSED, "dolt %s: %s has uncommitted changes, which a move would "
			                      "discard; nothing was changed", c.where, h.loc.branch);
		else if ((rc = dt_commit_exists(&c, to, &exists)) == 0 && !exists)
			rc = tether_error_set(TETHER_ENOTFOUND, "dolt %s has no commit %s to move %s to", c.where, to,
			                      h.loc.branch);
		if (rc == 0) {
			char *sql = dt_sql(&c, "CALL DOLT_RESET('--hard', ?)", to);
			if (dt_exec(&c, sql) != 0)
				rc = dt_fail(&c, "CALL DOLT_RESET('--hard') on the base");
			free(sql);
		}
	}
	dt_release(&c, 0);
	if (rc)
		return rc;
	*result = move_result(&h, to);
	return *result ? 0 : tt_fail_oom();
}
