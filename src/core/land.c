/* tether promote and tether merge: land this workspace's working branches
 * on their base branches, system by system.
 *
 * Both read, for each object with a working branch here, two heads: the
 * working branch's (the object's locator with its working ref merged in)
 * and the base branch's (the manifest's locator, less any detached `at`).
 * The working head must be the state the working manifest records, so
 * what lands is exactly what a dataset commit names: uncommitted work is
 * refused before anything moves. The plan holds both heads per object;
 * --from-plan refuses when either moved, naming which.
 *
 * Where the backend can say whether one state descends from another
 * (descends, backend version 6), promote's plan asks it of each base head
 * and working head: a base that moved on since the fork is `diverged` in
 * the plan, and promote refuses it before anything moves (naming `tether
 * merge KEY` where the backend has MERGE). Without descends the backend's
 * promote refuses it when its turn comes, as a non-fast-forward.
 *
 * promote then fast-forwards each base to its working head through the
 * backend's promote, conditional on the base head the plan reviewed (the
 * backend compares and moves in one step where it can), in order; the
 * first failure stops the run, the bases moved before it stay moved, and
 * the message names them. Since a promoted base is at the recorded state,
 * the manifests already record it: nothing in the dataset changes.
 *
 * merge three-way merges each working branch into its base (the backend's
 * merge; a conflict writes nothing for that object, and the others go on),
 * then moves the working branch to the merged head, conditional on the
 * head it was at, so that the next commit records the state the base now
 * holds.
 *
 * Every move is journaled before it is made (op "promote" / "merge", each
 * move's base before and after; a merge adds the merged head, "after", and
 * whether the working branch followed it), and marked done once it is: a run killed
 * part-way leaves its entry INCOMPLETE, and re-running the command lands
 * what is left (a base already at its working head is up to date) and
 * closes that entry as finished. */
#include "core/abi.h"
#include "core/cancel.h"
#include "core/engine.h"
#include "core/journal.h"
#include "core/lock.h"
#include "core/pinid.h"
#include "core/plan.h"
#include "core/sessions.h"
#include "core/workspace.h"
#include "util/fsutil.h"
#include "util/plural.h"

#include <stdlib.h>
#include <string.h>

enum land_mode { LAND_PROMOTE, LAND_MERGE };

struct land_run {
	struct tether_repo *repo;
	enum land_mode mode;
	const char *op; /* "promote" | "merge" */
	const struct tether_land_opts *opts;
	const char *message; /* merge: the commit message, or NULL */
	struct tt_manifest_set set;
	struct tt_obj *objs;
	json_t *ws;
	json_t *plan;
	json_t **base; /* per object: the base head's full state as read, or NULL */
};

static const char *or_else(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

static struct tt_obj *obj_by_key(struct land_run *run, const char *key)
{
	for (size_t i = 0; key && i < run->set.n; i++)
		if (strcmp(run->objs[i].m->key, key) == 0)
			return &run->objs[i];
	return NULL;
}

static size_t obj_index(struct land_run *run, const struct tt_obj *o)
{
	return (size_t)(o - run->objs);
}

/* The base branch's locator: the manifest's, without the detached
 * starting point `at` (an object there still lands on its branch). */
static json_t *base_locator(const struct tt_obj *o)
{
	json_t *loc = json_deep_copy(tt_manifest_locator(o->m));
	json_object_del(loc, "at");
	return loc;
}

static int fingerprint_at(struct tt_obj *o, const json_t *locator, json_t **state)
{
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	int state_only = o->ctx.state_only;
	o->ctx.state_only = 1;
	int rc = o->b->fingerprint(&o->ctx, locator, tt_manifest_policy(o->m), &fp);
	o->ctx.state_only = state_only;
	free(fp.listing);
	if (rc) {
		json_decref(fp.state);
		*state = NULL;
		return rc;
	}
	*state = fp.state;
	return 0;
}

static int read_base(struct tt_obj *o, json_t **state)
{
	json_t *loc = base_locator(o);
	int rc = fingerprint_at(o, loc, state);
	json_decref(loc);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot read its base branch: %s", o->m->key, tether_error_last());
	return rc;
}

static int read_working(struct tt_obj *o, json_t **state)
{
	int rc = fingerprint_at(o, o->locator, state);
	if (rc)
		rc = tether_error_set(rc, "%s: cannot read its working branch: %s", o->m->key, tether_error_last());
	return rc;
}

static const char *working_branch(const struct land_run *run, const struct tt_obj *o)
{
	return json_string_value(json_object_get(tt_workspace_entry(run->ws, o->m->key), "branch"));
}

static unsigned needed_cap(const struct land_run *run)
{
	return run->mode == LAND_PROMOTE ? TETHER_CAP_PROMOTE : TETHER_CAP_MERGE;
}

/* Why an object is not landed, decided without reading it, or NULL. */
static const char *skip_reason(const struct land_run *run, const struct tt_obj *o)
{
	if (!o->working_ref || !working_branch(run, o))
		return "no working branch in this checkout";
	if (!(o->caps & needed_cap(run)))
		return run->mode == LAND_PROMOTE ? "its backend cannot promote (no PROMOTE)"
		                                 : "its backend cannot merge (no MERGE)";
	if (!tt_manifest_state(o->m))
		return "never recorded";
	return NULL;
}

/* A key named on the command line must be landable: said before anything
 * is read, rather than skipped. */
static int refuse_named(const struct land_run *run, const struct tt_obj *o, const char *why)
{
	tether_error_set(TETHER_EREFUSED, "%s: cannot %s it: %s", o->m->key, run->op, why);
	if (!o->working_ref)
		tether_error_set_hint("`tether new` forks working branches; `tether open %s` forks this one", o->m->key);
	else if (!(o->caps & TETHER_CAP_MERGE) && run->mode == LAND_MERGE)
		tether_error_set_hint("a base that moved on cannot be merged in this system: re-apply the work on a "
		                      "fresh fork of it");
	return TETHER_EREFUSED;
}

/* The objects this run is about, in key order: 1 in want[i] for each. */
static int select_objects(struct land_run *run, int *want)
{
	const struct tether_land_opts *opts = run->opts;
	for (size_t i = 0; i < run->set.n; i++)
		want[i] = opts->n_keys == 0 && !opts->from_plan;
	if (opts->from_plan) {
		/* The keys the plan is about; one gone now is the plan check's to
		 * name. */
		size_t i;
		json_t *a;
		json_array_foreach(tt_plan_actions(opts->from_plan), i, a) {
			struct tt_obj *o = obj_by_key(run, json_string_value(json_object_get(a, "key")));
			if (o)
				want[obj_index(run, o)] = 1;
		}
		return 0;
	}
	for (size_t k = 0; k < opts->n_keys; k++) {
		struct tt_obj *o = obj_by_key(run, opts->keys[k]);
		if (!o)
			return tether_error_set(TETHER_ENOTFOUND, "no object '%s' in this dataset", opts->keys[k]);
		const char *why = skip_reason(run, o);
		if (why)
			return refuse_named(run, o, why);
		want[obj_index(run, o)] = 1;
	}
	return 0;
}

/* Work on the working branch that no commit records: refused before
 * anything moves, naming every such object. */
static int refuse_uncommitted(const struct land_run *run, json_t *uncommitted)
{
	size_t n = json_array_size(uncommitted);
	char *list = strdup("");
	size_t i;
	json_t *e;
	json_array_foreach(uncommitted, i, e) {
		char *next = tt_strdupf("%s%s%s", list, i ? "; " : "", json_string_value(e));
		free(list);
		list = next;
	}
	tether_error_set(TETHER_EREFUSED, "cannot %s: %zu %s uncommitted work on %s working %s: %s", run->op, n,
	                 tt_plural((long long)n, "object has", "objects have"), tt_plural((long long)n, "its", "their"),
	                 tt_plural((long long)n, "branch", "branches"), list);
	tether_error_set_hint("`tether commit -m MSG` records it (and pins it), then run `tether %s` again; nothing "
	                      "was moved", run->op);
	free(list);
	return TETHER_EREFUSED;
}

/* Has the base moved on since the fork: is its head outside the working
 * head's history? Asked only of a backend that can tell (descends); one
 * that cannot leaves *diverged 0, and its promote refuses at its turn. */
static int check_diverged(struct tt_obj *o, const json_t *base, const json_t *head, int *diverged)
{
	*diverged = 0;
	if (!TT_BACKEND_GET(o->b, descends))
		return 0;
	json_t *loc = base_locator(o);
	int descends = 0;
	int rc = TT_BACKEND_GET(o->b, descends)(&o->ctx, loc, base, head, &descends);
	json_decref(loc);
	if (rc)
		return tether_error_set(rc, "%s: cannot tell whether its base branch moved on since the fork: %s",
		                        o->m->key, tether_error_last());
	*diverged = !descends;
	return 0;
}

/* Is the working head in the base's history (the base holds the work)?
 * Asked only after check_diverged found the backend can tell. */
static int check_behind(struct tt_obj *o, const json_t *head, const json_t *base, int *behind)
{
	json_t *loc = base_locator(o);
	int rc = TT_BACKEND_GET(o->b, descends)(&o->ctx, loc, head, base, behind);
	json_decref(loc);
	if (rc)
		return tether_error_set(rc, "%s: cannot tell whether its base branch holds the working branch's head: %s",
		                        o->m->key, tether_error_last());
	return 0;
}

static json_t *diverged_detail(const struct tt_obj *o)
{
	if (o->caps & TETHER_CAP_MERGE)
		return json_sprintf("its base branch has moved on since the fork: `tether merge %s` merges the two",
		                    o->m->key);
	return json_string("its base branch has moved on since the fork, and this system cannot merge");
}

/* A plan with diverged objects: refused before anything moves, naming
 * them, with `tether merge` for those whose backend has MERGE. 0 when
 * none diverged. */
static int refuse_diverged(struct land_run *run)
{
	char *all = strdup(""), *mergeable = strdup(""), *other = strdup("");
	size_t n = 0, n_merge = 0;
	const char *first = NULL;
	size_t i;
	json_t *a;
	json_array_foreach(tt_plan_actions(run->plan), i, a) {
		if (strcmp(json_string_value(json_object_get(a, "action")), "diverged") != 0)
			continue;
		struct tt_obj *o = obj_by_key(run, json_string_value(json_object_get(a, "key")));
		char **list = (o->caps & TETHER_CAP_MERGE) ? &mergeable : &other;
		char *next = tt_strdupf("%s%s%s", *list, **list ? " " : "", o->m->key);
		free(*list);
		*list = next;
		next = tt_strdupf("%s%s%s", all, n ? ", " : "", o->m->key);
		free(all);
		all = next;
		n_merge += (o->caps & TETHER_CAP_MERGE) != 0;
		if (!n++)
			first = o->m->key;
	}
	int rc = 0;
	if (n == 1)
		rc = tether_error_set(TETHER_EREFUSED, "%s: cannot promote: its base branch has moved on since the fork "
		                      "(diverged: its head is not in the working branch's history); nothing was moved",
		                      first);
	else if (n)
		rc = tether_error_set(TETHER_EREFUSED, "cannot promote: %zu objects' base branches have moved on since "
		                      "the fork (diverged): %s; nothing was moved", n, all);
	const char *its = n == 1 ? "its base branch has" : "their base branches have";
	if (n && n_merge == n)
		tether_error_set_hint("%s moved on: `tether merge %s` merges the two, then `tether promote` lands the rest",
		                      its, mergeable);
	else if (n && n_merge == 0)
		tether_error_set_hint("%s moved on and this system cannot merge: re-apply the work on a fresh fork of %s "
		                      "(`tether new`)", its, n == 1 ? "it" : "them");
	else if (n)
		tether_error_set_hint("`tether merge %s` merges those; %s cannot merge: re-apply their work on a fresh "
		                      "fork", mergeable, other);
	free(all);
	free(mergeable);
	free(other);
	return rc;
}

/* One object's planned action and precondition. */
static int plan_object(struct land_run *run, struct tt_obj *o, json_t *actions, json_t *objects,
                       json_t *uncommitted)
{
	const char *why = skip_reason(run, o);
	if (why) {
		json_array_append_new(actions, json_pack("{s:s, s:s, s:s}", "key", o->m->key, "action", "skip", "detail",
		                                         why));
		return 0;
	}
	size_t i = obj_index(run, o);
	json_t *head = NULL;
	int rc = read_working(o, &head);
	if (!rc)
		rc = read_base(o, &run->base[i]);
	if (rc) {
		json_decref(head);
		return rc;
	}
	const char *branch = working_branch(run, o);
	if (!tt_same_content(o->b, tt_manifest_state(o->m), head)) {
		char *now = tt_state_brief(o->b, head), *was = tt_state_brief(o->b, tt_manifest_state(o->m));
		json_array_append_new(uncommitted, json_sprintf("%s: %s is at %s, the manifest records %s", o->m->key,
		                                                branch, now, was));
		free(now);
		free(was);
	}
	json_t *base_c = tt_content_state(o->b, run->base[i]), *head_c = tt_content_state(o->b, head);
	int level = tt_same_content(o->b, run->base[i], head), diverged = 0, behind = 0;
	if (!level && run->mode == LAND_PROMOTE)
		rc = check_diverged(o, run->base[i], head, &diverged);
	/* A base that moved on from the working head holds the work already
	 * (promoted before, or landed some other way): nothing to promote,
	 * which is not a divergence to merge. */
	if (!rc && diverged)
		rc = check_behind(o, head, run->base[i], &behind);
	if (behind) {
		diverged = 0;
		level = 1;
	}
	if (rc) {
		json_decref(head);
		json_decref(base_c);
		json_decref(head_c);
		return rc;
	}
	const char *action = level ? "up-to-date" : diverged ? "diverged" : run->op;
	json_t *a = json_pack("{s:s, s:s, s:s, s:O, s:O}", "key", o->m->key, "action", action, "branch", branch,
	                      "expect", base_c, "head", head_c);
	if (level)
		json_object_set_new(a, "detail", json_string(behind ? "the base branch already holds the working branch's head"
		                                                    : "the base branch is at the working branch's head"));
	if (diverged)
		json_object_set_new(a, "detail", diverged_detail(o));
	json_array_append_new(actions, a);
	json_array_append_new(objects, json_pack("{s:s, s:o, s:o}", "key", o->m->key, "base", base_c, "head", head_c));
	o->fp.state = head;
	return 0;
}

static int build_plan(struct land_run *run)
{
	int *want = calloc(run->set.n + 1, sizeof *want);
	if (!want)
		abort();
	int rc = select_objects(run, want);
	run->plan = tt_plan_new(run->repo, run->op);
	json_t *objects = json_array(), *uncommitted = json_array();
	json_object_set_new(tt_plan_preconditions(run->plan), "objects", objects);
	if (run->mode == LAND_MERGE)
		json_object_set_new(run->plan, "message", run->message ? json_string(run->message) : json_null());
	for (size_t i = 0; !rc && i < run->set.n; i++) {
		if (tt_cancelled())
			rc = tt_cancel_error(run->op);
		else if (want[i])
			rc = plan_object(run, &run->objs[i], tt_plan_actions(run->plan), objects, uncommitted);
	}
	if (!rc && json_array_size(uncommitted))
		rc = refuse_uncommitted(run, uncommitted);
	json_decref(uncommitted);
	free(want);
	return rc;
}

/* The entry of `key` in a {key, ...} array, or NULL. */
static json_t *find_keyed(const json_t *list, const char *key)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		const char *k = json_string_value(json_object_get(e, "key"));
		if (k && key && strcmp(k, key) == 0)
			return e;
	}
	return NULL;
}

static int stale_head(struct land_run *run, const char *key, const char *what, const json_t *was, const json_t *now)
{
	struct tt_obj *o = obj_by_key(run, key);
	char *a = tt_state_brief(o->b, was), *b = tt_state_brief(o->b, now);
	int rc = tether_error_set(TETHER_EREFUSED, "stale plan: %s: %s moved since the plan (from %s to %s)", key, what,
	                          a, b);
	free(a);
	free(b);
	return rc;
}

/* --from-plan: the heads the plan reviewed must be where they are now,
 * and the plan made now must be the plan made then. */
static int check_plan(struct land_run *run, const json_t *planned)
{
	const json_t *was = json_object_get(tt_plan_preconditions(planned), "objects");
	const json_t *now = json_object_get(tt_plan_preconditions(run->plan), "objects");
	if (!json_is_array(was))
		return tether_error_set(TETHER_EUSAGE, "malformed plan: the preconditions name no \"objects\" array");
	size_t i;
	json_t *e;
	json_array_foreach(now, i, e) {
		const char *key = json_string_value(json_object_get(e, "key"));
		json_t *p = find_keyed(was, key);
		if (!p)
			return tether_error_set(TETHER_EREFUSED, "stale plan: %s has a working branch to land now, which "
			                        "the plan did not", key);
		if (!json_equal(json_object_get(p, "base"), json_object_get(e, "base")))
			return stale_head(run, key, "its base branch", json_object_get(p, "base"), json_object_get(e, "base"));
		if (!json_equal(json_object_get(p, "head"), json_object_get(e, "head"))) {
			char *what = tt_strdupf("its working branch %s", json_string_value(json_object_get(
			                                                       find_keyed(tt_plan_actions(run->plan), key), "branch")));
			int rc = stale_head(run, key, what, json_object_get(p, "head"), json_object_get(e, "head"));
			free(what);
			return rc;
		}
	}
	json_array_foreach(was, i, e) {
		const char *key = json_string_value(json_object_get(e, "key"));
		if (!find_keyed(now, key))
			return tether_error_set(TETHER_EREFUSED, "stale plan: %s has no working branch to land any more",
			                        key ? key : "?");
	}
	return tt_plan_check_actions(run->op, tt_plan_actions(planned), tt_plan_actions(run->plan));
}

/* ------------------------------------------------------------------ */
/* Applying                                                            */
/* ------------------------------------------------------------------ */

static int is_move(const struct land_run *run, const json_t *a)
{
	return strcmp(json_string_value(json_object_get(a, "action")), run->op) == 0;
}

/* What the journal names before any base moves: every planned move. */
static json_t *journal_moves(struct land_run *run)
{
	json_t *moves = json_array();
	size_t i;
	json_t *a;
	json_array_foreach(tt_plan_actions(run->plan), i, a) {
		if (!is_move(run, a))
			continue;
		struct tt_obj *o = obj_by_key(run, json_string_value(json_object_get(a, "key")));
		json_t *loc = base_locator(o);
		json_array_append_new(moves, json_pack("{s:s, s:s, s:o, s:O, s:O, s:O, s:O, s:b}", "key", o->m->key, "kind",
		                                       o->b->kind, "locator", loc, "working_ref", o->working_ref, "branch",
		                                       json_object_get(a, "branch"), "from", json_object_get(a, "expect"),
		                                       "to", json_object_get(a, "head"), "done", 0));
	}
	return moves;
}

struct landing {
	struct tt_journal journal;
	json_t *moves;  /* borrowed from the journal entry (or owned, without one) */
	json_t *list;   /* the report's objects */
	json_t *landed; /* keys whose work is on their base now */
	size_t done;    /* moves made */
};

static void mark_done(struct landing *l, const char *key, const json_t *result)
{
	json_t *m = find_keyed(l->moves, key);
	if (m) {
		json_object_set_new(m, "done", json_true());
		if (result)
			json_object_set(m, "result", (json_t *)result);
	}
	l->done++;
	if (tt_journal_update(&l->journal) != 0)
		tether_error_clear(); /* the entry stays INCOMPLETE-with-less-said; the re-run reads the stores */
}

/* The bases this run moved, for a message: "a (main 0123456789ab → 4567890abcde), b (...)". */
static char *landed_list(const struct landing *l)
{
	char *out = strdup("");
	size_t i;
	json_t *e;
	json_array_foreach(l->list, i, e) {
		const char *action = json_string_value(json_object_get(e, "action"));
		if (strcmp(action, "promoted") != 0 && strcmp(action, "merged") != 0)
			continue;
		const json_t *base = json_object_get(e, "base");
		char *next = tt_strdupf("%s%s%s (%s %.12s → %.12s)", out, *out ? ", " : "",
		                        json_string_value(json_object_get(e, "key")),
		                        or_else(json_string_value(json_object_get(base, "branch")), "base"),
		                        or_else(json_string_value(json_object_get(base, "from")), "?"),
		                        or_else(json_string_value(json_object_get(base, "to")), "?"));
		free(out);
		out = next;
	}
	return out;
}

/* The keys planned after index `from` that this run will not reach. */
static char *not_attempted(struct land_run *run, size_t from)
{
	char *out = strdup("");
	json_t *actions = tt_plan_actions(run->plan);
	for (size_t i = from; i < json_array_size(actions); i++) {
		json_t *a = json_array_get(actions, i);
		if (!is_move(run, a))
			continue;
		char *next = tt_strdupf("%s%s%s", out, *out ? ", " : "", json_string_value(json_object_get(a, "key")));
		free(out);
		out = next;
	}
	return out;
}

/* A promote that failed: the first error, what landed before it, what was
 * not tried, and what to run. */
static int promote_stopped(struct land_run *run, struct landing *l, struct tt_obj *o, size_t at, int code,
                           int diverged)
{
	char *why = strdup(tether_error_last());
	const char *backend_hint = tether_error_hint();
	char *hint = backend_hint ? strdup(backend_hint) : NULL;
	char *landed = landed_list(l), *rest = not_attempted(run, at + 1);
	tether_error_set(code, "%s: cannot promote: %s; %s%s%s%s", o->m->key, why,
	                 *landed ? "landed before it: " : "no base was moved", landed, *rest ? "; not attempted: " : "",
	                 rest);
	if (diverged && (o->caps & TETHER_CAP_MERGE))
		tether_error_set_hint("its base branch has moved on: `tether merge %s` merges the two, then `tether "
		                      "promote` lands the rest", o->m->key);
	else if (diverged)
		tether_error_set_hint("its base branch has moved on and this system cannot merge%s%s", hint ? ": " : "",
		                      hint ? hint : "");
	else if (hint)
		tether_error_set_hint("%s", hint);
	else
		tether_error_set_hint("`tether promote` again lands what is left (the bases moved stay moved; `tether "
		                      "ops` lists the journal)");
	free(why);
	free(hint);
	free(landed);
	free(rest);
	return code;
}

static json_t *result_entry(const char *key, const char *action, const char *branch, const json_t *base,
                            const char *detail)
{
	json_t *e = json_pack("{s:s, s:s}", "key", key, "action", action);
	if (branch)
		json_object_set_new(e, "branch", json_string(branch));
	if (detail)
		json_object_set_new(e, "detail", json_string(detail));
	if (base)
		json_object_set(e, "base", (json_t *)base);
	return e;
}

static int promote_one(struct land_run *run, struct landing *l, struct tt_obj *o, const json_t *a, size_t at)
{
	const char *branch = json_string_value(json_object_get(a, "branch"));
	json_t *now = NULL;
	int rc = read_base(o, &now);
	if (rc)
		return promote_stopped(run, l, o, at, rc, 0);
	/* Already there: another key of the same store, or a run that died
	 * after this move, landed it. */
	if (tt_same_content(o->b, now, json_object_get(a, "head"))) {
		json_decref(now);
		json_array_append_new(l->list, result_entry(o->m->key, "up-to-date", branch, NULL,
		                                            "the base branch is at the working branch's head"));
		json_array_append_new(l->landed, json_string(o->m->key));
		mark_done(l, o->m->key, NULL);
		return 0;
	}
	int diverged = tt_same_content(o->b, now, json_object_get(a, "expect"));
	json_decref(now);
	json_t *loc = base_locator(o), *result = NULL;
	rc = TT_BACKEND_GET(o->b, promote)(&o->ctx, loc, o->working_ref, json_object_get(a, "expect"), &result);
	json_decref(loc);
	if (rc) {
		json_decref(result);
		/* Refused although the base was where the plan saw it: not a
		 * fast-forward (or a writer got in between, which the message
		 * says). */
		return promote_stopped(run, l, o, at, rc, diverged && rc == TETHER_EREFUSED);
	}
	json_array_append_new(l->list, result_entry(o->m->key, "promoted", branch, result, NULL));
	json_array_append_new(l->landed, json_string(o->m->key));
	mark_done(l, o->m->key, result);
	json_decref(result);
	tt_fault_point("promote", "moved");
	return 0;
}

/* After a merge: the working branch follows the base to the merged head,
 * from the head it was at, so the next commit records what the base
 * holds. The workspace remembers where tether left it. */
static int follow_merge(struct land_run *run, struct tt_obj *o, const char *branch, const json_t *was,
                        const json_t *merged)
{
	if (tt_same_content(o->b, was, merged))
		return 0; /* a fast-forward: the base came to the working head */
	json_t *wref = NULL;
	int rc = TT_BACKEND_GET(o->b, fork)(&o->ctx, tt_manifest_locator(o->m), merged, NULL, branch, was, &wref);
	json_decref(wref);
	if (rc)
		return tether_error_set(rc, "the working branch %s could not follow to the merged head: %s", branch,
		                        tether_error_last());
	json_t *heads = json_object_get(tt_workspace_entry(run->ws, o->m->key), "heads");
	if (heads)
		json_object_set(heads, branch, (json_t *)merged);
	return tt_workspace_save(run->repo, run->ws);
}

/* Conflicts and refusals are the object's; any other failure stops the
 * run (returned). */
static int merge_one(struct land_run *run, struct landing *l, struct tt_obj *o, const json_t *a)
{
	const char *branch = json_string_value(json_object_get(a, "branch"));
	json_t *now = NULL, *work = NULL;
	int rc = read_base(o, &now);
	if (!rc)
		rc = read_working(o, &work);
	int landed = !rc && tt_same_content(o->b, now, work);
	json_decref(work);
	if (rc || landed) {
		json_decref(now);
		if (rc)
			return rc;
		/* Another key of the same store, which shares the working
		 * branch, merged it (and the branch followed). */
		json_array_append_new(l->list, result_entry(o->m->key, "up-to-date", branch, NULL,
		                                            "the base branch is at the working branch's head"));
		json_array_append_new(l->landed, json_string(o->m->key));
		mark_done(l, o->m->key, NULL);
		return 0;
	}
	if (!tt_same_content(o->b, now, json_object_get(a, "expect"))) {
		char *was = tt_state_brief(o->b, json_object_get(a, "expect")), *is = tt_state_brief(o->b, now);
		char *why = tt_strdupf("its base branch moved since the plan (from %s to %s): nothing was merged; `tether "
		                       "merge %s` merges onto its new head", was, is, o->m->key);
		json_array_append_new(l->list, result_entry(o->m->key, "refused", branch, NULL, why));
		free(was);
		free(is);
		free(why);
		json_decref(now);
		return 0;
	}
	json_decref(now);
	json_t *loc = base_locator(o), *result = NULL;
	rc = TT_BACKEND_GET(o->b, merge)(&o->ctx, loc, o->working_ref, run->message, &result);
	json_decref(loc);
	if (rc == TETHER_EREFUSED) {
		json_array_append_new(l->list, result_entry(o->m->key, "conflict", branch, NULL, tether_error_last()));
		json_decref(result);
		return 0;
	}
	if (rc) {
		json_decref(result);
		return tether_error_set(rc, "%s: cannot merge: %s", o->m->key, tether_error_last());
	}
	tt_fault_point("merge", "merged");
	json_t *merged = NULL;
	rc = read_base(o, &merged);
	if (!rc)
		rc = follow_merge(run, o, branch, o->fp.state, merged);
	json_t *entry = result_entry(o->m->key, "merged", branch, result, NULL);
	/* Where the merge left the base and the working branch: what undo
	 * moves them back from. */
	json_t *move = merged ? find_keyed(l->moves, o->m->key) : NULL;
	if (move)
		json_object_set_new(move, "after", tt_content_state(o->b, merged));
	if (move && !rc)
		json_object_set_new(move, "followed", json_boolean(!tt_same_content(o->b, o->fp.state, merged)));
	if (rc) {
		/* The merge stands on the base; what did not follow is said. */
		json_object_set_new(entry, "detail", json_string(tether_error_last()));
		tether_error_clear();
	}
	json_array_append_new(l->list, entry);
	json_array_append_new(l->landed, json_string(o->m->key));
	mark_done(l, o->m->key, result);
	json_decref(result);
	json_decref(merged);
	tt_fault_point("merge", "followed");
	return 0;
}

/* A dead run's entry is finished when every key it meant to land has
 * landed now. */
static void close_finished(struct land_run *run, const struct landing *l)
{
	json_t *entries = NULL;
	if (tt_journal_open_entries(run->repo, &entries) != 0) {
		tether_error_clear(); /* gc and ops report a bad entry */
		return;
	}
	const char *self = l->journal.name;
	char *self_id = self ? strndup(self, strlen(self) - 5) : NULL;
	size_t i, j;
	json_t *e, *m, *k;
	json_array_foreach(entries, i, e) {
		const char *op = json_string_value(json_object_get(e, "op"));
		if (!op || strcmp(op, run->op) != 0 || !tt_journal_entry_dead(e))
			continue;
		int finished = 1;
		json_array_foreach(json_object_get(e, "moves"), j, m) {
			int found = 0;
			size_t x;
			json_array_foreach(l->landed, x, k)
				found |= strcmp(json_string_value(k), or_else(json_string_value(json_object_get(m, "key")), "")) == 0;
			finished &= found;
		}
		if (finished && tt_journal_close_dead(run->repo, e, self_id) != 0)
			tether_error_clear();
	}
	free(self_id);
	json_decref(entries);
}

static int apply_plan(struct land_run *run, json_t **list, char **journal_id)
{
	struct landing l = {.list = json_array(), .landed = json_array()};
	json_t *moves = journal_moves(run);
	int rc = 0;
	if (json_array_size(moves)) {
		json_t *fields = json_pack("{s:O}", "moves", moves), *pins = json_array();
		rc = tt_journal_begin_with(run->repo, run->op, run->message, pins, fields, &l.journal);
		json_decref(fields);
		json_decref(pins);
		if (rc) {
			/* Nothing moves unjournaled. */
			tt_journal_free(&l.journal);
			json_decref(moves);
			json_decref(l.landed);
			*list = l.list;
			return tether_error_set(rc, "cannot write the journal entry; nothing was moved: %s",
			                        tether_error_last());
		}
		l.moves = json_object_get(l.journal.entry, "moves");
		tt_fault_point(run->op, "journal-written");
	}
	size_t i;
	json_t *a;
	json_array_foreach(tt_plan_actions(run->plan), i, a) {
		if (rc)
			break;
		struct tt_obj *o = obj_by_key(run, json_string_value(json_object_get(a, "key")));
		const char *action = json_string_value(json_object_get(a, "action"));
		if (!is_move(run, a)) {
			json_array_append_new(l.list, result_entry(o->m->key, strcmp(action, "skip") == 0 ? "skipped" : action,
			                                           json_string_value(json_object_get(a, "branch")), NULL,
			                                           json_string_value(json_object_get(a, "detail"))));
			if (strcmp(action, "up-to-date") == 0)
				json_array_append_new(l.landed, json_string(o->m->key));
			continue;
		}
		if (tt_cancelled()) {
			rc = tt_cancel_error(run->op);
			if (run->mode == LAND_PROMOTE)
				rc = promote_stopped(run, &l, o, i - 1, rc, 0);
			break;
		}
		rc = run->mode == LAND_PROMOTE ? promote_one(run, &l, o, a, i) : merge_one(run, &l, o, a);
	}
	if (l.journal.entry) {
		size_t planned = json_array_size(l.moves);
		const char *status = l.done == planned ? "COMPLETE" : l.done == 0 ? "ABORTED" : "PARTIAL";
		char *keep = rc ? strdup(tether_error_last()) : NULL;
		const char *keep_hint = rc && tether_error_hint() ? strdup(tether_error_hint()) : NULL;
		if (tt_journal_end(&l.journal, status, NULL) != 0 && !rc)
			rc = tether_error_set(TETHER_EIO, "the bases moved, but the journal entry could not be closed: %s",
			                      tether_error_last());
		else if (keep) {
			tether_error_set(rc, "%s", keep);
			if (keep_hint)
				tether_error_set_hint("%s", keep_hint);
		}
		free(keep);
		free((char *)keep_hint);
		*journal_id = strndup(l.journal.name, strlen(l.journal.name) - 5);
	}
	if (!rc)
		close_finished(run, &l);
	tt_journal_free(&l.journal);
	json_decref(moves);
	json_decref(l.landed);
	*list = l.list;
	return rc;
}

/* merge: objects that conflicted or were refused make the command's
 * result TETHER_EREFUSED, with the report made. */
static int merge_outcome(const json_t *list)
{
	size_t i, bad = 0;
	json_t *e;
	const char *first = NULL, *why = NULL;
	json_array_foreach(list, i, e) {
		const char *action = json_string_value(json_object_get(e, "action"));
		if (strcmp(action, "conflict") == 0 || strcmp(action, "refused") == 0) {
			if (!bad++) {
				first = json_string_value(json_object_get(e, "key"));
				why = json_string_value(json_object_get(e, "detail"));
			}
		}
	}
	if (!bad)
		return 0;
	tether_error_set(TETHER_EREFUSED, "%zu %s not merged (nothing was written for %s): %s: %s", bad,
	                 tt_plural((long long)bad, "object was", "objects were"), tt_plural((long long)bad, "it", "them"),
	                 first, why ? why : "");
	tether_error_set_hint("resolve the conflict on the working branch (merge the base into it there, then `tether "
	                      "commit`), then run `tether merge` again");
	return TETHER_EREFUSED;
}

static int run_land(struct land_run *run, json_t **report)
{
	const struct tether_land_opts *opts = run->opts;
	int rc = tt_manifests_load_working(run->repo->root, &run->set);
	if (!rc)
		rc = tt_objs_prepare(run->repo, &run->set, 0, &run->objs);
	if (!rc)
		rc = tt_workspace_load(run->repo, &run->ws);
	if (rc)
		return rc;
	run->base = calloc(run->set.n + 1, sizeof *run->base);
	if (!run->base)
		abort();
	rc = build_plan(run);
	if (!rc && opts->from_plan)
		rc = check_plan(run, opts->from_plan);
	int dry_run = opts->dry_run || opts->plan_out;
	/* A diverged base is refused up front, whatever the mode: a dry run
	 * still shows its plan (the report), a plan is not saved, a run moves
	 * nothing. */
	int refused = rc ? 0 : refuse_diverged(run);
	if (refused) {
		if (dry_run)
			*report = json_pack("{s:s, s:n}", "op", run->op, "journal");
		if (dry_run)
			tt_plan_report(*report, run->plan, 1, NULL);
		return refused;
	}
	if (!rc && opts->plan_out)
		rc = tt_plan_save(run->plan, opts->plan_out);
	json_t *list = NULL;
	char *journal_id = NULL;
	if (!rc && !dry_run)
		rc = apply_plan(run, &list, &journal_id);
	int outcome = rc;
	if (!rc) {
		*report = json_pack("{s:s, s:s?}", "op", run->op, "journal", journal_id);
		if (!dry_run)
			json_object_set(*report, "objects", list);
		tt_plan_report(*report, run->plan, dry_run, opts->plan_out);
		if (!dry_run && run->mode == LAND_MERGE)
			outcome = merge_outcome(list);
	}
	json_decref(list);
	free(journal_id);
	return outcome;
}

static int land_command(tether_repo *repo, enum land_mode mode, const struct tether_land_opts *opts,
                        json_t **report)
{
	const char *op = mode == LAND_PROMOTE ? "promote" : "merge";
	*report = NULL;
	int rc = tt_plan_check_opts(opts->plan_out, opts->from_plan);
	if (!rc && opts->from_plan && (opts->n_keys || opts->message))
		rc = tether_error_set(TETHER_EUSAGE, "--from-plan takes no KEY%s: the plan names what to %s",
		                      mode == LAND_MERGE ? " and no -m" : "", op);
	if (!rc && opts->from_plan)
		rc = tt_plan_check_header(repo, opts->from_plan, op, opts->from_plan_file);
	if (!rc)
		rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	struct tt_lock checkout = {-1}, shared = {-1};
	rc = tt_repo_lock(repo, &checkout, &shared);
	if (rc)
		return rc;
	struct land_run run = {.repo = repo, .mode = mode, .op = op, .opts = opts, .message = opts->message};
	if (opts->from_plan)
		run.message = json_string_value(json_object_get(opts->from_plan, "message"));
	rc = run_land(&run, report);
	for (size_t i = 0; run.base && i < run.set.n; i++)
		json_decref(run.base[i]);
	free(run.base);
	json_decref(run.plan);
	json_decref(run.ws);
	tt_objs_free(run.objs, run.set.n);
	tt_manifest_set_free(&run.set);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
static int land(tether_repo *repo, enum land_mode mode, const struct tether_land_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_land_opts opts;
	int rc = TT_OPTS_IN("struct tether_land_opts", TETHER_LAND_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, NULL, NULL);
	rc = land_command(repo, mode, &opts, report);
	tt_command_end(repo);
	return rc;
}

int tether_promote(tether_repo *repo, const struct tether_land_opts *opts, json_t **report)
{
	return land(repo, LAND_PROMOTE, opts, report);
}

int tether_merge(tether_repo *repo, const struct tether_land_opts *opts, json_t **report)
{
	return land(repo, LAND_MERGE, opts, report);
}
