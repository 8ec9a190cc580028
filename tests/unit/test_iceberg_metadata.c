/* The Iceberg table-metadata rules tether applies itself for a SQL
 * catalog (src/backends/iceberg/metadata_apply.c): requirements, and
 * set-snapshot-ref / remove-snapshot-ref as the spec and pyiceberg's
 * update_table_metadata do them, every other field carried over. */
#include "check.h"

#include "backends/iceberg/ib.h"

static json_t *table(void)
{
	/* Two snapshots on main (1 <- 2), the shape pyiceberg writes. */
	return json_loads("{\"format-version\":2,\"table-uuid\":\"c45c35a7-c2b1-45f0-ace5-05818aed707f\","
	                  "\"location\":\"file:///w/ns/t\",\"last-updated-ms\":1000,\"last-sequence-number\":2,"
	                  "\"current-snapshot-id\":2,\"x-unknown\":{\"kept\":[1,\"a\",null]},"
	                  "\"snapshots\":[{\"snapshot-id\":1,\"sequence-number\":1,\"timestamp-ms\":500,"
	                  "\"summary\":{\"operation\":\"append\",\"added-records\":\"5\"}},"
	                  "{\"snapshot-id\":2,\"parent-snapshot-id\":1,\"sequence-number\":2,\"timestamp-ms\":900,"
	                  "\"summary\":{\"operation\":\"append\",\"added-records\":\"3\"}}],"
	                  "\"snapshot-log\":[{\"snapshot-id\":1,\"timestamp-ms\":500},{\"snapshot-id\":2,\"timestamp-ms\":900}],"
	                  "\"metadata-log\":[],\"refs\":{\"main\":{\"snapshot-id\":2,\"type\":\"branch\"}}}",
	                  0, NULL);
}

static json_t *apply(const json_t *md, json_t *updates, int64_t now, int *changed, int *rc)
{
	json_t *out = NULL;
	*rc = ib_updates_apply(md, "file:///w/ns/t/metadata/00001-x.metadata.json", updates, now, "t", &out, changed);
	json_decref(updates);
	return out;
}

int main(void)
{
	json_t *md = table();
	int changed = 0, rc = 0;
	CHECK(md != NULL);

	/* Requirements. */
	json_t *ok = json_pack("[o, o, o]", ib_req_uuid(md), ib_req_ref("main", 2, 0), ib_req_ref("feat", -1, 1));
	CHECK(ib_requirements_check(md, ok, "t") == 0);
	json_t *moved = json_pack("[o]", ib_req_ref("main", 1, 0));
	CHECK(ib_requirements_check(md, moved, "t") == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "ref main moved: expected 1, found 2") != NULL);
	json_t *exists = json_pack("[o]", ib_req_ref("main", -1, 1));
	CHECK(ib_requirements_check(md, exists, "t") == TETHER_EREFUSED);
	json_t *other = json_pack("[{s:s, s:s}]", "type", "assert-table-uuid", "uuid", "00000000-0000-4000-8000-000000000000");
	CHECK(ib_requirements_check(md, other, "t") == TETHER_EREFUSED);
	json_t *unknown = json_pack("[{s:s}]", "type", "assert-something-new");
	CHECK(ib_requirements_check(md, unknown, "t") == TETHER_EUSAGE);
	json_decref(ok), json_decref(moved), json_decref(exists), json_decref(other), json_decref(unknown);

	/* A tag: refs gains it; every other field but last-updated-ms and
	 * metadata-log as it was; no sequence number moves. */
	json_t *out = apply(md, json_pack("[o]", ib_upd_set_ref("tether.x", 1, "tag")), 2000, &changed, &rc);
	CHECK(rc == 0 && changed);
	CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(out, "refs"), "tether.x"), "snapshot-id")) == 1);
	CHECK(json_integer_value(json_object_get(out, "last-updated-ms")) == 2000);
	CHECK(json_integer_value(json_object_get(out, "last-sequence-number")) == 2);
	CHECK(json_integer_value(json_object_get(out, "current-snapshot-id")) == 2);
	CHECK(json_array_size(json_object_get(out, "snapshot-log")) == 2);
	CHECK(json_equal(json_object_get(out, "x-unknown"), json_object_get(md, "x-unknown")));
	CHECK(json_equal(json_object_get(out, "snapshots"), json_object_get(md, "snapshots")));
	json_t *entry = json_array_get(json_object_get(out, "metadata-log"), 0);
	CHECK_STR(json_string_value(json_object_get(entry, "metadata-file")), "file:///w/ns/t/metadata/00001-x.metadata.json");
	CHECK(json_integer_value(json_object_get(entry, "timestamp-ms")) == 1000);
	/* The input is untouched. */
	CHECK(json_object_get(json_object_get(md, "refs"), "tether.x") == NULL);

	/* Setting it again to the same: nothing to write. */
	json_t *again = apply(out, json_pack("[o]", ib_upd_set_ref("tether.x", 1, "tag")), 3000, &changed, &rc);
	CHECK(rc == 0 && !changed);
	json_decref(again);

	/* main moves current-snapshot-id and appends to snapshot-log; a clock
	 * behind the table's is not taken back. */
	json_t *back = apply(out, json_pack("[o]", ib_upd_set_ref("main", 1, "branch")), 10, &changed, &rc);
	CHECK(rc == 0 && changed);
	CHECK(json_integer_value(json_object_get(back, "current-snapshot-id")) == 1);
	json_t *last = json_array_get(json_object_get(back, "snapshot-log"), 2);
	CHECK(json_integer_value(json_object_get(last, "snapshot-id")) == 1);
	CHECK(json_integer_value(json_object_get(back, "last-updated-ms")) >= 2000);
	CHECK(json_array_size(json_object_get(back, "metadata-log")) == 2);
	json_decref(back);

	/* Removing a ref; main and unknown snapshots refused; an absent ref is
	 * no change. */
	json_t *gone = apply(out, json_pack("[o]", ib_upd_remove_ref("tether.x")), 4000, &changed, &rc);
	CHECK(rc == 0 && changed && !json_object_get(json_object_get(gone, "refs"), "tether.x"));
	json_decref(gone);
	CHECK(!apply(md, json_pack("[o]", ib_upd_remove_ref("main")), 4000, &changed, &rc) && rc == TETHER_EREFUSED);
	CHECK(!apply(md, json_pack("[o]", ib_upd_set_ref("b", 99, "branch")), 4000, &changed, &rc) &&
	      rc == TETHER_EREFUSED);
	json_t *none = apply(md, json_pack("[o]", ib_upd_remove_ref("nope")), 4000, &changed, &rc);
	CHECK(rc == 0 && !changed);
	json_decref(none);
	/* Updates tether does not apply are refused, not half-done. */
	CHECK(!apply(md, json_pack("[{s:s}]", "action", "add-snapshot"), 4000, &changed, &rc) && rc == TETHER_EUSAGE);

	/* metadata-log trimmed to write.metadata.previous-versions-max. */
	json_t *small = json_deep_copy(out);
	json_object_set_new(small, "properties", json_pack("{s:s}", "write.metadata.previous-versions-max", "1"));
	json_t *trimmed = apply(small, json_pack("[o]", ib_upd_set_ref("tether.y", 2, "tag")), 5000, &changed, &rc);
	CHECK(rc == 0 && json_array_size(json_object_get(trimmed, "metadata-log")) == 1);
	json_decref(trimmed);
	json_decref(small);

	/* An empty table (no current-snapshot-id): main is absent. */
	json_t *empty = json_loads("{\"format-version\":2,\"table-uuid\":\"u\",\"last-updated-ms\":1,\"snapshots\":[],"
	                           "\"refs\":{}}", 0, NULL);
	int64_t id = 0;
	int found = 0;
	CHECK(ib_md_ref(empty, "main", &id, &found, NULL) == 0 && found && id == -1);
	json_t *absent = json_pack("[o]", ib_req_ref("main", -1, 1));
	CHECK(ib_requirements_check(empty, absent, "t") == 0);
	json_decref(absent);
	json_decref(empty);

	/* Refused before anything: an unknown format version, a float. */
	json_t *v4 = json_deep_copy(md);
	json_object_set_new(v4, "format-version", json_integer(4));
	CHECK(!apply(v4, json_pack("[o]", ib_upd_set_ref("t1", 1, "tag")), 1, &changed, &rc) && rc == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "format version 4 is not supported") != NULL);
	json_t *real = json_deep_copy(md);
	json_object_set_new(real, "x-ratio", json_real(0.1));
	CHECK(!apply(real, json_pack("[o]", ib_upd_set_ref("t1", 1, "tag")), 1, &changed, &rc) && rc == TETHER_EREFUSED);
	json_decref(v4);
	json_decref(real);

	/* Ancestry. */
	CHECK(ib_md_is_ancestor(md, 1, 2) && !ib_md_is_ancestor(md, 2, 1) && ib_md_is_ancestor(md, 2, 2));
	json_decref(out);
	json_decref(md);
	CHECK_DONE();
}
