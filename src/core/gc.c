/* tether gc: release the pins no commit needs, and remove listings no
 * working manifest names. A pin is referenced when any manifest in any
 * commit reachable from any ref, or in the working copy, names it; gc never
 * releases one of those. Only this dataset's pins (ids prefixed with its
 * dataset8) are candidates: another dataset may pin the same store.
 *
 * Every run finds the candidates, then builds its plan from them; a dry run
 * stops there. --from-plan narrows the candidates found now to the ones the
 * plan names (refusing when one is referenced again), so the
 * preconditions are re-checked against history as it is when applied. */
#include "core/abi.h"
#include "core/cancel.h"
#include "core/gc_stores.h"
#include "core/sessions.h"
#include "core/history.h"
#include "core/journal.h"
#include "core/lock.h"
#include "core/plan.h"
#include "core/prune.h"
#include "core/registry.h"
#include "format/cjson.h"
#include "util/fsutil.h"
#include "util/pool.h"
#include "util/safefs.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A commit that died between its pins and its VCS commit left an
 * INCOMPLETE entry: its pins are in no manifest yet, but re-running the
 * commit will name them, so they are kept. */
static int keep_journal_pins(struct tether_repo *repo, struct tt_history *h)
{
	json_t *entries;
	int rc = tt_journal_open_entries(repo, &entries);
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

/* Each locator's own view of the store's pins: {pin id: pin_ref}. A
 * pin_ref is the backend's description of the reference as that locator
 * sees it (a remote among it), so each locator releases with its own. */
static int list_store_pins(struct tether_repo *repo, const json_t *store, json_t *views)
{
	const struct tether_backend *b = tether_backend_find(json_string_value(json_object_get(store, "kind")));
	size_t i, j;
	json_t *entry, *ref;
	json_array_foreach(json_object_get(store, "locators"), i, entry) {
		struct tether_bctx ctx;
		tt_gc_store_bctx(repo, store, entry, &ctx);
		json_t *pins = NULL, *view = json_object();
		tether_error_clear();
		int rc = TT_BACKEND_GET(b, list_pins)(&ctx, json_object_get(entry, "locator"), &pins);
		json_array_foreach(pins, j, ref) {
			const char *pin = json_string_value(json_object_get(ref, "pin"));
			if (pin && strncmp(pin, repo->id, 8) == 0 && pin[8] == '.') /* this dataset's */
				json_object_set(view, pin, ref);
		}
		json_decref(pins);
		json_array_append_new(views, view);
		if (rc)
			return rc;
	}
	return 0;
}

/* What listing one store's pins gave: each locator's view, or the
 * failure (its code and message). */
struct store_listing {
	json_t *store;
	json_t *views;
	int rc;
	char *error;
};

struct listing_job {
	struct tether_repo *repo;
	struct store_listing *v;
};

/* The stores are listed side by side (tt_pool_run), as verify verifies
 * them: each listing is a backend's reads of its own store (a git
 * repository's refs, a bucket's LIST), and the plan is then made from
 * them one by one, in the stores' order, as before. */
static void list_one(void *ud, size_t i)
{
	struct listing_job *job = ud;
	struct store_listing *l = &job->v[i];
	if (tt_cancelled())
		return; /* the plan's loop below says so */
	tether_error_clear();
	l->views = json_array();
	l->rc = list_store_pins(job->repo, l->store, l->views);
	if (l->rc && !(l->error = strdup(tether_error_last())))
		abort();
}

/* The pins of one store that nothing names, each with the pin_ref every
 * locator of the store listed it with (null where one did not). A store
 * only the journal still names may be gone: skipped, not fatal. */
static int plan_store(const struct tt_history *h, const char *skey, const struct store_listing *l,
                      json_t *release, json_t *skipped)
{
	json_t *store = l->store, *views = l->views;
	if (l->rc) {
		char *name = tt_gc_store_name(store);
		int fatal = json_is_true(json_object_get(store, "in_history")), rc = 0;
		if (fatal)
			rc = tether_error_set(l->rc, "%s: %s", name, l->error);
		else
			tt_gc_skip_store(skipped, name, l->error);
		free(name);
		return rc;
	}
	json_t *locators = json_array(), *done = json_object();
	size_t i, j;
	json_t *entry, *view;
	json_array_foreach(json_object_get(store, "locators"), i, entry)
		json_array_append(locators, json_object_get(entry, "locator"));
	json_array_foreach(views, i, view) {
		const char *pin;
		json_t *ref;
		json_object_foreach(view, pin, ref) {
			if (json_object_get(h->pins, pin) || json_object_get(done, pin))
				continue;
			json_object_set_new(done, pin, json_true());
			json_t *refs = json_array(), *other;
			json_array_foreach(views, j, other)
				json_array_append_new(refs, json_object_get(other, pin) ? json_incref(json_object_get(other, pin))
				                                                        : json_null());
			json_array_append_new(release, json_pack("{s:s, s:O, s:O, s:O, s:s, s:O, s:o, s:s}", "kind",
			                                         json_string_value(json_object_get(store, "kind")),
			                                         "identity", json_object_get(store, "identity"), "locator",
			                                         json_object_get(store, "locator"), "locators", locators,
			                                         "pin", pin, "pin_ref", ref, "pin_refs", refs, "store", skey));
		}
	}
	json_decref(done);
	json_decref(locators);
	return 0;
}

static int orphaned_listings(struct tether_repo *repo, const struct tt_history *h, json_t *out)
{
	char *dir = tt_path_join(repo->tether_dir, "listings");
	int fd;
	int rc = tt_safe_open_dir(repo->root, dir, 0, &fd);
	free(dir);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0;
	}
	DIR *d = rc ? NULL : fdopendir(fd);
	if (!d) {
		if (!rc)
			close(fd);
		return rc ? rc : tether_error_set(TETHER_EIO, "cannot read %s/listings", repo->tether_dir);
	}
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

/* The plan: what must still be unreferenced when it is applied, and what
 * is released and removed then. Stores are named by kind and identity (no
 * locator: the store is found again at apply time). */
static json_t *build_plan(struct tether_repo *repo, const json_t *release, const json_t *listings)
{
	json_t *plan = tt_plan_new(repo, "gc");
	json_t *pins = json_array(), *actions = tt_plan_actions(plan);
	size_t i;
	json_t *r;
	json_array_foreach(release, i, r) {
		json_array_append(pins, json_object_get(r, "pin"));
		json_array_append_new(actions, json_pack("{s:s, s:O, s:O, s:O}", "action", "release", "kind",
		                                         json_object_get(r, "kind"), "identity",
		                                         json_object_get(r, "identity"), "pin", json_object_get(r, "pin")));
	}
	json_array_foreach(listings, i, r)
		json_array_append_new(actions, json_pack("{s:s, s:O}", "action", "remove-listing", "listing", r));
	json_object_set_new(tt_plan_preconditions(plan), "unreferenced",
	                    json_pack("{s:o, s:O}", "pins", pins, "listings", listings));
	return plan;
}

/* The candidate releasing planned pin `pin` of kind `kind`, or NULL. */
static json_t *find_release(const json_t *release, const char *kind, const char *pin)
{
	size_t i;
	json_t *r;
	json_array_foreach(release, i, r)
		if (strcmp(json_string_value(json_object_get(r, "kind")), kind) == 0 &&
		    strcmp(json_string_value(json_object_get(r, "pin")), pin) == 0)
			return r;
	return NULL;
}

static int listed(const json_t *listings, const char *hex)
{
	size_t i;
	json_t *h;
	json_array_foreach(listings, i, h)
		if (strcmp(json_string_value(h), hex) == 0)
			return 1;
	return 0;
}

static int select_release(const struct tt_history *h, const json_t *a, const json_t *release, json_t *out,
                          json_t *skipped)
{
	const char *kind = json_string_value(json_object_get(a, "kind"));
	const char *pin = json_string_value(json_object_get(a, "pin"));
	if (!kind || !pin)
		return tether_error_set(TETHER_EUSAGE, "malformed plan: a release names no kind or pin");
	if (json_object_get(h->pins, pin))
		return tether_error_set(TETHER_EREFUSED, "stale plan: pin %s is referenced again since the plan "
		                        "(a commit or an unfinished operation names it)", pin);
	json_t *r = find_release(release, kind, pin);
	if (r)
		json_array_append(out, r);
	else
		json_array_append_new(skipped, json_pack("{s:s, s:s}", "pin", pin, "reason", "already released"));
	return 0;
}

static int select_listing(const struct tt_history *h, const json_t *a, const json_t *listings, json_t *out,
                          json_t *skipped)
{
	const char *hex = json_string_value(json_object_get(a, "listing"));
	if (!hex)
		return tether_error_set(TETHER_EUSAGE, "malformed plan: a listing removal names no listing");
	if (json_object_get(h->working_listings, hex))
		return tether_error_set(TETHER_EREFUSED, "stale plan: listing %.8s… is named by a working manifest "
		                        "again since the plan", hex);
	if (listed(listings, hex))
		json_array_append_new(out, json_string(hex));
	else
		json_array_append_new(skipped, json_pack("{s:s, s:s}", "listing", hex, "reason", "already removed"));
	return 0;
}

/* --from-plan: of the candidates found now, only the planned ones. A
 * planned pin or listing referenced again refuses the whole plan; one
 * already gone is skipped. The stores and files acted on are always the
 * ones found now, never paths or locators read from the plan. */
static int select_planned(const struct tt_history *h, const json_t *plan, json_t **release, json_t **listings,
                          json_t *skipped)
{
	json_t *rel = json_array(), *lis = json_array();
	size_t i;
	json_t *a;
	int rc = 0;
	json_array_foreach(tt_plan_actions(plan), i, a) {
		const char *action = json_string_value(json_object_get(a, "action"));
		if (strcmp(action, "release") == 0)
			rc = select_release(h, a, *release, rel, skipped);
		else if (strcmp(action, "remove-listing") == 0)
			rc = select_listing(h, a, *listings, lis, skipped);
		else
			rc = tether_error_set(TETHER_EUSAGE, "malformed plan: unknown gc action '%s'", action);
		if (rc)
			break;
	}
	if (rc) {
		json_decref(rel);
		json_decref(lis);
		return rc;
	}
	json_decref(*release);
	json_decref(*listings);
	*release = rel;
	*listings = lis;
	return 0;
}

/* Release one pin through every locator of its store that listed it,
 * with the pin_ref it listed, the ones that carry more first; the first
 * failure stops it, so the reference that
 * lets the next gc find the pin again is the last to go. */
static int release_pin(struct tether_repo *repo, const json_t *store, const json_t *r)
{
	const struct tether_backend *b = tether_backend_find(json_string_value(json_object_get(store, "kind")));
	size_t i;
	json_t *entry;
	json_array_foreach(json_object_get(store, "locators"), i, entry) {
		const json_t *ref = json_array_get(json_object_get(r, "pin_refs"), i);
		if (json_is_null(ref))
			continue; /* this locator does not see the pin */
		struct tether_bctx ctx;
		tt_gc_store_bctx(repo, store, entry, &ctx);
		tether_error_clear();
		int rc = TT_BACKEND_GET(b, unpin)(&ctx, json_object_get(entry, "locator"), ref);
		if (rc)
			return rc;
	}
	return 0;
}

static void apply(struct tether_repo *repo, const json_t *stores, json_t *release, json_t *listings,
                  json_t *errors)
{
	size_t i;
	json_t *r;
	/* A stop asked (tether_cancel) is taken between pins: each release is
	 * whole or not made, and what is left is the next gc's. */
	json_array_foreach(release, i, r) {
		if (tt_cancelled())
			return;
		const json_t *store = json_object_get(stores, json_string_value(json_object_get(r, "store")));
		int rc = release_pin(repo, store, r);
		json_object_set_new(r, "done", json_boolean(rc == 0));
		tt_fault_point("gc", "released");
		if (rc)
			json_array_append_new(errors, json_sprintf("%s: %s", json_string_value(json_object_get(r, "pin")),
			                                          tether_error_last()));
	}
	json_t *h;
	json_array_foreach(listings, i, h) {
		if (tt_cancelled())
			return;
		char *path = tt_strdupf("%s/listings/%s.jsonl", repo->tether_dir, json_string_value(h));
		if (tt_safe_remove(repo->root, path) != 0)
			json_array_append_new(errors, json_string(tether_error_last()));
		free(path);
	}
}

/* The report's rows: the releases without gc's own bookkeeping. */
static json_t *release_report(const json_t *release)
{
	json_t *rows = json_array(), *r;
	size_t i;
	json_array_foreach(release, i, r) {
		json_t *row = json_copy((json_t *)r);
		json_object_del(row, "store");
		json_object_del(row, "pin_refs");
		json_array_append_new(rows, row);
	}
	return rows;
}

/* What gc finds now: the history's references, every store's unreferenced
 * pins of this dataset, and the listings no working manifest names. */
static int find_candidates(struct tether_repo *repo, struct tt_history *h, json_t *stores, json_t *release,
                           json_t *listings, json_t *skipped)
{
	int rc = tt_history_collect(repo, h);
	if (!rc)
		rc = keep_journal_pins(repo, h);
	if (!rc)
		rc = tt_gc_stores_collect(repo, h, stores, skipped);
	size_t n = rc ? 0 : json_object_size(stores), i = 0;
	struct store_listing *v = calloc(n + 1, sizeof *v);
	const char **keys = calloc(n + 1, sizeof *keys);
	if (!v || !keys)
		abort();
	const char *k;
	json_t *store;
	json_object_foreach(stores, k, store) {
		if (i < n) {
			keys[i] = k;
			v[i++].store = store;
		}
	}
	struct listing_job job = {repo, v};
	tt_pool_run(n, 0, list_one, &job);
	for (i = 0; i < n && !rc; i++)
		rc = tt_cancelled() ? tt_cancel_error("gc") : plan_store(h, keys[i], &v[i], release, skipped);
	for (i = 0; i < n; i++) {
		json_decref(v[i].views);
		free(v[i].error);
	}
	free(v);
	free(keys);
	return rc ? rc : orphaned_listings(repo, h, listings);
}

static int check_opts(struct tether_repo *repo, const struct tether_gc_opts *opts)
{
	if (opts->prune_workspaces && (opts->plan_out || opts->from_plan))
		return tether_error_set(TETHER_EUSAGE, "--prune-workspaces cannot go in a plan: run it without "
		                        "--plan or --from-plan");
	if (!opts->prune_workspaces && (opts->force_prune || opts->n_keep))
		return tether_error_set(TETHER_EUSAGE, "--force-prune and --keep-workspace need --prune-workspaces (or --prune-bookmarks)");
	int rc = tt_plan_check_opts(opts->plan_out, opts->from_plan);
	if (!rc && opts->from_plan)
		rc = tt_plan_check_header(repo, opts->from_plan, "gc", opts->from_plan_file);
	return rc ? rc : tt_repo_check_secrets(repo);
}

static int gc_command(tether_repo *repo, const struct tether_gc_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock checkout = {-1}, shared = {-1};
	int dry_run = opts->dry_run || opts->plan_out;
	int rc = check_opts(repo, opts);
	if (!rc && !dry_run)
		rc = tt_repo_lock(repo, &checkout, &shared);
	struct tt_history h = {0};
	json_t *stores = json_object(), *release = json_array(), *listings = json_array(), *errors = json_array();
	json_t *skipped = json_array(), *prune = json_array(), *plan = NULL;
	if (!rc)
		rc = find_candidates(repo, &h, stores, release, listings, skipped);
	if (!rc && opts->prune_workspaces)
		rc = tt_prune_find(repo, &h, stores, opts, prune, skipped);
	if (!rc && opts->from_plan)
		rc = select_planned(&h, opts->from_plan, &release, &listings, skipped);
	if (!rc)
		plan = build_plan(repo, release, listings);
	if (!rc && opts->plan_out)
		rc = tt_plan_save(plan, opts->plan_out);
	if (!rc && !dry_run) {
		apply(repo, stores, release, listings, errors);
		if (!tt_cancelled() && json_array_size(prune))
			tt_fault_point("gc", "pruning"); /* the branches listed, none deleted yet */
		if (!tt_cancelled())
			tt_prune_apply(repo, prune, errors);
	}
	if (!rc && tt_cancelled())
		rc = tt_cancel_error("gc");
	if (!rc) {
		*report = json_pack("{s:I, s:I, s:I, s:o, s:O, s:O, s:O, s:o}", "commits", (json_int_t)h.commits,
		                    "referenced", (json_int_t)json_object_size(h.pins), "stores",
		                    (json_int_t)json_object_size(stores), "release", release_report(release), "listings", listings,
		                    "skipped", skipped, "errors", errors, "prune", tt_prune_report(prune));
		tt_plan_report(*report, plan, dry_run, opts->plan_out);
		/* Committed listings it removed are a change to the dataset's
		 * files: status shows it, and the next commit records it. */
		json_t *pending = NULL;
		if (!dry_run && json_array_size(listings) && tt_pending_files(repo, &pending) != 0)
			tether_error_clear();
		json_object_set_new(*report, "commit_needed", json_boolean(json_array_size(pending) > 0));
		json_decref(pending);
	}
	json_decref(plan);
	json_decref(stores);
	json_decref(release);
	json_decref(listings);
	json_decref(errors);
	json_decref(skipped);
	json_decref(prune);
	tt_history_free(&h);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_gc(tether_repo *repo, const struct tether_gc_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_gc_opts opts;
	int rc = TT_OPTS_IN("struct tether_gc_opts", TETHER_GC_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, opts.progress ? opts.progress_fn : NULL, opts.progress_ud);
	rc = gc_command(repo, &opts, report);
	tt_command_end(repo);
	return rc;
}
