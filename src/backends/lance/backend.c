/* The `lance` backend: Lance datasets (Forkable). A state is (branch,
 * version[, branch_id]); a tag tether.<pin id> the pin; a branch made from
 * it, as Lance's create_branch makes one, the fork. Built as the module
 * tether-backend-lance.so, on protobuf-c (manifests) and the store layer.
 *
 * This file holds the description, locators, identity, fingerprint and
 * handles; pins.c, forks.c, diff.c and history.c the rest; manifest.c,
 * versions.c, refs.c, clone.c and state.c the format. */
#include "backends/lance/lance.h"

#include "util/fail.h"
#include "util/locfield.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lc_fail_oom(void)
{
	return tt_fail_oom();
}

/* ------------------------------------------------------------------ */
/* Locators and the dataset                                            */
/* ------------------------------------------------------------------ */

int lc_read_locator(const json_t *locator, struct lc_loc *out)
{
	memset(out, 0, sizeof *out);
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "lance locator is not a table");
	int rc;
	if ((rc = tt_locator_string(locator, "lance", "uri", &out->uri)) ||
	    (rc = tt_locator_string(locator, "lance", "branch", &out->branch)) ||
	    (rc = tt_locator_string(locator, "lance", "at", &out->at)) ||
	    (rc = tt_locator_string(locator, "lance", "working_branch", &out->working_branch)))
		return rc;
	if (!out->uri)
		return tether_error_set(TETHER_ECONFIG, "lance locator has no \"uri\"");
	/* A committed locator is untrusted: only what `tether add` records. */
	int refused = tether_store_check_committed(out->uri);
	if (refused)
		return tether_error_set(refused, "lance locator: %s", tether_error_last());
	if (!out->branch)
		out->branch = "main";
	if (strcmp(out->branch, "main") != 0 && (rc = lc_check_branch_name(out->branch)))
		return tether_error_set(TETHER_ECONFIG, "lance locator: %s", tether_error_last());
	if (out->working_branch && (rc = lc_check_branch_name(out->working_branch)))
		return tether_error_set(TETHER_ECONFIG, "lance working ref: %s", tether_error_last());
	out->storage_options = json_object_get(locator, "storage_options");
	return 0;
}

/* The options the store opens with: the committed ones ([backends.lance]
 * storage_options of tether.toml, then the locator's; only what may be
 * committed), then secrets.toml's for the URI and the object. */
static int store_options(const struct tether_bctx *ctx, const struct lc_loc *loc, json_t **out)
{
	*out = NULL;
	const json_t *config = ctx ? json_object_get(ctx->config, "storage_options") : NULL;
	json_t *committed = json_object();
	int rc = committed ? tether_store_check_committed_options(config, "tether.toml [backends.lance]") : lc_fail_oom();
	if (rc == 0 && loc->storage_options) {
		char *where = tt_strdupf(".tether/objects/%s.toml [locator]", ctx && ctx->key ? ctx->key : "?");
		rc = tether_store_check_committed_options(loc->storage_options, where);
		free(where);
	}
	if (rc == 0 && ((config && json_object_update(committed, (json_t *)config)) ||
	                (loc->storage_options && json_object_update(committed, (json_t *)loc->storage_options))))
		rc = lc_fail_oom();
	if (rc == 0)
		rc = tether_bctx_store_options(ctx, loc->uri, json_object_size(committed) ? committed : NULL, out);
	json_decref(committed);
	return rc;
}

static int open_uri(const struct tether_bctx *ctx, const struct lc_loc *loc, struct lc_dataset *ds)
{
	json_t *options = NULL;
	memset(ds, 0, sizeof *ds);
	int rc = store_options(ctx, loc, &options);
	if (rc == 0)
		rc = tether_store_open(loc->uri, options, &ds->store);
	json_decref(options);
	if (rc == 0)
		ds->uri = tether_store_uri(ds->store);
	return rc;
}

int lc_open(const struct tether_bctx *ctx, const json_t *locator, struct lc_loc *loc, struct lc_dataset *ds)
{
	memset(ds, 0, sizeof *ds);
	int rc = lc_read_locator(locator, loc);
	return rc ? rc : open_uri(ctx, loc, ds);
}

void lc_close(struct lc_dataset *ds)
{
	tether_store_close(ds->store);
	memset(ds, 0, sizeof *ds);
}

static int lc_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                           json_t **locator)
{
	*locator = NULL;
	static const char *const known[] = {"branch", "at", NULL};
	int rc = tt_check_add_options(options, "lance", known, NULL);
	if (rc)
		return rc;
	if (!uri || !*uri)
		return tether_error_set(TETHER_EUSAGE, "kind lance needs the dataset's path: tether add KEY PATH --kind lance");
	const char *branch = json_string_value(json_object_get(options, "branch"));
	const char *at = json_string_value(json_object_get(options, "at"));
	if (branch && strcmp(branch, "main") != 0 && (rc = lc_check_branch_name(branch)))
		return tether_error_set(TETHER_EUSAGE, "--branch: %s", tether_error_last());
	char *path = NULL;
	if ((rc = tether_store_canonical(uri, cwd, &path)))
		return rc;
	json_t *loc = json_pack("{s:s, s:s}", "uri", path, "branch", branch ? branch : "main");
	if (loc && at)
		json_object_set_new(loc, "at", json_string(at));
	free(path);
	if (!loc)
		return lc_fail_oom();
	/* The dataset must be there, with the branch, and --at must name a
	 * version of it or a tag. */
	struct lc_loc l;
	struct lc_dataset ds;
	struct lc_pos p;
	if ((rc = lc_open(ctx, loc, &l, &ds)) == 0) {
		if ((rc = lc_position(&ds, &l, &p)) == 0)
			lc_pos_free(&p);
		lc_close(&ds);
	}
	if (rc == TETHER_ENOTFOUND)
		rc = tether_error_set(TETHER_EUSAGE, "%s", tether_error_last());
	if (rc) {
		json_decref(loc);
		return rc;
	}
	*locator = loc;
	return 0;
}

static int lc_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	struct lc_loc loc;
	int rc = lc_read_locator(locator, &loc);
	if (rc)
		return rc;
	/* Where the dataset is, not which branch is read: one version on two
	 * objects is one pin. */
	*identity = json_pack("{s:s}", "uri", loc.uri);
	return *identity ? 0 : lc_fail_oom();
}

static int lc_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                          struct tether_fingerprint *out)
{
	(void)policy;
	out->state = NULL;
	out->listing = NULL;
	out->listing_len = 0;
	struct lc_loc loc;
	struct lc_dataset ds;
	struct lc_pos p;
	int rc = lc_open(ctx, locator, &loc, &ds);
	if (rc)
		return rc;
	if ((rc = lc_position(&ds, &loc, &p)) == 0) {
		if (!(out->state = lc_state_of(&p)))
			rc = lc_fail_oom();
		lc_pos_free(&p);
	}
	lc_close(&ds);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Handles                                                             */
/* ------------------------------------------------------------------ */

/* {kind, uri, read_only, branch, version, tag}: what lance.dataset needs
 * (uri, then checkout_version((branch, version)) or the tag). A writable
 * handle names the working branch (or the base) at its head. */
static int lc_open_handle(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                          const json_t *pin_ref, const json_t *working_ref, int read_only, json_t **handle)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	struct lc_pos p;
	int ok = 0;
	char *detail = NULL;
	*handle = NULL;
	memset(&p, 0, sizeof p);
	int rc = lc_open(ctx, locator, &loc, &ds);
	if (rc)
		return rc;
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	const char *wb = json_string_value(json_object_get(working_ref, "working_branch"));
	const char *branch = NULL;
	if (read_only && state) {
		if ((rc = lc_state_read(state, &p)) == 0 && (rc = lc_state_check(&ds, &p, &ok, &detail)) == 0 && !ok)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s: %s", ds.uri, detail);
	} else {
		branch = wb ? wb : loc.branch;
		uint64_t latest = 0;
		if ((rc = lc_latest(&ds, branch, &latest, NULL)) == 0) {
			p.branch = strdup(branch);
			p.version = latest;
			if (!p.branch)
				rc = lc_fail_oom();
		}
		tag = NULL;
	}
	if (rc == 0) {
		*handle = json_pack("{s:s, s:s, s:b, s:s, s:I}", "kind", "lance", "uri", loc.uri, "read_only", read_only,
		                    "branch", p.branch, "version", (json_int_t)p.version);
		if (*handle && tag)
			json_object_set_new(*handle, "tag", json_string(tag));
		if (!*handle)
			rc = lc_fail_oom();
	}
	free(detail);
	lc_pos_free(&p);
	lc_close(&ds);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */

static const char *const lc_volatile_keys[] = {NULL};

/* {branch, version[, branch_id]}. */
static int lc_check_state(const json_t *state, const char **bad)
{
	const char *k;
	json_t *v;
	*bad = NULL;
	json_object_foreach((json_t *)state, k, v) {
		*bad = k;
		if (strcmp(k, "branch") != 0 && strcmp(k, "version") != 0 && strcmp(k, "branch_id") != 0)
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of a lance state (branch, version, branch_id)",
			                        k);
		if (strcmp(k, "version") == 0 ? !json_is_integer(v) || json_integer_value(v) < 0 : !json_is_string(v))
			return tether_error_set(TETHER_ECONFIG, "'%s' of a lance state must be %s", k,
			                        strcmp(k, "version") == 0 ? "a non-negative integer" : "a string");
	}
	struct lc_pos p;
	*bad = NULL;
	int rc = lc_state_read(state, &p);
	lc_pos_free(&p);
	return rc;
}

static const struct tether_add_option lc_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "branch", .value_name = "NAME", .help = "the dataset's branch to follow",
	 .default_value = "main", .field = TETHER_ADD_LOCATOR},
	{0},
};

static const char *const lc_config_keys[] = {"storage_options", NULL};

const struct tether_backend tt_backend_lance = {
	TETHER_BACKEND_INIT,
	.kind = "lance",
	.maturity = "stable",
	.summary = "Lance datasets (local paths, s3://, gs://, az://): tags pin, branches fork",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |
	        TETHER_CAP_ATOMIC_REF | TETHER_CAP_DIFF | TETHER_CAP_HISTORY,
	.volatile_keys = lc_volatile_keys,
	.secret_keys = tether_store_option_names,
	.config_keys = lc_config_keys,
	.make_locator = lc_make_locator,
	.identity = lc_identity,
	.fingerprint = lc_fingerprint,
	.pin = lc_pin,
	.unpin = lc_unpin,
	.list_pins = lc_list_pins,
	.verify = lc_verify,
	.verify_deep = lc_verify_deep,
	.fork = lc_fork,
	.delete_working_ref = lc_delete_working_ref,
	.delete_working_ref_if = lc_delete_working_ref_if,
	.open = lc_open_handle,
	.diff = lc_diff,
	.history = lc_history,
	.list_working_refs = lc_list_working_refs,
	.check_state = lc_check_state,
	.add_options = lc_add_options,
};

TETHER_API tether_backend_module_t tether_backend_module = {&tt_backend_lance, NULL};
