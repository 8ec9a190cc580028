/* verify --deep: what verify answers, then the version rebuilt as a reader
 * of it would: the set of live data files (the newest whole checkpoint at
 * or below it, its sidecars, then every commit's add and remove actions
 * up to the version), each file looked for in the table's store. VACUUM
 * deletes data files no version younger than its retention needs, so a
 * recorded version whose log is intact may still have lost its data:
 * `open -r` would hand out a version no reader can read. Deletion-vector
 * files are not checked. */
#include "backends/delta/delta.h"

#include "util/fsutil.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* An add action's path (a relative URI, percent-encoded) as a key of the
 * table's store; NULL for a path that is not one (an absolute URI, a
 * broken escape): such a file is not this check's to find. */
static char *path_key(const char *path)
{
	if (strstr(path, "://") || path[0] == '/')
		return NULL;
	char *out = malloc(strlen(path) + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = path; *p; p++) {
		if (*p != '%') {
			*o++ = *p;
			continue;
		}
		int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(out);
			return NULL;
		}
		*o++ = (char)(hi * 16 + lo);
		p += 2;
	}
	*o = 0;
	return out;
}

/* {path: true} of the files live at version v. */
static int live_files(struct dl_log *log, int64_t v, json_t *live)
{
	int rc = 0;
	const struct dl_checkpoint *cp = dl_base_checkpoint(log, v, &rc);
	if (rc)
		return rc;
	if (cp && (rc = dl_checkpoint_files(log, cp, live)))
		return rc;
	for (int64_t w = cp ? cp->version + 1 : 0; rc == 0 && w <= v; w++) {
		json_t *actions = NULL;
		rc = dl_read_commit(log->store, log->uri, w, &actions);
		size_t i;
		json_t *a;
		json_array_foreach(actions, i, a) {
			if (rc == 0 && (rc = dl_apply_file_action(live, a)))
				rc = tether_error_set(rc, "%s: version %" PRId64 ": %s", log->uri, w, tether_error_last());
		}
		json_decref(actions);
	}
	return rc;
}

int dl_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                   int *ok, char **detail)
{
	int rc = dl_verify(ctx, locator, state, pin_ref, ok, detail);
	if (rc || !*ok)
		return rc;
	*ok = 0;
	struct dl_loc loc;
	struct dl_log log;
	int64_t version = 0;
	const char *table_id;
	if ((rc = dl_read_locator(locator, &loc)) || (rc = dl_state_read(state, "verify", &version, &table_id)) ||
	    (rc = dl_log_open(ctx, locator, loc.uri, 1, &log)))
		return rc;
	json_t *live = json_object();
	rc = live ? dl_log_load_state(&log) : dl_fail_oom();
	if (!rc)
		rc = live_files(&log, version, live);
	size_t missing = 0, checked = 0;
	char *first = NULL;
	const char *path;
	json_t *v;
	json_object_foreach(live, path, v) {
		if (rc)
			break;
		if (tether_bctx_cancelled(ctx)) {
			rc = tether_bctx_cancel(ctx, "checking a Delta version's data files");
			break;
		}
		char *key = path_key(path);
		int exists = 0;
		if (!key)
			continue;
		rc = tether_store_head(log.store, key, &exists, NULL, NULL);
		if (rc == TETHER_EUSAGE) { /* not a key of the store: a path that leaves the table */
			tether_error_clear();
			rc = 0;
			exists = 0;
		}
		checked++;
		if (!rc && !exists && missing++ == 0)
			first = strdup(path);
		free(key);
	}
	if (!rc && missing)
		*detail = tt_strdupf("version %" PRId64 " of %s has lost %zu of its %zu data files (%s first): VACUUM "
		                     "removes files older than delta.deletedFileRetentionDuration (7 days by default) "
		                     "that the latest version no longer needs",
		                     version, log.uri, missing, checked, first ? first : "?");
	else if (!rc)
		*ok = 1;
	if (!rc && missing && !*detail)
		rc = dl_fail_oom();
	free(first);
	json_decref(live);
	dl_log_close(&log);
	return rc;
}
