/* The SQL catalog (pyiceberg SqlCatalog, Java JdbcCatalog): a row per
 * table in iceberg_tables naming its current metadata file. A commit
 * checks the requirements against the metadata it loaded, applies the
 * updates (metadata_apply.c), writes the next metadata file
 * NNNNN-<uuid>.metadata.json beside the table's others (NNNNN the
 * current file's number plus one, as pyiceberg and Java name them), then
 * moves the row with UPDATE ... WHERE metadata_location = <the one
 * loaded>. No row changed means a peer committed in between: refused,
 * and the file just written is deleted again.
 *
 * Files are read and written through tether's byte stores, so a warehouse
 * on s3:// works as one on a local path; their options come from the
 * [uris."<prefix>"] tables of .tether/secrets.toml. */
#include "backends/iceberg/ib.h"
#include "backends/iceberg/sql_db.h"

#include "util/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct sql_catalog {
	struct ib_catalog base;
	/* What the files' store options need of the call that opened the
	 * catalog (secrets.toml's [uris]), kept as a copy: a session's catalog
	 * outlives that call. */
	struct tether_bctx ctx;
	json_t *uri_secrets;
	struct ib_db *db;
	char *display;
};

static int read_metadata(struct sql_catalog *c, const char *location, const char *what, json_t **md)
{
	char *dir = NULL;
	const char *name = NULL;
	tether_store *store = NULL;
	uint8_t *data = NULL;
	size_t len = 0;
	int rc = ib_split_location(location, &dir, &name);
	if (rc == 0 && (strstr(name, ".gz.") || (strlen(name) > 3 && strcmp(name + strlen(name) - 3, ".gz") == 0)))
		rc = tether_error_set(TETHER_EREFUSED, "%s: %s is gzip-compressed table metadata, which tether does not "
		                                       "read", what, location);
	if (rc == 0)
		rc = ib_open_dir(&c->ctx, dir, &store);
	if (rc == 0)
		rc = tether_store_get(store, name, &data, &len, NULL);
	if (rc == TETHER_ENOTFOUND)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: its metadata file %s is missing", what, location);
	else if (rc && rc != TETHER_ECANCELLED)
		/* The store names the file and what the server said; say whose. */
		rc = tether_error_set(rc, "%s: %s", what, tether_error_last());
	json_error_t err;
	if (rc == 0 && !(*md = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, &err)))
		rc = tether_error_set(TETHER_ECONFIG, "%s: %s:%d:%d: %s", what, location, err.line, err.column, err.text);
	if (rc == 0 && (rc = ib_md_check_version(*md, what, NULL))) {
		json_decref(*md);
		*md = NULL;
	}
	free(data);
	tether_store_close(store);
	free(dir);
	return rc;
}

static int sql_load(struct ib_catalog *base, const char *ns, const char *table, json_t **md, char **location)
{
	struct sql_catalog *c = (struct sql_catalog *)base;
	char what[800];
	snprintf(what, sizeof what, "iceberg catalog '%s' (%s) table %s.%s", base->name, c->display, ns, table);
	int found = 0;
	char *loc = NULL;
	*md = NULL;
	if (location)
		*location = NULL;
	int rc = ib_db_location(c->db, base->name, ns, table, &loc, &found);
	if (rc == TETHER_ENOTFOUND)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: no iceberg_tables table (%s)", what, tether_error_last());
	if (rc == 0 && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s does not exist", what);
	if (rc == 0)
		rc = read_metadata(c, loc, what, md);
	if (rc == 0 && location)
		*location = loc;
	else
		free(loc);
	return rc;
}

/* The leading number of a metadata file name ("00003-<uuid>..." is 3),
 * or -1 (pyiceberg's _parse_metadata_version), so the next is 0. */
static long parse_version(const char *name)
{
	char *end;
	long v = strtol(name, &end, 10);
	return end != name && *end == '-' && v >= 0 ? v : -1;
}

static int new_name(const char *old_name, char **out)
{
	uint8_t b[16];
	if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
		return tether_error_set(TETHER_EIO, "getrandom failed");
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* variant 10 */
	*out = tt_strdupf("%05ld-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x.metadata.json",
	                  parse_version(old_name) + 1, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
	                  b[11], b[12], b[13], b[14], b[15]);
	return *out ? 0 : ib_fail_oom();
}

/* The length of a location without its trailing slashes (one kept when
 * it is all slashes). */
static size_t trimmed_len(const char *loc)
{
	size_t n = strlen(loc);
	while (n > 1 && loc[n - 1] == '/')
		n--;
	return n;
}

/* Where new metadata files go: write.metadata.path, else
 * <location>/metadata (pyiceberg's new_table_metadata_file_location).
 * Either without trailing slashes, which some writers leave on a
 * location: "t//metadata" is another key on S3, and one pyarrow refuses. */
static char *metadata_dir(const json_t *md)
{
	const char *p = json_string_value(json_object_get(json_object_get(md, "properties"), "write.metadata.path"));
	const char *loc = json_string_value(json_object_get(md, "location"));
	if (p)
		return strndup(p, trimmed_len(p));
	return loc ? tt_strdupf("%.*s/metadata", (int)trimmed_len(loc), loc) : NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One attempt. *lost: the row had moved on from the metadata this
 * attempt read (a peer committed in between), and nothing was changed. */
static int commit_once(struct ib_catalog *base, const char *ns, const char *table, json_t *requirements,
                       json_t *updates, json_t **metadata, int *lost)
{
	struct sql_catalog *c = (struct sql_catalog *)base;
	char what[800];
	snprintf(what, sizeof what, "iceberg catalog '%s' (%s) table %s.%s", base->name, c->display, ns, table);
	json_t *md = NULL, *next = NULL;
	char *old = NULL, *dir = NULL, *name = NULL, *location = NULL, *text = NULL;
	const char *old_name = NULL;
	char *old_dir = NULL;
	tether_store *store = NULL;
	int changed = 0, swapped = 0, written = 0;
	if (metadata)
		*metadata = NULL;
	int rc = sql_load(base, ns, table, &md, &old);
	if (rc == 0)
		rc = ib_requirements_check(md, requirements, what);
	if (rc == 0)
		rc = ib_updates_apply(md, old, updates, now_ms(), what, &next, &changed);
	if (rc == 0 && !changed)
		goto done; /* nothing to write: the metadata as it is */
	if (rc == 0)
		rc = ib_split_location(old, &old_dir, &old_name);
	if (rc == 0 && !(dir = metadata_dir(next)))
		rc = tether_error_set(TETHER_ECONFIG, "%s: the table metadata has no location", what);
	if (rc == 0)
		rc = new_name(old_name, &name);
	if (rc == 0 && !(location = tt_strdupf("%s/%s", dir, name)))
		rc = ib_fail_oom();
	if (rc == 0 && !(text = json_dumps(next, JSON_COMPACT)))
		rc = ib_fail_oom();
	if (rc == 0) {
		rc = ib_open_dir(&c->ctx, dir, &store);
		if (rc == 0 && (rc = tether_store_put(store, name, text, strlen(text), TETHER_PUT_IF_ABSENT, NULL,
		                                      NULL)) == 0)
			written = 1;
		else if (rc && rc != TETHER_ECANCELLED)
			rc = tether_error_set(rc, "%s: writing its next metadata file: %s", what, tether_error_last());
	}
	if (rc == 0)
		rc = ib_db_swap(c->db, base->name, ns, table, old, location, &swapped);
	if (rc == 0 && !swapped) {
		*lost = 1;
		rc = tether_error_set(TETHER_EREFUSED, "%s: refused, the head moved: another writer committed since %s "
		                                       "was read; nothing was changed", what, old);
	}
	if (rc && written) {
		/* The file no catalog row names: an orphan otherwise. */
		char *saved = strdup(tether_error_last());
		int code = rc;
		tether_store_delete(store, name);
		rc = tether_error_set(code, "%s", saved ? saved : "commit failed");
		free(saved);
	}
done:
	if (rc == 0 && metadata) {
		*metadata = changed ? next : md;
		json_incref(*metadata);
	}
	tether_store_close(store);
	json_decref(md);
	json_decref(next);
	free(old);
	free(old_dir);
	free(dir);
	free(name);
	free(location);
	free(text);
	return rc;
}

/* A REST catalog checks the requirements against the table as it is when
 * the commit arrives, so a peer's commit to another ref does not refuse
 * ours. The same here: a lost compare-and-swap reloads and tries again
 * (requirements checked afresh, so a peer that moved *our* ref refuses
 * it), a few times, then gives up with the refusal. */
static int sql_commit(struct ib_catalog *base, const char *ns, const char *table, json_t *requirements,
                      json_t *updates, json_t **metadata)
{
	int rc = 0;
	for (int attempt = 0; attempt < 5; attempt++) {
		int lost = 0;
		rc = commit_once(base, ns, table, requirements, updates, metadata, &lost);
		if (!lost)
			break;
	}
	return rc;
}

static void sql_close(struct ib_catalog *base)
{
	struct sql_catalog *c = (struct sql_catalog *)base;
	ib_db_close(c->db);
	json_decref(c->uri_secrets);
	free(c->display);
	free(base->name);
	free(c);
}

static const struct ib_catalog_ops sql_ops = {
	.type = "sql",
	.load = sql_load,
	.commit = sql_commit,
	.close = sql_close,
};

int ib_catalog_sql_open(const struct tether_bctx *ctx, const char *name, const json_t *props, struct ib_catalog **out)
{
	*out = NULL;
	const char *uri = json_string_value(json_object_get(props, "uri"));
	const char *password = json_string_value(json_object_get(props, "password"));
	if (!uri)
		return tether_error_set(TETHER_ECONFIG, "iceberg catalog '%s': no \"uri\" (set it in .tether/secrets.toml)",
		                        name);
	struct sql_catalog *c = calloc(1, sizeof *c);
	if (!c || !(c->base.name = strdup(name))) {
		free(c);
		return ib_fail_oom();
	}
	c->base.ops = &sql_ops;
	c->ctx = (struct tether_bctx){TETHER_BCTX_INIT};
	if (ctx && ctx->uri_secrets && !(c->uri_secrets = json_deep_copy(ctx->uri_secrets))) {
		sql_close(&c->base);
		return ib_fail_oom();
	}
	c->ctx.uri_secrets = c->uri_secrets;
	int rc = ib_db_open(uri, password, &c->db, &c->display);
	if (rc) {
		sql_close(&c->base);
		return rc;
	}
	*out = &c->base;
	return 0;
}
