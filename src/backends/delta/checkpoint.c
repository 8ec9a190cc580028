/* Checkpoints: the protocol and metaData a checkpoint holds, for a log
 * whose early commits cleanup removed, and whether a checkpoint is whole
 * (PROTOCOL.md, "Checkpoints", "V2 Spec", "Sidecar Files"). Classic and
 * multi-part checkpoints are Parquet; a V2 one is Parquet or JSON, with a
 * checkpointMetadata action and sidecar actions naming files under
 * _delta_log/_sidecars/ that hold only add and remove actions, which
 * tether does not need (but a checkpoint missing one is not whole). */
#include "backends/delta/delta.h"

#include "format/parquet.h"
#include "util/fsutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a checkpoint is read for: its state, or its files (verify --deep). */
static const char *const state_columns[] = {"protocol", "metaData", "sidecar", "checkpointMetadata", NULL};
static const char *const file_columns[] = {"add", "remove", "sidecar", NULL};

/* The actions of one checkpoint file (or sidecar) of the kinds `columns`
 * names, as objects of one key each ({"protocol": ...}), nulls left out;
 * a JSON one gives all its actions. */
static int read_actions(struct dl_log *log, const char *key, int json, const char *const *columns, json_t **out)
{
	*out = NULL;
	uint8_t *data = NULL;
	size_t len = 0;
	int rc = tether_store_get(log->store, key, &data, &len, NULL);
	if (rc == TETHER_ENOTFOUND)
		return tether_error_set(rc, "%s/%s is gone", log->uri, key);
	if (rc)
		return rc;
	if (len > DL_MAX_CHECKPOINT_BYTES) {
		free(data);
		return tether_error_set(TETHER_EIO, "%s/%s: larger than %zu MiB", log->uri, key,
		                        DL_MAX_CHECKPOINT_BYTES >> 20);
	}
	char *what = tt_strdupf("%s/%s", log->uri, key);
	json_t *actions = json_array();
	if (!what || !actions)
		rc = dl_fail_oom();
	if (!rc && json) {
		json_decref(actions);
		actions = NULL;
		rc = dl_parse_actions(data, len, what, &actions);
	} else if (!rc) {
		struct tt_parquet_file *f = NULL;
		json_t *rows = NULL;
		size_t ncolumns = 0;
		while (columns[ncolumns])
			ncolumns++;
		rc = tt_parquet_open(data, len, what, &f);
		if (!rc)
			rc = tt_parquet_read_rows(f, columns, ncolumns, &rows);
		tt_parquet_close(f);
		size_t i;
		json_t *row;
		json_array_foreach(rows, i, row) {
			for (size_t c = 0; c < ncolumns; c++) {
				json_t *v = json_object_get(row, columns[c]);
				if (json_is_object(v))
					json_array_append_new(actions, json_pack("{s:O}", columns[c], v));
			}
		}
		json_decref(rows);
	}
	free(data);
	free(what);
	if (rc)
		json_decref(actions);
	else
		*out = actions;
	return rc;
}

/* The key of part `part` of a multi-part checkpoint. */
static char *part_key(const struct dl_checkpoint *cp, uint32_t part)
{
	return tt_strdupf(DL_LOG "%020" PRId64 ".checkpoint.%010u.%010u.parquet", cp->version, part, cp->parts);
}

/* Part p of a checkpoint (1 for all but a multi-part one), read for
 * `columns`. */
static int read_part(struct dl_log *log, const struct dl_checkpoint *cp, uint32_t p, const char *const *columns,
                     json_t **actions)
{
	char *key = cp->kind == DL_CP_MULTIPART ? part_key(cp, p) : strdup(cp->key);
	int rc = key ? read_actions(log, key, cp->json, columns, actions) : dl_fail_oom();
	free(key);
	return rc;
}

/* A sidecar action's file, under _delta_log/_sidecars/; NULL (refused)
 * when its path names anything else. */
static char *sidecar_key(struct dl_log *log, const json_t *sidecar)
{
	const char *path = json_string_value(json_object_get(sidecar, "path"));
	if (!path || !*path) {
		tether_error_set(TETHER_EIO, "%s: a sidecar action without a path", log->uri);
		return NULL;
	}
	/* Writers are told to store the file's name alone; a full path must
	 * still end in this table's _delta_log/_sidecars/. */
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	if (slash && (slash - path < 20 || strncmp(slash - 20, DL_LOG "_sidecars", 20) != 0)) {
		tether_error_set(TETHER_EIO, "%s: sidecar %s is not in _delta_log/_sidecars/", log->uri, path);
		return NULL;
	}
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '\\')) {
		tether_error_set(TETHER_EIO, "%s: sidecar path %s names no file", log->uri, path);
		return NULL;
	}
	return tt_strdupf(DL_LOG "_sidecars/%s", name);
}

int dl_checkpoint_state(struct dl_log *log, const struct dl_checkpoint *cp, json_t **protocol, json_t **metadata)
{
	*protocol = *metadata = NULL;
	uint32_t parts = cp->kind == DL_CP_MULTIPART ? cp->parts : 1;
	int rc = 0;
	for (uint32_t p = 1; rc == 0 && p <= parts && !(*protocol && *metadata); p++) {
		json_t *actions = NULL;
		rc = read_part(log, cp, p, state_columns, &actions);
		size_t i;
		json_t *a;
		json_array_foreach(actions, i, a) {
			json_t *v;
			if (!*protocol && (v = json_object_get(a, "protocol")))
				*protocol = json_incref(v);
			if (!*metadata && (v = json_object_get(a, "metaData")))
				*metadata = json_incref(v);
		}
		json_decref(actions);
	}
	if (rc) {
		json_decref(*protocol);
		json_decref(*metadata);
		*protocol = *metadata = NULL;
	}
	return rc;
}

/* Does the table use V2 checkpoints (so a classic-named one may carry
 * sidecars)? */
static int uses_v2(const struct dl_log *log)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(log->protocol, "readerFeatures"), i, f)
		if (json_is_string(f) && strcmp(json_string_value(f), "v2Checkpoint") == 0)
			return 1;
	return 0;
}

int dl_checkpoint_complete(struct dl_log *log, const struct dl_checkpoint *ccp, int *complete)
{
	struct dl_checkpoint *cp = (struct dl_checkpoint *)ccp;
	if (cp->checked) {
		*complete = cp->whole;
		return 0;
	}
	*complete = 0;
	int rc = 0;
	if (cp->kind == DL_CP_MULTIPART) {
		*complete = cp->seen == cp->parts;
	} else if (cp->kind == DL_CP_UUID || uses_v2(log)) {
		json_t *actions = NULL;
		rc = read_actions(log, cp->key, cp->json, state_columns, &actions);
		*complete = rc == 0;
		size_t i;
		json_t *a;
		json_array_foreach(actions, i, a) {
			const json_t *sc = json_object_get(a, "sidecar");
			if (!sc || !*complete)
				continue;
			char *key = sidecar_key(log, sc);
			int exists = 0;
			rc = key ? tether_store_head(log->store, key, &exists, NULL, NULL) : TETHER_EIO;
			free(key);
			if (rc)
				break;
			*complete = exists;
		}
		json_decref(actions);
		/* A checkpoint that cannot be read is not one to rebuild from;
		 * the store failing is the caller's error. */
		if (rc == TETHER_EIO) {
			tether_error_clear();
			rc = 0;
			*complete = 0;
		}
	} else {
		*complete = 1;
	}
	if (rc == 0) {
		cp->checked = 1;
		cp->whole = *complete;
	}
	return rc;
}

int dl_apply_file_action(json_t *live, const json_t *action)
{
	const json_t *add = json_object_get(action, "add"), *remove = json_object_get(action, "remove");
	const char *path = json_string_value(json_object_get(add ? add : remove, "path"));
	if (!add && !remove)
		return 0;
	if (!path)
		return tether_error_set(TETHER_EIO, "an %s action without a path", add ? "add" : "remove");
	if (add)
		return json_object_set_new(live, path, json_true()) ? dl_fail_oom() : 0;
	json_object_del(live, path);
	return 0;
}

int dl_checkpoint_files(struct dl_log *log, const struct dl_checkpoint *cp, json_t *live)
{
	uint32_t parts = cp->kind == DL_CP_MULTIPART ? cp->parts : 1;
	int rc = 0;
	for (uint32_t p = 1; rc == 0 && p <= parts; p++) {
		json_t *actions = NULL;
		rc = read_part(log, cp, p, file_columns, &actions);
		size_t i;
		json_t *a;
		json_array_foreach(actions, i, a) {
			const json_t *sc = json_object_get(a, "sidecar");
			if (sc && rc == 0) {
				/* A sidecar holds the checkpoint's add and remove actions. */
				char *skey = sidecar_key(log, sc);
				json_t *more = NULL;
				rc = skey ? read_actions(log, skey, 0, file_columns, &more) : TETHER_EIO;
				free(skey);
				size_t k;
				json_t *b;
				json_array_foreach(more, k, b) {
					if (rc == 0)
						rc = dl_apply_file_action(live, b);
				}
				json_decref(more);
			} else if (rc == 0) {
				rc = dl_apply_file_action(live, a);
			}
		}
		json_decref(actions);
	}
	return rc;
}
