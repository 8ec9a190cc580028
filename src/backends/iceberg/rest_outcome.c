/* What a reloaded table says about a commit whose answer was lost: see
 * rest_outcome.h. */
#include "backends/iceberg/rest_outcome.h"

#include <string.h>

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

int ib_rest_ref_snapshot(const json_t *metadata, const char *ref, long long *id)
{
	json_t *refs = json_object_get(metadata, "refs");
	json_t *r = json_object_get(refs, ref);
	if (json_is_object(r) && json_is_integer(json_object_get(r, "snapshot-id"))) {
		*id = (long long)json_integer_value(json_object_get(r, "snapshot-id"));
		return 0;
	}
	/* v1 metadata may carry no refs: main is the current snapshot */
	json_t *cur = json_object_get(metadata, "current-snapshot-id");
	if (!refs && strcmp(ref, "main") == 0 && json_is_integer(cur) && json_integer_value(cur) >= 0) {
		*id = (long long)json_integer_value(cur);
		return 0;
	}
	return -1;
}

/* 1 holds, 0 does not, -1 cannot tell. */
static int requirement_holds(const json_t *metadata, const json_t *req)
{
	const char *type = str(req, "type");
	if (!type)
		return -1;
	if (strcmp(type, "assert-ref-snapshot-id") == 0) {
		const char *ref = str(req, "ref");
		json_t *want = json_object_get(req, "snapshot-id");
		if (!ref || (want && !json_is_null(want) && !json_is_integer(want)))
			return -1;
		long long id;
		int present = ib_rest_ref_snapshot(metadata, ref, &id) == 0;
		if (!want || json_is_null(want))
			return !present;
		return present && id == (long long)json_integer_value(want);
	}
	if (strcmp(type, "assert-table-uuid") == 0) {
		const char *want = str(req, "uuid"), *have = str(metadata, "table-uuid");
		if (!want || !have)
			return -1;
		return strcmp(want, have) == 0;
	}
	return -1;
}

/* 1 visible, 0 not, -1 cannot tell. */
static int update_visible(const json_t *metadata, const json_t *upd)
{
	const char *action = str(upd, "action");
	if (!action)
		return -1;
	if (strcmp(action, "set-snapshot-ref") == 0) {
		const char *name = str(upd, "ref-name"), *type = str(upd, "type");
		json_t *want = json_object_get(upd, "snapshot-id");
		if (!name || !json_is_integer(want))
			return -1;
		long long id;
		if (ib_rest_ref_snapshot(metadata, name, &id) || id != (long long)json_integer_value(want))
			return 0;
		const char *have_type = str(json_object_get(json_object_get(metadata, "refs"), name), "type");
		return !type || !have_type || strcmp(type, have_type) == 0;
	}
	if (strcmp(action, "remove-snapshot-ref") == 0) {
		const char *name = str(upd, "ref-name");
		if (!name)
			return -1;
		return !json_object_get(json_object_get(metadata, "refs"), name);
	}
	return -1;
}

enum ib_rest_outcome ib_rest_commit_outcome(const json_t *metadata, const json_t *requirements,
                                            const json_t *updates)
{
	if (!json_is_object(metadata) || !json_is_array(requirements) || !json_is_array(updates) ||
	    json_array_size(updates) == 0)
		return IB_REST_UNKNOWN;
	size_t i;
	json_t *v;
	int all_visible = 1;
	json_array_foreach(updates, i, v) {
		int seen = update_visible(metadata, v);
		if (seen < 0)
			return IB_REST_UNKNOWN;
		all_visible &= seen;
	}
	/* A commit is atomic: every update visible means it went in (or the
	 * table already said so, which is the same end). */
	if (all_visible)
		return IB_REST_APPLIED;
	json_array_foreach(requirements, i, v) {
		int holds = requirement_holds(metadata, v);
		if (holds < 0)
			return IB_REST_UNKNOWN;
		if (!holds)
			return IB_REST_MOVED;
	}
	return IB_REST_RESEND;
}

const char *ib_rest_commit_ref(const json_t *requirements, const json_t *updates)
{
	size_t i;
	json_t *v;
	json_array_foreach(requirements, i, v) {
		if (str(v, "type") && strcmp(str(v, "type"), "assert-ref-snapshot-id") == 0 && str(v, "ref"))
			return str(v, "ref");
	}
	json_array_foreach(updates, i, v) {
		if (str(v, "ref-name"))
			return str(v, "ref-name");
	}
	return NULL;
}
