/* Dolt forks: working branches made off a pinned commit, deleted, listed,
 * and handles (revision-database URLs).
 *
 * A branch is made at a commit in two steps every Dolt has: DOLT_BRANCH
 * (at the session's head) and DOLT_RESET('--hard', commit) on the new
 * branch's revision database; an existing branch at another commit is
 * moved by the same reset (older servers cannot delete a branch). */
#include "backends/dolt/dolt.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static char *swap(const char *name, char from, char to)
{
	char *out = strdup(name);
	for (char *p = out; p && *p; p++)
		if (*p == from)
			*p = to;
	return out;
}

char *dt_branch_for(const char *engine_name)
{
	return swap(engine_name, '.', '/');
}

char *dt_engine_name_of(const char *dolt_branch)
{
	return swap(dolt_branch, '/', '.');
}

static const char *working_branch(const json_t *working_ref)
{
	return json_string_value(json_object_get(working_ref, "working_branch"));
}

/* Move `branch` (which exists) to `commit`. */
static int reset_branch(const struct tether_bctx *ctx, const struct dt_loc *loc, const char *branch,
                        const char *commit)
{
	struct dt_conn w;
	int rc = dt_connect(ctx, loc, branch, &w);
	if (rc)
		return rc;
	char *sql = dt_sql(&w, "CALL DOLT_RESET('--hard', ?)", commit);
	if ((rc = dt_exec(&w, sql)) == -1)
		rc = dt_fail(&w, "CALL DOLT_RESET('--hard') on the working branch");
	free(sql);
	dt_release(&w, 0); /* its session's branch state is not worth keeping */
	return rc;
}

/* A branch this fork made and could not move to its commit is not left
 * behind at the wrong one: deleted where the server can (v0.40.4 cannot,
 * and the next fork moves it). The fork's own error stands. */
static void forget_new_branch(const struct tether_bctx *ctx, const struct dt_loc *loc, const char *branch, int rc)
{
	struct dt_conn c;
	char *keep = strdup(tether_error_last());
	if (dt_connect(ctx, loc, NULL, &c) == 0) {
		char *sql = dt_sql(&c, "CALL DOLT_BRANCH('-D', ?)", branch);
		dt_exec(&c, sql);
		free(sql);
		dt_release(&c, 0);
	}
	tether_error_set(rc, "%s", keep ? keep : "out of memory");
	free(keep);
}

static int fork_named(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                      const char *branch, const json_t *expect, json_t **working_ref);

int dt_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
            const char *branch, const json_t *expect, json_t **working_ref)
{
	(void)pin_ref; /* the tag and the state name one commit; the state is always there */
	char *name = dt_branch_for(branch);
	int rc = name ? fork_named(ctx, locator, state, name, expect, working_ref) : tt_fail_oom();
	free(name);
	return rc;
}

static int fork_named(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                      const char *branch, const json_t *expect, json_t **working_ref)
{
	*working_ref = NULL;
	struct dt_loc loc;
	const char *commit;
	int rc = dt_read_locator(locator, &loc);
	if (rc || (rc = dt_state_commit(state, &commit)))
		return rc;
	if (!dt_plain_name(branch, 1))
		return tether_error_set(TETHER_EUSAGE, "dolt: branch name \"%s\" holds a character tether does not send",
		                        branch);
	struct dt_conn c;
	if ((rc = dt_connect(ctx, &loc, NULL, &c)))
		return rc;
	char head[DT_HASH_MAX];
	int found = 0, dirty = 0, exists = 0;
	if ((rc = dt_branch_head(&c, branch, head, &found, &dirty)) == 0 && (rc = dt_commit_exists(&c, commit, &exists)) == 0 &&
	    !exists)
		rc = tether_error_set(TETHER_ENOTFOUND, "dolt %s has no commit %s to fork %s from", c.where, commit, branch);
	if (rc == 0 && expect) {
		const char *want = json_string_value(json_object_get(expect, "commit"));
		if (json_is_null(expect) && found)
			rc = tether_error_set(TETHER_EREFUSED, "dolt %s: branch %s exists already (at %s): refused", c.where,
			                      branch, head);
		else if (!json_is_null(expect) && !found)
			rc = tether_error_set(TETHER_EREFUSED, "dolt %s: branch %s is gone (expected at %s): refused", c.where,
			                      branch, want ? want : "?");
		else if (!json_is_null(expect) && (!want || strcmp(want, head) != 0))
			rc = tether_error_set(TETHER_EREFUSED, "dolt %s: branch %s moved: expected %s, found %s; nothing was "
			                      "changed", c.where, branch, want ? want : "?", head);
	}
	if (rc == 0 && found && dirty > 0 && strcmp(head, commit) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "dolt %s: branch %s has uncommitted changes, which moving it to %s "
		                      "would discard; nothing was changed", c.where, branch, commit);
	int made = 0;
	if (rc == 0 && !found) { /* at the session's head, which may be the commit already */
		char *sql = dt_sql(&c, "CALL DOLT_BRANCH(?)", branch);
		if ((rc = dt_exec(&c, sql)) == -1)
			rc = dt_fail(&c, "CALL DOLT_BRANCH");
		free(sql);
		made = rc == 0;
		if (rc == 0 && (rc = dt_branch_head(&c, branch, head, &found, &dirty)) == 0 && !found)
			rc = tether_error_set(TETHER_EIO, "dolt %s: CALL DOLT_BRANCH made no branch %s", c.where, branch);
	}
	dt_release(&c, rc == 0);
	if (rc == 0 && strcmp(head, commit) != 0)
		rc = reset_branch(ctx, &loc, branch, commit);
	if (rc && made)
		forget_new_branch(ctx, &loc, branch, rc);
	if (rc == 0 && !(*working_ref = json_pack("{s:s}", "working_branch", branch)))
		rc = tt_fail_oom();
	return rc;
}

static int delete_branch(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                         const json_t *expect)
{
	struct dt_loc loc;
	const char *branch = working_branch(working_ref);
	int rc = dt_read_locator(locator, &loc);
	if (rc)
		return rc;
	if (!branch || !strcmp(branch, loc.branch))
		return tether_error_set(TETHER_ECONFIG, "dolt working ref: \"working_branch\" must name a working branch");
	struct dt_conn c;
	if ((rc = dt_connect(ctx, &loc, NULL, &c)))
		return rc;
	char head[DT_HASH_MAX];
	int found = 0, dirty = 0;
	rc = dt_branch_head(&c, branch, head, &found, &dirty);
	const char *want = expect ? json_string_value(json_object_get(expect, "commit")) : NULL;
	if (rc == 0 && found && expect && (!want || strcmp(want, head) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "dolt %s: branch %s is at %s, not %s: kept", c.where, branch, head,
		                      want ? want : "?");
	if (rc == 0 && found) {
		char *sql = dt_sql(&c, "CALL DOLT_BRANCH('-D', ?)", branch);
		if ((rc = dt_exec(&c, sql)) == -1)
			rc = dt_fail(&c, "CALL DOLT_BRANCH('-D')");
		free(sql);
	}
	dt_release(&c, rc == 0);
	return rc;
}

int dt_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	return delete_branch(ctx, locator, working_ref, NULL);
}

int dt_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                             const json_t *expect)
{
	return delete_branch(ctx, locator, working_ref, expect);
}

int dt_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	*refs = NULL;
	struct dt_loc loc;
	struct dt_conn c;
	int rc = dt_connect_locator(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char prefix[64];
	snprintf(prefix, sizeof prefix, DT_WS_BRANCH_PREFIX "%.8s/", ctx && ctx->dataset_id ? ctx->dataset_id : "");
	json_t *rows = NULL, *out = json_array();
	rc = dt_rows(&c, strdup("SELECT name, hash FROM dolt_branches"), "cannot read dolt_branches", &rows);
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row) {
		const char *name = dt_cell(rows, i, 0), *hash = dt_cell(rows, i, 1);
		char *engine = name && hash && strncmp(name, prefix, strlen(prefix)) == 0 ? dt_engine_name_of(name) : NULL;
		if (engine)
			json_array_append_new(out, json_pack("{s:s, s:{s:s}, s:{s:s}}", "branch", engine, "ref",
			                                     "working_branch", name, "head", "commit", hash));
		free(engine);
	}
	json_decref(rows);
	return dt_finish(&c, rc, out, refs);
}

int dt_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
            const json_t *working_ref, int read_only, json_t **handle)
{
	*handle = NULL;
	struct dt_loc loc;
	const char *commit;
	int rc = dt_read_locator(locator, &loc);
	if (rc || (rc = dt_state_commit(state, &commit)))
		return rc;
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	const char *wb = working_branch(working_ref);
	/* A branch is writable; a tag or a hash is read-only in Dolt. */
	const char *ref = !read_only ? (wb ? wb : dt_work_branch(&loc)) : tag ? tag : commit;
	char *user = dt_login_user(ctx, &loc);
	if (!user)
		return tether_error_last()[0] ? TETHER_ECONFIG : tt_fail_oom();
	char *url = tt_strdupf("mysql://%s@%s:%u/%s/%s", user, loc.host, loc.port, loc.database, ref);
	char *dbref = tt_strdupf("%s/%s", loc.database, ref);
	if (url && dbref)
		*handle = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:b}", "kind", "dolt", "uri", url, "url",
		                    url, "database", loc.database, "ref", ref, "commit", commit, "database_ref", dbref,
		                    "host", loc.host, "port", (int)loc.port, "read_only", read_only);
	free(url);
	free(dbref);
	free(user);
	return *handle ? 0 : tt_fail_oom();
}
