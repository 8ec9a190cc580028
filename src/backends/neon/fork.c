/* Forks, handles and quiescence.
 *
 * A fork is a child branch of the pin (its data is the pin's, cut at the
 * pin's LSN). Forking onto a working branch that exists restores it onto
 * the pin, which Neon refuses once a branch has children: a pin that a
 * later commit cut from the working branch hangs off it. Then the fork
 * lands on a sibling, <name>.2, <name>.3, ..., the first that is absent or
 * childless, and the old branch stays the pins' parent; the working_ref
 * names the branch used, which the engine records. A sibling is reused
 * without a restore (it sits at the pin) only when it is the one in use
 * (workrefs.c). */
#include "backends/neon/neon.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

int neon_refuse_base(const struct neon_loc *loc, const char *name, const char *doing)
{
	if (strcmp(name, loc->branch) == 0)
		return tether_error_set(TETHER_EREFUSED, "Neon project %s: will not %s branch %s, the object's base branch",
		                        loc->project_id, doing, name);
	return 0;
}

/* Restore branch id onto the source (its head, or at lsn when not NULL). */
static int restore(struct neon_conn *c, const char *id, const char *source_id, const char *lsn)
{
	char *p = neon_esc(c->project), *b = neon_esc(id);
	char *path = p && b ? tt_strdupf("/projects/%s/branches/%s/restore", p, b) : NULL;
	json_t *body = json_pack("{s:s}", "source_branch_id", source_id);
	if (body && lsn)
		json_object_set_new(body, "source_lsn", json_string(lsn));
	long status;
	int rc = path && body ? neon_request(c, "POST", path, body, NULL, &status, NULL) : tt_fail_oom();
	free(p);
	free(b);
	free(path);
	json_decref(body);
	return rc;
}

/* A child of parent_id (at its head, or at lsn when not NULL) with a
 * read_write endpoint. */
static int create_child(struct neon_conn *c, const char *name, const char *parent_id, const char *lsn)
{
	char *p = neon_esc(c->project);
	char *path = p ? tt_strdupf("/projects/%s/branches", p) : NULL;
	json_t *body = json_pack("{s:{s:s, s:s}, s:[{s:s}]}", "branch", "name", name, "parent_id", parent_id,
	                         "endpoints", "type", "read_write");
	if (body && lsn)
		json_object_set_new(json_object_get(body, "branch"), "parent_lsn", json_string(lsn));
	long status;
	int rc = path && body ? neon_request(c, "POST", path, body, NULL, &status, NULL) : tt_fail_oom();
	free(p);
	free(path);
	json_decref(body);
	return rc;
}

/* The condition on the named branch: JSON null = absent; a state = its
 * newest commit as the caller last saw it. */
static int check_expect(struct neon_conn *c, const struct neon_loc *loc, const json_t *have, const char *name,
                        const json_t *expect)
{
	if (!expect)
		return 0;
	if (!json_is_object(expect))
		return have ? tether_error_set(TETHER_EREFUSED, "Neon project %s: branch %s exists: expected it absent",
		                               c->project, name)
		            : 0;
	if (!have)
		return tether_error_set(TETHER_EREFUSED, "Neon project %s: branch %s is gone: expected it at commit %s",
		                        c->project, name, json_string_value(json_object_get(expect, "commit_xid")));
	char *lsn = NULL, *xid = NULL;
	int rc = neon_read_branch(c, loc, name, "read_write", &lsn, &xid);
	const char *want = json_string_value(json_object_get(expect, "commit_xid"));
	if (rc == 0 && (!want || strcmp(want, xid) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "Neon project %s: branch %s moved: expected commit %s, found %s",
		                      c->project, name, want ? want : "?", xid);
	free(lsn);
	free(xid);
	return rc;
}

/* Does branch b sit at the pin src: src was cut from b, and b's newest
 * commit is still the state's? (commit, then new: the branch is reused.) */
static int sits_at_pin(struct neon_conn *c, const struct neon_loc *loc, const json_t *b, const json_t *src,
                       const json_t *state, int *rc)
{
	const char *parent = json_string_value(json_object_get(src, "parent_id"));
	const char *id = json_string_value(json_object_get(b, "id"));
	const char *want = json_string_value(json_object_get(state, "commit_xid"));
	const char *name = json_string_value(json_object_get(b, "name"));
	if (!parent || !id || !want || strcmp(parent, id) != 0)
		return 0;
	char *lsn = NULL, *xid = NULL;
	*rc = neon_read_branch(c, loc, name, "read_write", &lsn, &xid);
	int yes = *rc == 0 && strcmp(xid, want) == 0;
	free(lsn);
	free(xid);
	return yes;
}

/* Is `name` the sibling of `branch` in use (neon_current_sibling)? Only
 * that one is reused as it stands, so that the branch a fork chose is the
 * one list_working_refs lists first. */
static int is_current(const json_t *all, const char *branch, const char *name)
{
	char *current = neon_current_sibling(all, branch);
	int yes = current && strcmp(current, name) == 0;
	free(current);
	return yes;
}

int neon_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              const char *branch, const json_t *expect, json_t **working_ref)
{
	*working_ref = NULL;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	/* Without a pin (--pin record) the fork is cut from the state's
	 * timeline at its LSN, which holds while Neon's history does. */
	const char *pin = json_string_value(json_object_get(pin_ref, "branch"));
	const char *at = pin ? NULL : json_string_value(json_object_get(state, "lsn"));
	if (!pin)
		pin = json_string_value(json_object_get(state, "timeline"));
	json_t *all = NULL, *src = NULL, *have = NULL;
	char *used = NULL, *target = NULL;
	if (!neon_valid_branch_name(branch) || strlen(branch) > 240)
		rc = tether_error_set(TETHER_EUSAGE, "Neon project %s: branch name %s is not a Neon branch name", c.project,
		                      branch);
	else if (!pin || (!pin_ref && !at))
		rc = tether_error_set(TETHER_ECONFIG, "neon object %s: the state names no timeline and LSN to fork from",
		                      c.key);
	if (rc == 0)
		rc = neon_refuse_base(&loc, branch, "fork over");
	if (rc == 0)
		rc = neon_list_branches(&c, &all);
	if (rc == 0 && !(src = neon_find_branch(all, pin)))
		rc = tether_error_set(TETHER_ENOTFOUND, "neon object %s: cannot fork: branch %s is gone from Neon project "
		                                        "%s (`tether repair` re-pins the state if the project still holds "
		                                        "it)", c.key, pin, c.project);
	/* The condition is on the branch tether left the workspace on: the
	 * sibling in use (workrefs.c), or the named branch when there is none.
	 * It guards what a restore would overwrite: a branch with pins hanging
	 * off it is never restored (the fork goes to a sibling), so only a
	 * childless one is checked. */
	if (rc == 0 && !(target = neon_current_sibling(all, branch)) && !(target = strdup(branch)))
		rc = tt_fail_oom();
	if (rc == 0) {
		have = neon_find_branch(all, target);
		json_t *kids = have ? neon_children(all, json_string_value(json_object_get(have, "id"))) : NULL;
		if (!have || json_array_size(kids) == 0)
			rc = check_expect(&c, &loc, have, target, expect);
		json_decref(kids);
	}
	const char *src_id = json_string_value(json_object_get(src, "id"));
	for (int n = 1; rc == 0 && !used && n <= NEON_MAX_SIBLINGS; n++) {
		char *name = n == 1 ? strdup(branch) : tt_strdupf("%s.%d", branch, n);
		json_t *b = name ? neon_find_branch(all, name) : NULL, *kids = NULL;
		const char *id = json_string_value(json_object_get(b, "id"));
		if (!name)
			rc = tt_fail_oom();
		else if (!b) {
			if ((rc = create_child(&c, name, src_id, at)) == 0)
				used = name, name = NULL;
		} else if (!(kids = neon_children(all, id)))
			rc = tt_fail_oom();
		else if (json_array_size(kids) && !at && is_current(all, branch, name) &&
		         sits_at_pin(&c, &loc, b, src, state, &rc)) {
			used = name, name = NULL;
		} else if (rc == 0 && json_array_size(kids) == 0) {
			/* A branch tether made earlier, childless: restored only
			 * when the call set no condition, or when it is the one
			 * the condition was checked on above. */
			if (expect && strcmp(name, target) != 0)
				rc = tether_error_set(TETHER_EREFUSED, "Neon project %s: branch %s exists and is not the one "
				                                       "tether left %s on (%s)", c.project, name, branch, target);
			else if ((rc = restore(&c, id, src_id, at)) == 0)
				used = name, name = NULL;
		}
		free(name);
		json_decref(b);
		json_decref(kids);
	}
	if (rc == 0 && !used)
		rc = tether_error_set(TETHER_EREFUSED, "Neon project %s: %s and its %d siblings all have pins hanging off "
		                                       "them: drop or gc some first", c.project, branch, NEON_MAX_SIBLINGS - 1);
	if (rc == 0 && !(*working_ref = json_pack("{s:s}", "working_branch", used)))
		rc = tt_fail_oom();
	free(used);
	free(target);
	json_decref(all);
	json_decref(src);
	json_decref(have);
	neon_disconnect(&c);
	return rc;
}

int neon_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              const json_t *working_ref, int read_only, json_t **handle)
{
	*handle = NULL;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	const char *wb = json_string_value(json_object_get(working_ref, "working_branch"));
	const char *pin = read_only ? json_string_value(json_object_get(pin_ref, "branch")) : NULL;
	/* A recorded state is read from its pin on a read_only endpoint; a
	 * writable handle is the branch as it is now. */
	const char *name = pin ? pin : wb ? wb : neon_position(&loc);
	const char *type = pin ? "read_only" : "read_write";
	json_t *b = NULL;
	char *uri = NULL;
	if ((rc = neon_branch_uri(&c, &loc, name, type, &b, &uri)) == 0) {
		*handle = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b}", "kind", NEON_KIND, "uri", uri, "url", uri,
		                    "branch", name, "project_id", loc.project_id, "database", loc.database, "endpoint_type",
		                    type, "read_only", read_only);
		const char *xid = json_string_value(json_object_get(state, "commit_xid"));
		if (*handle && pin && xid)
			json_object_set_new(*handle, "commit_xid", json_string(xid));
		if (!*handle)
			rc = tt_fail_oom();
	}
	json_decref(b);
	free(uri);
	neon_disconnect(&c);
	return rc;
}

int neon_check_quiescence(const struct tether_bctx *ctx, const json_t *locator, int *busy, char **why)
{
	*busy = 0;
	*why = NULL;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	const char *pos = neon_position(&loc);
	json_t *b = NULL;
	char *uri = NULL;
	if ((rc = neon_branch_uri(&c, &loc, pos, "read_write", &b, &uri)) == 0)
		rc = neon_writers(&c, pos, uri, busy, why);
	json_decref(b);
	free(uri);
	neon_disconnect(&c);
	return rc;
}
