/* The flags with functions behind them: DIFF, HISTORY, CREATE, PROMOTE,
 * MERGE. Each is checked only when declared. */
#include "core/abi.h"
#include "testing/suite.h"

#include <string.h>

struct recorded {
	json_t *state;
	const char *listing;
	size_t len;
};

static int record(struct conf_run *r, const json_t *loc, struct recorded *out)
{
	return conf_fingerprint(r, loc, &out->state, &out->listing, &out->len);
}

static int diff(struct conf_run *r, const struct recorded *a, const struct recorded *b, size_t max, json_t **out)
{
	json_t *d = NULL;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, diff)(conf_ctx(r, r->loc), r->loc, a->state, b->state, a->listing, a->len,
	                                    b->listing, b->len, max, &d);
	conf_keep(r, d);
	if (rc)
		return conf_call_failed(r, "diff", rc);
	if (!json_is_object(d))
		return conf_fail(r, "diff returned 0 but gave %s, not an object", conf_show(r, d));
	const char *missing = !json_is_string(json_object_get(d, "unit"))      ? "a string \"unit\""
	                      : !json_is_string(json_object_get(d, "summary")) ? "a string \"summary\""
	                      : !json_is_array(json_object_get(d, "entries"))  ? "an array \"entries\""
	                      : !json_is_boolean(json_object_get(d, "truncated")) ? "a boolean \"truncated\""
	                      : NULL;
	json_t *totals = json_object_get(d, "totals");
	if (!missing && !json_is_object(totals) && !json_is_null(totals))
		missing = "\"totals\" as an object or null";
	if (missing)
		return conf_fail(r, "diff %s has no %s", conf_show(r, d), missing);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(d, "entries"), i, e) {
		if (!json_is_object(e))
			return conf_fail(r, "diff entry %zu is %s, not an object", i, conf_show(r, e));
	}
	if (json_array_size(json_object_get(d, "entries")) > max)
		return conf_fail(r, "diff gave %zu entries with max_entries %zu", json_array_size(json_object_get(d, "entries")),
		                 max);
	*out = d;
	return 0;
}

static size_t n_entries(const json_t *d)
{
	return json_array_size(json_object_get(d, "entries"));
}

static int check_diff_shape(struct conf_run *r)
{
	struct recorded a, b;
	json_t *d;
	int rc = record(r, r->loc, &a);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = record(r, r->loc, &b);
	if (!rc)
		rc = diff(r, &a, &b, 2000, &d);
	if (rc)
		return rc;
	if (n_entries(d) == 0)
		return conf_fail(r, "a diff across a mutate has no entries: %s", conf_show(r, d));
	return json_is_true(json_object_get(d, "truncated")) ? conf_fail(r, "a one-change diff says it was truncated") : 0;
}

static int check_diff_self(struct conf_run *r)
{
	struct recorded a;
	json_t *d;
	int rc = record(r, r->loc, &a);
	if (!rc)
		rc = diff(r, &a, &a, 2000, &d);
	if (rc)
		return rc;
	if (n_entries(d) != 0 || json_is_true(json_object_get(d, "truncated")))
		return conf_fail(r, "a state against itself gave %s", conf_show(r, d));
	return 0;
}

static int check_diff_max(struct conf_run *r)
{
	struct recorded a, b;
	json_t *full, *cut;
	int rc = record(r, r->loc, &a);
	for (int i = 0; i < 3 && !rc; i++)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = record(r, r->loc, &b);
	if (!rc)
		rc = diff(r, &a, &b, 2000, &full);
	if (rc)
		return rc;
	size_t n = n_entries(full);
	if (n == 0)
		return conf_fail(r, "a diff across three mutates has no entries");
	if ((rc = diff(r, &a, &b, n - 1, &cut)))
		return rc;
	if (!json_is_true(json_object_get(cut, "truncated")))
		return conf_fail(r, "with max_entries %zu of %zu, \"truncated\" is not true", n - 1, n);
	/* Counts stay exact when entries are capped. */
	json_t *t1 = json_object_get(full, "totals"), *t2 = json_object_get(cut, "totals");
	if (!json_equal(t1, t2) && !(json_is_null(t1) && json_is_null(t2)))
		return conf_fail(r, "totals changed with max_entries: %s, then %s", conf_show(r, t1), conf_show(r, t2));
	return 0;
}

/* A listing handed out `piece` bytes a read, failing at its end when
 * `fail_at_end` (as a listing that does not hash to its name does). */
struct piecewise {
	const char *text;
	size_t len, at, piece;
	int fail_at_end;
};

static int piece_read(void *ud, char *buf, size_t cap, size_t *got)
{
	struct piecewise *p = ud;
	size_t n = p->len - p->at;
	if (n > p->piece)
		n = p->piece;
	if (n > cap)
		n = cap;
	if (!n && p->fail_at_end)
		return tether_error_set(TETHER_ECONFIG, "conformance: this listing fails at its end");
	memcpy(buf, p->text + p->at, n);
	p->at += n;
	*got = n;
	return 0;
}

static int check_diff_streams(struct conf_run *r)
{
	if (!TT_BACKEND_GET(r->b, diff_streams))
		return 0;
	struct recorded a, b;
	json_t *whole;
	int rc = record(r, r->loc, &a);
	for (int i = 0; i < 2 && !rc; i++)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = record(r, r->loc, &b);
	if (!rc)
		rc = diff(r, &a, &b, 2000, &whole);
	static const size_t pieces[] = {1, 3, 4096};
	for (size_t i = 0; !rc && i < sizeof pieces / sizeof *pieces; i++) {
		struct piecewise pa = {a.listing, a.len, 0, pieces[i], 0}, pb = {b.listing, b.len, 0, pieces[i], 0};
		struct tether_listing_source sa = {TETHER_LISTING_SOURCE_INIT, .read = piece_read, .ud = &pa};
		struct tether_listing_source sb = {TETHER_LISTING_SOURCE_INIT, .read = piece_read, .ud = &pb};
		json_t *d = NULL;
		tether_error_clear();
		rc = TT_BACKEND_GET(r->b, diff_streams)(conf_ctx(r, r->loc), r->loc, a.state, b.state, a.listing ? &sa : NULL,
		                        b.listing ? &sb : NULL, 2000, &d);
		conf_keep(r, d);
		if (rc)
			return conf_call_failed(r, "diff_streams", rc);
		if (!json_equal(d, whole))
			return conf_fail(r, "diff_streams (pieces of %zu bytes) gave %s where diff gave %s", pieces[i],
			                 conf_show(r, d), conf_show(r, whole));
	}
	if (rc || !a.listing || !b.listing)
		return rc;
	/* A source that fails is the call's failure, never a diff of what came before it. */
	struct piecewise pa = {a.listing, a.len, 0, 4096, 0}, pb = {b.listing, b.len, 0, 4096, 1};
	struct tether_listing_source sa = {TETHER_LISTING_SOURCE_INIT, .read = piece_read, .ud = &pa};
	struct tether_listing_source sb = {TETHER_LISTING_SOURCE_INIT, .read = piece_read, .ud = &pb};
	json_t *d = NULL;
	rc = TT_BACKEND_GET(r->b, diff_streams)(conf_ctx(r, r->loc), r->loc, a.state, b.state, &sa, &sb, 2000, &d);
	conf_keep(r, d);
	tether_error_clear();
	return rc ? 0 : conf_fail(r, "diff_streams succeeded over a listing whose source failed at its end");
}

static int history(struct conf_run *r, int max, json_t **out)
{
	json_t *h = NULL;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, history)(conf_ctx(r, r->loc), r->loc, max, &h);
	conf_keep(r, h);
	if (rc)
		return conf_call_failed(r, "history", rc);
	if (!json_is_array(h))
		return conf_fail(r, "history returned 0 but gave %s, not an array", conf_show(r, h));
	size_t i;
	json_t *e;
	json_array_foreach(h, i, e) {
		if (!json_is_string(json_object_get(e, "id")))
			return conf_fail(r, "history entry %s has no string \"id\"", conf_show(r, e));
	}
	*out = h;
	return 0;
}

static const char *entry_id(const json_t *h, size_t i)
{
	return json_string_value(json_object_get(json_array_get(h, i), "id"));
}

static int check_history_order(struct conf_run *r)
{
	json_t *before, *after;
	int rc = history(r, 0, &before);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = history(r, 0, &after);
	if (rc)
		return rc;
	if (json_array_size(after) == 0)
		return conf_fail(r, "history is empty after a mutate");
	const char *newest = entry_id(after, 0);
	for (size_t i = 0; i < json_array_size(before); i++)
		if (strcmp(entry_id(before, i), newest) == 0)
			return conf_fail(r, "after a mutate the first entry (%s) is one history had before", newest);
	if (json_array_size(before) == 0)
		return 0;
	for (size_t i = 1; i < json_array_size(after); i++)
		if (strcmp(entry_id(after, i), entry_id(before, 0)) == 0)
			return 0;
	return conf_fail(r, "the newest entry before the mutate (%s) is not listed after it", entry_id(before, 0));
}

static int check_history_max(struct conf_run *r)
{
	json_t *one;
	int rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = history(r, 1, &one);
	if (rc)
		return rc;
	return json_array_size(one) == 1 ? 0
	                                 : conf_fail(r, "max_count 1 gave %zu entries", json_array_size(one));
}

static int create(struct conf_run *r, const json_t *loc, const char *what)
{
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, create_store)(conf_ctx(r, loc), loc);
	return rc ? conf_call_failed(r, what, rc) : 0;
}

static int check_create_delete(struct conf_run *r)
{
	if (!TT_STRUCT_GET(struct tether_harness, r->s->h, new_locator))
		return conf_skip(r, "the harness has no new_locator");
	json_t *loc, *state;
	int rc = conf_new_locator(r, &loc);
	if (!rc)
		rc = create(r, loc, "create_store");
	if (!rc)
		rc = conf_fingerprint(r, loc, &state, NULL, NULL);
	if (rc)
		return rc;
	tether_error_clear();
	if ((rc = TT_BACKEND_GET(r->b, delete_store)(conf_ctx(r, loc), loc)))
		return conf_call_failed(r, "delete_store of an untouched store", rc);
	/* Deleted means gone: the same locator can be created afresh. */
	if ((rc = create(r, loc, "create_store after delete_store")))
		return rc;
	tether_error_clear();
	if ((rc = TT_BACKEND_GET(r->b, delete_store)(conf_ctx(r, loc), loc)))
		return conf_call_failed(r, "delete_store of a re-created store", rc);
	return 0;
}

static int check_delete_refused(struct conf_run *r)
{
	if (!TT_STRUCT_GET(struct tether_harness, r->s->h, new_locator))
		return conf_skip(r, "the harness has no new_locator");
	json_t *loc, *state, *after;
	int rc = conf_new_locator(r, &loc);
	if (!rc)
		rc = create(r, loc, "create_store");
	if (!rc)
		rc = conf_mutate(r, loc, NULL);
	if (!rc)
		rc = conf_fingerprint(r, loc, &state, NULL, NULL);
	if (rc)
		return rc;
	tether_error_clear();
	if ((rc = conf_want_refused(r, "delete_store of a store holding data",
	                            TT_BACKEND_GET(r->b, delete_store)(conf_ctx(r, loc), loc))))
		return rc;
	if ((rc = conf_fingerprint(r, loc, &after, NULL, NULL)))
		return rc;
	return conf_same_content(r->s, state, after) ? 0 : conf_fail(r, "the refused delete_store changed the store");
}

/* A fork from the current state with one write on it. */
static int written_fork(struct conf_run *r, json_t **s0, json_t **pin, json_t **wref)
{
	int rc = conf_fingerprint(r, r->loc, s0, NULL, NULL);
	if (!rc)
		rc = conf_pin_if_pinnable(r, r->loc, *s0, pin);
	if (!rc)
		rc = conf_fork(r, r->loc, *s0, *pin, CONF_BRANCH, NULL, wref);
	if (!rc)
		rc = conf_mutate(r, r->loc, *wref);
	return rc;
}

static int check_promote(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *at, *base, *result = NULL;
	int rc = written_fork(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_written_fork_state(r, wref, s0, &at);
	if (rc)
		return rc;
	tether_error_clear();
	rc = TT_BACKEND_GET(r->b, promote)(conf_ctx(r, r->loc), r->loc, wref, s0, &result);
	conf_keep(r, result);
	if (rc)
		return conf_call_failed(r, "promote of a fork the base has not moved from", rc);
	if ((rc = conf_fingerprint(r, r->loc, &base, NULL, NULL)))
		return rc;
	if (conf_same_content(r->s, base, s0))
		return conf_fail(r, "promote returned 0 but the base did not move");
	if (!conf_same_content(r->s, base, at))
		return conf_fail(r, "after promote the base reads %s, the fork %s", conf_show(r, base), conf_show(r, at));
	if (pin) {
		int ok;
		const char *detail;
		if ((rc = conf_verify(r, r->loc, s0, pin, &ok, &detail)))
			return rc;
		if (!ok)
			return conf_fail(r, "promote broke the pin of the state it moved from: %s", detail);
	}
	return 0;
}

static int check_promote_stale(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *moved, *after, *result = NULL;
	int rc = written_fork(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &moved, NULL, NULL);
	if (rc)
		return rc;
	tether_error_clear();
	rc = TT_BACKEND_GET(r->b, promote)(conf_ctx(r, r->loc), r->loc, wref, s0, &result);
	json_decref(result);
	if ((rc = conf_want_refused(r, "promote expecting a base that moved", rc)) ||
	    (rc = conf_fingerprint(r, r->loc, &after, NULL, NULL)))
		return rc;
	return conf_same_content(r->s, after, moved) ? 0 : conf_fail(r, "the refused promote still moved the base");
}

static int has_move_base(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, move_base) != NULL;
}

/* A promote taken back: move_base refuses a stale expect and leaves the
 * base; from the head promote left, it moves the base back (not a
 * fast-forward); at the state already, it is 0. */
static int check_move_base(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *at, *base, *result = NULL;
	int rc = written_fork(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_written_fork_state(r, wref, s0, &at);
	if (rc)
		return rc;
	tether_error_clear();
	rc = TT_BACKEND_GET(r->b, promote)(conf_ctx(r, r->loc), r->loc, wref, s0, &result);
	json_decref(result);
	result = NULL;
	if (rc)
		return conf_call_failed(r, "promote of a fork the base has not moved from", rc);
	tether_error_clear();
	rc = TT_BACKEND_GET(r->b, move_base)(conf_ctx(r, r->loc), r->loc, s0, s0, &result);
	json_decref(result);
	result = NULL;
	if ((rc = conf_want_refused(r, "move_base expecting a head the base is not at", rc)) ||
	    (rc = conf_fingerprint(r, r->loc, &base, NULL, NULL)))
		return rc;
	if (!conf_same_content(r->s, base, at))
		return conf_fail(r, "the refused move_base still moved the base (to %s)", conf_show(r, base));
	for (int again = 0; again < 2; again++) {
		tether_error_clear();
		rc = TT_BACKEND_GET(r->b, move_base)(conf_ctx(r, r->loc), r->loc, s0, at, &result);
		conf_keep(r, result);
		result = NULL;
		if (rc)
			return conf_call_failed(r, again ? "move_base to the state the base is at already"
			                                 : "move_base from the head promote left", rc);
		if ((rc = conf_fingerprint(r, r->loc, &base, NULL, NULL)))
			return rc;
		if (!conf_same_content(r->s, base, s0))
			return conf_fail(r, "after move_base the base reads %s, not the state before the promote %s",
			                 conf_show(r, base), conf_show(r, s0));
	}
	return 0;
}

static int check_merge(struct conf_run *r)
{
	json_t *s0, *pin, *wref, *moved, *after, *result = NULL;
	int rc = written_fork(r, &s0, &pin, &wref);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &moved, NULL, NULL);
	if (rc)
		return rc;
	tether_error_clear();
	rc = TT_BACKEND_GET(r->b, merge)(conf_ctx(r, r->loc), r->loc, wref, "tether conformance: merge", &result);
	conf_keep(r, result);
	if (rc)
		return conf_call_failed(r, "merge of a fork and a base with different writes", rc);
	if ((rc = conf_fingerprint(r, r->loc, &after, NULL, NULL)))
		return rc;
	if (conf_same_content(r->s, after, moved))
		return conf_fail(r, "merge returned 0 but the base did not move");
	if (conf_same_content(r->s, after, s0))
		return conf_fail(r, "merge put the base back at the fork point");
	return 0;
}

const struct conf_check conf_checks_flags[] = {
	{"diff: the result has unit, summary, entries, totals and truncated", TETHER_CAP_DIFF, NULL, 0, check_diff_shape},
	{"diff: a state against itself has no entries", TETHER_CAP_DIFF, NULL, 0, check_diff_self},
	{"diff: respects max_entries, and says it truncated", TETHER_CAP_DIFF, NULL, 0, check_diff_max},
	{"diff: diff_streams gives diff's answer, and fails with its source", TETHER_CAP_DIFF, NULL, 0, check_diff_streams},
	{"history: lists the newest state first after a mutate", TETHER_CAP_HISTORY, NULL, 0, check_history_order},
	{"history: max_count limits the list", TETHER_CAP_HISTORY, NULL, 0, check_history_max},
	{"create: create_store then delete_store of an untouched store succeeds", TETHER_CAP_CREATE, NULL, CONF_OWN_OBJECTS,
	 check_create_delete},
	{"create: delete_store after a mutate is refused", TETHER_CAP_CREATE, NULL, CONF_OWN_OBJECTS, check_delete_refused},
	{"promote: moves the base to the fork's head", TETHER_CAP_FORK | TETHER_CAP_PROMOTE, NULL, 0, check_promote},
	{"promote: a stale expect is refused (TETHER_EREFUSED)", TETHER_CAP_FORK | TETHER_CAP_PROMOTE, NULL, 0,
	 check_promote_stale},
	{"promote: move_base moves the base back, only from the expected head", TETHER_CAP_FORK | TETHER_CAP_PROMOTE,
	 has_move_base, 0, check_move_base},
	{"merge: a diverged fork merges into the base", TETHER_CAP_FORK | TETHER_CAP_MERGE, NULL, 0, check_merge},
	{NULL, 0, NULL, 0, NULL},
};
