/* History: the versions of the locator's branch, newest first, each with
 * its commit time, the operation and message of its transaction (inline
 * in the manifest file), and the refs on it: the branch on its head, and
 * the tags. */
#include "backends/lance/lance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Transaction.operation's members, by field number (100 on). */
static const char *const op_names[] = {"Append", "Delete", "Overwrite", "CreateIndex", "Rewrite", "Merge",
                                       "Restore", "ReserveFragments", "Update", "Project", "UpdateConfig",
                                       "DataReplacement", "UpdateMemWalState", "Clone", "UpdateBases"};

/* "Append", "Delete: message", or NULL when there is no inline transaction. */
static char *describe(const struct lc_manifest *man)
{
	const TetherLance__Manifest *m = man->m;
	int has = m->has_transaction_section || m->has_transaction_section_deprecated;
	uint64_t off = m->has_transaction_section ? m->transaction_section : m->transaction_section_deprecated;
	if (!has || off > man->len || man->len - off < 4)
		return NULL;
	const uint8_t *p = man->bytes + off;
	uint32_t n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if (n > man->len - off - 4)
		return NULL;
	TetherLance__Transaction *t = tether_lance__transaction__unpack(NULL, n, p + 4);
	if (!t)
		return NULL;
	const char *op = t->clone ? "Clone" : NULL;
	char unknown[24];
	for (unsigned i = 0; !op && i < t->base.n_unknown_fields; i++) {
		uint32_t tag = t->base.unknown_fields[i].tag;
		if (tag >= 100 && tag < 100 + sizeof op_names / sizeof *op_names)
			op = op_names[tag - 100];
		else if (tag >= 100 && tag < 200) {
			snprintf(unknown, sizeof unknown, "operation %u", tag);
			op = unknown;
		}
	}
	const char *msg = NULL;
	for (size_t i = 0; i < t->n_transaction_properties; i++)
		if (t->transaction_properties[i]->key && strcmp(t->transaction_properties[i]->key, "__lance_commit_message") == 0)
			msg = t->transaction_properties[i]->value;
	char *out = msg && *msg ? tt_strdupf("%s: %s", op ? op : "commit", msg) : strdup(op ? op : "commit");
	tether_lance__transaction__free_unpacked(t, NULL);
	return out;
}

int lc_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	uint64_t *versions = NULL;
	size_t n = 0;
	json_t *tags = NULL, *out = json_array();
	*entries = NULL;
	int rc = out ? lc_open(ctx, locator, &loc, &ds) : lc_fail_oom();
	if (rc) {
		json_decref(out);
		return rc;
	}
	const char *branch = loc.working_branch ? loc.working_branch : loc.branch;
	if ((rc = lc_versions(&ds, branch, &versions, &n, NULL)) == 0 && n == 0)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no versions on branch %s", ds.uri, branch);
	if (rc == 0)
		rc = lc_tag_list(&ds, &tags);
	for (size_t i = n; rc == 0 && i > 0 && (max_count <= 0 || json_array_size(out) < (size_t)max_count); i--) {
		struct lc_manifest man;
		if ((rc = lc_read_version(&ds, branch, versions[i - 1], &man)))
			break;
		char id[24];
		snprintf(id, sizeof id, "%llu", (unsigned long long)man.version);
		char *message = describe(&man);
		json_t *refs = json_array();
		if (i == n) /* the branch's head */
			json_array_append_new(refs, json_string(branch));
		const char *name;
		json_t *t;
		json_object_foreach(tags, name, t)
			if (strcmp(json_string_value(json_object_get(t, "branch")), branch) == 0 &&
			    (uint64_t)json_integer_value(json_object_get(t, "version")) == man.version)
				json_array_append_new(refs, json_string(name));
		json_int_t secs = man.m->timestamp ? man.m->timestamp->seconds : 0;
		json_t *e = json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", id, "short_id", id, "time", secs, "message",
		                      message ? message : "", "refs", refs);
		free(message);
		lc_manifest_free(&man);
		if (!e || json_array_append_new(out, e))
			rc = lc_fail_oom();
	}
	free(versions);
	json_decref(tags);
	lc_close(&ds);
	if (rc) {
		json_decref(out);
		return rc;
	}
	*entries = out;
	return 0;
}
