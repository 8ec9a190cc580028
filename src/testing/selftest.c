/* The suite's own test: the honest memory backend passes every check, and
 * each of a set of lying copies of it fails the check its lie breaks. A
 * check that no lie can fail is a check that proves nothing. */
#include <tether/testing.h>

#include "backends/memory.h"
#include "core/registry.h"
#include "testing/harnesses.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct tether_backend *honest = &tt_backend_memory;
static atomic_ulong reads; /* the threads check calls it from several threads */

/* Each lie replaces one function of the memory backend. */

static int fingerprint_drifts(const struct tether_bctx *ctx, const json_t *loc, const json_t *policy,
                              struct tether_fingerprint *out)
{
	int rc = honest->fingerprint(ctx, loc, policy, out);
	if (!rc) /* a read counter that is not declared volatile */
		json_object_set_new(out->state, "reads", json_integer((json_int_t)atomic_fetch_add(&reads, 1) + 1));
	return rc;
}

static int identity_invents(const struct tether_bctx *ctx, const json_t *loc, json_t **identity)
{
	int rc = honest->identity(ctx, loc, identity);
	if (!rc)
		json_object_set_new(*identity, "region", json_string("nowhere"));
	return rc;
}

static int locator_accepts_anything(const struct tether_bctx *ctx, const char *uri, const json_t *options,
                                    const char *cwd, json_t **locator)
{
	(void)ctx;
	(void)options;
	(void)cwd;
	*locator = json_pack("{s:s}", "system", uri);
	return 0;
}

static int pin_unnamed(const struct tether_bctx *ctx, const json_t *loc, const json_t *state, const char *pin_id,
                       json_t **pin_ref, int *created)
{
	int rc = honest->pin(ctx, loc, state, pin_id, pin_ref, created);
	if (!rc)
		json_object_del(*pin_ref, "pin");
	return rc;
}

static int pin_always_created(const struct tether_bctx *ctx, const json_t *loc, const json_t *state,
                              const char *pin_id, json_t **pin_ref, int *created)
{
	int rc = honest->pin(ctx, loc, state, pin_id, pin_ref, created);
	*created = 1;
	return rc;
}

static int list_nothing(const struct tether_bctx *ctx, const json_t *loc, json_t **refs)
{
	(void)ctx;
	(void)loc;
	*refs = json_array();
	return 0;
}

static int unpin_nothing(const struct tether_bctx *ctx, const json_t *loc, const json_t *pin_ref)
{
	(void)ctx;
	(void)loc;
	(void)pin_ref;
	return 0;
}

static int fork_ignores_expect(const struct tether_bctx *ctx, const json_t *loc, const json_t *state,
                               const json_t *pin_ref, const char *branch, const json_t *expect, json_t **wref)
{
	(void)expect;
	return honest->fork(ctx, loc, state, pin_ref, branch, NULL, wref);
}

static int delete_nothing(const struct tether_bctx *ctx, const json_t *loc, const json_t *wref)
{
	(void)ctx;
	(void)loc;
	(void)wref;
	return 0;
}

static int open_always_read_only(const struct tether_bctx *ctx, const json_t *loc, const json_t *state,
                                 const json_t *pin_ref, const json_t *wref, int read_only, json_t **handle)
{
	(void)read_only;
	return honest->open(ctx, loc, state, pin_ref, wref, 1, handle);
}

static int diff_uncapped(const struct tether_bctx *ctx, const json_t *loc, const json_t *a, const json_t *b,
                         const char *la, size_t na, const char *lb, size_t nb, size_t max, json_t **diff)
{
	(void)max;
	return honest->diff(ctx, loc, a, b, la, na, lb, nb, 100000, diff);
}

static int history_oldest_first(const struct tether_bctx *ctx, const json_t *loc, int max_count, json_t **entries)
{
	json_t *all = NULL;
	int rc = honest->history(ctx, loc, 0, &all);
	if (rc)
		return rc;
	*entries = json_array();
	for (size_t i = json_array_size(all); i-- > 0;)
		if (max_count <= 0 || json_array_size(*entries) < (size_t)max_count)
			json_array_append(*entries, json_array_get(all, i));
	json_decref(all);
	return 0;
}

static int delete_store_always(const struct tether_bctx *ctx, const json_t *loc)
{
	(void)ctx;
	(void)loc;
	return 0;
}

/* A batch that vouches for everything. */
static int verify_many_trusting(const struct tether_bctx *ctx, struct tether_verify_item *items, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		items[i].ok = 1;
		items[i].detail = NULL;
	}
	return 0;
}

/* A streamed diff that sees no change. */
static int diff_streams_blind(const struct tether_bctx *ctx, const json_t *loc, const json_t *a, const json_t *b,
                              const struct tether_listing_source *la, const struct tether_listing_source *lb,
                              size_t max, json_t **diff)
{
	(void)ctx, (void)loc, (void)a, (void)b, (void)la, (void)lb, (void)max;
	*diff = json_pack("{s:s, s:s, s:[], s:n, s:b}", "unit", "keys", "summary", "no change", "entries", "totals",
	                  "truncated", 0);
	return 0;
}

struct lie {
	const char *what;
	const char *caught_by; /* the check that must fail */
	void (*apply)(struct tether_backend *b);
};

static void lie_fingerprint(struct tether_backend *b) { b->fingerprint = fingerprint_drifts; }
static void lie_identity(struct tether_backend *b) { b->identity = identity_invents; }
static void lie_locator(struct tether_backend *b) { b->make_locator = locator_accepts_anything; }
static void lie_pin(struct tether_backend *b) { b->pin = pin_unnamed; }
static void lie_created(struct tether_backend *b) { b->pin = pin_always_created; }
static void lie_list(struct tether_backend *b) { b->list_pins = list_nothing; }
static void lie_unpin(struct tether_backend *b) { b->unpin = unpin_nothing; }
static void lie_expect(struct tether_backend *b) { b->fork = fork_ignores_expect; }
static void lie_delete(struct tether_backend *b) { b->delete_working_ref = delete_nothing; }
static void lie_open(struct tether_backend *b) { b->open = open_always_read_only; }
static void lie_diff(struct tether_backend *b) { b->diff = diff_uncapped; }
static void lie_history(struct tether_backend *b) { b->history = history_oldest_first; }
static void lie_delete_store(struct tether_backend *b) { b->delete_store = delete_store_always; }
static void lie_maturity(struct tether_backend *b) { b->maturity = "beta"; }
static void lie_caps(struct tether_backend *b) { b->caps |= TETHER_CAP_MERGE; } /* without merge */
static void lie_no_verify(struct tether_backend *b) { b->verify = NULL; }          /* PIN without it */
static void lie_verify_many(struct tether_backend *b) { b->verify_many = verify_many_trusting; }
static void lie_diff_streams(struct tether_backend *b) { b->diff_streams = diff_streams_blind; }

static const struct lie lies[] = {
	{"a fingerprint with an undeclared counter", "fingerprint: deterministic", lie_fingerprint},
	{"an identity with a key the locator lacks", "identity: stable and a subset of the locator", lie_identity},
	{"make_locator accepting any option", "make_locator: an unknown option is refused", lie_locator},
	{"a pin_ref without \"pin\"", "pin: pin creates a ref that verify accepts", lie_pin},
	{"pin claiming to create a pin that existed", "pin: pinning the same state twice is idempotent", lie_created},
	{"list_pins listing nothing", "pin: list_pins lists it", lie_list},
	{"unpin doing nothing", "pin: unpin removes it and verify then fails", lie_unpin},
	{"fork ignoring expect", "fork: a stale expect is refused", lie_expect},
	{"delete_working_ref doing nothing", "fork: delete_working_ref removes it", lie_delete},
	{"open always read-only", "fork: open is read-only at the pin and writable", lie_open},
	{"diff ignoring max_entries", "diff: respects max_entries", lie_diff},
	{"history oldest first", "history: lists the newest state first", lie_history},
	{"delete_store deleting data", "create: delete_store after a mutate is refused", lie_delete_store},
	{"maturity \"beta\"", "backend: the struct is well formed", lie_maturity},
	{"MERGE declared without merge", "backend: the struct is well formed", lie_caps},
	{"PIN declared without verify (and no check may crash on it)", "pin: pin creates a ref", lie_no_verify},
	{"verify_many vouching for every state", "pin: verify_many answers as verify does", lie_verify_many},
	{"diff_streams seeing no change", "diff: diff_streams gives diff's answer", lie_diff_streams},
};

/* Run the suite on `b`; the report goes into *text (malloc'd). */
static int run(const struct tether_backend *b, char **text, struct tether_conformance_counts *counts)
{
	size_t len = 0;
	FILE *out = open_memstream(text, &len);
	if (!out)
		return -1;
	struct tether_harness h = *tt_harness_memory();
	h.backend = b;
	tether_conformance_run_counts(&h, out, counts);
	fclose(out);
	return 0;
}

static int line_starts(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, n) == 0)
			return 1;
	return 0;
}

int main(void)
{
	int failed = 0, passed = 0;
	char *text = NULL;
	struct tether_conformance_counts c;

	if (run(honest, &text, &c) != 0 || c.failed || c.passed < 25) {
		printf("FAIL the honest memory backend: %d passed, %d failed\n%s", c.passed, c.failed, text ? text : "");
		failed++;
	} else {
		printf("ok   the honest memory backend passes all %d checks\n", c.passed);
		passed++;
	}
	free(text);

	for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
		struct tether_backend liar = *honest;
		lies[i].apply(&liar);
		char want[256];
		snprintf(want, sizeof want, "FAIL %s", lies[i].caught_by);
		text = NULL;
		if (run(&liar, &text, &c) == 0 && line_starts(text, want)) {
			printf("ok   caught %s (%d checks failed)\n", lies[i].what, c.failed);
			passed++;
		} else {
			printf("FAIL %s was not caught by \"%s\":\n%s", lies[i].what, lies[i].caught_by, text ? text : "");
			failed++;
		}
		free(text);
	}
	tt_memory_reset();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
