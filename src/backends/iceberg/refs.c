/* Pins and forks as Iceberg snapshot refs. A pin is the tag
 * tether.<pin id>; a fork the branch the engine names; promote moves the
 * base branch to a fork's head when that is a fast-forward. Every move is
 * one catalog commit with two requirements, assert-table-uuid (the table
 * was not dropped and re-created) and assert-ref-snapshot-id on the ref
 * being moved, at the value this call read (null: must not exist), so a
 * peer's move in between refuses the commit instead of being overwritten.
 *
 * A table with no snapshot has state -1: its pin holds nothing and needs
 * no tag, and it cannot be forked (Iceberg refs need a snapshot). */
#include "backends/iceberg/ib.h"

#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIN_PREFIX "tether."
#define WS_PREFIX "tether.ws."

/* Commit one ref move: requirements uuid + the ref at `seen` (-1 with
 * `absent`: the ref must not exist), then `update`. */
static int move_ref(struct ib_table *t, const char *ref, int64_t seen, int absent, json_t *update)
{
	json_t *reqs = json_pack("[o, o]", ib_req_uuid(t->md), ib_req_ref(ref, seen, absent));
	json_t *upds = json_pack("[o]", update);
	int rc = reqs && upds ? ib_table_commit(t, reqs, upds) : ib_fail_oom();
	json_decref(reqs);
	json_decref(upds);
	return rc;
}

/* The ref's snapshot as a requirement sees it: *absent when no such ref
 * (main of an empty table included). */
static int ref_seen(const struct ib_table *t, const char *ref, int64_t *id, int *absent)
{
	int found = 0;
	int rc = ib_md_ref(t->md, ref, id, &found, NULL);
	*absent = !found || *id == -1;
	return rc;
}

static json_t *pin_ref_of(const char *tag, const char *pin_id)
{
	return tag ? json_pack("{s:s, s:s}", "tag", tag, "pin", pin_id) : json_pack("{s:s}", "pin", pin_id);
}

int ib_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
           json_t **pin_ref, int *created)
{
	struct ib_table t;
	int64_t id, at;
	int found = 0, is_tag = 0;
	*pin_ref = NULL;
	*created = 0;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	char *tag = tt_strdupf(PIN_PREFIX "%s", pin_id);
	if ((rc = ib_state_id(state, t.what, &id)))
		goto out;
	if (id == -1) {
		/* Nothing to hold: the empty state is always there. */
		if (!(*pin_ref = pin_ref_of(NULL, pin_id)))
			rc = ib_fail_oom();
		goto out;
	}
	if (!ib_md_snapshot(t.md, id)) {
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: cannot pin snapshot %lld: the table no longer holds it", t.what,
		                      (long long)id);
		goto out;
	}
	if ((rc = ib_md_ref(t.md, tag, &at, &found, &is_tag)))
		goto out;
	if (!found) {
		rc = move_ref(&t, tag, -1, 1, ib_upd_set_ref(tag, id, "tag"));
		if (rc == TETHER_EREFUSED) {
			/* A peer may have pinned the same state: that is idempotent.
			 * Anything else keeps the refusal's own message. */
			char *why = strdup(tether_error_last());
			if (ib_table_reload(&t) == 0 && ib_md_ref(t.md, tag, &at, &found, &is_tag) == 0 && found && at == id)
				rc = 0;
			else
				tether_error_set(rc, "%s", why ? why : "refused");
			free(why);
		}
		*created = rc == 0 && !found;
	} else if (at != id || !is_tag) {
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s %s already names snapshot %lld, not %lld", t.what,
		                      is_tag ? "tag" : "branch", tag, (long long)at, (long long)id);
	}
	if (rc == 0 && !(*pin_ref = pin_ref_of(tag, pin_id)))
		rc = ib_fail_oom();
out:
	if (rc)
		*created = 0;
	free(tag);
	ib_table_close(&t);
	return rc;
}

/* Remove a ref while it is at `expect` (NULL: at what was read now). */
static int remove_ref(struct ib_table *t, const char *ref, const int64_t *expect)
{
	int64_t at;
	int found = 0;
	int rc = ib_md_ref(t->md, ref, &at, &found, NULL);
	if (rc || !found)
		return rc; /* gone already */
	if (expect && at != *expect)
		return tether_error_set(TETHER_EREFUSED, "%s: %s is at %lld, not %lld; it stays", t->what, ref,
		                        (long long)at, (long long)*expect);
	return move_ref(t, ref, at, 0, ib_upd_remove_ref(ref));
}

int ib_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	const char *pin = json_string_value(json_object_get(pin_ref, "pin"));
	if (!tag && !pin)
		return tether_error_set(TETHER_ECONFIG, "iceberg pin_ref names no pin");
	if (!tag)
		return 0; /* the empty state's pin: no tag */
	if (strncmp(tag, PIN_PREFIX, strlen(PIN_PREFIX)) != 0 || strncmp(tag, WS_PREFIX, strlen(WS_PREFIX)) == 0)
		return tether_error_set(TETHER_EREFUSED, "iceberg pin_ref: %s is not a tether pin tag", tag);
	struct ib_table t;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	rc = remove_ref(&t, tag, NULL);
	ib_table_close(&t);
	return rc;
}

int ib_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	struct ib_table t;
	*pin_refs = NULL;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	json_t *out = json_array();
	const char *name;
	json_t *ref;
	json_object_foreach(json_object_get(t.md, "refs"), name, ref) {
		const char *type = json_string_value(json_object_get(ref, "type"));
		if (out && type && strcmp(type, "tag") == 0 && strncmp(name, PIN_PREFIX, strlen(PIN_PREFIX)) == 0 &&
		    strncmp(name, WS_PREFIX, strlen(WS_PREFIX)) != 0)
			json_array_append_new(out, pin_ref_of(name, name + strlen(PIN_PREFIX)));
	}
	ib_table_close(&t);
	if (!out)
		return ib_fail_oom();
	*pin_refs = out;
	return 0;
}

int ib_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              int *ok, char **detail)
{
	struct ib_table t;
	int64_t id, at;
	int found = 0;
	*ok = 0;
	*detail = NULL;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	if ((rc = ib_state_id(state, t.what, &id)) == 0) {
		if (id == -1) {
			*ok = 1; /* the empty table: held with no tag */
		} else if (tag) {
			rc = ib_md_ref(t.md, tag, &at, &found, NULL);
			if (rc == 0 && !found)
				*detail = tt_strdupf("tag %s is missing", tag);
			else if (rc == 0 && at != id)
				*detail = tt_strdupf("tag %s points at %lld, not %lld", tag, (long long)at, (long long)id);
			else if (rc == 0 && !ib_md_snapshot(t.md, id))
				*detail = tt_strdupf("snapshot %lld is no longer in the table", (long long)id);
			else
				*ok = rc == 0;
		} else {
			*ok = ib_md_snapshot(t.md, id) != NULL;
			if (!*ok)
				*detail = tt_strdupf("snapshot %lld is no longer in the table (expired?)", (long long)id);
		}
	}
	ib_table_close(&t);
	return rc;
}

/* verify --deep: verify's answer, then the snapshot's manifest list (the
 * Avro file every reader of the snapshot opens first) looked up in its
 * store: a tag naming a snapshot whose files are gone is no held state. */
int ib_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                   int *ok, char **detail)
{
	int rc = ib_verify(ctx, locator, state, pin_ref, ok, detail);
	int64_t id;
	if (rc || !*ok || ib_state_id(state, "iceberg state", &id) || id == -1)
		return rc;
	struct ib_table t;
	if ((rc = ib_table_open(ctx, locator, &t)))
		return rc;
	const char *list = json_string_value(json_object_get(ib_md_snapshot(t.md, id), "manifest-list"));
	int exists = 0;
	if (!list) {
		*ok = 0;
		*detail = tt_strdupf("snapshot %lld has no manifest-list", (long long)id);
	} else if ((rc = ib_file_exists(ctx, list, &exists)) == 0 && !exists) {
		*ok = 0;
		free(*detail);
		*detail = tt_strdupf("snapshot %lld: its manifest list %s is missing", (long long)id, list);
	} else if (rc && rc != TETHER_ECANCELLED) {
		rc = tether_error_set(rc, "%s: snapshot %lld's manifest list: %s", t.what, (long long)id,
		                      tether_error_last());
	}
	ib_table_close(&t);
	return rc;
}

static int refuse_base(const struct ib_table *t, const char *branch, const char *doing)
{
	if (strcmp(branch, t->loc.branch) == 0 || strcmp(branch, "main") == 0)
		return tether_error_set(TETHER_EREFUSED, "%s: will not %s branch %s, the object's base branch", t->what,
		                        doing, branch);
	return 0;
}

int ib_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
            const char *branch, const json_t *expect, json_t **working_ref)
{
	(void)pin_ref; /* the tag names the state's snapshot; the state says it */
	struct ib_table t;
	int64_t to, seen, want = -1;
	int absent = 0;
	*working_ref = NULL;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	if ((rc = refuse_base(&t, branch, "fork over")) || (rc = ib_state_id(state, t.what, &to)))
		goto out;
	if (to == -1) {
		rc = tether_error_set(TETHER_EREFUSED, "%s has no snapshot yet, so it cannot be forked: write to it on "
		                                       "%s first", t.what, t.loc.branch);
		goto out;
	}
	if (!ib_md_snapshot(t.md, to)) {
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: cannot fork: snapshot %lld is gone", t.what, (long long)to);
		goto out;
	}
	if ((rc = ref_seen(&t, branch, &seen, &absent)))
		goto out;
	if (expect && json_is_object(expect) && (rc = ib_state_id(expect, t.what, &want)))
		goto out;
	/* The caller's expectation checked against what was read; the commit's
	 * requirement then checks what was read against the catalog. */
	if (expect && !json_is_object(expect) && !absent)
		rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s exists already (at %lld)", t.what, branch,
		                      (long long)seen);
	else if (expect && json_is_object(expect) && (absent || seen != want))
		rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s moved: expected %lld, found %s%lld", t.what, branch,
		                      (long long)want, absent ? "no branch " : "", absent ? 0LL : (long long)seen);
	else if (absent || seen != to)
		rc = move_ref(&t, branch, seen, absent, ib_upd_set_ref(branch, to, "branch"));
	if (rc == 0 && !(*working_ref = json_pack("{s:s}", "working_branch", branch)))
		rc = ib_fail_oom();
out:
	ib_table_close(&t);
	return rc;
}

static int open_working(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                        struct ib_table *t, const char **branch)
{
	*branch = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!*branch)
		return tether_error_set(TETHER_ECONFIG, "iceberg working ref names no working_branch");
	int rc = ib_table_open(ctx, locator, t);
	if (rc == 0 && (rc = refuse_base(t, *branch, "delete")))
		ib_table_close(t);
	return rc;
}

int ib_delete_working_ref(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref)
{
	struct ib_table t;
	const char *branch;
	int rc = open_working(ctx, locator, working_ref, &t, &branch);
	if (rc)
		return rc;
	rc = remove_ref(&t, branch, NULL);
	ib_table_close(&t);
	return rc;
}

int ib_delete_working_ref_if(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref,
                             const json_t *expect)
{
	struct ib_table t;
	const char *branch;
	int64_t want;
	int rc = open_working(ctx, locator, working_ref, &t, &branch);
	if (rc)
		return rc;
	if ((rc = ib_state_id(expect, t.what, &want)) == 0)
		rc = remove_ref(&t, branch, &want);
	ib_table_close(&t);
	return rc;
}

int ib_list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	struct ib_table t;
	*refs = NULL;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	char *prefix = tt_strdupf(WS_PREFIX "%.8s.", ctx && ctx->dataset_id ? ctx->dataset_id : "");
	json_t *out = json_array();
	const char *name;
	json_t *ref;
	json_object_foreach(json_object_get(t.md, "refs"), name, ref) {
		const char *type = json_string_value(json_object_get(ref, "type"));
		if (!prefix || !out || !type || strcmp(type, "branch") != 0 || strncmp(name, prefix, strlen(prefix)) != 0)
			continue;
		json_array_append_new(out, json_pack("{s:s, s:{s:s}, s:{s:O}}", "branch", name, "ref", "working_branch",
		                                     name, "head", "snapshot_id", json_object_get(ref, "snapshot-id")));
	}
	ib_table_close(&t);
	if (!prefix || !out) {
		free(prefix);
		json_decref(out);
		return ib_fail_oom();
	}
	free(prefix);
	*refs = out;
	return 0;
}

int ib_descends(const struct tether_bctx *ctx, const json_t *locator, const json_t *ancestor,
                const json_t *descendant, int *answer)
{
	struct ib_table t;
	int64_t a, d;
	*answer = 0;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	if ((rc = ib_state_id(ancestor, t.what, &a)) == 0 && (rc = ib_state_id(descendant, t.what, &d)) == 0) {
		if (a != -1 && !ib_md_snapshot(t.md, a))
			rc = tether_error_set(TETHER_ENOTFOUND, "%s: snapshot %lld is not in the table", t.what, (long long)a);
		else
			*answer = a == -1 || ib_md_is_ancestor(t.md, a, d); /* the empty table precedes all */
	}
	ib_table_close(&t);
	return rc;
}

/* from/to as the ids `tether log` spells (decimal text), like every
 * backend's ids in a promote's report. */
static json_t *move_result(const char *branch, int64_t from, int64_t to, int moved)
{
	char f[24], t[24];
	snprintf(f, sizeof f, "%lld", (long long)from);
	snprintf(t, sizeof t, "%lld", (long long)to);
	return json_pack("{s:s, s:s, s:s, s:b}", "branch", branch, "from", f, "to", t, "moved", moved);
}

int ib_promote(const struct tether_bctx *ctx, const json_t *locator, const json_t *working_ref, const json_t *expect,
               json_t **result)
{
	struct ib_table t;
	const char *branch = json_string_value(json_object_get(working_ref, "working_branch"));
	int64_t head, target, seen;
	int absent = 0, found = 0;
	*result = NULL;
	if (!branch)
		return tether_error_set(TETHER_ECONFIG, "iceberg working ref names no working_branch");
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	const char *base = t.loc.branch;
	if ((rc = ref_seen(&t, base, &head, &absent)) == 0 && (rc = ib_md_ref(t.md, branch, &target, &found, NULL)) == 0 &&
	    !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\"", t.what, branch);
	if (rc == 0 && expect && (rc = ib_state_id(expect, t.what, &seen)) == 0 && seen != head)
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s moved: expected %lld, found %lld; nothing was changed", t.what,
		                      base, (long long)seen, (long long)head);
	int moved = rc == 0 && head != target;
	if (moved && head != -1 && !ib_md_is_ancestor(t.md, head, target)) {
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s is at %lld, which is not an ancestor of %s's head %lld: "
		                                       "not a fast-forward", t.what, base, (long long)head, branch,
		                      (long long)target);
		tether_error_set_hint("re-apply the writes on a fresh fork of %s, or move %s with pyiceberg's "
		                      "manage_snapshots() if losing its newer snapshots is intended", base, base);
	}
	if (moved && rc == 0)
		rc = move_ref(&t, base, head, absent, ib_upd_set_ref(base, target, "branch"));
	if (rc == 0 && !(*result = move_result(base, head, target, moved)))
		rc = ib_fail_oom();
	ib_table_close(&t);
	return rc;
}

int ib_move_base(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *expect,
                 json_t **result)
{
	struct ib_table t;
	int64_t head, to, seen;
	int absent = 0;
	*result = NULL;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	const char *base = t.loc.branch;
	if ((rc = ref_seen(&t, base, &head, &absent)) == 0 && (rc = ib_state_id(state, t.what, &to)) == 0)
		rc = ib_state_id(expect, t.what, &seen);
	int moved = rc == 0 && head != to;
	if (moved && head != seen)
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s moved: expected %lld, found %lld; nothing was changed", t.what,
		                      base, (long long)seen, (long long)head);
	else if (moved && to == -1)
		rc = tether_error_set(TETHER_EREFUSED, "%s: will not empty %s (move it back to no snapshot)", t.what, base);
	else if (moved)
		rc = move_ref(&t, base, head, absent, ib_upd_set_ref(base, to, "branch"));
	if (rc == 0 && !(*result = move_result(base, head, to, moved)))
		rc = ib_fail_oom();
	ib_table_close(&t);
	return rc;
}
