/* tether repair: re-create pins that are missing while their system still
 * holds the state. A pin's id is kept; the backend may hand back another
 * native ref (Icechunk's tag generations), which the working manifest then
 * records. States the system no longer holds are reported, not invented. */
#include "core/abi.h"
#include "core/history.h"
#include "core/sessions.h"
#include "core/lock.h"
#include "core/registry.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static json_t *outcome(json_t *rec, const char *action, const char *detail)
{
	return json_pack("{s:O, s:O, s:O?, s:O?, s:s, s:s?}", "key", json_array_get(json_object_get(rec, "keys"), 0),
	                 "keys", json_object_get(rec, "keys"), "commit", json_object_get(rec, "commit"), "pin",
	                 json_object_get(rec, "pin"), "action", action, "detail", detail);
}

/* The working manifests that record this state take the new native ref. */
static int record_new_ref(struct tether_repo *repo, json_t *rec, json_t *pin_ref)
{
	size_t i;
	json_t *key;
	json_array_foreach(json_object_get(rec, "keys"), i, key) {
		struct tt_manifest m;
		if (tt_manifest_load_working(repo->root, json_string_value(key), &m) != 0) {
			tether_error_clear();
			continue;
		}
		int rc = 0;
		if (json_equal(tt_manifest_state(&m), json_object_get(rec, "state")) &&
		    !json_equal(json_object_get(m.doc, "pin_ref"), pin_ref)) {
			json_object_set(m.doc, "pin_ref", pin_ref);
			rc = tt_manifest_save(repo->root, repo->layout, &m);
		}
		tt_manifest_free(&m);
		if (rc)
			return rc;
	}
	return 0;
}

static json_t *repair_one(struct tether_repo *repo, json_t *rec, int dry_run)
{
	const char *kind = json_string_value(json_object_get(rec, "kind"));
	const char *pin = json_string_value(json_object_get(rec, "pin"));
	json_t *state = json_object_get(rec, "state"), *locator = json_object_get(rec, "locator");
	const struct tether_backend *b = tether_backend_find(kind);
	if (!b)
		return outcome(rec, "failed", tether_error_last());
	struct tether_bctx ctx;
	tt_repo_bctx(repo, kind, json_string_value(json_array_get(json_object_get(rec, "keys"), 0)), &ctx);
	unsigned caps;
	if (tt_object_caps(b, &ctx, locator, json_object_get(rec, "policy"), &caps) != 0 || !(caps & TETHER_CAP_PIN) ||
	    !state || !pin || !json_object_get(rec, "pin_ref"))
		return NULL; /* nothing pinned natively: nothing to repair */
	int ok = 0;
	char *detail = NULL;
	if (TT_BACKEND_GET(b, verify)(&ctx, locator, state, json_object_get(rec, "pin_ref"), &ok, &detail) != 0)
		return outcome(rec, "failed", tether_error_last());
	if (ok)
		return outcome(rec, "held", NULL);
	free(detail);
	detail = NULL;
	int held = 0;
	if (TT_BACKEND_GET(b, verify)(&ctx, locator, state, NULL, &held, &detail) != 0 || !held) {
		json_t *r = outcome(rec, "lost", detail ? detail : "the system no longer holds this state");
		free(detail);
		return r;
	}
	free(detail);
	if (dry_run)
		return outcome(rec, "would-repin", NULL);
	json_t *pin_ref = NULL;
	int created = 0; /* a repair never takes a pin back */
	if (TT_BACKEND_GET(b, pin)(&ctx, locator, state, pin, &pin_ref, &created) != 0)
		return outcome(rec, "failed", tether_error_last());
	int rc = record_new_ref(repo, rec, pin_ref);
	json_t *r = rc ? outcome(rec, "failed", tether_error_last()) : outcome(rec, "repinned", NULL);
	json_object_set_new(r, "pin_ref", pin_ref);
	return r;
}

static int repair_command(tether_repo *repo, const struct tether_repair_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock checkout = {-1}, shared = {-1};
	int rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_repo_lock(repo, &checkout, &shared);
	struct tt_history h;
	memset(&h, 0, sizeof h);
	if (!rc)
		rc = tt_history_collect(repo, &h);
	json_t *list = json_array();
	int all_ok = 1;
	const char *k;
	json_t *rec;
	json_object_foreach(h.records, k, rec) {
		if (rc)
			break;
		/* Without --all-history, only what the working copy records. */
		if (!opts->all_history && strcmp(json_string_value(json_object_get(rec, "commit")), "@") != 0)
			continue;
		json_t *r = repair_one(repo, rec, opts->dry_run);
		if (!r)
			continue;
		const char *action = json_string_value(json_object_get(r, "action"));
		if (strcmp(action, "held") != 0 && strcmp(action, "repinned") != 0 && strcmp(action, "would-repin") != 0)
			all_ok = 0;
		json_array_append_new(list, r);
	}
	if (!rc)
		*report = json_pack("{s:b, s:b, s:O}", "ok", all_ok, "dry_run", opts->dry_run, "objects", list);
	json_decref(list);
	tt_history_free(&h);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_repair(tether_repo *repo, const struct tether_repair_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_repair_opts opts;
	int rc = TT_OPTS_IN("struct tether_repair_opts", TETHER_REPAIR_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, NULL, NULL);
	rc = repair_command(repo, &opts, report);
	tt_command_end(repo);
	return rc;
}
