/* States: (branch, version), and on a branch other than main the branch's
 * id, the uuid its identifier ends with (Lance numbers versions per branch
 * and restarts them when a branch is deleted and made again, so the id
 * tells two lives of one name apart). A branch whose only version is the
 * one it was created at (an untouched fork) reports its parent's address,
 * so a no-op commit after `tether new` stays a no-op. */
#include "backends/lance/lance.h"

#include <stdlib.h>
#include <string.h>

void lc_pos_free(struct lc_pos *p)
{
	free(p->branch);
	free(p->branch_id);
	memset(p, 0, sizeof *p);
}

static int pos_set(struct lc_pos *p, const char *branch, uint64_t version, const char *id)
{
	p->branch = strdup(branch);
	p->version = version;
	p->branch_id = id ? strdup(id) : NULL;
	if (!p->branch || (id && !p->branch_id)) {
		lc_pos_free(p);
		return lc_fail_oom();
	}
	return 0;
}

/* The id of a branch other than main (its JSON must be there). */
static int branch_id(struct lc_dataset *ds, const char *branch, struct lc_branch *b)
{
	int exists = 0;
	int rc = lc_branch_read(ds, branch, b, &exists);
	if (rc == 0 && !exists)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\" (no _refs/branches entry)", ds->uri, branch);
	if (rc == 0 && !b->id)
		rc = tether_error_set(TETHER_EIO, "%s: branch %s has no identifier (made by a Lance older than tether "
		                                  "supports)", ds->uri, branch);
	if (rc)
		lc_branch_free(b);
	return rc;
}

/* The address of (branch, version): a branch's creation version is its
 * parent's, so it is named there (recursively), as Lance's clone manifest
 * holds the parent's data unchanged. */
static int address(struct lc_dataset *ds, const char *branch, uint64_t version, struct lc_pos *out, int depth)
{
	if (strcmp(branch, "main") == 0)
		return pos_set(out, "main", version, NULL);
	if (depth > 64)
		return tether_error_set(TETHER_EIO, "%s: branch %s: its parents go round in a circle", ds->uri, branch);
	struct lc_branch b;
	int rc = branch_id(ds, branch, &b);
	if (rc)
		return rc;
	if (version == b.parent_version)
		rc = address(ds, b.parent ? b.parent : "main", version, out, depth + 1);
	else
		rc = pos_set(out, branch, version, b.id);
	lc_branch_free(&b);
	return rc;
}

int lc_branch_head(struct lc_dataset *ds, const char *branch, struct lc_pos *out)
{
	memset(out, 0, sizeof *out);
	uint64_t latest = 0;
	struct lc_manifest man;
	int rc = lc_latest(ds, branch, &latest, NULL);
	/* The head's manifest is read: its flags are what a reader must know. */
	if (rc == 0 && (rc = lc_read_version(ds, branch, latest, &man)) == 0)
		lc_manifest_free(&man);
	if (rc)
		return rc;
	return address(ds, branch, latest, out, 0);
}

static int all_digits(const char *s)
{
	if (!*s || strlen(s) > 19)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int lc_position(struct lc_dataset *ds, const struct lc_loc *loc, struct lc_pos *out)
{
	memset(out, 0, sizeof *out);
	if (loc->working_branch || !loc->at)
		return lc_branch_head(ds, loc->working_branch ? loc->working_branch : loc->branch, out);
	/* --at: a version of the locator's branch, or a tag. */
	char *branch = NULL;
	uint64_t version = 0;
	int rc = 0, exists = 0;
	if (all_digits(loc->at)) {
		version = strtoull(loc->at, NULL, 10);
		if (!(branch = strdup(loc->branch)))
			return lc_fail_oom();
	} else if ((rc = lc_tag_read(ds, loc->at, &branch, &version, &exists)) == 0 && !exists) {
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no version or tag \"%s\"", ds->uri, loc->at);
	}
	struct lc_manifest man;
	if (rc == 0 && (rc = lc_read_version(ds, branch, version, &man)) == 0)
		lc_manifest_free(&man);
	if (rc == 0)
		rc = address(ds, branch, version, out, 0);
	free(branch);
	return rc;
}

json_t *lc_state_of(const struct lc_pos *p)
{
	json_t *s = json_pack("{s:s, s:I}", "branch", p->branch, "version", (json_int_t)p->version);
	if (s && p->branch_id)
		json_object_set_new(s, "branch_id", json_string(p->branch_id));
	return s;
}

int lc_state_read(const json_t *state, struct lc_pos *out)
{
	memset(out, 0, sizeof *out);
	const char *branch = json_string_value(json_object_get(state, "branch"));
	json_t *v = json_object_get(state, "version");
	const char *id = json_string_value(json_object_get(state, "branch_id"));
	if (!branch || !json_is_integer(v) || json_integer_value(v) < 0)
		return tether_error_set(TETHER_ECONFIG, "a lance state needs \"branch\" and \"version\"");
	if ((strcmp(branch, "main") == 0) != !id)
		return tether_error_set(TETHER_ECONFIG, "a lance state has \"branch_id\" exactly when its branch is not main");
	return pos_set(out, branch, (uint64_t)json_integer_value(v), id);
}

int lc_state_check(struct lc_dataset *ds, const struct lc_pos *p, int *ok, char **detail)
{
	*ok = 0;
	*detail = NULL;
	char *key = NULL;
	int exists = 0;
	if (p->branch_id) {
		struct lc_branch b;
		int rc = lc_branch_read(ds, p->branch, &b, &exists);
		if (rc)
			return rc;
		if (!exists || !b.id || strcmp(b.id, p->branch_id) != 0) {
			*detail = exists ? tt_strdupf("branch %s was deleted and made again (id %s, not %s)", p->branch,
			                              b.id ? b.id : "none", p->branch_id)
			                 : tt_strdupf("branch %s no longer exists", p->branch);
			lc_branch_free(&b);
			return *detail ? 0 : lc_fail_oom();
		}
		lc_branch_free(&b);
	}
	int rc = lc_find_version(ds, p->branch, p->version, &key, NULL, NULL, &exists);
	free(key);
	if (rc)
		return rc;
	*ok = exists;
	if (!exists && !(*detail = tt_strdupf("version %llu of branch %s is no longer in the dataset",
	                                      (unsigned long long)p->version, p->branch)))
		return lc_fail_oom();
	return 0;
}
