/* Dolt states: a branch head's commit hash, and whether the branch's
 * working set holds changes no commit has (dolt_branches.dirty). */
#include "backends/dolt/dolt.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* A Dolt commit hash: 32 characters of base32 (0-9, a-v). */
static int is_hash(const char *s)
{
	size_t n = strlen(s);
	if (n != 32)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'v')))
			return 0;
	return 1;
}

static int copy_hash(struct dt_conn *c, const char *h, char out[DT_HASH_MAX], const char *what)
{
	if (!h || !is_hash(h))
		return tether_error_set(TETHER_EIO, "dolt %s: %s: the server answered \"%s\", not a commit hash", c->where,
		                        what, h ? h : "NULL");
	memcpy(out, h, strlen(h) + 1);
	return 0;
}

int dt_branch_head(struct dt_conn *c, const char *branch, char hash[DT_HASH_MAX], int *found, int *dirty)
{
	*found = 0;
	*dirty = 0;
	int has_dirty = 0;
	int rc = dt_has_dirty(c, &has_dirty);
	if (rc)
		return rc;
	if (!has_dirty)
		*dirty = -1;
	char *sql = has_dirty ? dt_sql(c, "SELECT hash, dirty FROM dolt_branches WHERE name = ?", branch)
	                      : dt_sql(c, "SELECT hash FROM dolt_branches WHERE name = ?", branch);
	json_t *rows;
	if ((rc = dt_rows(c, sql, "cannot read dolt_branches", &rows)))
		return rc;
	if (json_array_size(rows)) {
		*found = 1;
		rc = copy_hash(c, dt_cell(rows, 0, 0), hash, "dolt_branches.hash");
		const char *d = dt_cell(rows, 0, 1);
		if (has_dirty)
			*dirty = d && strcmp(d, "0") != 0 && strcmp(d, "false") != 0;
	}
	json_decref(rows);
	return rc;
}

int dt_commit_exists(struct dt_conn *c, const char *hash, int *exists)
{
	*exists = 0;
	if (!is_hash(hash))
		return 0;
	json_t *rows;
	int rc = dt_rows(c, dt_sql(c, "SELECT COUNT(*) FROM dolt_commits WHERE commit_hash = ?", hash),
	                 "cannot read dolt_commits", &rows);
	if (rc)
		return rc;
	const char *n = dt_cell(rows, 0, 0);
	*exists = n && strcmp(n, "0") != 0;
	json_decref(rows);
	return 0;
}

/* A commit hash, tag or branch as a commit hash. HASHOF takes refs (some
 * servers refuse a bare hash there), so a hash is looked up itself. */
int dt_resolve(struct dt_conn *c, const char *rev, char hash[DT_HASH_MAX])
{
	int exists = 0, rc;
	if (is_hash(rev)) {
		if ((rc = dt_commit_exists(c, rev, &exists)))
			return rc;
		if (exists) {
			memcpy(hash, rev, strlen(rev) + 1);
			return 0;
		}
	}
	char *sql = dt_sql(c, "SELECT HASHOF(?)", rev);
	json_t *rows;
	rc = dt_query(c, sql, &rows);
	free(sql);
	if (rc == -1)
		return tether_error_set(TETHER_ENOTFOUND, "dolt %s has no commit, tag or branch \"%s\" (the server said: %s)",
		                        c->where, rev, mysql_error(c->my));
	if (rc)
		return rc;
	rc = copy_hash(c, dt_cell(rows, 0, 0), hash, "HASHOF");
	json_decref(rows);
	return rc;
}

int dt_state_commit(const json_t *state, const char **commit)
{
	*commit = json_string_value(json_object_get(state, "commit"));
	if (!*commit || !is_hash(*commit))
		return tether_error_set(TETHER_ECONFIG, "dolt state: \"commit\" must be a Dolt commit hash");
	return 0;
}

int dt_check_state(const json_t *state, const char **key)
{
	*key = NULL;
	const char *k;
	json_t *v;
	if (!json_is_object(state))
		return tether_error_set(TETHER_ECONFIG, "a dolt state is a table with \"commit\"");
	json_object_foreach((json_t *)state, k, v) {
		if (strcmp(k, "commit") == 0 && (!json_is_string(v) || !is_hash(json_string_value(v)))) {
			*key = k;
			return tether_error_set(TETHER_ECONFIG, "dolt state: \"commit\" must be a Dolt commit hash "
			                                        "(32 characters 0-9, a-v)");
		}
		int flag = strcmp(k, "dirty") == 0 || strcmp(k, "dirty_unchecked") == 0;
		if (flag && !json_is_boolean(v)) {
			*key = k;
			return tether_error_set(TETHER_ECONFIG, "dolt state: \"%s\" must be true or false", k);
		}
		if (strcmp(k, "commit") != 0 && !flag) {
			*key = k;
			return tether_error_set(TETHER_ECONFIG,
			                        "dolt state: unknown key \"%s\" (a state has commit, dirty, dirty_unchecked)", k);
		}
	}
	if (!json_object_get(state, "commit"))
		return tether_error_set(TETHER_ECONFIG, "dolt state has no \"commit\"");
	return 0;
}

int dt_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                   struct tether_fingerprint *out)
{
	(void)policy;
	memset(out, 0, sizeof *out);
	struct dt_loc loc;
	struct dt_conn c;
	int rc = dt_connect_locator(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char hash[DT_HASH_MAX];
	int found = 1, dirty = 0;
	if (!loc.working_branch && loc.at)
		rc = dt_resolve(&c, loc.at, hash);
	else if ((rc = dt_branch_head(&c, dt_work_branch(&loc), hash, &found, &dirty)) == 0 && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "dolt %s has no branch \"%s\"", c.where, dt_work_branch(&loc));
	dt_release(&c, rc == 0 || rc == TETHER_ENOTFOUND);
	if (rc)
		return rc;
	/* A server that cannot say reads as clean, and the state says so:
	 * dirty_unchecked is the warning, in a volatile key (no content: it
	 * changes no pin id and no status), as a library prints nothing. */
	out->state = dirty > 0    ? json_pack("{s:s, s:b}", "commit", hash, "dirty", 1)
	             : dirty < 0 ? json_pack("{s:s, s:b}", "commit", hash, "dirty_unchecked", 1)
	                         : json_pack("{s:s}", "commit", hash);
	return out->state ? 0 : tt_fail_oom();
}
