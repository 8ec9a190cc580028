/* tether verify: every recorded state is still what it says: pins still
 * held by their systems, observed data unchanged, listings intact. */
#include "core/engine.h"
#include "core/history.h"
#include "core/registry.h"

#include "util/fsutil.h"
#include "util/pool.h"

#include <stdlib.h>
#include <string.h>

struct verify_job {
	struct tether_repo *repo;
	struct tt_obj *objs;
	json_t **results;
};

static json_t *result(const char *key, int ok, const char *detail)
{
	return json_pack("{s:s, s:b, s:s?}", "key", key, "ok", ok, "detail", detail);
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
	if (o->b->verify) {
		int rc = o->b->verify(&o->ctx, o->locator, state, json_object_get(o->m->doc, "pin_ref"),
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
}

/* One distinct recorded state from history: verified once, however many
 * commits and keys name it. */
struct history_job {
	struct tether_repo *repo;
	json_t **records;
	json_t **results;
};

static void verify_record(void *ud, size_t i)
{
	struct history_job *job = ud;
	json_t *rec = job->records[i];
	const char *kind = json_string_value(json_object_get(rec, "kind"));
	json_t *keys = json_object_get(rec, "keys");
	const char *key = json_string_value(json_array_get(keys, 0));
	const json_t *state = json_object_get(rec, "state");
	int ok = 1;
	char *detail = NULL;
	tether_error_clear();
	const struct tether_backend *b = tether_backend_find(kind);
	if (!b) {
		ok = 0;
		detail = strdup(tether_error_last());
	} else if (!(b->caps & (TETHER_CAP_PIN | TETHER_CAP_ADDRESSABLE))) {
		/* An observed state from the past was never recoverable: there is
		 * nothing to hold it, so nothing to check. */
		detail = strdup("observed only: past states are not recoverable");
	} else if (state && b->verify) {
		struct tether_bctx ctx;
		tt_repo_bctx(job->repo, kind, key, &ctx);
		int rc = b->verify(&ctx, json_object_get(rec, "locator"), state, json_object_get(rec, "pin_ref"), &ok,
		                   &detail);
		if (rc) {
			ok = 0;
			free(detail);
			detail = strdup(tether_error_last());
		}
	}
	job->results[i] = json_pack("{s:s?, s:O, s:O, s:O?, s:b, s:s?}", "key", key, "keys", keys, "commit",
	                            json_object_get(rec, "commit"), "pin", json_object_get(rec, "pin"), "ok", ok,
	                            "detail", detail);
	free(detail);
}

static int verify_history(struct tether_repo *repo, json_t **report)
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
	struct history_job job = {repo, records, results};
	tt_pool_run(n, 0, verify_record, &job);
	json_t *list = json_array();
	int all_ok = 1;
	for (i = 0; i < n; i++) {
		all_ok &= json_is_true(json_object_get(results[i], "ok"));
		json_array_append_new(list, results[i]);
	}
	*report = json_pack("{s:b, s:b, s:I, s:I, s:o}", "ok", all_ok, "all_history", 1, "commits",
	                    (json_int_t)h.commits, "states", (json_int_t)n, "objects", list);
	free(records);
	free(results);
	tt_history_free(&h);
	return 0;
}

int tether_verify(tether_repo *repo, const struct tether_verify_opts *opts, json_t **report)
{
	*report = NULL;
	if (opts->all_history) {
		int rc = tt_repo_check_secrets(repo);
		return rc ? rc : verify_history(repo, report);
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
		struct verify_job job = {repo, objs, results};
		tt_pool_run(set.n, 0, verify_one, &job);
		json_t *list = json_array();
		int all_ok = 1;
		for (size_t i = 0; i < set.n; i++) {
			all_ok &= json_is_true(json_object_get(results[i], "ok"));
			json_array_append_new(list, results[i]);
		}
		free(results);
		*report = json_pack("{s:b, s:o}", "ok", all_ok, "objects", list);
	}
	tt_objs_free(objs, set.n);
	tt_manifest_set_free(&set);
	return rc;
}
