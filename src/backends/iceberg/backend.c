/* The `iceberg` backend: Apache Iceberg tables behind a catalog (SQL:
 * pyiceberg's SqlCatalog and Java's JdbcCatalog, on SQLite or Postgres;
 * REST). Forkable: the state is the followed ref's
 * snapshot id, a pin the tag tether.<pin id>, a fork the branch
 * tether.ws.<dataset8>.<bookmark>, and every ref move a catalog commit
 * conditional on the table's UUID and the ref's current snapshot
 * (CONDITIONAL_REF). Built as the module tether-backend-iceberg.so, the
 * only place libsqlite3 and libpq are linked (libcurl too, for REST).
 *
 * This file: locators, identity, fingerprint, handles, the description;
 * refs.c the pins and forks; history.c history and diff; catalog*.c,
 * sql_db.c and metadata_*.c the catalogs and the metadata. */
#include "backends/iceberg/ib.h"

#include "util/locfield.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Locators                                                            */
/* ------------------------------------------------------------------ */

static int optional_string(const json_t *locator, const char *key, const char **out)
{
	return tt_locator_string(locator, "iceberg", key, out);
}

static int split_identifier(const char *identifier, struct ib_loc *out)
{
	const char *dot = strrchr(identifier, '.');
	size_t nlen = dot ? (size_t)(dot - identifier) : 0;
	if (!dot || nlen == 0 || !dot[1] || nlen >= sizeof out->ns || strlen(dot + 1) >= sizeof out->table ||
	    strstr(identifier, ".."))
		return tether_error_set(TETHER_EUSAGE, "iceberg identifier \"%s\" is not NAMESPACE.TABLE", identifier);
	memcpy(out->ns, identifier, nlen);
	out->ns[nlen] = '\0';
	strcpy(out->table, dot + 1);
	return 0;
}

int ib_read_locator(const json_t *locator, struct ib_loc *out)
{
	memset(out, 0, sizeof *out);
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "iceberg locator is not a table");
	int rc;
	if ((rc = optional_string(locator, "identifier", &out->identifier)) ||
	    (rc = optional_string(locator, "branch", &out->branch)) || (rc = optional_string(locator, "at", &out->at)) ||
	    (rc = optional_string(locator, "catalog_name", &out->catalog_name)) ||
	    (rc = optional_string(locator, "working_branch", &out->working_branch)))
		return rc;
	if (!out->identifier && (rc = optional_string(locator, "table", &out->identifier)))
		return rc;
	if (!out->identifier)
		return tether_error_set(TETHER_ECONFIG, "iceberg locator has no \"identifier\"");
	out->catalog = json_object_get(locator, "catalog");
	if ((rc = ib_catalog_check_committed(out->catalog, NULL)))
		return rc;
	if (!out->branch)
		out->branch = "main";
	if (!out->catalog_name)
		out->catalog_name = "default";
	return split_identifier(out->identifier, out);
}

static int check_options(const json_t *options)
{
	static const char *const known[] = {"branch", "at", "catalog_name", NULL};
	return tt_check_add_options(options, "iceberg", known, NULL);
}

static int ib_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                           json_t **locator)
{
	(void)cwd;
	*locator = NULL;
	int rc = check_options(options);
	if (rc)
		return rc;
	if (!uri || !*uri)
		return tether_error_set(TETHER_EUSAGE, "kind iceberg needs the table's identifier: "
		                                       "tether add KEY NAMESPACE.TABLE --kind iceberg");
	const char *branch = json_string_value(json_object_get(options, "branch"));
	const char *at = json_string_value(json_object_get(options, "at"));
	const char *cat = json_string_value(json_object_get(options, "catalog_name"));
	json_t *loc = json_pack("{s:s, s:s, s:s}", "identifier", uri, "branch", branch ? branch : "main", "catalog_name",
	                        cat ? cat : "default");
	if (!loc)
		return ib_fail_oom();
	if (at)
		json_object_set_new(loc, "at", json_string(at));
	/* The table must be there, with the branch, and --at must name a ref
	 * or snapshot of it. */
	struct ib_table t;
	if ((rc = ib_table_open(ctx, loc, &t)) == 0) {
		int64_t id;
		int found = 0;
		rc = ib_md_ref(t.md, t.loc.branch, &id, &found, NULL);
		if (rc == 0 && !found)
			rc = tether_error_set(TETHER_EUSAGE, "%s has no branch \"%s\"", t.what, t.loc.branch);
		if (rc == 0 && at && (rc = ib_md_resolve(t.md, t.what, at, &id)) == TETHER_ENOTFOUND)
			rc = tether_error_set(TETHER_EUSAGE, "--at: %s", tether_error_last());
		ib_table_close(&t);
	} else if (rc == TETHER_ENOTFOUND) {
		rc = tether_error_set(TETHER_EUSAGE, "%s", tether_error_last());
	}
	if (rc)
		json_decref(loc);
	else
		*locator = loc;
	return rc;
}

static int ib_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	struct ib_loc loc;
	int rc = ib_read_locator(locator, &loc);
	if (rc)
		return rc;
	*identity = json_pack("{s:s, s:s, s:s}", "identifier", loc.identifier, "branch", loc.branch, "catalog_name",
	                      loc.catalog_name);
	return *identity ? 0 : ib_fail_oom();
}

/* ------------------------------------------------------------------ */
/* Fingerprint and handles                                             */
/* ------------------------------------------------------------------ */

/* The snapshot the locator's position names: a branch (working or base)
 * must exist; an `at` may be a ref or a snapshot id. */
int ib_position_id(struct ib_table *t, int64_t *id)
{
	const char *pos = ib_position(&t->loc);
	if (t->loc.at && !t->loc.working_branch)
		return ib_md_resolve(t->md, t->what, pos, id);
	int found = 0;
	int rc = ib_md_ref(t->md, pos, id, &found, NULL);
	if (rc == 0 && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\"", t->what, pos);
	return rc;
}

static int ib_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                          struct tether_fingerprint *out)
{
	(void)policy;
	memset(out, 0, sizeof *out);
	struct ib_table t;
	int64_t id;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	if ((rc = ib_position_id(&t, &id)) == 0 && !(out->state = ib_state_of(id)))
		rc = ib_fail_oom();
	ib_table_close(&t);
	return rc;
}

static int ib_open_handle(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                          const json_t *pin_ref, const json_t *working_ref, int read_only, json_t **handle)
{
	struct ib_table t;
	int64_t id = -1;
	const char *ref = NULL;
	*handle = NULL;
	int rc = ib_table_open(ctx, locator, &t);
	if (rc)
		return rc;
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	const char *wb = json_string_value(json_object_get(working_ref, "working_branch"));
	if (read_only && state) {
		/* The recorded snapshot, by its tag when there is one. */
		if ((rc = ib_state_id(state, t.what, &id)) == 0 && tag) {
			int64_t at;
			int found = 0;
			if ((rc = ib_md_ref(t.md, tag, &at, &found, NULL)) == 0 && (!found || at != id))
				rc = tether_error_set(TETHER_ENOTFOUND, "%s: tag %s is gone or moved", t.what, tag);
			ref = tag;
		} else if (rc == 0 && id != -1 && !ib_md_snapshot(t.md, id)) {
			rc = tether_error_set(TETHER_ENOTFOUND, "%s no longer holds snapshot %lld", t.what, (long long)id);
		}
	} else {
		ref = wb ? wb : ib_position(&t.loc);
		if (wb)
			t.loc.working_branch = wb;
		rc = ib_position_id(&t, &id);
		if (!wb && t.loc.at)
			read_only = 1; /* a detached position is never written */
	}
	if (rc == 0) {
		*handle = json_pack("{s:s, s:s, s:s, s:s, s:b, s:I, s:s?, s:s?}", "kind", "iceberg", "uri",
		                    t.loc.identifier, "catalog", t.loc.catalog_name, "identifier", t.loc.identifier,
		                    "read_only", read_only, "snapshot_id", (json_int_t)id, "ref", ref, "metadata_location",
		                    t.md_location);
		if (!*handle)
			rc = ib_fail_oom();
	}
	ib_table_close(&t);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */

static int ib_check_state(const json_t *state, const char **bad)
{
	const char *k;
	json_t *v;
	*bad = "snapshot_id";
	json_t *sid = json_object_get(state, "snapshot_id");
	if (!json_is_integer(sid) || json_integer_value(sid) < -1)
		return tether_error_set(TETHER_ECONFIG, "snapshot_id must be an Iceberg snapshot id (an integer, -1 for "
		                                        "none)%s", sid ? "" : ", and is missing");
	json_object_foreach((json_t *)state, k, v) {
		*bad = k;
		if (strcmp(k, "snapshot_id") != 0)
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of an iceberg state (snapshot_id)", k);
	}
	return 0;
}

static const char *const ib_volatile_keys[] = {NULL};
static const char *const ib_config_keys[] = {"catalog", NULL};

static const struct tether_add_option ib_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "branch", .value_name = "NAME", .help = "the table's branch to follow",
	 .default_value = "main", .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "catalog_name", .value_name = "NAME",
	 .help = "the catalog's name (iceberg_tables.catalog_name of a SQL catalog)", .default_value = "default",
	 .field = TETHER_ADD_LOCATOR},
	{0},
};

const struct tether_backend tt_backend_iceberg = {
	TETHER_BACKEND_INIT,
	.kind = "iceberg",
	/* Stable: the lifecycle suite runs on pyiceberg's SqlCatalog (SQLite,
	 * warehouse local and on S3 on SeaweedFS: iceberg-sql, iceberg-sql-s3)
	 * and on the Iceberg project's REST catalog server (local warehouse);
	 * Postgres, local and S3, in test_iceberg.py and test_iceberg_s3.py. */
	.maturity = "stable",
	.summary = "Apache Iceberg tables in a SQL (SQLite, Postgres) or REST catalog, warehouse local or s3://: "
	           "tags pin, branches fork",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |
	        TETHER_CAP_RETENTION_BOUND | TETHER_CAP_CONDITIONAL_REF | TETHER_CAP_DIFF | TETHER_CAP_HISTORY |
	        TETHER_CAP_PROMOTE,
	.volatile_keys = ib_volatile_keys,
	.make_locator = ib_make_locator,
	.identity = ib_identity,
	.open_store = ib_open_store,
	.close_store = ib_close_store,
	.fingerprint = ib_fingerprint,
	.pin = ib_pin,
	.unpin = ib_unpin,
	.list_pins = ib_list_pins,
	.verify = ib_verify,
	.verify_deep = ib_verify_deep,
	.fork = ib_fork,
	.delete_working_ref = ib_delete_working_ref,
	.open = ib_open_handle,
	.diff = ib_diff,
	.history = ib_history,
	.promote = ib_promote,
	.list_working_refs = ib_list_working_refs,
	.check_state = ib_check_state,
	.secret_keys = ib_secret_keys,
	.add_options = ib_add_options,
	.config_keys = ib_config_keys,
	.descends = ib_descends,
	.delete_working_ref_if = ib_delete_working_ref_if,
	.move_base = ib_move_base,
};

TETHER_API tether_backend_module_t tether_backend_module = {&tt_backend_iceberg, NULL};
