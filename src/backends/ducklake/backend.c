/* The `ducklake` backend (Addressable): a catalog's snapshot is the state,
 * {snapshot_id, snapshot_time_us}; the time tells a catalog recreated with
 * the same ids from the one recorded. DuckLake has no tags or branches, so
 * nothing is pinned; ducklake_expire_snapshots bounds how long a recorded
 * snapshot stays readable (RETENTION_BOUND). Built as the module
 * tether-backend-ducklake.so; see dl.h for the files. */
#include "backends/ducklake/dl.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An open catalog for one operation: the target, a connection in its read
 * transaction, and the version checked. */
struct dl_op {
	struct dl_target t;
	struct dl_conn *c;
};

static int op_open(const struct tether_bctx *ctx, const json_t *locator, struct dl_op *op)
{
	memset(op, 0, sizeof *op);
	int rc = dl_target_read(locator, &op->t);
	if (rc)
		return rc;
	rc = dl_conn_open(ctx, &op->t, &op->c);
	if (!rc)
		rc = dl_check_version(op->c);
	if (rc) {
		dl_conn_close(op->c);
		dl_target_free(&op->t);
		op->c = NULL;
	}
	return rc;
}

static void op_close(struct dl_op *op)
{
	dl_conn_close(op->c);
	dl_target_free(&op->t);
}

static int state_read(const json_t *state, struct dl_snapshot *s)
{
	json_t *id = json_object_get(state, "snapshot_id"), *t = json_object_get(state, "snapshot_time_us");
	if (!json_is_integer(id) || !json_is_integer(t))
		return tether_error_set(TETHER_ECONFIG, "ducklake state needs integer snapshot_id and snapshot_time_us");
	s->id = json_integer_value(id);
	s->time_us = json_integer_value(t);
	return 0;
}

static int check_state(const json_t *state, const char **key)
{
	*key = NULL;
	if (!json_is_object(state))
		return tether_error_set(TETHER_ECONFIG, "a ducklake state is a table");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)state, k, v) {
		if (strcmp(k, "snapshot_id") != 0 && strcmp(k, "snapshot_time_us") != 0) {
			*key = k;
			return tether_error_set(TETHER_ECONFIG, "unknown key '%s' in a ducklake state", k);
		}
	}
	static const char *const keys[] = {"snapshot_id", "snapshot_time_us"};
	for (size_t i = 0; i < 2; i++) {
		v = json_object_get(state, keys[i]);
		if (!v) {
			*key = NULL;
			return tether_error_set(TETHER_ECONFIG, "a ducklake state needs %s", keys[i]);
		}
		if (!json_is_integer(v) || (i == 0 && json_integer_value(v) < 0)) {
			*key = keys[i];
			return tether_error_set(TETHER_ECONFIG, "%s must be %s integer", keys[i],
			                        i == 0 ? "a non-negative" : "an");
		}
	}
	return 0;
}

/* The table the locator is scoped to, visible at snapshot s? */
static int check_table(struct dl_op *op, int64_t s)
{
	if (!op->t.table)
		return 0;
	struct dl_tables tables;
	int rc = dl_tables_at(op->c, s, &tables);
	if (rc)
		return rc;
	int found = 0;
	for (size_t i = 0; i < tables.n; i++)
		if (strcmp(tables.v[i].schema, op->t.schema) == 0 && strcmp(tables.v[i].name, op->t.table) == 0)
			found = 1;
	dl_tables_free(&tables);
	if (found)
		return 0;
	char *name = dl_table_name(op->t.schema, op->t.table);
	rc = tether_error_set(TETHER_ENOTFOUND, "ducklake catalog %s has no table %s at snapshot %" PRId64,
	                      op->t.metadata, name ? name : op->t.table, s);
	free(name);
	return rc;
}

static int dl_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                          struct tether_fingerprint *out)
{
	(void)policy;
	struct dl_op op;
	int rc = op_open(ctx, locator, &op);
	if (rc)
		return rc;
	struct dl_snapshot s;
	if (op.t.at >= 0) {
		int found = 0;
		rc = dl_snapshot_get(op.c, op.t.at, &s, &found);
		if (!rc && !found)
			rc = tether_error_set(TETHER_ENOTFOUND, "ducklake catalog %s has no snapshot %" PRId64
			                                        " (expired, or never taken)", op.t.metadata, op.t.at);
	} else {
		rc = dl_latest(op.c, &s);
	}
	if (!rc)
		rc = check_table(&op, s.id);
	op_close(&op);
	if (rc)
		return rc;
	out->state = json_pack("{s:I, s:I}", "snapshot_id", (json_int_t)s.id, "snapshot_time_us", (json_int_t)s.time_us);
	out->listing = NULL;
	out->listing_len = 0;
	return out->state ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

static int dl_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                     const json_t *pin_ref, int *ok, char **detail)
{
	(void)pin_ref;
	*ok = 0;
	*detail = NULL;
	struct dl_snapshot want, have;
	int rc = state_read(state, &want);
	if (rc)
		return rc;
	struct dl_op op;
	if ((rc = op_open(ctx, locator, &op)) != 0)
		return rc;
	int found = 0;
	rc = dl_snapshot_get(op.c, want.id, &have, &found);
	op_close(&op);
	if (rc)
		return rc;
	if (!found)
		*detail = tt_strdupf("snapshot %" PRId64 " is no longer in the catalog (expired by "
		                     "ducklake_expire_snapshots, or the catalog was recreated)",
		                     want.id);
	else if (have.time_us != want.time_us)
		*detail = tt_strdupf("snapshot %" PRId64 " of the catalog was taken at %" PRId64 " us, not at the recorded "
		                     "%" PRId64 " us: the catalog was recreated",
		                     want.id, have.time_us, want.time_us);
	else
		*ok = 1;
	if (!*ok && !*detail)
		return tether_error_set(TETHER_ERROR, "out of memory");
	return 0;
}

static int dl_history_fn(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	struct dl_op op;
	int rc = op_open(ctx, locator, &op);
	if (rc)
		return rc;
	rc = dl_history(op.c, op.t.at, max_count, entries);
	op_close(&op);
	return rc;
}

static int dl_diff_fn(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
                      const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
                      json_t **diff)
{
	(void)listing_a, (void)len_a, (void)listing_b, (void)len_b;
	struct dl_op op;
	int rc = op_open(ctx, locator, &op);
	if (rc)
		return rc;
	rc = dl_diff_states(op.c, a, b, max_entries, diff);
	op_close(&op);
	return rc;
}

/* The attach alias: the object's key as an identifier ("lake" without one). */
static char *alias_of(const char *key)
{
	char *a = malloc((key ? strlen(key) : 0) + 6);
	if (!a)
		return NULL;
	size_t n = 0;
	if (!key || !*key || isdigit((unsigned char)*key))
		n = (size_t)sprintf(a, "lake%s", key && *key ? "_" : "");
	for (const char *p = key ? key : ""; *p; p++)
		a[n++] = isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '_';
	a[n] = '\0';
	return a;
}

static int dl_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                   const json_t *working_ref, int read_only, json_t **handle)
{
	(void)pin_ref, (void)working_ref, (void)read_only;
	struct dl_target t;
	int rc = dl_target_read(locator, &t);
	if (rc)
		return rc;
	struct dl_snapshot s = {-1, 0};
	if (state && (rc = state_read(state, &s)) != 0) {
		dl_target_free(&t);
		return rc;
	}
	char *alias = alias_of(ctx ? ctx->key : NULL);
	char *meta = dl_quote(t.metadata, '\'');
	char *dp = t.data_path ? dl_quote(t.data_path, '\'') : NULL;
	char snap[48] = "";
	if (s.id >= 0)
		snprintf(snap, sizeof snap, "SNAPSHOT_VERSION %" PRId64 ", ", s.id);
	char *attach = alias && meta && (dp || !t.data_path)
	                       ? tt_strdupf("ATTACH %s AS %s (%s%s%s%sREAD_ONLY)", meta, alias, dp ? "DATA_PATH " : "",
	                                    dp ? dp : "", dp ? ", " : "", snap)
	                       : NULL;
	char *table = t.table ? dl_table_name(t.schema, t.table) : NULL;
	char *table_ref = table ? tt_strdupf("%s.%s", alias, table) : NULL;
	*handle = attach ? json_pack("{s:s, s:s, s:b, s:s, s:s, s:s}", "kind", "ducklake", "uri", t.metadata, "read_only",
	                             1, "metadata", t.metadata, "alias", alias, "attach_sql", attach)
	                 : NULL;
	if (*handle && s.id >= 0)
		json_object_set_new(*handle, "snapshot_id", json_integer(s.id));
	if (*handle && t.data_path)
		json_object_set_new(*handle, "data_path", json_string(t.data_path));
	if (*handle && table) {
		json_object_set_new(*handle, "table", json_string(table));
		json_object_set_new(*handle, "table_ref", json_string(table_ref ? table_ref : ""));
	}
	free(alias);
	free(meta);
	free(dp);
	free(attach);
	free(table);
	free(table_ref);
	dl_target_free(&t);
	return *handle ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

/* A catalog on a server is a round trip away, like an object store. */
static int dl_effective_capabilities(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                                     unsigned *caps)
{
	(void)ctx, (void)policy;
	struct dl_target t;
	int rc = dl_target_read(locator, &t);
	if (rc)
		return rc;
	if (t.type == DL_POSTGRES || t.type == DL_MYSQL)
		*caps |= TETHER_CAP_REMOTE_FINGERPRINT;
	dl_target_free(&t);
	return 0;
}

static const char *const dl_secret_keys[] = {"server", "user", "password", "init_sql", NULL};
/* init_sql is declared only to be refused with a pointed message
 * (secrets.c): it runs code, and tether.toml is committed. */
static const char *const dl_config_keys[] = {"init_sql", NULL};

static const struct tether_add_option dl_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "metadata", .value_name = "CATALOG",
	 .help = "the catalog: ducklake:sqlite:FILE, ducklake:postgres:dbname=..., ducklake:mysql:database=..., or a "
	         "DuckDB file (instead of the URI)",
	 .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "data_path", .value_name = "PATH",
	 .help = "where the catalog's data files are (a local path is stored absolute)", .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "table", .value_name = "SCHEMA.TABLE",
	 .help = "the table the handle is scoped to (snapshots are catalog-wide)", .field = TETHER_ADD_LOCATOR},
	{0},
};

const struct tether_backend tt_backend_ducklake = {
	TETHER_BACKEND_INIT,
	.kind = "ducklake",
	.maturity = "experimental",
	.summary = "DuckLake catalogs (SQLite, Postgres, MySQL, DuckDB file): snapshots addressed, not pinned; "
	           "tested with DuckDB 1.5.5's catalogs on SQLite, Postgres 15, MariaDB 10.11 and DuckDB files",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_CHEAP_FINGERPRINT |
	        TETHER_CAP_RETENTION_BOUND | TETHER_CAP_DIFF | TETHER_CAP_HISTORY,
	.make_locator = dl_make_locator,
	.effective_capabilities = dl_effective_capabilities,
	.identity = dl_identity,
	.fingerprint = dl_fingerprint,
	.verify = dl_verify,
	.open = dl_open,
	.diff = dl_diff_fn,
	.history = dl_history_fn,
	.check_state = check_state,
	.secret_keys = dl_secret_keys,
	.add_options = dl_add_options,
	.config_keys = dl_config_keys,
};

TETHER_API tether_backend_module_t tether_backend_module = {&tt_backend_ducklake, NULL};
