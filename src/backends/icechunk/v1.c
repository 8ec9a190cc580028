/* Spec 1 (Icechunk 1.x) refs: one small JSON file per ref,
 * refs/branch.<name>/ref.json and refs/tag.<name>/ref.json, holding
 * {"snapshot":"<id>"}. A deleted tag keeps its ref.json and gains an empty
 * ref.json.deleted beside it, so the name is never reused. Tags are created
 * only if absent; a branch moves by compare-and-swap on its file's version
 * (icechunk/src/refs.rs). */
#include "backends/icechunk/ic.h"

#include <stdlib.h>
#include <string.h>

static char *ref_key(int tag, const char *name, const char *file)
{
	return tt_strdupf("refs/%s.%s/%s", tag ? "tag" : "branch", name, file);
}

static int valid_name(const char *name, int tag)
{
	if (!*name || strchr(name, '/'))
		return tether_error_set(TETHER_EUSAGE, "\"%s\" is not a valid Icechunk %s name", name,
		                        tag ? "tag" : "branch");
	return 0;
}

static int parse_ref(const uint8_t *data, size_t len, const char *what, struct ic_id *out)
{
	json_error_t err;
	json_t *doc = json_loadb((const char *)data, len, 0, &err);
	const char *sid = json_string_value(json_object_get(doc, "snapshot"));
	int rc = 0;
	if (!doc)
		rc = tether_error_set(TETHER_EIO, "%s is not JSON: %s", what, err.text);
	else if (!sid || ic_id_parse(sid, out) != 0)
		rc = tether_error_set(TETHER_EIO, "%s does not name a snapshot", what);
	json_decref(doc);
	return rc;
}

int ic_v1_ref(struct ic_repository *repo, int tag, const char *name, struct ic_id *out, int *found,
              struct tether_store_version *version)
{
	*found = 0;
	if (version)
		version->token[0] = '\0';
	int rc = valid_name(name, tag);
	if (rc)
		return rc;
	char *key = ref_key(tag, name, "ref.json");
	uint8_t *data = NULL;
	size_t len = 0;
	if (!key)
		return ic_fail_oom();
	rc = tether_store_get(repo->store, key, &data, &len, version);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		rc = 0;
	} else if (rc == 0) {
		char *what = tt_strdupf("%s/%s", repo->uri, key);
		rc = what ? parse_ref(data, len, what, out) : ic_fail_oom();
		*found = rc == 0;
		free(what);
	}
	if (rc == 0 && tag && *found) {
		int burnt = 0, live = 0;
		rc = ic_v1_tag_burnt(repo, name, &burnt, &live);
		*found = live;
	}
	free(data);
	free(key);
	return rc;
}

int ic_v1_tag_burnt(struct ic_repository *repo, const char *name, int *burnt, int *live)
{
	char *ref = ref_key(1, name, "ref.json"), *marker = ref_key(1, name, "ref.json.deleted");
	int has_ref = 0, has_marker = 0;
	int rc = ref && marker ? tether_store_head(repo->store, ref, &has_ref, NULL, NULL) : ic_fail_oom();
	if (rc == 0)
		rc = tether_store_head(repo->store, marker, &has_marker, NULL, NULL);
	*burnt = has_ref || has_marker;
	*live = has_ref && !has_marker;
	free(ref);
	free(marker);
	return rc;
}

/* The name in "refs/<kind>.<name>/<file>" when the key is of that kind and
 * file (malloc'd), else NULL. */
static char *name_in(const char *key, const char *prefix, const char *file)
{
	size_t plen = strlen(prefix);
	const char *slash = strncmp(key, prefix, plen) == 0 ? strchr(key + plen, '/') : NULL;
	if (!slash || strcmp(slash + 1, file) != 0 || slash == key + plen)
		return NULL;
	return strndup(key + plen, (size_t)(slash - (key + plen)));
}

static int listed(const json_t *keys, const char *key)
{
	size_t lo = 0, hi = json_array_size(keys);
	while (lo < hi) { /* the listing is sorted */
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(json_string_value(json_array_get(keys, mid)), key);
		if (c == 0)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int ic_v1_list_refs(struct ic_repository *repo, int tags, json_t **out)
{
	json_t *keys = NULL;
	*out = json_object();
	int rc = *out ? ic_store_keys(repo->store, "refs", &keys) : ic_fail_oom();
	const char *prefix = tags ? "refs/tag." : "refs/branch.";
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k) {
		char *name = rc ? NULL : name_in(json_string_value(k), prefix, "ref.json");
		if (!name)
			continue;
		char *marker = tags ? ref_key(1, name, "ref.json.deleted") : NULL;
		if (tags && !marker)
			rc = ic_fail_oom();
		else if (!marker || !listed(keys, marker)) {
			char *key = ref_key(tags, name, "ref.json"), *what = tt_strdupf("%s/%s", repo->uri, key ? key : "");
			uint8_t *data = NULL;
			size_t len = 0;
			struct ic_id id;
			char text[IC_ID_CHARS + 1];
			rc = key && what ? tether_store_get(repo->store, key, &data, &len, NULL) : ic_fail_oom();
			if (rc == TETHER_ENOTFOUND) { /* deleted since the listing */
				tether_error_clear();
				rc = 0;
			} else if (rc == 0 && (rc = parse_ref(data, len, what, &id)) == 0) {
				ic_id_text(&id, text);
				rc = json_object_set_new(*out, name, json_string(text)) ? ic_fail_oom() : 0;
			}
			free(data);
			free(key);
			free(what);
		}
		free(marker);
		free(name);
	}
	json_decref(keys);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static int put_ref(struct ic_repository *repo, int tag, const char *name, const struct ic_id *snap,
                   enum tether_put_mode mode, const struct tether_store_version *expect)
{
	char text[IC_ID_CHARS + 1];
	ic_id_text(snap, text);
	char *key = ref_key(tag, name, "ref.json");
	char *body = tt_strdupf("{\"snapshot\":\"%s\"}", text);
	int rc = key && body ? tether_store_put(repo->store, key, body, strlen(body), mode, expect, NULL) : ic_fail_oom();
	free(key);
	free(body);
	return rc;
}

int ic_v1_create_tag(struct ic_repository *repo, const char *name, const struct ic_id *snap)
{
	int rc = valid_name(name, 1);
	if (rc)
		return rc;
	rc = put_ref(repo, 1, name, snap, TETHER_PUT_IF_ABSENT, NULL);
	if (rc == TETHER_EREFUSED)
		rc = tether_error_set(TETHER_EREFUSED, "tag %s already exists (or existed: Icechunk never reuses "
		                                       "a tag name)", name);
	return rc;
}

int ic_v1_delete_tag(struct ic_repository *repo, const char *name)
{
	int burnt = 0, live = 0;
	int rc = valid_name(name, 1);
	if (rc || (rc = ic_v1_tag_burnt(repo, name, &burnt, &live)))
		return rc;
	if (!live)
		return tether_error_set(TETHER_ENOTFOUND, "tag %s does not exist", name);
	char *marker = ref_key(1, name, "ref.json.deleted");
	rc = marker ? tether_store_put(repo->store, marker, "", 0, TETHER_PUT_IF_ABSENT, NULL, NULL) : ic_fail_oom();
	if (rc == TETHER_EREFUSED) {
		tether_error_clear();
		rc = 0; /* deleted meanwhile: gone either way */
	}
	free(marker);
	return rc;
}

int ic_v1_set_branch(struct ic_repository *repo, const char *name, const struct ic_id *to,
                     int expect_absent, const struct ic_id *expect)
{
	int rc = valid_name(name, 0);
	for (int attempt = 0; rc == 0 && attempt < 100; attempt++) {
		struct ic_id now;
		struct tether_store_version version;
		int found = 0;
		if ((rc = ic_v1_ref(repo, 0, name, &now, &found, &version)))
			return rc;
		char want[IC_ID_CHARS + 1] = "absent", have[IC_ID_CHARS + 1] = "absent";
		if (expect)
			ic_id_text(expect, want);
		if (found)
			ic_id_text(&now, have);
		if ((expect_absent && found) || (expect && (!found || memcmp(now.b, expect->b, IC_ID_BYTES) != 0)))
			return tether_error_set(TETHER_EREFUSED, "branch %s is at %s, expected %s", name, have,
			                        expect_absent ? "absent" : want);
		if (found && memcmp(now.b, to->b, IC_ID_BYTES) == 0)
			return 0;
		rc = found ? put_ref(repo, 0, name, to, TETHER_PUT_IF_MATCH, &version)
		           : put_ref(repo, 0, name, to, TETHER_PUT_IF_ABSENT, NULL);
		if (rc != TETHER_EREFUSED)
			return rc;
		tether_error_clear();
		rc = 0; /* moved under us: read again, and judge again */
	}
	return rc ? rc : tether_error_set(TETHER_EREFUSED, "branch %s kept changing", name);
}

/* With `expect`, the ref file is read and compared first. The store has
 * no delete-if-match (Icechunk 1.x itself deletes a branch's ref file
 * unconditionally), so a writer whose ref.json lands between that read
 * and the delete is the one window left: far narrower than a re-read
 * before the call, and the same one Icechunk's own delete_branch has. */
int ic_v1_delete_branch(struct ic_repository *repo, const char *name, const struct ic_id *expect)
{
	int rc = valid_name(name, 0);
	if (rc)
		return rc;
	if (strcmp(name, "main") == 0)
		return tether_error_set(TETHER_EREFUSED, "Icechunk never deletes its main branch");
	if (expect) {
		struct ic_id now;
		int found = 0;
		if ((rc = ic_v1_ref(repo, 0, name, &now, &found, NULL)))
			return rc;
		if (!found)
			return 0;
		if (memcmp(now.b, expect->b, IC_ID_BYTES) != 0) {
			char have[IC_ID_CHARS + 1], want[IC_ID_CHARS + 1];
			ic_id_text(&now, have);
			ic_id_text(expect, want);
			return tether_error_set(TETHER_EREFUSED, "branch %s is at %s, expected %s; not deleted", name,
			                        have, want);
		}
	}
	char *key = ref_key(0, name, "ref.json");
	rc = key ? tether_store_delete(repo->store, key) : ic_fail_oom();
	free(key);
	return rc;
}
