/* Requirements checked and updates applied to Iceberg table metadata, as
 * a catalog that stores metadata files (the SQL catalog) must do itself:
 * the REST protocol's TableRequirement and TableUpdate objects, with the
 * table-metadata rules of the spec and of pyiceberg's update_table_metadata:
 *
 *  - set-snapshot-ref: the snapshot must exist; setting a ref to what it
 *    is already changes nothing; setting main also moves
 *    current-snapshot-id and appends {snapshot-id, timestamp-ms} to
 *    snapshot-log;
 *  - remove-snapshot-ref: an absent ref changes nothing; main is refused
 *    (it would leave the table with no current snapshot);
 *  - when anything changed: last-updated-ms moves to now (never back), and
 *    the metadata file being replaced is appended to metadata-log,
 *    trimmed to write.metadata.previous-versions-max (default 100);
 *  - sequence numbers: a ref update adds no snapshot, so
 *    last-sequence-number (and v3's next-row-id) carry over unchanged;
 *    updates that would assign them (add-snapshot, ...) are refused.
 *
 * Every field read is carried over: the new metadata is a deep copy of the
 * old with only those members changed. A table of an unknown format
 * version, or holding a value this copy could not write back byte-exact
 * in meaning (a floating-point number: jansson re-prints it in its own
 * spelling), is refused before anything is written. */
#include "backends/iceberg/ib.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* Requirements                                                        */
/* ------------------------------------------------------------------ */

/* The snapshot a ref names in the catalog's sense: refs, or for main a
 * current-snapshot-id other than "none" (the main ref Java synthesises). */
static int ref_now(const json_t *md, const char *ref, int64_t *id)
{
	json_t *r = json_object_get(json_object_get(md, "refs"), ref);
	if (r) {
		*id = ib_json_id(json_object_get(r, "snapshot-id"));
		return 1;
	}
	*id = ib_json_id(json_object_get(md, "current-snapshot-id"));
	return strcmp(ref, "main") == 0 && *id != -1;
}

static int check_ref(const json_t *md, const json_t *req, const char *what)
{
	const char *ref = json_string_value(json_object_get(req, "ref"));
	json_t *want = json_object_get(req, "snapshot-id");
	if (!ref || (want && !json_is_null(want) && !json_is_integer(want)))
		return tether_error_set(TETHER_EUSAGE, "%s: assert-ref-snapshot-id needs \"ref\" and \"snapshot-id\"", what);
	int64_t have;
	int exists = ref_now(md, ref, &have);
	if (!want || json_is_null(want)) {
		if (exists)
			return tether_error_set(TETHER_EREFUSED, "%s: ref %s was created concurrently (now at %lld)", what, ref,
			                        (long long)have);
		return 0;
	}
	if (!exists)
		return tether_error_set(TETHER_EREFUSED, "%s: ref %s is gone (expected at %lld)", what, ref,
		                        (long long)json_integer_value(want));
	if (have != json_integer_value(want))
		return tether_error_set(TETHER_EREFUSED, "%s: ref %s moved: expected %lld, found %lld", what, ref,
		                        (long long)json_integer_value(want), (long long)have);
	return 0;
}

/* The requirements that compare one integer of the metadata. */
static const struct {
	const char *type, *req_key, *md_key;
} int_asserts[] = {
	{"assert-current-schema-id", "current-schema-id", "current-schema-id"},
	{"assert-last-assigned-field-id", "last-assigned-field-id", "last-column-id"},
	{"assert-last-assigned-partition-id", "last-assigned-partition-id", "last-partition-id"},
	{"assert-default-spec-id", "default-spec-id", "default-spec-id"},
	{"assert-default-sort-order-id", "default-sort-order-id", "default-sort-order-id"},
};

int ib_requirements_check(const json_t *md, const json_t *requirements, const char *what)
{
	size_t i;
	json_t *req;
	if (requirements && !json_is_array(requirements))
		return tether_error_set(TETHER_EUSAGE, "%s: requirements must be a list", what);
	json_array_foreach(requirements, i, req) {
		const char *type = json_string_value(json_object_get(req, "type"));
		if (!type)
			return tether_error_set(TETHER_EUSAGE, "%s: a requirement has no \"type\"", what);
		if (strcmp(type, "assert-table-uuid") == 0) {
			const char *want = json_string_value(json_object_get(req, "uuid"));
			const char *have = json_string_value(json_object_get(md, "table-uuid"));
			if (!want || !have || strcasecmp(want, have) != 0)
				return tether_error_set(TETHER_EREFUSED, "%s: table UUID is %s, not %s: the table was replaced",
				                        what, have ? have : "(none)", want ? want : "(none)");
			continue;
		}
		if (strcmp(type, "assert-ref-snapshot-id") == 0) {
			int rc = check_ref(md, req, what);
			if (rc)
				return rc;
			continue;
		}
		if (strcmp(type, "assert-create") == 0)
			return tether_error_set(TETHER_EREFUSED, "%s: the table exists already", what);
		size_t k = 0, n = sizeof int_asserts / sizeof int_asserts[0];
		while (k < n && strcmp(int_asserts[k].type, type) != 0)
			k++;
		if (k == n)
			return tether_error_set(TETHER_EUSAGE, "%s: unknown requirement \"%s\"", what, type);
		json_t *want = json_object_get(req, int_asserts[k].req_key);
		json_t *have = json_object_get(md, int_asserts[k].md_key);
		if (!json_is_integer(want) || !json_is_integer(have) || json_integer_value(want) != json_integer_value(have))
			return tether_error_set(TETHER_EREFUSED, "%s: requirement %s failed", what, type);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Updates                                                             */
/* ------------------------------------------------------------------ */

/* A real anywhere in the metadata: jansson keeps it as a double and
 * prints it back in its own spelling, which may not be what the writer
 * wrote. */
static const char *find_real(const json_t *v)
{
	if (json_is_real(v))
		return "a floating-point number";
	const char *k, *bad;
	json_t *e;
	size_t i;
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, e)
			if ((bad = find_real(e)))
				return bad;
	if (json_is_array(v))
		json_array_foreach(v, i, e)
			if ((bad = find_real(e)))
				return bad;
	return NULL;
}

static const char *const ref_retention_keys[] = {"min-snapshots-to-keep", "max-snapshot-age-ms", "max-ref-age-ms",
                                                 NULL};

static int set_ref(json_t *md, const json_t *u, int64_t now_ms, int *changed, const char *what)
{
	const char *name = json_string_value(json_object_get(u, "ref-name"));
	const char *type = json_string_value(json_object_get(u, "type"));
	json_t *sid = json_object_get(u, "snapshot-id");
	if (!name || !*name || !json_is_integer(sid) || !type || (strcmp(type, "tag") != 0 && strcmp(type, "branch") != 0))
		return tether_error_set(TETHER_EUSAGE, "%s: set-snapshot-ref needs \"ref-name\", an integer \"snapshot-id\" "
		                                       "and \"type\" tag or branch", what);
	int64_t id = json_integer_value(sid);
	if (strcmp(name, "main") == 0 && strcmp(type, "branch") != 0)
		return tether_error_set(TETHER_EUSAGE, "%s: main must stay a branch", what);
	json_t *ref = json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)id, "type", type);
	if (!ref)
		return ib_fail_oom();
	for (size_t i = 0; ref_retention_keys[i]; i++) {
		json_t *v = json_object_get(u, ref_retention_keys[i]);
		if (v && !json_is_null(v))
			json_object_set(ref, ref_retention_keys[i], v);
	}
	json_t *refs = json_object_get(md, "refs");
	if (json_equal(json_object_get(refs, name), ref)) {
		json_decref(ref);
		return 0;
	}
	if (!ib_md_snapshot(md, id)) {
		json_decref(ref);
		return tether_error_set(TETHER_EREFUSED, "%s: cannot set %s to unknown snapshot %lld", what, name,
		                        (long long)id);
	}
	json_object_set_new(refs, name, ref);
	if (strcmp(name, "main") == 0) {
		json_object_set_new(md, "current-snapshot-id", json_integer(id));
		json_object_set_new(md, "last-updated-ms", json_integer(now_ms));
		json_t *log = json_object_get(md, "snapshot-log");
		if (!json_is_array(log)) {
			log = json_array();
			json_object_set_new(md, "snapshot-log", log);
		}
		json_array_append_new(log, json_pack("{s:I, s:I}", "snapshot-id", (json_int_t)id, "timestamp-ms",
		                                     (json_int_t)now_ms));
	}
	*changed = 1;
	return 0;
}

static int remove_ref(json_t *md, const json_t *u, int *changed, const char *what)
{
	const char *name = json_string_value(json_object_get(u, "ref-name"));
	if (!name)
		return tether_error_set(TETHER_EUSAGE, "%s: remove-snapshot-ref needs \"ref-name\"", what);
	if (strcmp(name, "main") == 0)
		return tether_error_set(TETHER_EREFUSED, "%s: will not remove the main branch", what);
	json_t *refs = json_object_get(md, "refs");
	if (!json_object_get(refs, name))
		return 0;
	json_object_del(refs, name);
	*changed = 1;
	return 0;
}

/* pyiceberg's _update_table_metadata_log: keep the newest max-1 entries,
 * then add the file being replaced. */
static int log_metadata_file(json_t *md, const char *md_location, json_t *old_updated)
{
	long long max = 100;
	const char *prop = json_string_value(
	        json_object_get(json_object_get(md, "properties"), "write.metadata.previous-versions-max"));
	if (prop) {
		char *end;
		long long v = strtoll(prop, &end, 10);
		if (*prop && !*end)
			max = v;
	}
	if (max < 1)
		max = 1;
	json_t *log = json_object_get(md, "metadata-log");
	if (!json_is_array(log)) {
		log = json_array();
		json_object_set_new(md, "metadata-log", log);
	}
	while (json_array_size(log) >= (size_t)max)
		json_array_remove(log, 0);
	json_t *e = json_pack("{s:s, s:O}", "metadata-file", md_location, "timestamp-ms", old_updated);
	return e && json_array_append_new(log, e) == 0 ? 0 : ib_fail_oom();
}

int ib_updates_apply(const json_t *md, const char *md_location, const json_t *updates, int64_t now_ms,
                     const char *what, json_t **out, int *changed)
{
	*out = NULL;
	*changed = 0;
	int rc = ib_md_check_version(md, what, NULL);
	if (rc)
		return rc;
	const char *real = find_real(md);
	if (real)
		return tether_error_set(TETHER_EREFUSED, "%s: the table metadata holds %s, which tether cannot carry "
		                                         "over unchanged; refusing to rewrite it", what, real);
	json_t *old_updated = json_object_get(md, "last-updated-ms");
	if (!json_is_integer(old_updated) || !json_is_string(json_object_get(md, "table-uuid")))
		return tether_error_set(TETHER_ECONFIG, "%s: the table metadata lacks last-updated-ms or table-uuid", what);
	/* Never back in time: readers order metadata-log by it. */
	if (now_ms < json_integer_value(old_updated))
		now_ms = json_integer_value(old_updated);
	json_t *next = json_deep_copy(md);
	if (!next)
		return ib_fail_oom();
	json_t *refs = json_object_get(next, "refs");
	if (!json_is_object(refs)) {
		refs = json_object();
		json_object_set_new(next, "refs", refs);
	}
	int64_t cur = ib_json_id(json_object_get(next, "current-snapshot-id"));
	if (cur != -1 && !json_object_get(refs, "main"))
		json_object_set_new(refs, "main", json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)cur, "type", "branch"));
	size_t i;
	json_t *u;
	if (!json_is_array(updates))
		rc = tether_error_set(TETHER_EUSAGE, "%s: updates must be a list", what);
	json_array_foreach(updates, i, u) {
		const char *action = json_string_value(json_object_get(u, "action"));
		if (rc)
			break;
		if (action && strcmp(action, "set-snapshot-ref") == 0)
			rc = set_ref(next, u, now_ms, changed, what);
		else if (action && strcmp(action, "remove-snapshot-ref") == 0)
			rc = remove_ref(next, u, changed, what);
		else
			rc = tether_error_set(TETHER_EUSAGE, "%s: update \"%s\" is not one tether applies to a SQL catalog's "
			                                     "table (set-snapshot-ref, remove-snapshot-ref)",
			                      what, action ? action : "(no action)");
	}
	if (rc == 0 && *changed) {
		if (md_location)
			rc = log_metadata_file(next, md_location, old_updated);
		if (json_integer_value(json_object_get(next, "last-updated-ms")) == json_integer_value(old_updated))
			json_object_set_new(next, "last-updated-ms", json_integer(now_ms));
	}
	if (rc) {
		json_decref(next);
		*changed = 0;
		return rc;
	}
	*out = next;
	return 0;
}
