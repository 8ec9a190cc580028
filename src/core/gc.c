/* tether gc: release the pins no commit needs, and remove listings no
 * working manifest names. A pin is referenced when any manifest in any
 * commit reachable from any ref, or in the working copy, names it; gc never
 * releases one of those. Only this dataset's pins (ids prefixed with its
 * dataset8) are candidates: another dataset may pin the same store. */
#include "core/history.h"
#include "core/journal.h"
#include "core/lock.h"
#include "core/registry.h"
#include "format/cjson.h"
#include "util/fsutil.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* A commit that died between its pins and its VCS commit left an
 * INCOMPLETE entry: its pins are in no manifest yet, but re-running the
 * commit will name them, so they are kept. */
static int keep_journal_pins(struct tether_repo *repo, struct tt_history *h)
{
	json_t *entries;
	int rc = tt_journal_list(repo, &entries);
	size_t i, j;
	json_t *e, *pin;
	json_array_foreach(entries, i, e) {
		const char *status = json_string_value(json_object_get(e, "status"));
		if (!status || strcmp(status, "INCOMPLETE") != 0)
			continue;
		json_array_foreach(json_object_get(e, "pins"), j, pin) {
			const char *id = json_string_value(json_object_get(pin, "pin"));
			if (id)
				json_object_set_new(h->pins, id, json_true());
		}
	}
	json_decref(entries);
	return rc;
}

/* One store per (kind, identity): the locator of any manifest naming it. */
static int collect_stores(struct tether_repo *repo, const struct tt_history *h, json_t *stores)
{
	const char *id;
	json_t *rec;
	json_object_foreach(h->records, id, rec) {
		const char *kind = json_string_value(json_object_get(rec, "kind"));
		const struct tether_backend *b = tether_backend_find(kind);
		if (!b)
			return tether_error_set(TETHER_ECONFIG, "a manifest in history has unknown kind '%s'", kind);
		struct tether_bctx ctx;
		tt_repo_bctx(repo, kind, NULL, &ctx);
		unsigned caps;
		json_t *locator = json_object_get(rec, "locator");
		int rc = tt_object_caps(b, &ctx, locator, NULL, &caps);
		if (rc)
			return rc;
		if (!(b->caps & TETHER_CAP_PIN))
			continue;
		json_t *identity = NULL;
		rc = b->identity(&ctx, locator, &identity);
		if (rc)
			return rc;
		json_t *skey = json_pack("{s:s, s:o}", "kind", kind, "identity", identity);
		char *k = tt_cjson(skey);
		if (!json_object_get(stores, k))
			json_object_set_new(stores, k, json_pack("{s:s, s:O, s:O}", "kind", kind, "identity",
			                                         json_object_get(skey, "identity"), "locator", locator));
		free(k);
		json_decref(skey);
	}
	return 0;
}

static int plan_store(struct tether_repo *repo, const struct tt_history *h, json_t *store, json_t *release)
{
	const char *kind = json_string_value(json_object_get(store, "kind"));
	const struct tether_backend *b = tether_backend_find(kind);
	struct tether_bctx ctx;
	tt_repo_bctx(repo, kind, NULL, &ctx);
	json_t *pins = NULL;
	int rc = b->list_pins(&ctx, json_object_get(store, "locator"), &pins);
	if (rc) {
		char *where = tt_cjson(json_object_get(store, "identity"));
		rc = tether_error_set(rc, "%s store %s: %s", kind, where ? where : "?", tether_error_last());
		free(where);
		return rc;
	}
	size_t i;
	json_t *ref;
	json_array_foreach(pins, i, ref) {
		const char *pin = json_string_value(json_object_get(ref, "pin"));
		if (!pin || strncmp(pin, repo->id, 8) != 0 || pin[8] != '.')
			continue; /* not this dataset's */
		if (json_object_get(h->pins, pin))
			continue;
		json_array_append_new(release, json_pack("{s:s, s:O, s:O, s:s, s:O}", "kind", kind, "identity",
		                                         json_object_get(store, "identity"), "locator",
		                                         json_object_get(store, "locator"), "pin", pin, "pin_ref", ref));
	}
	json_decref(pins);
	return 0;
}

static int orphaned_listings(struct tether_repo *repo, const struct tt_history *h, json_t *out)
{
	char *dir = tt_path_join(repo->tether_dir, "listings");
	DIR *d = opendir(dir);
	free(dir);
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n != 64 + 6 || strcmp(e->d_name + 64, ".jsonl") != 0)
			continue;
		char hex[65];
		memcpy(hex, e->d_name, 64);
		hex[64] = '\0';
		if (!json_object_get(h->working_listings, hex))
			json_array_append_new(out, json_string(hex));
	}
	closedir(d);
	return 0;
}

static void apply(struct tether_repo *repo, json_t *release, json_t *listings, json_t *errors)
{
	size_t i;
	json_t *r;
	json_array_foreach(release, i, r) {
		const char *kind = json_string_value(json_object_get(r, "kind"));
		const struct tether_backend *b = tether_backend_find(kind);
		struct tether_bctx ctx;
		tt_repo_bctx(repo, kind, NULL, &ctx);
		tether_error_clear();
		int rc = b->unpin(&ctx, json_object_get(r, "locator"), json_object_get(r, "pin_ref"));
		json_object_set_new(r, "done", json_boolean(rc == 0));
		if (rc)
			json_array_append_new(errors, json_sprintf("%s: %s", json_string_value(json_object_get(r, "pin")),
			                                          tether_error_last()));
	}
	json_t *h;
	json_array_foreach(listings, i, h) {
		char *path = tt_strdupf("%s/listings/%s.jsonl", repo->tether_dir, json_string_value(h));
		if (tt_remove_if_exists(path) != 0)
			json_array_append_new(errors, json_string(tether_error_last()));
		free(path);
	}
}

int tether_gc(tether_repo *repo, const struct tether_gc_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock checkout = {-1}, shared = {-1};
	int rc = tt_repo_check_secrets(repo);
	if (!rc && !opts->dry_run)
		rc = tt_repo_lock(repo, &checkout, &shared);
	struct tt_history h;
	if (!rc)
		rc = tt_history_collect(repo, &h);
	else
		memset(&h, 0, sizeof h);
	json_t *stores = json_object(), *release = json_array(), *listings = json_array(), *errors = json_array();
	if (!rc)
		rc = keep_journal_pins(repo, &h);
	if (!rc)
		rc = collect_stores(repo, &h, stores);
	const char *k;
	json_t *store;
	json_object_foreach(stores, k, store) {
		if (rc)
			break;
		rc = plan_store(repo, &h, store, release);
	}
	if (!rc)
		rc = orphaned_listings(repo, &h, listings);
	if (!rc && !opts->dry_run)
		apply(repo, release, listings, errors);
	if (!rc)
		*report = json_pack("{s:b, s:I, s:I, s:I, s:O, s:O, s:O}", "dry_run", opts->dry_run, "commits",
		                    (json_int_t)h.commits, "referenced", (json_int_t)json_object_size(h.pins), "stores",
		                    (json_int_t)json_object_size(stores), "release", release, "listings", listings,
		                    "errors", errors);
	if (!rc && json_array_size(errors))
		rc = tether_error_set(TETHER_ERROR, "gc could not release everything: %s",
		                      json_string_value(json_array_get(errors, 0)));
	json_decref(stores);
	json_decref(release);
	json_decref(listings);
	json_decref(errors);
	tt_history_free(&h);
	tt_lock_release(&shared);
	tt_lock_release(&checkout);
	return rc;
}
