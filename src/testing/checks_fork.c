/* FORK tier: a working ref is a writable branch made from a recorded
 * state (from its pin, or from the state itself under pin = "record").
 * Writing on it must never reach the pin or the base; `expect` makes the
 * move conditional on the head the caller saw. */
#include "core/abi.h"
#include "testing/suite.h"

#include <stdlib.h>
#include <string.h>

/* The base still reads `want`. */
static int base_is(struct conf_run *r, const json_t *want, const char *after)
{
	json_t *now;
	int rc = conf_fingerprint(r, r->loc, &now, NULL, NULL);
	if (rc)
		return rc;
	return conf_same_content(r->s, now, want)
	               ? 0
	               : conf_fail(r, "%s the base moved: %s, then %s", after, conf_show(r, want), conf_show(r, now));
}

/* The pin (when there is one) still vouches for `state`. */
static int pin_holds(struct conf_run *r, const json_t *state, const json_t *pin_ref, const char *after)
{
	int ok;
	const char *detail;
	if (!pin_ref)
		return 0;
	int rc = conf_verify(r, r->loc, state, pin_ref, &ok, &detail);
	if (rc)
		return rc;
	return ok ? 0 : conf_fail(r, "%s the pinned state no longer verifies: %s", after, detail);
}

/* The start most checks share: the base's state now (*s0), pinned where
 * the kind pins (*pin, else NULL), and forked onto CONF_BRANCH (*wref). */
static int forked(struct conf_run *r, json_t **s0, json_t **pin, json_t **wref)
{
	int rc = conf_fingerprint(r, r->loc, s0, NULL, NULL);
	if (!rc)
		rc = conf_pin_if_pinnable(r, r->loc, *s0, pin);
	if (!rc)
		rc = conf_fork(r, r->loc, *s0, *pin, CONF_BRANCH, NULL, wref);
	return rc;
}

static int check_fork_creates(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *at;
	int rc = forked(r, &s0, &pin, &wref);
	if (!rc)
		rc = base_is(r, s0, "after a fork");
	if (!rc)
		rc = conf_fork_state(r, wref, &at);
	if (rc)
		return rc;
	if (!conf_same_content(r->s, at, s0))
		return conf_fail(r, "the fork reads %s, not the state it was made from (%s)", conf_show(r, at),
		                 conf_show(r, s0));
	return 0;
}

static int check_fork_unpinned(struct conf_run *r)
{
	json_t *s0, *wref, *at;
	int rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	if (!rc)
		rc = conf_fork(r, r->loc, s0, NULL, CONF_BRANCH, NULL, &wref);
	if (!rc)
		rc = conf_fork_state(r, wref, &at);
	if (rc)
		return rc;
	if (!conf_same_content(r->s, at, s0))
		return conf_fail(r, "the fork reads %s, not the recorded state %s", conf_show(r, at), conf_show(r, s0));
	return 0;
}

static int check_fork_isolated(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *at, *at2;
	int rc = forked(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_mutate(r, r->loc, wref);
	if (!rc)
		rc = base_is(r, s0, "after a write on the working ref");
	if (!rc)
		rc = pin_holds(r, s0, pin, "after a write on the working ref");
	if (!rc)
		rc = conf_written_fork_state(r, wref, s0, &at);
	if (rc)
		return rc;
	/* And the other way: a write on the base leaves the fork alone. */
	if ((rc = conf_mutate(r, r->loc, NULL)) || (rc = conf_fork_state(r, wref, &at2)))
		return rc;
	return conf_same_content(r->s, at, at2)
	               ? 0
	               : conf_fail(r, "a write on the base moved the fork: %s, then %s", conf_show(r, at), conf_show(r, at2));
}

static int check_stale_expect(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *s1, *after, *again;
	int rc = forked(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_mutate(r, r->loc, wref);
	if (!rc)
		rc = conf_written_fork_state(r, wref, s0, &s1);
	if (rc)
		return rc;
	/* The working ref moved on from s0: expecting s0 there is stale. */
	tether_error_clear();
	json_t *moved = NULL;
	rc = TT_BACKEND_GET(r->b, fork)(conf_ctx(r, r->loc), r->loc, s0, pin, CONF_BRANCH, s0, &moved);
	json_decref(moved);
	if ((rc = conf_want_refused(r, "fork with a stale expect", rc)) || (rc = conf_fork_state(r, wref, &after)))
		return rc;
	if (!conf_same_content(r->s, after, s1))
		return conf_fail(r, "the refused fork still moved the working ref");
	/* The head the caller saw is accepted, and moves the ref. */
	if ((rc = conf_fork(r, r->loc, s0, pin, CONF_BRANCH, s1, &again)) || (rc = conf_fork_state(r, wref, &after)))
		return rc;
	return conf_same_content(r->s, after, s0)
	               ? 0
	               : conf_fail(r, "a fork expecting the current head %s left the ref at %s", conf_show(r, s1),
	                           conf_show(r, after));
}

static int check_expect_absent(struct conf_run *r)
{
	json_t *s0, *pin, *wref;
	int rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	if (!rc)
		rc = conf_pin_if_pinnable(r, r->loc, s0, &pin);
	if (rc)
		return rc;
	json_t *absent = conf_keep(r, conf_expect_absent());
	if ((rc = conf_fork(r, r->loc, s0, pin, CONF_BRANCH, absent, &wref)))
		return rc;
	for (int round = 0; round < 2; round++) {
		if (round == 1 && (rc = conf_mutate(r, r->loc, wref)))
			return rc;
		json_t *moved = NULL;
		tether_error_clear();
		rc = TT_BACKEND_GET(r->b, fork)(conf_ctx(r, r->loc), r->loc, s0, pin, CONF_BRANCH, absent, &moved);
		json_decref(moved);
		if ((rc = conf_want_refused(r, round ? "fork expecting absent onto a written fork"
		                                      : "fork expecting absent onto an existing ref",
		                            rc)))
			return rc;
	}
	return 0;
}

static int check_delete_wref(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *s1;
	int rc = forked(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_mutate(r, r->loc, wref);
	if (!rc)
		rc = conf_written_fork_state(r, wref, s0, &s1);
	if (rc)
		return rc;
	json_t *wloc = conf_working_locator(r, r->loc, wref);
	tether_error_clear();
	rc = TT_BACKEND_GET(r->b, delete_working_ref)(conf_ctx(r, r->loc), r->loc, wref);
	if (rc)
		return conf_call_failed(r, "delete_working_ref", rc);
	conf_undo_drop(r, UNDO_WREF, wref);
	if ((rc = base_is(r, s0, "after delete_working_ref")) ||
	    (rc = pin_holds(r, s0, pin, "after delete_working_ref")))
		return rc;
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	tether_error_clear();
	int frc = r->b->fingerprint(conf_ctx(r, wloc), wloc, r->s->policy, &fp);
	int still = frc == 0 && conf_same_content(r->s, fp.state, s1);
	json_decref(fp.state);
	free(fp.listing);
	if (still)
		return conf_fail(r, "the deleted working ref still reads %s", conf_show(r, s1));
	/* Gone means a fork that insists the ref is absent succeeds again. */
	if (r->s->caps & TETHER_CAP_CONDITIONAL_REF) {
		json_t *absent = conf_keep(r, conf_expect_absent());
		json_t *again = NULL;
		tether_error_clear();
		rc = TT_BACKEND_GET(r->b, fork)(conf_ctx(r, r->loc), r->loc, s0, pin, CONF_BRANCH, absent, &again);
		if (!rc)
			conf_undo_push(r, UNDO_WREF, r->loc, again);
		json_decref(again);
		if (rc)
			return conf_fail(r, "after delete_working_ref a fork expecting the ref absent returned %s: %s",
			                 conf_code_name(rc), tether_error_last());
	}
	return 0;
}

static int has_delete_if(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, delete_working_ref_if) != NULL;
}

static int delete_if(struct conf_run *r, const json_t *wref, const json_t *expect)
{
	tether_error_clear();
	return TT_BACKEND_GET(r->b, delete_working_ref_if)(conf_ctx(r, r->loc), r->loc, wref, expect);
}

/* Optional (version 6): delete_working_ref_if refuses a branch that is not
 * at the head the caller names, and leaves it as it is; at that head it
 * deletes it; a branch already gone is 0. */
static int check_delete_wref_if(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *s1;
	int rc = forked(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_mutate(r, r->loc, wref);
	if (!rc)
		rc = conf_written_fork_state(r, wref, s0, &s1);
	if (rc)
		return rc;
	/* A write landed since the caller saw s0: refused, and kept. */
	rc = delete_if(r, wref, s0);
	if (rc != TETHER_EREFUSED)
		return conf_fail(r, "delete_working_ref_if expecting %s, with the branch at %s, returned %s%s%s",
		                 conf_show(r, s0), conf_show(r, s1), conf_code_name(rc), rc ? ": " : "",
		                 rc ? tether_error_last() : " (and deleted a write)");
	json_t *kept;
	if ((rc = conf_fork_state(r, wref, &kept)))
		return rc;
	if (!conf_same_content(r->s, kept, s1))
		return conf_fail(r, "after a refused delete_working_ref_if the branch reads %s, not %s", conf_show(r, kept),
		                 conf_show(r, s1));
	if ((rc = delete_if(r, wref, s1)) != 0)
		return conf_call_failed(r, "delete_working_ref_if at the branch's head", rc);
	conf_undo_drop(r, UNDO_WREF, wref);
	if ((rc = base_is(r, s0, "after delete_working_ref_if")) ||
	    (rc = pin_holds(r, s0, pin, "after delete_working_ref_if")))
		return rc;
	json_t *wloc = conf_working_locator(r, r->loc, wref);
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	tether_error_clear();
	int frc = r->b->fingerprint(conf_ctx(r, wloc), wloc, r->s->policy, &fp);
	int still = frc == 0 && conf_same_content(r->s, fp.state, s1);
	json_decref(fp.state);
	free(fp.listing);
	if (still)
		return conf_fail(r, "the branch delete_working_ref_if deleted still reads %s", conf_show(r, s1));
	if ((rc = delete_if(r, wref, s1)) != 0)
		return conf_fail(r, "delete_working_ref_if of a branch already gone returned %s: %s", conf_code_name(rc),
		                 tether_error_last());
	return 0;
}

static int has_descends(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, descends) != NULL;
}

static int descends_is(struct conf_run *r, const json_t *a, const json_t *d, int want)
{
	int answer = -1;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, descends)(conf_ctx(r, r->loc), r->loc, a, d, &answer);
	if (rc)
		return conf_call_failed(r, "descends", rc);
	if (answer != want)
		return conf_fail(r, "descends(%s, %s) answered %d, not %d", conf_show(r, a), conf_show(r, d), answer, want);
	return 0;
}

/* Optional (version 6): a write on a fork descends from the state it was
 * forked from, not the other way round, and a state from itself; the base
 * written on apart from the fork has diverged from it. */
static int check_descends(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *s1, *b1;
	int rc = forked(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_mutate(r, r->loc, wref);
	if (!rc)
		rc = conf_written_fork_state(r, wref, s0, &s1);
	if (!rc)
		rc = descends_is(r, s0, s1, 1);
	if (!rc)
		rc = descends_is(r, s1, s0, 0);
	if (!rc)
		rc = descends_is(r, s1, s1, 1);
	if (rc)
		return rc;
	/* The base moves on by itself: neither head holds the other. */
	if ((rc = conf_mutate(r, r->loc, NULL)) || (rc = conf_fingerprint(r, r->loc, &b1, NULL, NULL)))
		return rc;
	if (conf_same_content(r->s, b1, s0))
		return conf_fail(r, "a mutate of the base left it at %s", conf_show(r, s0));
	if (!rc)
		rc = descends_is(r, s0, b1, 1);
	if (!rc)
		rc = descends_is(r, b1, s1, 0);
	if (!rc)
		rc = descends_is(r, s1, b1, 0);
	return rc;
}

/* The row list_working_refs gives for `branch`, or NULL. */
static const json_t *working_row(const json_t *rows, const char *branch)
{
	size_t i;
	const json_t *row;
	json_array_foreach(rows, i, row) {
		const char *name = json_string_value(json_object_get(row, "branch"));
		if (name && strcmp(name, branch) == 0)
			return row;
	}
	return NULL;
}

/* Optional: a backend without list_working_refs passes. The fork made
 * here is listed with its overlay and its head; nothing outside
 * tether.ws.<dataset8>. is. */
static int check_list_wrefs(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *s1, *rows = NULL;
	if (!TT_BACKEND_GET(r->b, list_working_refs))
		return 0;
	int rc = forked(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_fork_state(r, wref, &s1);
	if (rc)
		return rc;
	tether_error_clear();
	if ((rc = TT_BACKEND_GET(r->b, list_working_refs)(conf_ctx(r, r->loc), r->loc, &rows)) != 0)
		return conf_call_failed(r, "list_working_refs", rc);
	conf_keep(r, rows);
	const json_t *row = working_row(rows, CONF_BRANCH);
	if (!row)
		return conf_fail(r, "list_working_refs does not list %s: %s", CONF_BRANCH, conf_show(r, rows));
	if (!json_equal(json_object_get(row, "ref"), wref))
		return conf_fail(r, "list_working_refs gives %s the ref %s, not fork's %s", CONF_BRANCH,
		                 conf_show(r, json_object_get(row, "ref")), conf_show(r, wref));
	if (!conf_same_content(r->s, json_object_get(row, "head"), s1))
		return conf_fail(r, "list_working_refs gives %s the head %s; the fork reads %s", CONF_BRANCH,
		                 conf_show(r, json_object_get(row, "head")), conf_show(r, s1));
	size_t i;
	json_array_foreach(rows, i, row) {
		const char *name = json_string_value(json_object_get(row, "branch"));
		if (!name || strncmp(name, "tether.ws.", 10) != 0 || strncmp(name + 10, CONF_DATASET_ID, 8) != 0 ||
		    name[18] != '.')
			return conf_fail(r, "list_working_refs lists %s, not a working branch of this dataset",
			                 conf_show(r, row));
	}
	return 0;
}

static int check_open(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *ro, *rw;
	int rc = forked(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_open(r, r->loc, s0, pin, NULL, 1, &ro);
	if (!rc)
		rc = conf_open(r, r->loc, s0, pin, wref, 0, &rw);
	return rc;
}

const struct conf_check conf_checks_fork[] = {
	{"fork: fork from a pin creates a working ref", TETHER_CAP_FORK, NULL, 0, check_fork_creates},
	{"fork: from a recorded state without a pin (pin = \"record\")", TETHER_CAP_FORK, NULL, 0, check_fork_unpinned},
	{"fork: writes on the working ref leave the pin and the base alone", TETHER_CAP_FORK, NULL, 0,
	 check_fork_isolated},
	{"fork: a stale expect is refused (TETHER_EREFUSED)", TETHER_CAP_FORK | TETHER_CAP_CONDITIONAL_REF, NULL, 0,
	 check_stale_expect},
	{"fork: an expect of null (absent) creates a ref and never moves one", TETHER_CAP_FORK | TETHER_CAP_CONDITIONAL_REF,
	 NULL, 0, check_expect_absent},
	{"fork: delete_working_ref removes it", TETHER_CAP_FORK, NULL, 0, check_delete_wref},
	{"fork: list_working_refs lists this dataset's working branches (optional)", TETHER_CAP_FORK, NULL, 0,
	 check_list_wrefs},
	{"fork: open is read-only at the pin and writable at the working ref", TETHER_CAP_FORK, NULL, 0, check_open},
	{"fork: delete_working_ref_if deletes only at the expected head (optional, version 6)", TETHER_CAP_FORK,
	 has_delete_if, 0, check_delete_wref_if},
	{"fork: descends tells a fork's writes from a base that moved on (optional, version 6)", TETHER_CAP_FORK,
	 has_descends, 0, check_descends},
	{NULL, 0, NULL, 0, NULL},
};
