/* Commit files: their actions, line by line, and what a commit's
 * commitInfo says it did ("WRITE: +2 rows, +1 files"). commitInfo is
 * free-form provenance (PROTOCOL.md, "Commit Provenance Information"):
 * Spark writes its operationMetrics as strings under camelCase names,
 * delta-rs as numbers under snake_case ones, and either may be absent. */
#include "backends/delta/delta.h"

#include "util/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dl_parse_actions(const uint8_t *data, size_t len, const char *what, json_t **actions)
{
	*actions = NULL;
	json_t *out = json_array();
	int rc = out ? 0 : dl_fail_oom();
	size_t start = 0;
	for (int line = 1; rc == 0 && start < len; line++) {
		size_t end = start;
		while (end < len && data[end] != '\n')
			end++;
		size_t n = end - start;
		while (n && (data[start + n - 1] == '\r' || data[start + n - 1] == ' '))
			n--;
		if (n) {
			json_error_t err;
			json_t *a = json_loadb((const char *)data + start, n, 0, &err);
			if (!json_is_object(a))
				rc = tether_error_set(TETHER_EIO, "%s:%d:%d: %s", what, line, err.column,
				                      a ? "an action is not a JSON object" : err.text);
			else if (json_array_append(out, a))
				rc = dl_fail_oom();
			json_decref(a);
		}
		start = end + 1;
	}
	if (rc)
		json_decref(out);
	else
		*actions = out;
	return rc;
}

int dl_read_commit(tether_store *s, const char *uri, int64_t v, json_t **actions)
{
	char key[40];
	dl_commit_key(v, key);
	*actions = NULL;
	uint8_t *data = NULL;
	size_t len = 0;
	int rc = tether_store_get(s, key, &data, &len, NULL);
	if (rc == TETHER_ENOTFOUND)
		return tether_error_set(rc, "%s/%s is gone", uri, key);
	if (rc)
		return rc;
	char *what = tt_strdupf("%s/%s", uri, key);
	if (!what)
		rc = dl_fail_oom();
	else if (len > DL_MAX_COMMIT_BYTES)
		rc = tether_error_set(TETHER_EIO, "%s: larger than %zu MiB", what, DL_MAX_COMMIT_BYTES >> 20);
	else
		rc = dl_parse_actions(data, len, what, actions);
	free(what);
	free(data);
	return rc;
}

/* A metric's value: a number, or Spark's string of one; -1 when absent or
 * not a count. */
static json_int_t metric(const json_t *m, const char *name)
{
	const json_t *v = json_object_get(m, name);
	if (json_is_integer(v))
		return json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
	if (json_is_real(v))
		return json_real_value(v) >= 0 ? (json_int_t)json_real_value(v) : -1;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end = NULL;
		if (!*s || *s == '-')
			return -1;
		long long n = strtoll(s, &end, 10);
		return end && !*end ? (json_int_t)n : -1;
	}
	return -1;
}

/* The first of the names present (camelCase and snake_case spellings of
 * one count, by engine and operation). */
static json_int_t first_metric(const json_t *m, const char *const *names)
{
	for (size_t i = 0; names[i]; i++) {
		json_int_t v = metric(m, names[i]);
		if (v >= 0)
			return v;
	}
	return -1;
}

struct metric_map {
	const char *out;
	const char *names[8];
};

/* Spark's names (DeltaOperationMetrics) and delta-rs's, per normalised
 * count. WRITE's numOutputRows and numFiles are rows and files added. */
static const struct metric_map metric_maps[] = {
	{"rows_added", {"num_added_rows", "numOutputRows", "numTargetRowsInserted", "num_target_rows_inserted",
	                "num_inserted_rows", NULL}},
	{"rows_deleted", {"num_deleted_rows", "numDeletedRows", "numTargetRowsDeleted", "num_target_rows_deleted",
	                  NULL}},
	{"rows_updated", {"num_updated_rows", "numUpdatedRows", "numTargetRowsUpdated", "num_target_rows_updated",
	                  NULL}},
	{"files_added", {"num_added_files", "numAddedFiles", "numFiles", "numTargetFilesAdded",
	                 "num_target_files_added", NULL}},
	{"files_removed", {"num_removed_files", "numRemovedFiles", "numTargetFilesRemoved",
	                   "num_target_files_removed", NULL}},
	{"bytes_added", {"num_added_bytes", "numAddedBytes", "numOutputBytes", NULL}},
	{"bytes_removed", {"num_removed_bytes", "numRemovedBytes", NULL}},
};

json_t *dl_commit_metrics(const json_t *commit_info)
{
	json_t *out = json_object();
	const json_t *m = json_object_get(commit_info, "operationMetrics");
	if (!out || !json_is_object(m))
		return out;
	for (size_t i = 0; i < sizeof metric_maps / sizeof *metric_maps; i++) {
		json_int_t v = first_metric(m, metric_maps[i].names);
		if (v >= 0)
			json_object_set_new(out, metric_maps[i].out, json_integer(v));
	}
	return out;
}

char *dl_commit_summary(const char *operation, const json_t *metrics)
{
	static const struct {
		const char *key, *fmt;
	} parts[] = {
		{"rows_added", "+%lld rows"},   {"rows_deleted", "-%lld rows"},   {"rows_updated", "~%lld rows"},
		{"files_added", "+%lld files"}, {"files_removed", "-%lld files"},
	};
	char buf[512];
	size_t n = (size_t)snprintf(buf, sizeof buf, "%s", operation && *operation ? operation : "(no commitInfo)");
	int first = 1;
	for (size_t i = 0; i < sizeof parts / sizeof *parts && n < sizeof buf; i++) {
		const json_t *v = json_object_get(metrics, parts[i].key);
		/* A count of zero says nothing a reader needs. */
		if (!v || json_integer_value(v) == 0)
			continue;
		n += (size_t)snprintf(buf + n, sizeof buf - n, first ? ": " : ", ");
		if (n < sizeof buf)
			n += (size_t)snprintf(buf + n, sizeof buf - n, parts[i].fmt, (long long)json_integer_value(v));
		first = 0;
	}
	return strdup(buf);
}

/* Seconds since the epoch of a commit: In-Commit Timestamps where the
 * table has them, else commitInfo's timestamp (milliseconds). */
static json_int_t commit_ms(const json_t *ci)
{
	const json_t *t = json_object_get(ci, "inCommitTimestamp");
	if (!json_is_integer(t))
		t = json_object_get(ci, "timestamp");
	return json_is_integer(t) ? json_integer_value(t) : 0;
}

json_t *dl_history_entry(int64_t v, const json_t *actions)
{
	const json_t *ci = NULL;
	size_t i;
	json_t *a;
	json_array_foreach(actions, i, a) {
		if (json_is_object(json_object_get(a, "commitInfo"))) {
			ci = json_object_get(a, "commitInfo");
			break;
		}
	}
	const json_t *op = json_object_get(ci, "operation");
	const char *operation = json_is_string(op) ? json_string_value(op) : NULL;
	json_t *metrics = dl_commit_metrics(ci);
	char *message = dl_commit_summary(operation, metrics);
	char id[24];
	snprintf(id, sizeof id, "%" PRId64, v);
	json_int_t ms = commit_ms(ci);
	json_t *e = json_pack("{s:s, s:I, s:I, s:I, s:s?, s:o, s:[]}", "id", id, "version", (json_int_t)v, "time",
	                      ms / 1000, "timestamp_ms", ms, "message", message, "metrics", metrics, "refs");
	free(message);
	if (e && operation)
		json_object_set_new(e, "operation", json_string(operation));
	const json_t *params = json_object_get(ci, "operationParameters");
	if (e && json_is_object(params))
		json_object_set(e, "parameters", (json_t *)params);
	const json_t *raw = json_object_get(ci, "operationMetrics");
	if (e && json_is_object(raw))
		json_object_set(e, "operation_metrics", (json_t *)raw);
	return e;
}

json_t *dl_state(int64_t version, const char *table_id)
{
	return json_pack("{s:I, s:s}", "version", (json_int_t)version, "table_id", table_id);
}

int dl_state_read(const json_t *state, const char *what, int64_t *version, const char **table_id)
{
	const json_t *v = json_object_get(state, "version");
	const json_t *id = json_object_get(state, "table_id");
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return tether_error_set(TETHER_ECONFIG, "%s: a delta state needs \"version\", a version number", what);
	if (!json_is_string(id) || !*json_string_value(id))
		return tether_error_set(TETHER_ECONFIG, "%s: a delta state needs \"table_id\", the table's metaData id",
		                        what);
	*version = json_integer_value(v);
	*table_id = json_string_value(id);
	return 0;
}
