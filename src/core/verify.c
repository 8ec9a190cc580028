/* tether verify: every recorded state is still what it says: pins still
 * held by their systems, observed data unchanged, listings intact. */
#include "core/engine.h"

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
		int rc = o->b->verify(&o->ctx, tt_manifest_locator(o->m), state, json_object_get(o->m->doc, "pin_ref"),
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

int tether_verify(tether_repo *repo, const struct tether_verify_opts *opts, json_t **report)
{
	*report = NULL;
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
