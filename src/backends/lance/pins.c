/* Pins: a tag tether.<pin id> under _refs/tags/, naming (branch, version)
 * as Lance's tags.create does, so that Lance lists it, checks it out and
 * keeps its version through cleanup_old_versions. */
#include "backends/lance/lance.h"

#include <stdlib.h>
#include <string.h>

static json_t *pin_ref_of(const char *tag, const char *pin_id)
{
	return json_pack("{s:s, s:s}", "tag", tag, "pin", pin_id);
}

int lc_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
           json_t **pin_ref, int *created)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	struct lc_pos p;
	*pin_ref = NULL;
	*created = 0;
	int rc = lc_open(ctx, locator, &loc, &ds), ok = 0, exists = 0;
	if (rc)
		return rc;
	char *detail = NULL, *key = NULL, *tag = tt_strdupf("tether.%s", pin_id), *had = NULL;
	uint64_t size = 0, had_version = 0;
	if (!tag)
		rc = lc_fail_oom();
	if (rc == 0 && (rc = lc_state_read(state, &p)) == 0) {
		if ((rc = lc_state_check(&ds, &p, &ok, &detail)) == 0 && !ok)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s: cannot pin: %s", ds.uri, detail);
		if (rc == 0 && (rc = lc_find_version(&ds, p.branch, p.version, &key, &size, NULL, &exists)) == 0 && !exists)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s: cannot pin: version %llu of %s is gone", ds.uri,
			                      (unsigned long long)p.version, p.branch);
		if (rc == 0 && (rc = lc_tag_create(&ds, tag, p.branch, p.version, size)) == 0)
			*created = 1;
		else if (rc == TETHER_EREFUSED) {
			/* Pinning is idempotent; the same pin at another version is not. */
			tether_error_clear();
			if ((rc = lc_tag_read(&ds, tag, &had, &had_version, &exists)) == 0 && !exists)
				rc = tether_error_set(TETHER_ETRANSIENT, "%s: tag %s vanished while being pinned", ds.uri, tag);
			else if (rc == 0 && (strcmp(had, p.branch) != 0 || had_version != p.version))
				rc = tether_error_set(TETHER_EREFUSED, "%s: tag %s points at version %llu of %s, not %llu of %s",
				                      ds.uri, tag, (unsigned long long)had_version, had,
				                      (unsigned long long)p.version, p.branch);
		}
		lc_pos_free(&p);
	}
	if (rc == 0 && !(*pin_ref = pin_ref_of(tag, pin_id)))
		rc = lc_fail_oom();
	if (rc)
		*created = 0;
	free(had);
	free(key);
	free(detail);
	free(tag);
	lc_close(&ds);
	return rc;
}

int lc_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	if (!tag || strncmp(tag, "tether.", 7) != 0 || strchr(tag, '/'))
		return tether_error_set(TETHER_ECONFIG, "lance pin_ref names no tether.* tag");
	int rc = lc_open(ctx, locator, &loc, &ds);
	if (rc == 0) {
		rc = lc_tag_delete(&ds, tag); /* one already gone is not an error */
		lc_close(&ds);
	}
	return rc;
}

int lc_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	json_t *tags = NULL;
	*pin_refs = NULL;
	int rc = lc_open(ctx, locator, &loc, &ds);
	if (rc)
		return rc;
	rc = lc_tag_list(&ds, &tags);
	lc_close(&ds);
	if (rc)
		return rc;
	json_t *out = json_array();
	const char *name;
	json_t *v;
	json_object_foreach(tags, name, v)
		if (out && strncmp(name, "tether.", 7) == 0 && name[7])
			json_array_append_new(out, pin_ref_of(name, name + 7));
	json_decref(tags);
	if (!out)
		return lc_fail_oom();
	*pin_refs = out;
	return 0;
}

int lc_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              int *ok, char **detail)
{
	struct lc_loc loc;
	struct lc_dataset ds;
	struct lc_pos p;
	*ok = 0;
	*detail = NULL;
	int rc = lc_open(ctx, locator, &loc, &ds);
	if (rc)
		return rc;
	if ((rc = lc_state_read(state, &p))) {
		lc_close(&ds);
		return rc;
	}
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	if (pin_ref && !tag) {
		rc = tether_error_set(TETHER_ECONFIG, "lance pin_ref needs \"tag\"");
	} else if (pin_ref) {
		char *branch = NULL;
		uint64_t version = 0;
		int exists = 0;
		rc = lc_tag_read(&ds, tag, &branch, &version, &exists);
		if (rc == 0 && !exists)
			*detail = tt_strdupf("tag %s is missing", tag);
		else if (rc == 0 && (strcmp(branch, p.branch) != 0 || version != p.version))
			*detail = tt_strdupf("tag %s points at version %llu of %s, not %llu of %s", tag,
			                     (unsigned long long)version, branch, (unsigned long long)p.version, p.branch);
		else if (rc == 0)
			rc = lc_state_check(&ds, &p, ok, detail);
		free(branch);
	} else {
		rc = lc_state_check(&ds, &p, ok, detail);
	}
	lc_pos_free(&p);
	lc_close(&ds);
	return rc;
}

/* verify --deep: verify's answer, then the pinned version's manifest read
 * and decoded as a reader opening it would (footer, protobuf, feature
 * flags, branch): a tag still naming a version whose manifest is damaged
 * fails here. */
int lc_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                   int *ok, char **detail)
{
	int rc = lc_verify(ctx, locator, state, pin_ref, ok, detail);
	if (rc || !*ok)
		return rc;
	struct lc_loc loc;
	struct lc_dataset ds;
	struct lc_pos p;
	struct lc_manifest man;
	if ((rc = lc_open(ctx, locator, &loc, &ds)))
		return rc;
	if ((rc = lc_state_read(state, &p)) == 0) {
		tether_error_clear();
		int bad = lc_read_version(&ds, p.branch, p.version, &man);
		if (bad == TETHER_ETRANSIENT || bad == TETHER_ECANCELLED) {
			rc = bad;
		} else if (bad) {
			*ok = 0;
			free(*detail);
			*detail = tt_strdupf("version %llu of %s cannot be read: %s", (unsigned long long)p.version, p.branch,
			                     tether_error_last());
		} else {
			lc_manifest_free(&man);
		}
		lc_pos_free(&p);
	}
	lc_close(&ds);
	return rc;
}
