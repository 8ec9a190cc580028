#include "core/pinid.h"

#include "core/abi.h"
#include "format/cjson.h"

#include <string.h>

json_t *tt_content_state(const struct tether_backend *b, const json_t *state)
{
	json_t *copy = json_deep_copy(state);
	const char *const *keys = TT_BACKEND_GET(b, volatile_keys);
	for (size_t i = 0; keys && keys[i]; i++)
		json_object_del(copy, keys[i]);
	return copy;
}

int tt_same_content(const struct tether_backend *b, const json_t *a, const json_t *c)
{
	if (!a || !c)
		return a == c;
	json_t *ca = tt_content_state(b, a), *cc = tt_content_state(b, c);
	int same = json_equal(ca, cc);
	json_decref(ca);
	json_decref(cc);
	return same;
}

int tt_pin_id(const char *dataset_id, const char *kind, const json_t *identity,
              const json_t *content_state, char out[TT_PIN_ID_LEN + 1])
{
	if (!dataset_id || strlen(dataset_id) < 8)
		return tether_error_set(TETHER_ECONFIG, "the dataset id is too short for pin ids");
	json_t *doc = json_pack("{s:s, s:O, s:O}", "kind", kind, "identity", identity, "state",
	                        content_state);
	if (!doc)
		return tether_error_set(TETHER_ERROR, "cannot build the pin id of a %s object", kind);
	char hex[65];
	int rc = tt_cjson_sha256(doc, hex);
	json_decref(doc);
	if (rc)
		return rc;
	memcpy(out, dataset_id, 8);
	out[8] = '.';
	memcpy(out + 9, hex, 16);
	out[TT_PIN_ID_LEN] = '\0';
	return 0;
}
