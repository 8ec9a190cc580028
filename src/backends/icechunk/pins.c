/* Pins: immutable tags tether.<pin id>. Icechunk keeps a tombstone for
 * every deleted tag and never lets its name be used again, so a pin whose
 * tag was deleted (by hand, or by a gc you regret) lives on under a later
 * generation, tether.<pin id>.2, .3, ...: the pin id stays what manifests
 * and gc key on, and readers resolve it through its live generation. */
#include "backends/icechunk/ic.h"

#include <stdlib.h>
#include <string.h>

static json_t *pin_ref_of(const char *tag, const char *pin_id)
{
	return json_pack("{s:s, s:s}", "tag", tag, "pin", pin_id);
}

int ic_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
           json_t **pin_ref, int *created)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id snap;
	char *tag = NULL;
	*pin_ref = NULL;
	*created = 0;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	if ((rc = ic_state_snapshot(state, repo.uri, &snap)) == 0 &&
	    (rc = ic_pin_tag(&repo, pin_id, &snap, &tag, created)) == 0 && !(*pin_ref = pin_ref_of(tag, pin_id)))
		rc = ic_fail_oom();
	if (rc)
		*created = 0;
	ic_repository_close(&repo);
	free(tag);
	return rc;
}

int ic_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	struct ic_loc loc;
	struct ic_repository repo;
	const char *pin = json_string_value(json_object_get(pin_ref, "pin"));
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	char *derived = !pin && tag ? ic_pin_of_tag(tag) : NULL;
	if (!pin)
		pin = derived;
	if (!pin) {
		free(derived);
		return tether_error_set(TETHER_ECONFIG, "icechunk pin_ref names no pin");
	}
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc == 0) {
		/* Every live generation: the caller may know only tether.<id>. */
		rc = ic_unpin_all(&repo, pin);
		ic_repository_close(&repo);
	}
	free(derived);
	return rc;
}

int ic_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	struct ic_loc loc;
	struct ic_repository repo;
	json_t *tags = NULL;
	*pin_refs = NULL;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	rc = ic_list_refs(&repo, 1, &tags);
	ic_repository_close(&repo);
	if (rc)
		return rc;
	json_t *out = json_array();
	const char *name;
	json_t *v;
	json_object_foreach(tags, name, v) {
		char *pin = ic_pin_of_tag(name);
		if (pin && out)
			json_array_append_new(out, pin_ref_of(name, pin));
		free(pin);
	}
	json_decref(tags);
	if (!out)
		return ic_fail_oom();
	*pin_refs = out;
	return 0;
}

int ic_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              int *ok, char **detail)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id want, at;
	char *live = NULL;
	*ok = 0;
	*detail = NULL;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	if ((rc = ic_state_snapshot(state, repo.uri, &want))) {
		ic_repository_close(&repo);
		return rc;
	}
	const char *sid = json_string_value(json_object_get(state, "snapshot_id"));
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	const char *pin = json_string_value(json_object_get(pin_ref, "pin"));
	if (pin_ref && (!tag || !pin)) {
		rc = tether_error_set(TETHER_ECONFIG, "icechunk pin_ref needs \"tag\" and \"pin\"");
	} else if (pin_ref) {
		rc = ic_live_tag(&repo, tag, pin, &live, &at);
		if (rc == 0 && !live)
			*detail = tt_strdupf("tag %s is missing", tag);
		else if (rc == 0 && memcmp(at.b, want.b, IC_ID_BYTES) != 0) {
			char have[IC_ID_CHARS + 1];
			ic_id_text(&at, have);
			*detail = tt_strdupf("tag %s points at %s, not %s", live, have, sid);
		} else if (rc == 0) {
			*ok = 1;
			if (strcmp(live, tag) != 0)
				*detail = tt_strdupf("pinned as %s", live);
		}
	} else {
		int exists = 0;
		rc = ic_snapshot_exists(&repo, &want, &exists);
		*ok = rc == 0 && exists;
		if (rc == 0 && !exists)
			*detail = tt_strdupf("snapshot %s is no longer in the repository", sid);
	}
	ic_repository_close(&repo);
	free(live);
	return rc;
}

/* verify --deep: verify's answer, then the snapshot file the pin names
 * fetched, decompressed and parsed (its id, parent, message and node
 * table), as a reader opening that snapshot would. A tag still naming
 * the snapshot says nothing about a snapshot file that is gone or
 * damaged; this does. */
int ic_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, int *ok, char **detail)
{
	int rc = ic_verify(ctx, locator, state, pin_ref, ok, detail);
	if (rc || !*ok)
		return rc;
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id want;
	if ((rc = ic_open_locator(ctx, locator, &loc, &repo)))
		return rc;
	if (!(rc = ic_state_snapshot(state, repo.uri, &want))) {
		struct ic_snapshot_file f;
		tether_error_clear();
		int bad = ic_snapshot_read(repo.store, &want, &f);
		if (bad == TETHER_ECANCELLED || bad == TETHER_ETRANSIENT) {
			rc = bad; /* not an answer about the snapshot */
		} else if (bad) {
			*ok = 0;
			free(*detail);
			*detail = tt_strdupf("snapshot %s cannot be read: %s",
			                     json_string_value(json_object_get(state, "snapshot_id")), tether_error_last());
		}
		ic_snapshot_free(&f);
	}
	ic_repository_close(&repo);
	return rc;
}
