/* The stores gc visits: see gc_stores.h. */
#include "core/gc_stores.h"
#include "core/sessions.h"

#include "core/journal.h"
#include "core/registry.h"
#include "core/workspace.h"
#include "format/cjson.h"
#include "util/jsonsort.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

struct collect {
	struct tether_repo *repo;
	json_t *stores;
	json_t *skipped;
};

/* The secrets that apply to `key`, or NULL: part of what a locator means. */
static json_t *key_secrets(const struct tether_repo *repo, const char *key)
{
	return key ? json_object_get(json_object_get(repo->secrets, "objects"), key) : NULL;
}

static void add_locator(json_t *store, const json_t *locator, const char *key, const json_t *secrets)
{
	json_t *seen = json_object_get(store, "seen");
	json_t *id = json_pack("{s:O, s:O?}", "l", locator, "s", secrets);
	char *text = tt_cjson(id);
	json_decref(id);
	if (text && !json_object_get(seen, text)) {
		json_object_set_new(seen, text, json_true());
		json_array_append_new(json_object_get(store, "locators"),
		                      json_pack("{s:O, s:s?}", "locator", locator, "key", secrets ? key : NULL));
	}
	free(text);
}

/* Note one locator of kind `kind`, named for `key` (NULL: no key's
 * secrets apply). `from_history`: a manifest names it, so a failure to
 * read its identity fails gc; else (the journal only) it is skipped. */
static int note(struct collect *c, const char *kind, const json_t *locator, const char *key, int from_history)
{
	const struct tether_backend *b = kind ? tether_backend_find(kind) : NULL;
	if (!b)
		return tether_error_set(TETHER_ECONFIG, "%s names unknown kind '%s'",
		                        from_history ? "a manifest in history" : "the journal", kind ? kind : "?");
	if (!(b->caps & TETHER_CAP_PIN) || !json_is_object(locator))
		return 0;
	struct tether_bctx ctx;
	tt_repo_bctx(c->repo, kind, key, &ctx);
	json_t *identity = NULL;
	tether_error_clear();
	int rc = b->identity(&ctx, locator, &identity);
	if (rc && from_history)
		return rc;
	if (rc) {
		char *where = tt_cjson(locator);
		char *name = tt_strdupf("%s store %s", kind, where ? where : "?");
		tt_gc_skip_store(c->skipped, name, tether_error_last());
		free(name);
		free(where);
		tether_error_clear();
		return 0;
	}
	json_t *skey = json_pack("{s:s, s:o}", "kind", kind, "identity", identity);
	char *k = tt_cjson(skey);
	json_t *store = json_object_get(c->stores, k);
	if (!store) {
		store = json_pack("{s:s, s:O, s:[], s:{}, s:b}", "kind", kind, "identity", json_object_get(skey, "identity"),
		                  "locators", "seen", "in_history", 0);
		json_object_set_new(c->stores, k, store);
	}
	if (from_history)
		json_object_set_new(store, "in_history", json_true());
	add_locator(store, locator, key, key_secrets(c->repo, key));
	free(k);
	json_decref(skey);
	return 0;
}

/* note() for a manifest in history, once per (kind, key, locator): the
 * records of one object across its commits mostly share their locator,
 * and a second note of the same three changes nothing (same identity,
 * same store, a locator already there), so only the first asks the
 * backend. `done` holds the triples noted. */
static int note_once(struct collect *c, json_t *done, const char *kind, const json_t *locator, const char *key)
{
	char *text = tt_cjson(locator);
	char *memo = text ? tt_strdupf("%s\n%s\n%s", kind ? kind : "", key ? key : "", text) : NULL;
	free(text);
	if (memo && json_object_get(done, memo)) {
		free(memo);
		return 0;
	}
	int rc = note(c, kind, locator, key, 1);
	if (!rc && memo)
		json_object_set_new(done, memo, json_true());
	free(memo);
	return rc;
}

/* Every key of a record: a key with secrets of its own names the store
 * with them; the others share the locator alone. */
static int note_records(struct collect *c, const struct tt_history *h)
{
	const char *id;
	json_t *rec, *done = json_object();
	int failed = 0;
	json_object_foreach(h->records, id, rec) {
		const char *kind = json_string_value(json_object_get(rec, "kind"));
		const json_t *locator = json_object_get(rec, "locator");
		size_t i;
		json_t *k;
		int rc = 0, plain = 0;
		json_array_foreach(json_object_get(rec, "keys"), i, k) {
			if (rc)
				break;
			if (key_secrets(c->repo, json_string_value(k)))
				rc = note_once(c, done, kind, locator, json_string_value(k));
			else
				plain = 1;
		}
		if (!rc && (plain || !json_array_size(json_object_get(rec, "keys"))))
			rc = note_once(c, done, kind, locator, NULL);
		if (rc) {
			failed = rc;
			break;
		}
	}
	json_decref(done);
	return failed;
}

/* The working refs: each working manifest's locator with its overlay
 * (the manifests as the history walk read them). */
static int note_workspace(struct collect *c, const struct tt_manifest_set *work)
{
	json_t *ws = NULL;
	int rc = tt_workspace_load(c->repo, &ws);
	for (size_t i = 0; !rc && i < work->n; i++) {
		const json_t *entry = tt_workspace_entry(ws, work->v[i].key);
		if (!json_is_object(json_object_get(entry, "ref")))
			continue;
		json_t *locator = tt_locator_at(tt_manifest_locator(&work->v[i]), json_object_get(entry, "ref"));
		const char *key = work->v[i].key;
		rc = note(c, tt_manifest_kind(&work->v[i]), locator, key_secrets(c->repo, key) ? key : NULL, 1);
		json_decref(locator);
	}
	json_decref(ws);
	return rc;
}

/* Every store a journal entry names, open or closed. */
static int note_journal(struct collect *c)
{
	json_t *pins = NULL, *pin;
	size_t j;
	int rc = tt_journal_pin_stores(c->repo, &pins);
	json_array_foreach(pins, j, pin) {
		if (rc)
			break;
		const char *key = json_string_value(json_object_get(pin, "key"));
		rc = note(c, json_string_value(json_object_get(pin, "kind")), json_object_get(pin, "locator"),
		          key_secrets(c->repo, key) ? key : NULL, 0);
	}
	json_decref(pins);
	return rc;
}

/* Secrets first, then more members first, then canonical JSON. */
static int carries_more_first(const void *pa, const void *pb)
{
	const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
	int sa = json_object_get(a, "key") != NULL, sb = json_object_get(b, "key") != NULL;
	if (sa != sb)
		return sb - sa;
	size_t na = json_object_size(json_object_get(a, "locator"));
	size_t nb = json_object_size(json_object_get(b, "locator"));
	if (na != nb)
		return na < nb ? 1 : -1;
	char *ca = tt_cjson(a), *cb = tt_cjson(b);
	int order = strcmp(ca ? ca : "", cb ? cb : "");
	free(ca);
	free(cb);
	return order;
}

static void order_locators(json_t *store)
{
	json_t *list = json_object_get(store, "locators");
	tt_json_array_sort(list, carries_more_first);
	json_object_del(store, "seen");
	json_object_set(store, "locator", json_object_get(json_array_get(list, 0), "locator"));
}

int tt_gc_stores_collect(struct tether_repo *repo, const struct tt_history *h, json_t *stores, json_t *skipped)
{
	struct collect c = {.repo = repo, .stores = stores, .skipped = skipped};
	int rc = note_records(&c, h);
	if (!rc)
		rc = note_workspace(&c, &h->working);
	if (!rc)
		rc = note_journal(&c);
	const char *k;
	json_t *store;
	json_object_foreach(stores, k, store) order_locators(store);
	return rc;
}

void tt_gc_store_bctx(struct tether_repo *repo, const json_t *store, const json_t *entry, struct tether_bctx *ctx)
{
	const char *kind = json_string_value(json_object_get(store, "kind"));
	tt_repo_bctx(repo, kind, json_string_value(json_object_get(entry, "key")), ctx);
	tt_session_attach(repo, kind ? tether_backend_find(kind) : NULL, json_object_get(entry, "locator"),
	                  json_object_get(store, "identity"), ctx);
}

void tt_gc_skip_store(json_t *skipped, const char *name, const char *reason)
{
	size_t i;
	json_t *e;
	json_array_foreach(skipped, i, e) {
		const char *other = json_string_value(json_object_get(e, "store"));
		if (other && strcmp(other, name) == 0)
			return;
	}
	json_array_append_new(skipped, json_pack("{s:s, s:s}", "store", name, "reason", reason ? reason : ""));
}

char *tt_gc_store_name(const json_t *store)
{
	char *where = tt_cjson(json_object_get(store, "identity"));
	char *name = tt_strdupf("%s store %s", json_string_value(json_object_get(store, "kind")), where ? where : "?");
	free(where);
	return name;
}
