/* tether status: per object, how the live state compares with the recorded
 * one, and how the manifest compares with the last commit. */
#include "core/engine.h"
#include "core/abi.h"
#include "core/layout.h"
#include "core/sessions.h"
#include "core/verify.h"

#include "core/workspace.h"
#include "core/workspace_check.h"
#include "util/fsutil.h"
#include "util/plural.h"

#include <stdlib.h>
#include <string.h>

/* Working manifest vs HEAD's: "added", "changed" or "unchanged", by the
 * bytes, as git would see them. */
static const char *manifest_change(const struct tt_manifest *work, const json_t *head)
{
	json_t *h = json_object_get(head, work->key);
	if (!h)
		return "added";
	return strcmp(json_string_value(json_object_get(h, "digest")), work->digest) == 0 ? "unchanged" : "changed";
}

/* An object whose system could not be read is reported like the others,
 * with the message as its detail: one unreachable store must not hide
 * what every other object's status is. "unreachable" when the system
 * could not be reached or refused the credentials (a store's
 * TETHER_ETRANSIENT or TETHER_EAUTH: the data may be fine), "error" for
 * any other failure. */
static const char *failure_status(int rc)
{
	return rc == TETHER_ETRANSIENT || rc == TETHER_EAUTH ? "unreachable" : "error";
}

static json_t *object_report(const struct tt_obj *o, const json_t *head, int snapshot)
{
	json_t *recorded = tt_manifest_state(o->m);
	int failed = snapshot && o->rc;
	const char *status = failed ? failure_status(o->rc) : !snapshot && recorded ? "unknown" : o->status;
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:O?, s:O?, s:s?, s:s?}", "key", o->m->key, "kind",
	                 tt_manifest_kind(o->m), "tier", tether_tier_name(o->caps), "status", status,
	                 "manifest", manifest_change(o->m, head), "recorded", recorded, "current",
	                 snapshot && !failed ? o->fp.state : NULL, "pin", tt_manifest_pin(o->m), "detail",
	                 failed ? o->error : o->detail);
}

/* [verify] on_status = true: every pin HEAD's manifests name is checked
 * to exist where it says (verify's check, batched per store), and each
 * object whose pin is missing is reported "unpinned". Returns the
 * {"checked", "missing": [{key, pin, detail}]} summary, or NULL with the
 * error set when HEAD's manifests cannot be read. An unborn HEAD has no
 * pins to check. */
static json_t *check_head_pins(struct tether_repo *repo, int *rc)
{
	char id[41];
	*rc = tt_repo_resolve(repo, "HEAD", id);
	if (*rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		*rc = 0;
		return json_pack("{s:i, s:[]}", "checked", 0, "missing");
	}
	struct tt_manifest_set head;
	if (!*rc)
		*rc = tt_manifests_at(repo, id, &head);
	if (*rc)
		return NULL;
	json_t **records = calloc(head.n + 1, sizeof *records), **results = calloc(head.n + 1, sizeof *results);
	size_t n = 0;
	for (size_t i = 0; i < head.n; i++) {
		const struct tt_manifest *m = &head.v[i];
		if (!tt_manifest_pin(m) || !tt_manifest_state(m))
			continue;
		records[n++] = json_pack("{s:s, s:O, s:O*, s:O, s:O*, s:s, s:[s], s:s}", "kind", tt_manifest_kind(m),
		                         "locator", tt_manifest_locator(m), "policy", tt_manifest_policy(m), "state",
		                         tt_manifest_state(m), "pin_ref", json_object_get(m->doc, "pin_ref"), "pin",
		                         tt_manifest_pin(m), "keys", m->key, "commit", id);
	}
	tt_verify_records(repo, records, n, 0, results);
	json_t *missing = json_array();
	for (size_t i = 0; i < n; i++) {
		if (!json_is_true(json_object_get(results[i], "ok")))
			json_array_append_new(missing, json_pack("{s:O, s:O, s:O?}", "key", json_object_get(results[i], "key"),
			                                         "pin", json_object_get(records[i], "pin"), "detail",
			                                         json_object_get(results[i], "detail")));
		json_decref(results[i]);
		json_decref(records[i]);
	}
	free(records);
	free(results);
	tt_manifest_set_free(&head);
	return json_pack("{s:i, s:o}", "checked", (int)n, "missing", missing);
}

/* Mark the objects whose HEAD pin is missing. A drifted or unreadable
 * object keeps its status (that is the bigger news) and gains the pin's
 * detail as pin_detail. */
static void mark_unpinned(json_t *list, const json_t *missing)
{
	size_t i, j;
	json_t *o, *m;
	json_array_foreach(missing, j, m) {
		const char *key = json_string_value(json_object_get(m, "key"));
		json_t *why = json_sprintf("pin %s: %s", json_string_value(json_object_get(m, "pin")),
		                           json_string_value(json_object_get(m, "detail")) ? json_string_value(json_object_get(m, "detail")) : "missing");
		json_array_foreach(list, i, o) {
			if (!key || strcmp(json_string_value(json_object_get(o, "key")), key) != 0)
				continue;
			const char *st = json_string_value(json_object_get(o, "status"));
			if (strcmp(st, "drifted") == 0 || strcmp(st, "error") == 0 || strcmp(st, "unreachable") == 0) {
				json_object_set(o, "pin_detail", why);
			} else {
				json_object_set_new(o, "status", json_string("unpinned"));
				json_object_set(o, "detail", why);
			}
		}
		json_decref(why);
	}
}

/* The workspace against the checkout (workspace_check.h), with what to
 * do about a stale one or a missing workspace.toml. */
static int workspace_report(tether_repo *repo, const struct tt_obj *objs, size_t n, json_t **out)
{
	json_t *ws = NULL;
	int rc = tt_workspace_load(repo, &ws);
	/* Only a workspace with a bookmark can be stale, and only objects that
	 * fork miss a workspace file: otherwise the VCS is not asked (a local
	 * status loads no more of it than the head view needs). */
	int forks = 0;
	for (size_t i = 0; i < n; i++)
		forks |= tt_fork_wanted(&objs[i]);
	if (!rc && (json_object_get(ws, "bookmark") || forks))
		rc = tt_workspace_position(repo, ws, out);
	else if (!rc)
		*out = json_pack("{s:s, s:n, s:b}", "saved", json_object_size(json_object_get(ws, "working")) ||
		                 json_object_get(ws, "workspace_id") ? "present" : "missing", "bookmark", "stale", 0);
	json_decref(ws);
	if (rc)
		return rc;
	json_t *pos = *out;
	const char *cur = json_string_value(json_object_get(json_object_get(pos, "checkout"), "bookmark"));
	if (json_is_true(json_object_get(pos, "stale"))) {
		json_object_set_new(pos, "hint", cur ? json_sprintf("`tether new` works on %s (forking its working branches); "
		                                                    "`tether new --adopt` adopts the ones it has", cur)
		                                     : json_sprintf("`tether new %s` goes back; `tether new --adopt` keeps its "
		                                                    "working branches here", tt_workspace_return_rev(pos)));
	} else if (forks && strcmp(json_string_value(json_object_get(pos, "saved")), "missing") == 0 &&
	           !json_is_true(json_object_get(pos, "on_trunk"))) {
		json_object_set_new(pos, "hint", json_sprintf("no .tether/workspace.toml: this checkout records no working "
		                                              "branches; `tether new --adopt` takes the ones the stores hold "
		                                              "for %s, `tether new` forks them", cur ? cur : "this commit"));
	}
	return 0;
}

static int status_command(tether_repo *repo, const struct tether_status_opts *opts, json_t **report)
{
	*report = NULL;
	int snapshot = opts->snapshot < 0 ? tt_repo_config_bool(repo, "snapshot", "auto", 1) : opts->snapshot;
	struct tt_manifest_set work;
	json_t *head = NULL;
	int rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_manifests_load_working(repo->root, &work);
	if (rc)
		return rc;
	rc = tt_head_view(repo, &head);
	struct tt_obj *objs = NULL;
	if (!rc)
		rc = tt_objs_prepare(repo, &work, opts->progress, &objs);
	/* Status compares states: no listing is stored, so none is built. */
	for (size_t i = 0; !rc && i < work.n; i++)
		objs[i].ctx.state_only = 1;
	if (!rc && snapshot)
		tt_objs_snapshot(objs, work.n);
	if (!rc) {
		json_t *list = json_array();
		int clean = 1, errors = 0;
		for (size_t i = 0; i < work.n; i++) {
			json_t *o = object_report(&objs[i], head, snapshot);
			const char *st = json_string_value(json_object_get(o, "status"));
			const char *mc = json_string_value(json_object_get(o, "manifest"));
			if (strcmp(st, "clean") != 0 && strcmp(st, "unknown") != 0)
				clean = 0;
			if (strcmp(mc, "unchanged") != 0)
				clean = 0;
			errors += strcmp(st, "error") == 0 || strcmp(st, "unreachable") == 0;
			json_array_append_new(list, o);
		}
		const char *key;
		json_t *h;
		json_object_foreach(head, key, h) {
			if (tt_manifest_set_find(&work, key))
				continue;
			clean = 0;
			json_array_append_new(list, json_pack("{s:s, s:O, s:s, s:s, s:s, s:O?, s:n, s:O?, s:n}", "key", key,
			                                      "kind", json_object_get(h, "kind"), "tier", "unknown", "status",
			                                      "unknown", "manifest", "removed", "recorded",
			                                      json_object_get(h, "state"), "current", "pin",
			                                      json_object_get(h, "pin"), "detail"));
		}
		/* The pins are checked only when systems are contacted at all
		 * (--no-snapshot contacts none). */
		json_t *pins = NULL;
		if (snapshot && tt_repo_config_bool(repo, "verify", "on_status", 0)) {
			pins = check_head_pins(repo, &rc);
			if (pins && json_array_size(json_object_get(pins, "missing"))) {
				clean = 0;
				mark_unpinned(list, json_object_get(pins, "missing"));
			}
		}
		json_t *files = NULL, *workspace = NULL;
		if (!rc)
			rc = tt_pending_files(repo, &files);
		if (!rc)
			rc = workspace_report(repo, objs, work.n, &workspace);
		/* An older layout is read as it is; `tether upgrade` moves it on. */
		int oldest = repo->layout;
		for (size_t i = 0; i < work.n; i++)
			oldest = work.v[i].layout < oldest ? work.v[i].layout : oldest;
		json_t *layout = json_pack("{s:i, s:i, s:b}", "dataset", repo->layout, "current", TT_LAYOUT_CURRENT,
		                           "upgrade", oldest < TT_LAYOUT_CURRENT);
		if (rc) {
			json_decref(list);
			json_decref(files);
			json_decref(layout);
			json_decref(pins);
		} else {
			int stale = json_is_true(json_object_get(workspace, "stale"));
			*report = json_pack("{s:s, s:b, s:b, s:i, s:o, s:o, s:o, s:o}", "dataset", repo->root, "snapshot",
			                    snapshot, "clean", clean && !stale && json_array_size(files) == 0, "errors", errors,
			                    "objects", list, "files", files, "workspace", workspace, "layout", layout);
			if (pins)
				json_object_set_new(*report, "pins", pins);
		}
		/* The report stands; the return says the first failure's kind (a
		 * refusal stays a refusal). */
		for (size_t i = 0; !rc && errors && i < work.n; i++) {
			if (objs[i].rc) {
				rc = tether_error_set(objs[i].rc, "%d %s could not be checked (status error or unreachable); "
				                      "first: %s", errors, tt_plural(errors, "object", "objects"), objs[i].error);
				break;
			}
		}
	}
	tt_objs_free(objs, work.n);
	tt_manifest_set_free(&work);
	json_decref(head);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_status(tether_repo *repo, const struct tether_status_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_status_opts opts;
	int rc = TT_OPTS_IN("struct tether_status_opts", TETHER_STATUS_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, opts.progress ? opts.progress_fn : NULL, opts.progress_ud);
	rc = status_command(repo, &opts, report);
	tt_command_end(repo);
	return rc;
}
