/* States and pins of a Neon project.
 *
 * The state is read over SQL on the branch the locator reads (its working
 * branch, else its branch): {lsn, commit_xid, branch, timeline}, where
 * `branch` is the lineage (the locator's upstream branch, from which every
 * branch tether reads descends) and `timeline` the branch the LSN was read
 * on. A pin is the child branch tether.<pin id> of the timeline at the
 * LSN: Neon keeps what a branch was cut from for as long as the branch
 * lives. Pins made with protected_pins = true are protected branches. */
#include "backends/neon/neon.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static const long absent_ok[] = {404, 0};

int neon_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                     struct tether_fingerprint *out)
{
	(void)policy;
	out->state = NULL;
	out->listing = NULL;
	out->listing_len = 0;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	const char *pos = neon_position(&loc);
	char *lsn = NULL, *xid = NULL;
	rc = neon_read_branch(&c, &loc, pos, "read_write", &lsn, &xid);
	if (rc == 0 && !(out->state = json_pack("{s:s, s:s, s:s, s:s}", "lsn", lsn, "commit_xid", xid, "branch",
	                                        loc.branch, "timeline", pos)))
		rc = tt_fail_oom();
	free(lsn);
	free(xid);
	neon_disconnect(&c);
	return rc;
}

static json_t *pin_ref_of(const char *name, const char *id, const char *lsn)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "pin", name + strlen("tether."), "branch", name, "branch_id", id,
	                 "lsn", lsn ? lsn : "");
}

int neon_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
             json_t **pin_ref, int *created)
{
	*created = 0;
	*pin_ref = NULL;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	const char *lsn = json_string_value(json_object_get(state, "lsn"));
	const char *timeline = json_string_value(json_object_get(state, "timeline"));
	char *name = tt_strdupf("tether.%s", pin_id), *p = neon_esc(c.project);
	char *path = p ? tt_strdupf("/projects/%s/branches", p) : NULL;
	json_t *all = NULL, *have = NULL, *parent = NULL, *body = NULL, *made = NULL;
	if (!name || !path)
		rc = tt_fail_oom();
	else if (!lsn || !timeline)
		rc = tether_error_set(TETHER_ECONFIG, "neon object %s: the state has no lsn or timeline", c.key);
	if (rc == 0)
		rc = neon_list_branches(&c, &all);
	if (rc == 0 && (have = neon_find_branch(all, name))) {
		/* Pin ids address content: the same id is the same data. */
		*pin_ref = pin_ref_of(name, json_string_value(json_object_get(have, "id")),
		                      json_string_value(json_object_get(have, "parent_lsn")));
		goto done;
	}
	if (rc == 0 && !(parent = neon_find_branch(all, timeline)))
		rc = tether_error_set(TETHER_ENOTFOUND, "neon object %s: Neon project %s has no branch \"%s\" to pin at LSN "
		                                        "%s (deleted behind tether's back?)", c.key, c.project, timeline, lsn);
	if (rc == 0) {
		body = json_pack("{s:{s:s, s:O, s:s}}", "branch", "name", name, "parent_id",
		                 json_object_get(parent, "id"), "parent_lsn", lsn);
		if (body && c.protected_pins)
			json_object_set_new(json_object_get(body, "branch"), "protected", json_true());
		long status;
		rc = body ? neon_request(&c, "POST", path, body, NULL, &status, &made) : tt_fail_oom();
	}
	if (rc == 0) {
		const char *id = json_string_value(json_object_get(json_object_get(made, "branch"), "id"));
		if (!id)
			rc = tether_error_set(TETHER_EIO, "neon object %s: Neon project %s: the new branch %s has no id", c.key,
			                      c.project, name);
		else {
			*created = 1;
			*pin_ref = pin_ref_of(name, id, lsn);
		}
	} else if (rc == TETHER_ETRANSIENT && body) {
		/* No answer: the branch as it stands says whether it was made. */
		int first = rc;
		char *why = strdup(tether_error_last());
		json_decref(all);
		all = NULL;
		json_decref(have);
		if ((rc = neon_list_branches(&c, &all)) == 0 && (have = neon_find_branch(all, name)))
			*pin_ref = pin_ref_of(name, json_string_value(json_object_get(have, "id")), lsn);
		else if (rc == 0)
			rc = tether_error_set(first, "%s (branch %s not made)", why ? why : "", name);
		free(why);
	}
done:
	if (rc == 0 && !*pin_ref)
		rc = tt_fail_oom();
	json_decref(all);
	json_decref(have);
	json_decref(parent);
	json_decref(body);
	json_decref(made);
	free(name);
	free(p);
	free(path);
	neon_disconnect(&c);
	return rc;
}

int neon_delete_leaf(struct neon_conn *c, const json_t *all, const char *name, const char *rule)
{
	json_t *b = neon_find_branch(all, name);
	if (!b)
		return 0;
	const char *id = json_string_value(json_object_get(b, "id"));
	json_t *kids = neon_children(all, id);
	int rc = 0;
	if (!kids)
		rc = tt_fail_oom();
	else if (json_array_size(kids)) {
		char *list = json_dumps(kids, JSON_COMPACT);
		rc = tether_error_set(TETHER_EREFUSED, "neon object %s: Neon project %s: branch %s has child branches %s: "
		                                       "%s", c->key, c->project, name, list ? list : "", rule);
		free(list);
	} else
		rc = neon_delete_branch(c, id);
	json_decref(b);
	json_decref(kids);
	return rc;
}

int neon_delete_branch(struct neon_conn *c, const char *id)
{
	char *p = neon_esc(c->project), *b = neon_esc(id);
	char *path = p && b ? tt_strdupf("/projects/%s/branches/%s", p, b) : NULL;
	free(p);
	free(b);
	long status;
	int rc = path ? neon_request(c, "DELETE", path, NULL, absent_ok, &status, NULL) : tt_fail_oom();
	free(path);
	return rc;
}

static int is_pin_name(const char *n)
{
	return n && strncmp(n, "tether.", 7) == 0 && n[7] && strncmp(n, "tether.ws.", 10) != 0;
}

int neon_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	const char *name = json_string_value(json_object_get(pin_ref, "branch"));
	if (!is_pin_name(name))
		return tether_error_set(TETHER_ECONFIG, "neon pin_ref names no tether pin branch");
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	json_t *all = NULL;
	if ((rc = neon_list_branches(&c, &all)) == 0)
		rc = neon_delete_leaf(&c, all, name, "only leaf pins are dropped");
	json_decref(all);
	neon_disconnect(&c);
	return rc;
}

int neon_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	*pin_refs = NULL;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	json_t *all = NULL, *out = NULL;
	if ((rc = neon_list_branches(&c, &all)) == 0 && !(out = json_array()))
		rc = tt_fail_oom();
	size_t i;
	json_t *b;
	json_array_foreach(all, i, b) {
		const char *n = json_string_value(json_object_get(b, "name"));
		const char *id = json_string_value(json_object_get(b, "id"));
		if (out && id && is_pin_name(n))
			json_array_append_new(out, pin_ref_of(n, id, json_string_value(json_object_get(b, "parent_lsn"))));
	}
	json_decref(all);
	neon_disconnect(&c);
	*pin_refs = out;
	return rc;
}

int neon_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                int *ok, char **detail)
{
	*ok = 0;
	*detail = NULL;
	struct neon_loc loc;
	struct neon_conn c;
	int rc = neon_begin(ctx, locator, &loc, &c);
	if (rc)
		return rc;
	const char *want = pin_ref ? json_string_value(json_object_get(pin_ref, "branch"))
	                           : json_string_value(json_object_get(state, "timeline"));
	json_t *all = NULL, *b = NULL;
	if (!want)
		rc = tether_error_set(TETHER_ECONFIG, "neon object %s: the pin names no branch", c.key);
	else if ((rc = neon_list_branches(&c, &all)) == 0) {
		b = neon_find_branch(all, want);
		*ok = b != NULL;
		if (!*ok)
			*detail = tt_strdupf("branch %s is gone from Neon project %s", want, c.project);
	}
	json_decref(all);
	json_decref(b);
	neon_disconnect(&c);
	return rc;
}

/* verify, then the pinned state read back: the pin's branch on a
 * read_only endpoint, probed over SQL, must hold the state's newest
 * commit. A pin branch whose compute cannot start, or that Neon restored
 * to something else, fails though the branch is listed. */
int neon_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                     const json_t *pin_ref, int *ok, char **detail)
{
	int rc = neon_verify(ctx, locator, state, pin_ref, ok, detail);
	const char *name = json_string_value(json_object_get(pin_ref, "branch"));
	if (rc || !*ok || !name)
		return rc;
	struct neon_loc loc;
	struct neon_conn c;
	if ((rc = neon_begin(ctx, locator, &loc, &c)) != 0)
		return rc;
	char *lsn = NULL, *xid = NULL;
	const char *want = json_string_value(json_object_get(state, "commit_xid"));
	if ((rc = neon_read_branch(&c, &loc, name, "read_only", &lsn, &xid)) == 0 && (!want || strcmp(want, xid) != 0)) {
		*ok = 0;
		*detail = tt_strdupf("pin branch %s holds commit %s, not %s", name, xid, want ? want : "?");
	}
	if (rc && rc != TETHER_ETRANSIENT && rc != TETHER_EAUTH && rc != TETHER_ECANCELLED) {
		*ok = 0;
		*detail = tt_strdupf("pin branch %s cannot be read: %s", name, tether_error_last());
		tether_error_clear();
		rc = 0;
	}
	free(lsn);
	free(xid);
	neon_disconnect(&c);
	return rc;
}
