/* The `delta` backend: Delta Lake tables (Addressable). The state is the
 * table's version and its metaData id; Delta has no tags or branches, so a
 * commit records the version and `open -r` names it, readable while the
 * log can still rebuild it (RETENTION_BOUND: log cleanup, 30 days by
 * default, and VACUUM of the data files, 7). Built as the module
 * tether-backend-delta.so, on the Parquet reader of src/format/.
 *
 * This file holds the description, locators, identity, fingerprint,
 * verify and handles; log.c, checkpoint.c, commits.c and protocol.c read
 * the log, history.c gives history and diff. */
#include "backends/delta/delta.h"

#include "util/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Locators                                                            */
/* ------------------------------------------------------------------ */

/* A version number as `--at` and a locator's "at" give it. */
static int parse_version(const char *s, int64_t *out)
{
	if (!s || !*s || strlen(s) > 19)
		return -1;
	int64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	*out = v;
	return 0;
}

int dl_read_locator(const json_t *locator, struct dl_loc *out)
{
	memset(out, 0, sizeof *out);
	out->at = -1;
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "delta locator is not a table");
	const json_t *uri = json_object_get(locator, "uri");
	if (!json_is_string(uri) || !*json_string_value(uri))
		return tether_error_set(TETHER_ECONFIG, "delta locator has no \"uri\"");
	out->uri = json_string_value(uri);
	/* A committed locator is untrusted: only what `tether add` records. */
	int refused = tether_store_check_committed(out->uri);
	if (refused)
		return tether_error_set(refused, "delta locator: %s", tether_error_last());
	const json_t *at = json_object_get(locator, "at");
	if (at && parse_version(json_string_value(at), &out->at) != 0)
		return tether_error_set(TETHER_ECONFIG, "delta locator: \"at\" must be a version number, as a string");
	const json_t *region = json_object_get(locator, "region");
	if (region && (!json_is_string(region) || !*json_string_value(region)))
		return tether_error_set(TETHER_ECONFIG, "delta locator: \"region\" must be a non-empty string");
	return 0;
}

/* The committed options (tether.toml's [backends.delta] storage_options,
 * the locator's region), checked as a clone's files are, then
 * secrets.toml's for the URI and the object. */
int dl_store_options(const struct tether_bctx *ctx, const json_t *locator, const char *uri, json_t **out)
{
	*out = NULL;
	json_t *committed = json_object();
	if (!committed)
		return dl_fail_oom();
	const json_t *config = ctx ? json_object_get(ctx->config, "storage_options") : NULL;
	const json_t *region = json_object_get(locator, "region");
	int rc = tether_store_check_committed_options(config, "tether.toml [backends.delta]");
	if (!rc && ((config && json_object_update(committed, (json_t *)config)) ||
	            (json_is_string(region) && json_object_set(committed, "region", (json_t *)region))))
		rc = dl_fail_oom();
	if (!rc)
		rc = tether_bctx_store_options(ctx, uri, json_object_size(committed) ? committed : NULL, out);
	json_decref(committed);
	return rc;
}

static int dl_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                           json_t **locator)
{
	*locator = NULL;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)options, k, v) {
		if (strcmp(k, "at") != 0 && strcmp(k, "region") != 0)
			return tether_error_set(TETHER_EUSAGE, "unknown option '--%s' for kind delta", k);
		if (!json_is_string(v) || !*json_string_value(v))
			return tether_error_set(TETHER_EUSAGE, "--%s for kind delta takes a non-empty string", k);
	}
	if (!uri || !*uri)
		return tether_error_set(TETHER_EUSAGE, "kind delta needs the table's path or URI: "
		                                       "tether add KEY PATH --kind delta");
	const char *at = json_string_value(json_object_get(options, "at"));
	const char *region = json_string_value(json_object_get(options, "region"));
	int64_t atv = -1;
	if (at && parse_version(at, &atv) != 0)
		return tether_error_set(TETHER_EUSAGE, "--at %s: a Delta table is addressed by version number", at);
	char *path = NULL;
	int rc = tether_store_canonical(uri, cwd, &path);
	if (rc)
		return rc;
	if (region && !strstr(path, "://")) {
		free(path);
		return tether_error_set(TETHER_EUSAGE, "--region is for a table in an object store, not a local path");
	}
	*locator = json_pack("{s:s}", "uri", path);
	if (*locator && at)
		json_object_set_new(*locator, "at", json_string(at));
	if (*locator && region)
		json_object_set_new(*locator, "region", json_string(region));
	free(path);
	if (!*locator)
		return dl_fail_oom();
	/* The table must be there and readable, and --at a version it can
	 * still rebuild. */
	struct dl_log log;
	rc = dl_log_open(ctx, *locator, json_string_value(json_object_get(*locator, "uri")), atv >= 0, &log);
	if (!rc) {
		rc = dl_log_load_state(&log);
		int ok = 0;
		int64_t oldest = -1;
		if (!rc && atv > log.latest)
			rc = tether_error_set(TETHER_EUSAGE, "--at %s: %s has no version %s (latest: %" PRId64 ")", at, log.uri,
			                      at, log.latest);
		else if (!rc && atv >= 0 && (rc = dl_log_reconstructable(&log, atv, &ok, &oldest)) == 0 && !ok)
			rc = tether_error_set(TETHER_EUSAGE, "--at %s: %s can no longer rebuild version %s (oldest: %" PRId64
			                                     "): log cleanup removed its commits",
			                      at, log.uri, at, oldest);
		dl_log_close(&log);
	} else if (rc == TETHER_ENOTFOUND) {
		rc = tether_error_set(TETHER_EUSAGE, "%s", tether_error_last());
	}
	if (rc) {
		json_decref(*locator);
		*locator = NULL;
	}
	return rc;
}

/* A table in an object store is fingerprinted in round trips (a LIST, a
 * few GETs), not CPU: REMOTE_FINGERPRINT puts it on the engine's pool for
 * such objects. */
static int dl_effective_capabilities(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                                     unsigned *caps)
{
	(void)ctx, (void)policy;
	const char *uri = json_string_value(json_object_get(locator, "uri"));
	if (uri && strstr(uri, "://"))
		*caps |= TETHER_CAP_REMOTE_FINGERPRINT;
	return 0;
}

static int dl_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	struct dl_loc loc;
	int rc = dl_read_locator(locator, &loc);
	if (rc)
		return rc;
	*identity = json_pack("{s:s}", "uri", loc.uri);
	return *identity ? 0 : dl_fail_oom();
}

/* ------------------------------------------------------------------ */
/* Fingerprint and verify                                              */
/* ------------------------------------------------------------------ */

static int dl_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                          struct tether_fingerprint *out)
{
	(void)policy;
	memset(out, 0, sizeof *out);
	struct dl_loc loc;
	struct dl_log log;
	int rc = dl_read_locator(locator, &loc);
	if (rc)
		return rc;
	/* At a detached version, whether it can still be rebuilt needs the
	 * whole listing; the latest needs only what follows the checkpoint. */
	if ((rc = dl_log_open(ctx, locator, loc.uri, loc.at >= 0, &log)))
		return rc;
	rc = dl_log_load_state(&log);
	int64_t v = loc.at >= 0 ? loc.at : log.latest;
	if (!rc && loc.at >= 0) {
		int ok = 0;
		int64_t oldest = -1;
		if (loc.at > log.latest)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s has no version %" PRId64 " (latest: %" PRId64 ")", log.uri,
			                      loc.at, log.latest);
		else if ((rc = dl_log_reconstructable(&log, loc.at, &ok, &oldest)) == 0 && !ok)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s can no longer rebuild version %" PRId64
			                                        ": log cleanup removed its commits",
			                      log.uri, loc.at);
	}
	if (!rc && !(out->state = dl_state(v, dl_table_id(&log))))
		rc = dl_fail_oom();
	dl_log_close(&log);
	return rc;
}

/* Is the recorded version still there to read in the log as listed: the
 * same table (its id), and a version the log can rebuild? */
static int verify_on_log(struct dl_log *log, const json_t *state, int *ok, char **detail)
{
	*ok = 0;
	*detail = NULL;
	int64_t version;
	const char *table_id;
	int rc = dl_state_read(state, "verify", &version, &table_id);
	if (rc)
		return rc;
	int good = 0;
	int64_t oldest = -1;
	if (strcmp(dl_table_id(log), table_id) != 0)
		*detail = tt_strdupf("drifted: %s is another table now (table id %s, recorded %s): it was recreated "
		                     "under the same path, and version %" PRId64 " of the recorded table is gone",
		                     log->uri, dl_table_id(log), table_id, version);
	else if (version > log->latest)
		*detail = tt_strdupf("%s has no version %" PRId64 " (latest: %" PRId64 ")", log->uri, version, log->latest);
	else if ((rc = dl_log_reconstructable(log, version, &good, &oldest)) == 0 && !good)
		*detail = tt_strdupf("version %" PRId64 " of %s can no longer be rebuilt: log cleanup removed the commits "
		                     "it needs (oldest version it can rebuild: %" PRId64 "). Delta versions are "
		                     "retention-bound: the log keeps commits for delta.logRetentionDuration (30 days "
		                     "by default) and VACUUM removes data files after "
		                     "delta.deletedFileRetentionDuration (7 days)",
		                     version, log->uri, oldest);
	if (!rc && good)
		*ok = 1;
	else if (!rc && !*detail)
		rc = dl_fail_oom();
	return rc;
}

/* The log, listed whole and its state read, for verify; a table that is
 * gone is an answer (not ok, *gone says why), not an error. */
static int open_for_verify(const struct tether_bctx *ctx, const json_t *locator, struct dl_log *log, char **gone)
{
	*gone = NULL;
	struct dl_loc loc;
	int rc = dl_read_locator(locator, &loc);
	if (!rc)
		rc = dl_log_open(ctx, locator, loc.uri, 1, log);
	if (rc == TETHER_ENOTFOUND) {
		*gone = strdup(tether_error_last());
		tether_error_clear();
		return *gone ? 0 : dl_fail_oom();
	}
	if (!rc && (rc = dl_log_load_state(log)))
		dl_log_close(log);
	return rc;
}

int dl_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              int *ok, char **detail)
{
	(void)pin_ref;
	*ok = 0;
	*detail = NULL;
	struct dl_log log;
	int rc = open_for_verify(ctx, locator, &log, detail);
	if (rc || *detail)
		return rc;
	rc = verify_on_log(&log, state, ok, detail);
	dl_log_close(&log);
	return rc;
}

/* verify --all-history: the log listed and read once for every recorded
 * state of the table. */
static int dl_verify_many(const struct tether_bctx *ctx, struct tether_verify_item *items, size_t n)
{
	if (!n)
		return 0;
	struct dl_log log;
	char *gone = NULL;
	int rc = open_for_verify(ctx, items[0].locator, &log, &gone);
	if (rc)
		return rc; /* the engine asks verify for each, which says the same per item */
	for (size_t i = 0; i < n; i++) {
		items[i].ok = 0;
		items[i].detail = NULL;
		if (gone) {
			items[i].detail = strdup(gone);
			continue;
		}
		if (verify_on_log(&log, items[i].state, &items[i].ok, &items[i].detail) != 0) {
			items[i].detail = strdup(tether_error_last());
			tether_error_clear();
		}
	}
	if (gone)
		free(gone);
	else
		dl_log_close(&log);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Handles                                                             */
/* ------------------------------------------------------------------ */

/* A table at a version, as DeltaTable(uri, version=v) opens it. Read-only
 * at a recorded state (verified readable first); the latest otherwise. */
static int dl_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                   const json_t *working_ref, int read_only, json_t **handle)
{
	(void)working_ref;
	*handle = NULL;
	struct dl_loc loc;
	int rc = dl_read_locator(locator, &loc);
	if (rc)
		return rc;
	if (read_only && state) {
		int ok = 0;
		char *detail = NULL;
		if ((rc = dl_verify(ctx, locator, state, pin_ref, &ok, &detail)))
			return rc;
		if (!ok) {
			rc = tether_error_set(TETHER_ENOTFOUND, "%s", detail);
			free(detail);
			return rc;
		}
		*handle = json_pack("{s:s, s:s, s:b, s:O, s:O}", "kind", "delta", "uri", loc.uri, "read_only", 1, "version",
		                    json_object_get(state, "version"), "table_id", json_object_get(state, "table_id"));
		return *handle ? 0 : dl_fail_oom();
	}
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	if ((rc = dl_fingerprint(ctx, locator, NULL, &fp)))
		return rc;
	/* At a detached "at" the handle reads that version and writes
	 * nothing; otherwise it is the table itself, whose writers make new
	 * versions. */
	*handle = json_pack("{s:s, s:s, s:b, s:O, s:O}", "kind", "delta", "uri", loc.uri, "read_only",
	                    read_only || loc.at >= 0, "version", json_object_get(fp.state, "version"), "table_id",
	                    json_object_get(fp.state, "table_id"));
	json_decref(fp.state);
	return *handle ? 0 : dl_fail_oom();
}

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */

/* {version, table_id}: a version number and the metaData id. */
static int dl_check_state(const json_t *state, const char **bad)
{
	const char *k;
	json_t *v;
	*bad = "version";
	const json_t *version = json_object_get(state, "version");
	if (!json_is_integer(version) || json_integer_value(version) < 0)
		return tether_error_set(TETHER_ECONFIG, "version must be a Delta version number (an integer >= 0)%s",
		                        version ? "" : ", and is missing");
	*bad = "table_id";
	const json_t *id = json_object_get(state, "table_id");
	if (!json_is_string(id) || !*json_string_value(id) || strlen(json_string_value(id)) > 256)
		return tether_error_set(TETHER_ECONFIG, "table_id must be the table's metaData id (a string)%s",
		                        id ? "" : ", and is missing");
	json_object_foreach((json_t *)state, k, v) {
		*bad = k;
		if (strcmp(k, "version") != 0 && strcmp(k, "table_id") != 0)
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of a delta state (version, table_id)", k);
	}
	return 0;
}

static const struct tether_add_option dl_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "region", .value_name = "REGION",
	 .help = "the object store's region (AWS_REGION) for an s3:// table", .field = TETHER_ADD_LOCATOR},
	{0},
};

static const char *const dl_config_keys[] = {"storage_options", NULL};

const struct tether_backend tt_backend_delta = {
	TETHER_BACKEND_INIT,
	.kind = "delta",
	.maturity = "stable",
	.summary = "Delta Lake tables (local paths, s3://, gs://, az://): versions recorded from the "
	           "_delta_log, no refs",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_CHEAP_FINGERPRINT |
	        TETHER_CAP_RETENTION_BOUND | TETHER_CAP_DIFF | TETHER_CAP_HISTORY,
	.make_locator = dl_make_locator,
	.effective_capabilities = dl_effective_capabilities,
	.identity = dl_identity,
	.fingerprint = dl_fingerprint,
	.verify = dl_verify,
	.verify_many = dl_verify_many,
	.verify_deep = dl_verify_deep,
	.open = dl_open,
	.diff = dl_diff,
	.history = dl_history,
	.check_state = dl_check_state,
	.secret_keys = tether_store_option_names,
	.add_options = dl_add_options,
	.config_keys = dl_config_keys,
};

TETHER_API tether_backend_module_t tether_backend_module = {&tt_backend_delta, NULL};
