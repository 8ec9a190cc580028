/* Pin ids: stable, content-addressed, blind to volatile keys. */
#include "check.h"

#include "core/pinid.h"
#include "format/cjson.h"

static const char *const vol_keys[] = {"lsn", NULL};
static const struct tether_backend vol_backend = {TETHER_BACKEND_INIT, .kind = "vol", .volatile_keys = vol_keys};

int main(void)
{
	const char *ds = "0123456789abcdef0123456789abcdef";
	json_t *identity = json_pack("{s:s}", "uri", "/data/x");
	json_t *state = json_pack("{s:s, s:i, s:s}", "type", "file", "size", 3, "sha256", "ab");
	char a[TT_PIN_ID_LEN + 1], b[TT_PIN_ID_LEN + 1];

	CHECK(tt_pin_id(ds, "file", identity, state, a) == 0);
	CHECK(strlen(a) == TT_PIN_ID_LEN);
	CHECK(strncmp(a, "01234567.", 9) == 0);

	/* The id hashes canonical JSON: key order in the input does not matter. */
	json_t *reordered = json_pack("{s:s, s:s, s:i}", "sha256", "ab", "type", "file", "size", 3);
	CHECK(tt_pin_id(ds, "file", identity, reordered, b) == 0);
	CHECK_STR(a, b);

	/* A fixed vector: sha256 of the canonical document below. */
	json_t *doc = json_pack("{s:O, s:s, s:O}", "identity", identity, "kind", "file", "state", state);
	char *text = tt_cjson(doc);
	json_decref(doc);
	CHECK_STR(text, "{\"identity\":{\"uri\":\"/data/x\"},\"kind\":\"file\",\"state\":{\"sha256\":\"ab\",\"size\":3,\"type\":\"file\"}}");
	char hex[65];
	tether_sha256_hex(text, strlen(text), hex);
	CHECK(strncmp(a + 9, hex, 16) == 0);
	free(text);

	/* Any change of kind, identity or state changes the id. */
	json_t *other_state = json_pack("{s:s, s:i, s:s}", "type", "file", "size", 4, "sha256", "ab");
	CHECK(tt_pin_id(ds, "file", identity, other_state, b) == 0);
	CHECK(strcmp(a, b) != 0);
	CHECK(tt_pin_id(ds, "other", identity, state, b) == 0);
	CHECK(strcmp(a, b) != 0);
	json_t *other_identity = json_pack("{s:s}", "uri", "/data/y");
	CHECK(tt_pin_id(ds, "file", other_identity, state, b) == 0);
	CHECK(strcmp(a, b) != 0);
	CHECK(tt_pin_id("abc", "file", identity, state, b) != 0);

	/* Volatile keys are addresses, not content. */
	json_t *s1 = json_pack("{s:s, s:i}", "commit_xid", "10", "lsn", 1);
	json_t *s2 = json_pack("{s:s, s:i}", "commit_xid", "10", "lsn", 2);
	json_t *s3 = json_pack("{s:s, s:i}", "commit_xid", "11", "lsn", 1);
	CHECK(tt_same_content(&vol_backend, s1, s2));
	CHECK(!tt_same_content(&vol_backend, s1, s3));
	CHECK(!tt_same_content(&vol_backend, s1, NULL));
	json_t *c1 = tt_content_state(&vol_backend, s1);
	CHECK(json_object_get(c1, "lsn") == NULL);
	CHECK(json_object_get(s1, "lsn") != NULL);

	json_decref(c1);
	json_decref(s1);
	json_decref(s2);
	json_decref(s3);
	json_decref(identity);
	json_decref(other_identity);
	json_decref(state);
	json_decref(reordered);
	json_decref(other_state);
	CHECK_DONE();
}
