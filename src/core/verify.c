/* tether verify: every recorded state is still what it says: pins still
 * held by their systems, observed data unchanged, listings intact. */
#include "core/abi.h"
#include "core/cancel.h"
#include "core/engine.h"
#include "core/sessions.h"
#include "core/history.h"
#include "core/verify.h"
#include "core/registry.h"
#include "format/cjson.h"

#include "util/fsutil.h"
#include "util/pool.h"

#include <stdlib.h>
#include <string.h>

struct verify_job {
	struct tether_repo *repo;
	struct tt_obj *objs;
	json_t **results;
	int deep;
};

static json_t *result(const char *key, int ok, const char *detail)
{
	return json_pack("{s:s, s:b, s:s?}", "key", key, "ok", ok, "detail", detail);
}

/* --deep, on a state verify found held: the backend re-reads it
 * (verify_deep). The result says "deep": "ok", "failed" (then not ok, and
 * the detail says what could not be read) or "unsupported" (the backend
 * has no deeper check than verify's). */
static void deep_check(const struct tether_backend *b, const struct tether_bctx *ctx, const json_t *locator,
                       const json_t *state, const json_t *pin_ref, json_t *res)
{
	if (!json_is_true(json_object_get(res, "ok")))
		return;
	if (!TT_BACKEND_GET(b, verify_deep)) {
		json_object_set_new(res, "deep", json_string("unsupported"));
		return;
	}
	int ok = 1;
	char *detail = NULL;
	tether_error_clear();
	int rc = tt_cancelled() ? tt_cancel_error("verify") : TT_BACKEND_GET(b, verify_deep)(ctx, locator, state, pin_ref, &ok, &detail);
	if (rc) {
		ok = 0;
		free(detail);
		detail = strdup(tether_error_last());
	}
	json_object_set_new(res, "deep", json_string(ok ? "ok" : "failed"));
	if (!ok) {
		json_object_set_new(res, "ok", json_false());
		json_object_set_new(res, "detail", json_sprintf("deep check: %s", detail ? detail : "the state cannot be read"));
	}
	free(detail);
}

/* The states that failed the deep check, for the report: [{key, pin}]
 * (pin null for an addressed state that no pin holds). */
static json_t *deep_failed(const json_t *list)
{
	json_t *failed = json_array(), *r;
	size_t i;
	json_array_foreach(list, i, r) {
		const char *deep = json_string_value(json_object_get(r, "deep"));
		if (deep && strcmp(deep, "failed") == 0)
			json_array_append_new(failed, json_pack("{s:O, s:O?}", "key", json_object_get(r, "key"), "pin",
			                                        json_object_get(r, "pin")));
	}
	return failed;
}

static void verify_one(void *ud, size_t i)
{
	struct verify_job *job = ud;
	struct tt_obj *o = &job->objs[i];
	const json_t *state = tt_manifest_state(o->m);
	if (!state) {
		job->results[i] = result(o->m->key, 1, "never recorded: nothing to verify");
		return;
	}
	int ok = 1;
	char *detail = NULL;
	tether_error_clear();
	if (TT_BACKEND_GET(o->b, verify)) {
		int rc = TT_BACKEND_GET(o->b, verify)(&o->ctx, o->locator, state, json_object_get(o->m->doc, "pin_ref"),
		                      &ok, &detail);
		if (rc) {
			ok = 0;
			detail = strdup(tether_error_last());
		}
	}
	/* The listing is the only record of a directory's files: a missing or
	 * altered one fails verification even when the data is intact. */
	const char *listing = tt_manifest_listing(o->m);
	if (ok && listing) {
		char *why = NULL;
		int rc = tt_listing_check(job->repo, listing, &why);
		if (rc || why) {
			ok = 0;
			detail = why ? why : strdup(tether_error_last());
		}
	}
	job->results[i] = result(o->m->key, ok, detail);
	free(detail);
	/* The listing is the engine's own record, checked above; the deep
	 * check is the system's. */
	if (job->deep)
		json_object_set_new(job->results[i], "pin", tt_manifest_pin(o->m) ? json_string(tt_manifest_pin(o->m)) : json_null());
	if (job->deep && TT_BACKEND_GET(o->b, verify))
		deep_check(o->b, &o->ctx, o->locator, state, json_object_get(o->m->doc, "pin_ref"), job->results[i]);
}

/* History: each distinct recorded state is verified once, however many
 * commits and keys name it. The states of one store (same kind, identity
 * and key, so the same backend context) are handed to the backend
 * together when it has verify_many, so a store is opened and its refs
 * listed once rather than once per state; stores are fanned out over the
 * pool, a store's states stay on one thread. */
static json_t *record_result(const json_t *rec, int ok, const char *detail)
{
	json_t *keys = json_object_get(rec, "keys");
	return json_pack("{s:s?, s:O, s:O, s:O?, s:b, s:s?}", "key", json_string_value(json_array_get(keys, 0)),
	                 "keys", keys, "commit", json_object_get(rec, "commit"), "pin", json_object_get(rec, "pin"),
	                 "ok", ok, "detail", detail);
}

static const char *record_kind(const json_t *rec)
{
	return json_string_value(json_object_get(rec, "kind"));
}

static const char *record_key(const json_t *rec)
{
	return json_string_value(json_array_get(json_object_get(rec, "keys"), 0));
}

/* A result that needs no backend call, or NULL when the backend must be
 * asked. */
static json_t *settled_result(struct tether_repo *repo, const json_t *rec, const struct tether_backend *b)
{
	if (!b)
		return record_result(rec, 0, tether_error_last());
	/* The object's own capabilities (a file object may be addressable);
	 * a record they cannot be worked out for is left to verify. */
	unsigned caps = b->caps;
	struct tether_bctx ctx;
	tt_repo_bctx(repo, b->kind, record_key(rec), &ctx);
	if (tt_object_caps(b, &ctx, json_object_get(rec, "locator"), json_object_get(rec, "policy"), &caps) != 0) {
		tether_error_clear();
		caps = b->caps;
	}
	/* An observed state from the past was never recoverable: there is
	 * nothing to hold it, so nothing to check. */
	if (!(caps & (TETHER_CAP_PIN | TETHER_CAP_ADDRESSABLE)))
		return record_result(rec, 1, "observed only: past states are not recoverable");
	if (!json_object_get(rec, "state") || !TT_BACKEND_GET(b, verify))
		return record_result(rec, 1, NULL);
	return NULL;
}

struct store_group {
	const struct tether_backend *b;
	size_t *members; /* record indices */
	size_t n, cap;
};

struct history_job {
	struct tether_repo *repo;
	json_t **records;
	json_t **results;
	struct store_group *groups;
	int deep;
};

/* --deep over a group, once verify (or verify_many) has answered. */
static void deep_group(struct history_job *job, const struct store_group *g, const struct tether_bctx *ctx)
{
	for (size_t m = 0; job->deep && m < g->n; m++) {
		json_t *rec = job->records[g->members[m]];
		deep_check(g->b, ctx, json_object_get(rec, "locator"), json_object_get(rec, "state"),
		           json_object_get(rec, "pin_ref"), job->results[g->members[m]]);
	}
}

static void verify_each(struct history_job *job, const struct store_group *g, const struct tether_bctx *ctx)
{
	for (size_t m = 0; m < g->n; m++) {
		json_t *rec = job->records[g->members[m]];
		int ok = 1;
		char *detail = NULL;
		tether_error_clear();
		int rc = tt_cancelled() ? tt_cancel_error("verify") : TT_BACKEND_GET(g->b, verify)(ctx, json_object_get(rec, "locator"), json_object_get(rec, "state"),
		                      json_object_get(rec, "pin_ref"), &ok, &detail);
		if (rc) {
			ok = 0;
			free(detail);
			detail = strdup(tether_error_last());
		}
		job->results[g->members[m]] = record_result(rec, ok, detail);
		free(detail);
	}
}

static void verify_group(void *ud, size_t i)
{
	struct history_job *job = ud;
	struct store_group *g = &job->groups[i];
	json_t *first = job->records[g->members[0]];
	struct tether_bctx ctx;
	tt_repo_bctx(job->repo, record_kind(first), record_key(first), &ctx);
	tt_session_attach(job->repo, g->b, json_object_get(first, "locator"), NULL, &ctx);
	struct tether_verify_item *items = TT_BACKEND_GET(g->b, verify_many) && g->n > 1 ? calloc(g->n, sizeof *items) : NULL;
	if (!items) {
		verify_each(job, g, &ctx);
		deep_group(job, g, &ctx);
		return;
	}
	for (size_t m = 0; m < g->n; m++) {
		json_t *rec = job->records[g->members[m]];
		items[m] = (struct tether_verify_item){TETHER_VERIFY_ITEM_INIT, .locator = json_object_get(rec, "locator"),
		                                       .state = json_object_get(rec, "state"),
		                                       .pin_ref = json_object_get(rec, "pin_ref")};
	}
	tether_error_clear();
	if (TT_BACKEND_GET(g->b, verify_many)(&ctx, items, g->n) < 0) {
		verify_each(job, g, &ctx); /* the store as a whole failed: each state says why */
	} else {
		for (size_t m = 0; m < g->n; m++)
			job->results[g->members[m]] = record_result(job->records[g->members[m]], items[m].ok == 1,
			                                            items[m].detail);
	}
	for (size_t m = 0; m < g->n; m++)
		free(items[m].detail);
	free(items);
	deep_group(job, g, &ctx);
}

/* The group of the store `rec` names: one per (kind, identity, key).
 * `by_locator` remembers the group of each (kind, key, locator) already
 * placed: the records of one object across its commits mostly share their
 * locator, and the same three have the same identity, so the backend is
 * asked once for them. */
static size_t group_of(struct tether_repo *repo, const json_t *rec, const struct tether_backend *b,
                       json_t *index, json_t *by_locator, struct store_group **groups, size_t *ngroups)
{
	char *loc = tt_cjson(json_object_get(rec, "locator"));
	char *memo = loc ? tt_strdupf("%s\n%s\n%s", record_kind(rec), record_key(rec) ? record_key(rec) : "", loc)
	                 : NULL;
	free(loc);
	json_t *placed = memo ? json_object_get(by_locator, memo) : NULL;
	if (placed) {
		free(memo);
		return (size_t)json_integer_value(placed);
	}
	struct tether_bctx ctx;
	tt_repo_bctx(repo, record_kind(rec), record_key(rec), &ctx);
	json_t *identity = NULL;
	char *id = b->identity(&ctx, json_object_get(rec, "locator"), &identity) == 0 ? tt_cjson(identity) : NULL;
	json_decref(identity);
	/* A locator with no identity is its own group: verify will say why. */
	char *name = id ? tt_strdupf("%s\n%s\n%s", record_kind(rec), record_key(rec) ? record_key(rec) : "", id)
	                : NULL;
	free(id);
	json_t *known = name ? json_object_get(index, name) : NULL;
	size_t g = known ? (size_t)json_integer_value(known) : (*ngroups)++;
	if (!known) {
		*groups = realloc(*groups, *ngroups * sizeof **groups);
		if (!*groups)
			abort();
		(*groups)[g] = (struct store_group){.b = b};
		if (name)
			json_object_set_new(index, name, json_integer((json_int_t)g));
	}
	if (name && memo)
		json_object_set_new(by_locator, memo, json_integer((json_int_t)g));
	free(memo);
	free(name);
	return g;
}

static void group_add(struct store_group *g, size_t record)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 8;
		g->members = realloc(g->members, g->cap * sizeof *g->members);
		if (!g->members)
			abort();
	}
	g->members[g->n++] = record;
}

void tt_verify_records(struct tether_repo *repo, json_t *const *records, size_t n, int deep, json_t **results)
{
	json_t *index = json_object(), *by_locator = json_object();
	struct store_group *groups = NULL;
	size_t ngroups = 0;
	for (size_t i = 0; i < n; i++) {
		tether_error_clear();
		const struct tether_backend *b = tether_backend_find(record_kind(records[i]));
		if (!(results[i] = settled_result(repo, records[i], b))) {
			size_t g = group_of(repo, records[i], b, index, by_locator, &groups, &ngroups);
			group_add(&groups[g], i);
		}
	}
	json_decref(index);
	json_decref(by_locator);
	struct history_job job = {repo, (json_t **)records, results, groups, deep};
	tt_pool_run(ngroups, 0, verify_group, &job);
	for (size_t i = 0; i < ngroups; i++)
		free(groups[i].members);
	free(groups);
}

static int verify_history(struct tether_repo *repo, int deep, json_t **report)
{
	struct tt_history h;
	int rc = tt_history_collect(repo, &h);
	if (rc) {
		tt_history_free(&h);
		return rc;
	}
	size_t n = json_object_size(h.records), i = 0;
	json_t **records = calloc(n + 1, sizeof *records), **results = calloc(n + 1, sizeof *results);
	const char *k;
	json_t *rec;
	json_object_foreach(h.records, k, rec) records[i++] = rec;
	tt_verify_records(repo, records, n, deep, results);
	/* Stopped (tether_cancel): what was verified is not the whole answer. */
	rc = tt_cancelled() ? tt_cancel_error("verify") : 0;
	json_t *list = rc ? NULL : json_array();
	int all_ok = 1;
	for (i = 0; i < n; i++) {
		all_ok &= json_is_true(json_object_get(results[i], "ok"));
		if (list)
			json_array_append_new(list, results[i]);
		else
			json_decref(results[i]);
	}
	if (list) {
		*report = json_pack("{s:b, s:b, s:I, s:I}", "ok", all_ok, "all_history", 1, "commits",
		                    (json_int_t)h.commits, "states", (json_int_t)n);
		if (deep) {
			json_object_set_new(*report, "deep", json_true());
			json_object_set_new(*report, "deep_failed", deep_failed(list));
		}
		json_object_set_new(*report, "objects", list);
	}
	free(records);
	free(results);
	tt_history_free(&h);
	return rc;
}

static int verify_command(tether_repo *repo, const struct tether_verify_opts *opts, json_t **report)
{
	*report = NULL;
	if (opts->all_history) {
		int rc = tt_repo_check_secrets(repo);
		return rc ? rc : verify_history(repo, opts->deep, report);
	}
	struct tt_manifest_set set;
	int rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_manifests_load_working(repo->root, &set);
	if (rc)
		return rc;
	struct tt_obj *objs = NULL;
	rc = tt_objs_prepare(repo, &set, opts->progress, &objs);
	if (!rc) {
		json_t **results = calloc(set.n + 1, sizeof *results);
		struct verify_job job = {repo, objs, results, opts->deep};
		tt_pool_run(set.n, 0, verify_one, &job);
		json_t *list = json_array();
		if (tt_cancelled())
			rc = tt_cancel_error("verify");
		int all_ok = 1;
		for (size_t i = 0; i < set.n; i++) {
			all_ok &= json_is_true(json_object_get(results[i], "ok"));
			json_array_append_new(list, results[i]);
		}
		free(results);
		*report = json_pack("{s:b}", "ok", all_ok);
		if (opts->deep) {
			json_object_set_new(*report, "deep", json_true());
			json_object_set_new(*report, "deep_failed", deep_failed(list));
		}
		json_object_set_new(*report, "objects", list);
	}
	tt_objs_free(objs, set.n);
	tt_manifest_set_free(&set);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_verify(tether_repo *repo, const struct tether_verify_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_verify_opts opts;
	int rc = TT_OPTS_IN("struct tether_verify_opts", TETHER_VERIFY_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, opts.progress ? opts.progress_fn : NULL, opts.progress_ud);
	rc = verify_command(repo, &opts, report);
	tt_command_end(repo);
	return rc;
}
