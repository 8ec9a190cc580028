/* Small helpers the backend's files share: ids as text, states, errors. */
#include "backends/icechunk/ic.h"

#include "format/base32.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ic_id_text(const struct ic_id *id, char out[IC_ID_CHARS + 1])
{
	b32_encode(id->b, IC_ID_BYTES, out);
}

int ic_id_parse(const char *s, struct ic_id *out)
{
	char up[IC_ID_CHARS + 1], back[IC_ID_CHARS + 1];
	if (!s || strlen(s) != IC_ID_CHARS)
		return -1;
	for (int i = 0; i <= IC_ID_CHARS; i++)
		up[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
	if (b32_decode(up, IC_ID_CHARS, out->b, IC_ID_BYTES) != 0)
		return -1;
	/* Case aside, only the canonical spelling: "AAAA...A" decodes too, to
	 * the id whose canonical form ends in "0", and two spellings of one id
	 * would make two states of one snapshot. */
	ic_id_text(out, back);
	return strcmp(back, up) == 0 ? 0 : -1;
}

int ic_state_snapshot(const json_t *state, const char *what, struct ic_id *out)
{
	const char *sid = json_string_value(json_object_get(state, "snapshot_id"));
	if (!sid)
		return tether_error_set(TETHER_ECONFIG, "%s: an icechunk state needs \"snapshot_id\"", what);
	if (ic_id_parse(sid, out) != 0)
		return tether_error_set(TETHER_ECONFIG, "%s: \"%s\" is not an Icechunk snapshot id", what, sid);
	return 0;
}

json_t *ic_state_of(const struct ic_id *id)
{
	char text[IC_ID_CHARS + 1];
	ic_id_text(id, text);
	return json_pack("{s:s}", "snapshot_id", text);
}

int ic_store_keys(tether_store *s, const char *prefix, json_t **keys)
{
	tether_store_iter *it = NULL;
	*keys = json_array();
	int rc = *keys ? tether_store_list(s, prefix, NULL, 0, &it) : ic_fail_oom();
	for (const char *key = NULL; rc == 0;) {
		if ((rc = tether_store_next(it, &key)) || !key)
			break;
		if (json_array_append_new(*keys, json_string(key)) != 0)
			rc = ic_fail_oom();
	}
	tether_store_iter_free(it);
	if (rc) {
		json_decref(*keys);
		*keys = NULL;
	}
	return rc;
}
