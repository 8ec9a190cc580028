/* The `file` backend on object stores (file_remote.h).
 *
 * A locator's uri says what it names: with a trailing '/' (or no key
 * after the bucket) a prefix, without one a single object. The canonical
 * form is tether_store_canonical's with exactly one '/' put back for a
 * prefix: "s3://bucket/raw/plate1/", "s3://bucket/", "s3://bucket/a.csv".
 * The store is opened at the bucket ("s3://bucket") with the options for
 * the object's whole URI, and the object is a key in it. */
#include "backends/file_remote.h"
#include "backends/file_stores.h"

#include <tether/listing.h>
#include <tether/store.h>

#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* Listing pages as large as an object store serves in one request. */
#define PAGE 1000

static int oom(void)
{
	return tether_error_set(TETHER_ERROR, "out of memory");
}

int fr_is_remote(const char *uri)
{
	return uri && strstr(uri, "://") && strncmp(uri, "file://", 7) != 0;
}

/* What a locator's uri names. */
struct target {
	char *uri;   /* canonical, as the locator records it */
	char *plain; /* without the prefix's '/': what store options are looked up for */
	char *root;  /* "scheme://bucket": the store opened */
	const char *key; /* in plain: the object's key, or the prefix ("" = the whole bucket) */
	int prefix;
};

/* Leaves t empty, so a target freed where a step failed can be freed
 * again by the caller's common exit. */
static void target_free(struct target *t)
{
	free(t->uri);
	free(t->plain);
	free(t->root);
	memset(t, 0, sizeof *t);
}

/* uri (as given, or as a locator holds it) in canonical form, split. */
static int target_of(const char *uri, struct target *t)
{
	memset(t, 0, sizeof *t);
	size_t n = strlen(uri);
	int slash = n > 0 && uri[n - 1] == '/';
	int rc = tether_store_canonical(uri, NULL, &t->plain);
	if (rc)
		return rc;
	const char *host = strstr(t->plain, "://") + 3;
	const char *end = strchr(host, '/');
	if (end == host || !*host) {
		rc = tether_error_set(TETHER_EUSAGE, "'%s' names no bucket", uri);
		target_free(t);
		return rc;
	}
	t->key = end ? end + 1 : t->plain + strlen(t->plain);
	t->prefix = slash || !*t->key;
	t->root = end ? strndup(t->plain, (size_t)(end - t->plain)) : strdup(t->plain);
	t->uri = t->prefix ? tt_strdupf("%s/", t->plain) : strdup(t->plain);
	if (!t->root || !t->uri) {
		target_free(t);
		return oom();
	}
	return 0;
}

/* The target of a committed locator, which a clone may have written: its
 * uri must be exactly what `tether add` records, on a scheme tether has a
 * store for. */
static int locator_target(const json_t *locator, struct target *t)
{
	memset(t, 0, sizeof *t);
	const char *uri = json_string_value(json_object_get(locator, "uri"));
	if (!uri)
		return tether_error_set(TETHER_ECONFIG, "file locator has no uri");
	int rc = target_of(uri, t);
	if (rc)
		return tether_error_set(TETHER_EREFUSED, "file locator: %s", tether_error_last());
	if (strcmp(t->uri, uri) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "file locator: '%s' is not in the form tether records ('%s')", uri,
		                      t->uri);
	if (!rc && (rc = tether_store_check_committed(t->plain)) != 0)
		rc = tether_error_set(rc, "file locator: %s", tether_error_last());
	const json_t *region = json_object_get(locator, "region");
	if (!rc && region && (!json_is_string(region) || !*json_string_value(region)))
		rc = tether_error_set(TETHER_ECONFIG, "file locator: region must be a non-empty string");
	if (rc)
		target_free(t);
	return rc;
}

/* The options the store is opened with: the committed ones ([backends.file]
 * storage_options of tether.toml, the locator's storage_options and
 * region; only what may be committed), then secrets.toml's for the URI
 * and the object. */
static int store_options(const struct tether_bctx *ctx, const json_t *locator, const struct target *t, json_t **out)
{
	*out = NULL;
	json_t *committed = json_object();
	if (!committed)
		return oom();
	const json_t *config = json_object_get(ctx->config, "storage_options");
	const json_t *own = json_object_get(locator, "storage_options");
	const json_t *region = json_object_get(locator, "region");
	int rc = tether_store_check_committed_options(config, "tether.toml [backends.file]");
	if (!rc && own) {
		char *where = tt_strdupf(".tether/objects/%s.toml [locator]", ctx->key ? ctx->key : "?");
		rc = tether_store_check_committed_options(own, where);
		free(where);
	}
	if (!rc && ((config && json_object_update(committed, (json_t *)config)) ||
	            (own && json_object_update(committed, (json_t *)own)) ||
	            (json_is_string(region) && json_object_set(committed, "region", (json_t *)region))))
		rc = oom();
	if (!rc)
		rc = tether_bctx_store_options(ctx, t->plain, json_object_size(committed) ? committed : NULL, out);
	json_decref(committed);
	return rc;
}

/* The store of a target, taken from the idle ones (file_stores.h) and
 * given back by done(). */
struct conn {
	tether_store *s;
	json_t *options;
	const char *root;
};

static int open_store(const struct tether_bctx *ctx, const json_t *locator, const struct target *t,
                      struct conn *c)
{
	c->s = NULL;
	c->options = NULL;
	c->root = t->root;
	int rc = store_options(ctx, locator, t, &c->options);
	if (!rc)
		rc = fr_store_take(t->root, c->options, &c->s);
	return rc;
}

static void done(struct conn *c)
{
	if (c->s)
		fr_store_give(c->root, c->options, c->s);
	json_decref(c->options);
	c->s = NULL;
	c->options = NULL;
}

static json_t *object_state(const struct tether_store_stat *st)
{
	json_t *state = json_pack("{s:s, s:I, s:s}", "type", "object", "size", (json_int_t)st->size, "etag",
	                          st->version.token);
	if (state && st->version_id[0])
		json_object_set_new(state, "version_id", json_string(st->version_id));
	return state;
}

/* Is there anything under key/ (an object URI given without the '/' a
 * prefix needs)? */
static int is_prefix(tether_store *s, const char *key)
{
	tether_store_iter *it = NULL;
	const char *first = NULL;
	int found = tether_store_list(s, key, NULL, 1, &it) == 0 && tether_store_next(it, &first) == 0 && first;
	tether_store_iter_free(it);
	tether_error_clear();
	return found;
}

int fr_make_locator(const struct tether_bctx *ctx, const char *uri, const char *region, json_t **locator)
{
	struct target t;
	int rc = target_of(uri, &t);
	if (rc)
		return rc;
	*locator = json_pack("{s:s}", "uri", t.uri);
	if (*locator && region)
		json_object_set_new(*locator, "region", json_string(region));
	struct conn c = {0};
	rc = *locator ? open_store(ctx, *locator, &t, &c) : oom();
	tether_store *s = c.s;
	/* The store must answer now: a typo in the bucket or endpoint is
	 * better refused here than found at the first status. */
	if (!rc && t.prefix) {
		tether_store_iter *it = NULL;
		const char *first = NULL;
		if ((rc = tether_store_list(s, t.key, NULL, 1, &it)) == 0)
			rc = tether_store_next(it, &first);
		tether_store_iter_free(it);
	} else if (!rc) {
		struct tether_store_stat st;
		rc = tether_store_stat(s, t.key, NULL, &st);
		if (!rc && !st.exists) {
			int prefix = is_prefix(s, t.key);
			rc = tether_error_set(TETHER_ENOTFOUND, "no object at %s", t.uri);
			if (prefix)
				tether_error_set_hint("%s is a prefix: add %s/ to record every object under it", t.uri, t.uri);
		}
	}
	done(&c);
	target_free(&t);
	if (rc) {
		json_decref(*locator);
		*locator = NULL;
	}
	return rc;
}

static int versioned(const json_t *policy)
{
	const char *mode = json_string_value(json_object_get(policy, "file"));
	return mode && strcmp(mode, "versioned") == 0;
}

int fr_caps(const json_t *locator, const json_t *policy, unsigned *caps)
{
	const char *uri = json_string_value(json_object_get(locator, "uri"));
	int remote = fr_is_remote(uri);
	size_t n = uri ? strlen(uri) : 0;
	int prefix = remote && n && uri[n - 1] == '/';
	if (versioned(policy) && (!remote || prefix))
		return tether_error_set(TETHER_EUSAGE, "file versioned is for a single object in an object store, and "
		                        "%s is %s: it can only be observed (--file immutable or mutable)",
		                        uri ? uri : "?", prefix ? "a prefix" : "a local path");
	if (remote)
		*caps |= TETHER_CAP_REMOTE_FINGERPRINT;
	if (remote && versioned(policy))
		*caps |= TETHER_CAP_ADDRESSABLE;
	return 0;
}

/* The prefix's listing: one paged LIST, the ETag and size of each key. */
static int fingerprint_prefix(const struct tether_bctx *ctx, tether_store *s, const struct target *t,
                              struct tether_fingerprint *out)
{
	struct tether_listing_writer *w = tether_listing_writer_new(!ctx->state_only);
	tether_store_iter *it = NULL;
	int rc = w ? tether_store_list(s, t->key, NULL, PAGE, &it) : oom();
	size_t skip = *t->key ? strlen(t->key) + 1 : 0;
	const char *key;
	const struct tether_store_stat *st;
	while (!rc && (rc = tether_store_next_stat(it, &key, &st)) == 0 && key) {
		if (tether_bctx_cancelled(ctx))
			rc = tether_bctx_cancel(ctx, "listing the prefix");
		else if (!st->version.token[0])
			rc = tether_error_set(TETHER_EIO, "%s/%s: the store listed it without an ETag", t->root, key);
		else
			rc = tether_listing_writer_add_token(w, key + skip, strlen(key + skip), st->size, st->version.token);
	}
	tether_store_iter_free(it);
	struct tether_listing_summary sum = {0};
	if (!rc)
		rc = tether_listing_writer_finish(w, &sum);
	tether_listing_writer_free(w);
	if (rc)
		return rc;
	out->state = json_pack("{s:s, s:I, s:I, s:s}", "type", "prefix", "count", (json_int_t)sum.count, "size",
	                       (json_int_t)sum.total_size, "digest", sum.digest);
	out->listing = sum.listing;
	out->listing_len = sum.listing_len;
	return out->state ? 0 : oom();
}

static int fingerprint_object(tether_store *s, const struct target *t, struct tether_fingerprint *out)
{
	struct tether_store_stat st;
	int rc = tether_store_stat(s, t->key, NULL, &st);
	if (!rc)
		out->state = st.exists ? object_state(&st) : json_pack("{s:s}", "type", "missing");
	return rc ? rc : out->state ? 0 : oom();
}

static int fingerprint_at(const struct tether_bctx *ctx, tether_store *s, const struct target *t,
                          struct tether_fingerprint *out)
{
	return t->prefix ? fingerprint_prefix(ctx, s, t, out) : fingerprint_object(s, t, out);
}

int fr_fingerprint(const struct tether_bctx *ctx, const json_t *locator, struct tether_fingerprint *out)
{
	struct target t;
	int rc = locator_target(locator, &t);
	struct conn c = {0};
	if (!rc)
		rc = open_store(ctx, locator, &t, &c);
	if (!rc)
		rc = fingerprint_at(ctx, c.s, &t, out);
	done(&c);
	target_free(&t);
	return rc;
}

static const char *text(const json_t *state, const char *k)
{
	const char *s = json_string_value(json_object_get(state, k));
	return s ? s : "";
}

/* The recorded version of an object, asked for by its id. */
static int verify_version(tether_store *s, const struct target *t, const json_t *state, int *ok, char **detail)
{
	struct tether_store_stat st;
	const char *id = text(state, "version_id");
	int rc = tether_store_stat(s, t->key, id, &st);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		*detail = tt_strdupf("version %s of %s is gone (deleted, or expired by a lifecycle rule)", id, t->uri);
		return 0;
	}
	if (rc)
		return rc;
	*ok = st.exists && strcmp(st.version.token, text(state, "etag")) == 0 &&
	      (json_int_t)st.size == json_integer_value(json_object_get(state, "size"));
	if (!*ok)
		*detail = st.exists ? tt_strdupf("version %s of %s is no longer the bytes recorded: etag %s, %llu bytes", id,
		                                 t->uri, st.version.token, (unsigned long long)st.size)
		                    : tt_strdupf("version %s of %s is a delete marker", id, t->uri);
	return 0;
}

/* Equal but for the version id, which names where the bytes are, not what
 * they are (the file backend's volatile key). */
static int same_content(const json_t *a, const json_t *b)
{
	json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
	json_object_del(x, "version_id");
	json_object_del(y, "version_id");
	int same = json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

int fr_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, int *ok, char **detail)
{
	*ok = 0;
	*detail = NULL;
	struct target t;
	int rc = locator_target(locator, &t);
	struct conn c = {0};
	if (!rc)
		rc = open_store(ctx, locator, &t, &c);
	tether_store *s = c.s;
	if (!rc && !t.prefix && *text(state, "version_id") && (tether_store_flags(s) & TETHER_STORE_VERSION_IDS)) {
		rc = verify_version(s, &t, state, ok, detail);
	} else if (!rc) {
		struct tether_bctx only_state = *ctx;
		only_state.state_only = 1;
		struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
		rc = fingerprint_at(&only_state, s, &t, &fp);
		*ok = !rc && same_content(fp.state, state);
		if (!rc && !*ok)
			*detail = tt_strdupf("%s changed since recorded", t.uri);
		json_decref(fp.state);
		free(fp.listing);
	}
	done(&c);
	target_free(&t);
	return rc;
}

int fr_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, json_t **handle)
{
	*handle = NULL;
	struct target t;
	int rc = locator_target(locator, &t);
	if (rc)
		return rc;
	const json_t *policy = TETHER_STRUCT_HAS(struct tether_bctx, ctx, policy) ? ctx->policy : NULL;
	const char *id = text(state, "version_id");
	int object = strcmp(text(state, "type"), "object") == 0;
	if (versioned(policy) && object && !*id) {
		rc = tether_error_set(TETHER_EREFUSED, "%s: the state recorded has no version id (the bucket kept none "
		                      "when it was recorded), so it cannot be read as it was", t.uri);
		tether_error_set_hint("turn versioning on for the bucket and commit again; until then the object can "
		                      "only be read as it is now");
	} else {
		*handle = json_pack("{s:s, s:s, s:O?, s:b}", "kind", "file", "uri", t.uri, "state", state, "read_only", 1);
		if (*handle && object && *id)
			json_object_set_new(*handle, "version_id", json_string(id));
		if (!*handle)
			rc = oom();
	}
	target_free(&t);
	return rc;
}
