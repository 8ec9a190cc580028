/* Reading Iceberg table metadata (spec "Table Metadata Fields",
 * "Snapshots", "Snapshot References"): refs, snapshots, parents, summary
 * counters. "No current snapshot" is -1, JSON null or a missing field
 * alike, and a table whose refs lack "main" has it at current-snapshot-id
 * (spec Appendix F; what Java and pyiceberg synthesise). */
#include "backends/iceberg/ib.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ib_fail_oom(void)
{
	return tether_error_set(TETHER_ERROR, "out of memory");
}

int64_t ib_json_id(const json_t *v)
{
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

int ib_md_check_version(const json_t *md, const char *what, int *version)
{
	json_t *v = json_object_get(md, "format-version");
	if (!json_is_object(md))
		return tether_error_set(TETHER_ECONFIG, "%s: the table metadata is not a JSON object", what);
	if (!json_is_integer(v))
		return tether_error_set(TETHER_ECONFIG, "%s: the table metadata has no integer \"format-version\"", what);
	json_int_t n = json_integer_value(v);
	if (n < 1 || n > 3)
		return tether_error_set(TETHER_EREFUSED,
		                        "%s: Iceberg format version %lld is not supported (this tether reads 1, 2 and 3)",
		                        what, (long long)n);
	if (version)
		*version = (int)n;
	return 0;
}

int ib_md_ref(const json_t *md, const char *name, int64_t *id, int *found, int *is_tag)
{
	json_t *ref = json_object_get(json_object_get(md, "refs"), name);
	*found = 0;
	*id = -1;
	if (is_tag)
		*is_tag = 0;
	if (ref) {
		json_t *sid = json_object_get(ref, "snapshot-id");
		if (!json_is_integer(sid))
			return tether_error_set(TETHER_ECONFIG, "ref \"%s\" of the table metadata has no integer snapshot-id",
			                        name);
		*id = ib_json_id(sid);
		*found = 1;
		if (is_tag)
			*is_tag = json_is_string(json_object_get(ref, "type")) &&
			          strcmp(json_string_value(json_object_get(ref, "type")), "tag") == 0;
		return 0;
	}
	if (strcmp(name, "main") == 0) {
		/* The main branch always exists: an empty table is at -1. */
		*id = ib_json_id(json_object_get(md, "current-snapshot-id"));
		*found = 1;
	}
	return 0;
}

const json_t *ib_md_snapshot(const json_t *md, int64_t id)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(md, "snapshots"), i, s)
		if (ib_json_id(json_object_get(s, "snapshot-id")) == id)
			return s;
	return NULL;
}

int64_t ib_md_parent(const json_t *snap)
{
	return ib_json_id(json_object_get(snap, "parent-snapshot-id"));
}

int ib_md_is_ancestor(const json_t *md, int64_t ancestor, int64_t of)
{
	/* Bounded by the snapshot count: a metadata file with a parent cycle
	 * must not loop forever. */
	size_t left = json_array_size(json_object_get(md, "snapshots"));
	for (int64_t cur = of; cur != -1;) {
		if (cur == ancestor)
			return 1;
		if (left-- == 0)
			return 0;
		const json_t *s = ib_md_snapshot(md, cur);
		if (!s)
			return 0;
		cur = ib_md_parent(s);
	}
	return 0;
}

int64_t ib_md_summary_count(const json_t *snap, const char *key)
{
	const char *v = json_string_value(json_object_get(json_object_get(snap, "summary"), key));
	if (!v || !*v)
		return -1;
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	return errno || *end || n < 0 ? -1 : (int64_t)n;
}

const char *ib_position(const struct ib_loc *loc)
{
	return loc->working_branch ? loc->working_branch : loc->at ? loc->at : loc->branch;
}

static int parse_id(const char *s, int64_t *id)
{
	if (!s || !*s || (s[0] == '-' && strcmp(s, "-1") != 0))
		return -1;
	char *end;
	errno = 0;
	long long n = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*id = n;
	return 0;
}

int ib_md_resolve(const json_t *md, const char *what, const char *pos, int64_t *id)
{
	int found = 0;
	int rc = ib_md_ref(md, pos, id, &found, NULL);
	if (rc || found)
		return rc;
	if (parse_id(pos, id) == 0 && (*id == -1 || ib_md_snapshot(md, *id)))
		return 0;
	return tether_error_set(TETHER_ENOTFOUND, "%s has no ref or snapshot \"%s\"", what, pos);
}

json_t *ib_state_of(int64_t id)
{
	return json_pack("{s:I}", "snapshot_id", (json_int_t)id);
}

int ib_state_id(const json_t *state, const char *what, int64_t *id)
{
	json_t *v = json_object_get(state, "snapshot_id");
	if (!json_is_integer(v) || json_integer_value(v) < -1)
		return tether_error_set(TETHER_ECONFIG, "%s: an iceberg state needs an integer \"snapshot_id\"", what);
	*id = json_integer_value(v);
	return 0;
}

json_t *ib_req_uuid(const json_t *md)
{
	return json_pack("{s:s, s:O}", "type", "assert-table-uuid", "uuid", json_object_get(md, "table-uuid"));
}

json_t *ib_req_ref(const char *ref, int64_t id, int absent)
{
	/* REST spells "the ref must not exist" as a null snapshot id. */
	return absent ? json_pack("{s:s, s:s, s:n}", "type", "assert-ref-snapshot-id", "ref", ref, "snapshot-id")
	              : json_pack("{s:s, s:s, s:I}", "type", "assert-ref-snapshot-id", "ref", ref, "snapshot-id",
	                          (json_int_t)id);
}

json_t *ib_upd_set_ref(const char *ref, int64_t id, const char *type)
{
	return json_pack("{s:s, s:s, s:I, s:s}", "action", "set-snapshot-ref", "ref-name", ref, "snapshot-id",
	                 (json_int_t)id, "type", type);
}

json_t *ib_upd_remove_ref(const char *ref)
{
	return json_pack("{s:s, s:s}", "action", "remove-snapshot-ref", "ref-name", ref);
}
