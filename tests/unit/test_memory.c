/* The memory backend: the reference lifecycle the engine relies on. */
#include "check.h"

#include "backends/memory.h"
#include "core/pinid.h"
#include "core/registry.h"

int main(void)
{
	const struct tether_backend *b = tether_backend_find("memory");
	CHECK(b == &tt_backend_memory);
	CHECK(tether_backend_find("nope") == NULL);
	CHECK(strstr(tether_error_last(), "unknown kind 'nope'") != NULL);
	CHECK(tether_backend_register(&tt_backend_memory) == TETHER_EREFUSED);
	struct tether_bctx ctx = {.dataset_id = "0123456789abcdef0123456789abcdef", .threads = 1};

	json_t *locator = NULL, *no_opts = json_object(), *bad_opts = json_pack("{s:s}", "bogus", "x");
	CHECK(b->make_locator(&ctx, "memory://sys", no_opts, "/", &locator) == 0);
	json_t *unused = NULL;
	CHECK(b->make_locator(&ctx, "memory://sys", bad_opts, "/", &unused) == TETHER_EUSAGE);
	json_decref(no_opts);
	json_decref(bad_opts);
	struct tether_fingerprint fp;
	CHECK(b->fingerprint(&ctx, locator, NULL, &fp) == TETHER_ENOTFOUND);
	CHECK(b->create_store(&ctx, locator) == 0);
	CHECK(b->create_store(&ctx, locator) == TETHER_EREFUSED);

	CHECK(b->fingerprint(&ctx, locator, NULL, &fp) == 0);
	json_t *s0 = fp.state;
	CHECK(tt_memory_write("sys", "main", "x", json_integer(1), NULL) == 0);
	CHECK(b->fingerprint(&ctx, locator, NULL, &fp) == 0);
	json_t *s1 = fp.state;
	CHECK(!json_equal(s0, s1));

	/* Pin, verify, list, unpin. */
	json_t *identity;
	CHECK(b->identity(&ctx, locator, &identity) == 0);
	char pin_id[TT_PIN_ID_LEN + 1];
	CHECK(tt_pin_id(ctx.dataset_id, "memory", identity, s1, pin_id) == 0);
	json_t *pin_ref = NULL;
	int created = -1;
	CHECK(b->pin(&ctx, locator, s1, pin_id, &pin_ref, &created) == 0 && created == 1);
	int ok = 0;
	char *detail = NULL;
	CHECK(b->verify(&ctx, locator, s1, pin_ref, &ok, &detail) == 0 && ok);
	json_t *pins;
	CHECK(b->list_pins(&ctx, locator, &pins) == 0 && json_array_size(pins) == 1);
	json_decref(pins);
	/* Pinning the same id at another snapshot is refused. */
	json_t *again = NULL;
	CHECK(b->pin(&ctx, locator, s0, pin_id, &again, &created) == TETHER_EREFUSED && created == 0);
	free(detail);
	detail = NULL;

	/* Fork from the pin, write on the fork, the pin still reads the old data. */
	json_t *wref = NULL, *absent = json_pack("{s:n}", "snapshot_id");
	CHECK(b->fork(&ctx, locator, s1, pin_ref, "tether.ws.01234567.feature", absent, &wref) == 0);
	json_decref(absent);
	CHECK(tt_memory_write("sys", "tether.ws.01234567.feature", "x", json_integer(2), NULL) == 0);
	json_t *pinned = tt_memory_read("sys", json_string_value(json_object_get(pin_ref, "tag")));
	CHECK(json_integer_value(json_object_get(pinned, "x")) == 1);
	json_decref(pinned);
	/* A conditional fork from a stale head is refused. */
	json_t *wref2 = NULL;
	CHECK(b->fork(&ctx, locator, s1, pin_ref, "tether.ws.01234567.feature", s1, &wref2) == TETHER_EREFUSED);

	/* This dataset's working branches, with their heads; another
	 * dataset's branch is not listed. */
	json_t *other = NULL, *wrefs = NULL;
	CHECK(b->fork(&ctx, locator, s1, pin_ref, "tether.ws.76543210.feature", NULL, &other) == 0);
	CHECK(b->list_working_refs(&ctx, locator, &wrefs) == 0 && json_array_size(wrefs) == 1);
	json_t *row = json_array_get(wrefs, 0);
	CHECK_STR(json_string_value(json_object_get(row, "branch")), "tether.ws.01234567.feature");
	CHECK(json_equal(json_object_get(row, "ref"), wref));
	json_t *head = tt_memory_read("sys", json_string_value(json_object_get(json_object_get(row, "head"),
	                                                                        "snapshot_id")));
	CHECK(json_integer_value(json_object_get(head, "x")) == 2);
	json_decref(head);
	json_decref(wrefs);
	CHECK(b->delete_working_ref(&ctx, locator, other) == 0);
	json_decref(other);

	/* Diff and history. */
	json_t *d = NULL;
	CHECK(b->diff(&ctx, locator, s0, s1, NULL, 0, NULL, 0, 10, &d) == 0);
	CHECK(json_integer_value(json_object_get(json_object_get(d, "totals"), "added")) == 1);
	json_decref(d);
	json_t *hist;
	CHECK(b->history(&ctx, locator, 0, &hist) == 0 && json_array_size(hist) == 2);
	json_decref(hist);

	/* A store holding data is not deleted. */
	CHECK(b->delete_store(&ctx, locator) == TETHER_EREFUSED);
	CHECK(b->unpin(&ctx, locator, pin_ref) == 0);
	CHECK(b->verify(&ctx, locator, s1, pin_ref, &ok, &detail) == 0 && !ok);
	CHECK(detail && strstr(detail, "missing") != NULL);
	free(detail);
	CHECK(b->delete_working_ref(&ctx, locator, wref) == 0);
	CHECK(b->list_working_refs(&ctx, locator, &wrefs) == 0 && json_array_size(wrefs) == 0);
	json_decref(wrefs);

	json_t *names = tether_backends();
	CHECK(json_array_size(names) >= 2);
	json_decref(names);
	CHECK_STR(tether_tier_name(b->caps), "forkable");
	CHECK_STR(tether_tier_name(TETHER_CAP_FINGERPRINT), "observed");

	json_decref(identity);
	json_decref(pin_ref);
	json_decref(wref);
	json_decref(s0);
	json_decref(s1);
	json_decref(locator);
	tt_memory_reset();
	CHECK_DONE();
}
