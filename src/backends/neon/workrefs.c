/* The working branches of a dataset in a Neon project: listed for gc and
 * the fork checks, and deleted on condition.
 *
 * Siblings: a fork onto a working branch X with pins hanging off it lands
 * on X.2, X.3, ... (fork.c), so one workspace may own several branches.
 * A branch X.N (2 <= N <= NEON_MAX_SIBLINGS) is X's sibling whenever X is
 * also a branch of the project; all of a workspace's siblings are listed
 * under X, the one in use first. The one in use is the one Neon last made
 * or reset (created_at, last_reset_at; ties: the higher N), which is the
 * branch the last fork chose, since fork.c reuses an older sibling only
 * when it is that one. A bookmark named like another's sibling (both `b`
 * and `b.2`) is taken for that sibling.
 *
 * The condition: Neon's API deletes a branch unconditionally (no expected
 * LSN, no If-Match). The closest honest check is made just before the
 * DELETE, on the branch's own compute: its newest commit must still be the
 * one expected, and no session may hold a transaction id (a writer in
 * flight). A transaction that begins and commits between that check and
 * Neon's DELETE (one API round trip; the DELETE then breaks every
 * connection) is deleted with the branch: that window is not closed. */
#include "backends/neon/neon.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* The sibling number of `name` relative to `base` (name = base.N), or 0. */
static int sibling_number(const char *name, const char *base)
{
	size_t n = strlen(base);
	if (strncmp(name, base, n) != 0 || name[n] != '.' || name[n + 1] < '1' || name[n + 1] > '9')
		return 0;
	char *end = NULL;
	long v = strtol(name + n + 1, &end, 10);
	return *end == '\0' && v >= 2 && v <= NEON_MAX_SIBLINGS ? (int)v : 0;
}

/* The workspace branch `name` belongs to: X when name is X.N and X is a
 * branch of `all` named for a workspace (longer than the dataset's
 * prefix), else name itself. malloc'd. */
static char *owner_of(const json_t *all, const char *name, size_t prefix_len)
{
	const char *dot = strrchr(name, '.');
	if (!dot || (size_t)(dot - name) <= prefix_len)
		return strdup(name);
	char *base = strndup(name, (size_t)(dot - name));
	json_t *b = base ? neon_find_branch(all, base) : NULL;
	int n = b ? sibling_number(name, base) : 0;
	json_decref(b);
	if (n)
		return base;
	free(base);
	return strdup(name);
}

/* When Neon last made the branch hold a new copy of its parent. */
static const char *made_at(const json_t *b)
{
	const char *created = json_string_value(json_object_get(b, "created_at"));
	const char *reset = json_string_value(json_object_get(b, "last_reset_at"));
	if (!created)
		return reset ? reset : "";
	return reset && strcmp(reset, created) > 0 ? reset : created;
}

/* Is (a, na) more recent than (b, nb)? */
static int newer(const json_t *a, int na, const json_t *b, int nb)
{
	int cmp = strcmp(made_at(a), made_at(b));
	return cmp > 0 || (cmp == 0 && na > nb);
}

char *neon_current_sibling(const json_t *all, const char *base)
{
	const json_t *best = NULL;
	int best_n = 0;
	size_t i;
	json_t *b;
	json_array_foreach(all, i, b) {
		const char *name = json_string_value(json_object_get(b, "name"));
		int n = !name ? 0 : strcmp(name, base) == 0 ? 1 : sibling_number(name, base);
		if (n && (!best || newer(b, n, best, best_n)))
			best = b, best_n = n;
	}
	return best ? strdup(json_string_value(json_object_get(best, "name"))) : NULL;
}

/* The state fingerprint would give on branch `name`. */
static int head_of(struct neon_conn *c, const struct neon_loc *loc, const char *name, json_t **head)
{
	char *lsn = NULL, *xid = NULL;
	int rc = neon_read_branch(c, loc, name, "read_write", &lsn, &xid);
	if (rc == 0 && !(*head = json_pack("{s:s, s:s, s:s, s:s}", "lsn", lsn, "commit_xid", xid, "branch", loc->branch,
	                                   "timeline", name)))
		rc = tt_fail_oom();
	free(lsn);
	free(xid);
	return rc;
}

/* One row: the workspace's name, the branch as fork's working_ref, its head. */
static int add_row(struct neon_conn *c, const struct neon_loc *loc, json_t *rows, const char *owner, const char *name,
                   int current)
{
	json_t *head = NULL, *row = NULL;
	int rc = head_of(c, loc, name, &head);
	if (rc)
		return rc;
	row = json_pack("{s:s, s:{s:s}, s:o}", "branch", owner, "ref", "working_branch", name, "head", head);
	if (!row || (current ? json_array_insert_new(rows, 0, row) : json_array_append_new(rows, row)) != 0)
		return tt_fail_oom();
	return 0;
}

int neon_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	*refs = NULL;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	char *prefix = tt_strdupf("tether.ws.%.8s.", ctx && ctx->dataset_id ? ctx->dataset_id : "");
	json_t *all = NULL, *groups = json_object(), *out = json_array();
	if (!prefix || !groups || !out)
		rc = tt_fail_oom();
	if (rc == 0)
		rc = neon_list_branches(&c, &all);
	/* Group the dataset's branches by workspace, each group's rows in the
	 * project's order, the branch in use first. */
	size_t i;
	json_t *b;
	json_array_foreach(all, i, b) {
		const char *name = json_string_value(json_object_get(b, "name"));
		if (rc || !name || strncmp(name, prefix, strlen(prefix)) != 0 || !name[strlen(prefix)])
			continue;
		char *owner = owner_of(all, name, strlen(prefix));
		json_t *rows = owner ? json_object_get(groups, owner) : NULL;
		if (owner && !rows && json_object_set_new(groups, owner, rows = json_array()) != 0)
			rows = NULL;
		char *current = owner ? neon_current_sibling(all, owner) : NULL;
		if (!rows || !current)
			rc = tt_fail_oom();
		else
			rc = add_row(&c, &loc, rows, owner, name, strcmp(current, name) == 0);
		free(owner);
		free(current);
	}
	const char *k;
	json_t *rows;
	json_object_foreach(groups, k, rows) {
		if (rc == 0 && json_array_extend(out, rows) != 0)
			rc = tt_fail_oom();
	}
	if (rc == 0)
		*refs = json_incref(out);
	json_decref(out);
	json_decref(groups);
	json_decref(all);
	free(prefix);
	neon_disconnect(&c);
	return rc;
}

/* The condition, read on the branch's compute just before the DELETE. */
static int check_head(struct neon_conn *c, const struct neon_loc *loc, const char *name, const json_t *expect)
{
	const char *want = json_string_value(json_object_get(expect, "commit_xid"));
	if (!want)
		return tether_error_set(TETHER_ECONFIG, "neon object %s: the expected head of branch %s has no commit_xid",
		                        c->key, name);
	json_t *b = NULL;
	char *uri = NULL, *lsn = NULL, *xid = NULL, *why = NULL;
	int busy = 0;
	int rc = neon_branch_uri(c, loc, name, "read_write", &b, &uri);
	/* The commit first, then the writers: a transaction in flight when
	 * the commit was read shows as a writer. */
	if (rc == 0)
		rc = neon_probe(c, loc, name, uri, &lsn, &xid);
	if (rc == 0 && strcmp(xid, want) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "Neon project %s: branch %s moved: expected commit %s, found %s; not "
		                                       "deleted", c->project, name, want, xid);
	if (rc == 0)
		rc = neon_writers(c, name, uri, &busy, &why);
	if (rc == 0 && busy)
		rc = tether_error_set(TETHER_EREFUSED, "%s; not deleted while a session writes to it", why);
	if (uri) {
		memset(uri, 0, strlen(uri)); /* it carries the role's password */
		free(uri);
	}
	json_decref(b);
	free(lsn);
	free(xid);
	free(why);
	return rc;
}

/* Delete the working branch; with `expect`, only while its head is that. */
static int delete_branch(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                         const json_t *expect)
{
	const char *name = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!name)
		return tether_error_set(TETHER_ECONFIG, "neon working ref names no working_branch");
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	json_t *all = NULL, *b = NULL, *kids = NULL;
	if ((rc = neon_refuse_base(&loc, name, "delete")) == 0)
		rc = neon_list_branches(&c, &all);
	if (rc == 0 && (b = neon_find_branch(all, name)) &&
	    !(kids = neon_children(all, json_string_value(json_object_get(b, "id")))))
		rc = tt_fail_oom();
	/* Gone already is done; a branch with pins hanging off it is refused
	 * by neon_delete_leaf before anything is read. */
	if (rc == 0 && b && expect && json_array_size(kids) == 0)
		rc = check_head(&c, &loc, name, expect);
	if (rc == 0 && b)
		rc = neon_delete_leaf(&c, all, name, "a working branch with pins hanging off it is kept");
	json_decref(kids);
	json_decref(b);
	json_decref(all);
	neon_disconnect(&c);
	return rc;
}

int neon_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	return delete_branch(ctx, locator, working_ref, NULL);
}

int neon_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                               const json_t *expect)
{
	return delete_branch(ctx, locator, working_ref, expect);
}
