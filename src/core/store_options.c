/* Which options a store is opened with: the engine's half of "where store
 * options come from" (docs/BACKENDS.md "Store options").
 *
 * .tether/secrets.toml sets them per URI prefix ([uris."s3://bucket"],
 * [uris."s3://bucket/prefix"]) and per object ([objects."<key>"]). The
 * prefix tables are a function of the URI alone, so two objects on one
 * URI with no object table of their own get the same options: gc's store
 * identity (locator, object secrets) stays what it was. */
#include "store/options.h"
#include "util/fsutil.h"

#include <tether.h>
#include <tether/backend.h>
#include <tether/store.h>

#include <stdlib.h>
#include <string.h>

/* Is prefix at or above uri, a whole segment at a time? */
static int covers(const char *prefix, const char *uri)
{
	size_t n = strlen(prefix);
	return strncmp(prefix, uri, n) == 0 && (uri[n] == '\0' || uri[n] == '/');
}

/* The [uris] table with the longest prefix covering uri, or NULL. */
static const json_t *longest(const json_t *uris, const char *uri)
{
	const json_t *best = NULL;
	size_t best_len = 0;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)uris, k, v) {
		size_t n = strlen(k);
		if (covers(k, uri) && (!best || n > best_len)) {
			best = v;
			best_len = n;
		}
	}
	return best;
}

static int overlay(json_t *into, const json_t *from)
{
	if (from && json_object_update(into, (json_t *)from) != 0)
		return tether_error_set(TETHER_EIO, "out of memory");
	return 0;
}

int tether_bctx_store_options(const struct tether_bctx *ctx, const char *uri, const json_t *committed,
                              json_t **out)
{
	*out = NULL;
	const json_t *uris = ctx && TETHER_STRUCT_HAS(struct tether_bctx, ctx, uri_secrets) ? ctx->uri_secrets : NULL;
	const json_t *mine = ctx ? ctx->secrets : NULL;
	/* Prefixes are canonical (checked when secrets.toml was read), so
	 * the URI is compared in the form tether records. */
	char *canon = NULL;
	const json_t *by_uri = NULL;
	if (uris && uri && tether_store_canonical(uri, NULL, &canon) == 0)
		by_uri = longest(uris, canon);
	free(canon); /* a URI with no canonical form matches no prefix; open refuses it */
	if (!committed && !by_uri && !mine)
		return 0;
	/* The object's table was read as its backend's secrets; what the store
	 * is handed must be store options, each of its type. */
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)mine, k, v) {
		char why[768];
		if (tt_store_option_check(k, v, why, sizeof why) != 0) {
			char *path = tt_path_join(ctx->dataset_root ? ctx->dataset_root : ".", ".tether/secrets.toml");
			int rc = tether_error_set(TETHER_ECONFIG, "%s: objects.\"%s\": %s", path, ctx->key ? ctx->key : "?",
			                          why);
			free(path);
			return rc;
		}
	}
	json_t *o = json_object();
	int rc = o ? 0 : tether_error_set(TETHER_EIO, "out of memory");
	if (!rc)
		rc = overlay(o, committed);
	if (!rc)
		rc = overlay(o, by_uri);
	if (!rc)
		rc = overlay(o, mine);
	if (rc)
		json_decref(o);
	else
		*out = o;
	return rc;
}
