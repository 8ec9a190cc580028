/* The suite's own test: the honest memory backend passes every check, and
 * each of a set of lying copies of it fails the check its lie breaks. A
 * check that no lie can fail is a check that proves nothing. */
#include <tether/testing.h>

#include "backends/memory.h"
#include "core/registry.h"
#include "testing/harnesses.h"

#include <pthread.h>
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

static int delete_if_ignoring_expect(const struct tether_bctx *ctx, const json_t *loc, const json_t *wref,
                                     const json_t *expect)
{
	(void)expect;
	return honest->delete_working_ref(ctx, loc, wref);
}

static int descends_always(const struct tether_bctx *ctx, const json_t *loc, const json_t *a, const json_t *d,
                           int *answer)
{
	(void)ctx;
	(void)loc;
	(void)a;
	(void)d;
	*answer = 1;
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

/* Sessions. The memory backend has none; these copies add one. An honest
 * session holds nothing but a mark that it is open: every wrapped call
 * checks that a session it is handed is open (a closed one is freed, and
 * ASan reports the read), and counts how many calls carried one. The
 * stale session caches each locator's fingerprint, as a session that
 * mistook "costly to open" for "safe to keep" would. */
#define SESSION_OPEN 0x5e551011u
struct mem_session {
	unsigned mark;
	pthread_mutex_t mu;
	json_t *states; /* locator (canonical JSON) -> state; the stale one only */
};
static atomic_int sessions_open, sessions_opened, calls_with_session;

static int mem_open_store(const struct tether_bctx *ctx, const json_t *loc, const json_t *identity, void **session)
{
	(void)ctx, (void)loc;
	if (!json_is_object(identity))
		return TETHER_ERROR;
	struct mem_session *m = calloc(1, sizeof *m);
	if (!m)
		return TETHER_ERROR;
	m->mark = SESSION_OPEN;
	pthread_mutex_init(&m->mu, NULL);
	m->states = json_object();
	atomic_fetch_add(&sessions_open, 1);
	atomic_fetch_add(&sessions_opened, 1);
	*session = m;
	return 0;
}

static void mem_close_store(const struct tether_bctx *ctx, void *session)
{
	(void)ctx;
	struct mem_session *m = session;
	if (m->mark != SESSION_OPEN)
		abort(); /* closed twice */
	m->mark = 0;
	json_decref(m->states);
	pthread_mutex_destroy(&m->mu);
	free(m);
	atomic_fetch_sub(&sessions_open, 1);
}

/* 0, or the error for a session that is not open. */
static int session_checked(const struct tether_bctx *ctx)
{
	const struct mem_session *m = ctx->session;
	if (!m)
		return 0;
	if (m->mark != SESSION_OPEN)
		return tether_error_set(TETHER_ERROR, "memory (selftest): handed a session that is not open");
	atomic_fetch_add(&calls_with_session, 1);
	return 0;
}

static int fingerprint_in_session(const struct tether_bctx *ctx, const json_t *loc, const json_t *policy,
                                  struct tether_fingerprint *out)
{
	int rc = session_checked(ctx);
	return rc ? rc : honest->fingerprint(ctx, loc, policy, out);
}

static int identity_in_session(const struct tether_bctx *ctx, const json_t *loc, json_t **identity)
{
	int rc = session_checked(ctx);
	return rc ? rc : honest->identity(ctx, loc, identity);
}

static int pin_in_session(const struct tether_bctx *ctx, const json_t *loc, const json_t *state,
                          const char *pin_id, json_t **pin_ref, int *created)
{
	int rc = session_checked(ctx);
	return rc ? rc : honest->pin(ctx, loc, state, pin_id, pin_ref, created);
}

static int verify_in_session(const struct tether_bctx *ctx, const json_t *loc, const json_t *state,
                             const json_t *pin_ref, int *ok, char **detail)
{
	int rc = session_checked(ctx);
	return rc ? rc : honest->verify(ctx, loc, state, pin_ref, ok, detail);
}

static int fork_in_session(const struct tether_bctx *ctx, const json_t *loc, const json_t *state,
                           const json_t *pin_ref, const char *branch, const json_t *expect, json_t **wref)
{
	int rc = session_checked(ctx);
	return rc ? rc : honest->fork(ctx, loc, state, pin_ref, branch, expect, wref);
}

/* The stale session: the first fingerprint of a locator is kept and
 * given again for as long as the session is open. */
static int fingerprint_stale(const struct tether_bctx *ctx, const json_t *loc, const json_t *policy,
                             struct tether_fingerprint *out)
{
	struct mem_session *m = ctx->session;
	int rc = session_checked(ctx);
	if (rc || !m)
		return rc ? rc : honest->fingerprint(ctx, loc, policy, out);
	char *key = json_dumps(loc, JSON_COMPACT | JSON_SORT_KEYS);
	if (!key)
		return TETHER_ERROR;
	pthread_mutex_lock(&m->mu);
	json_t *kept = json_object_get(m->states, key);
	if (kept) {
		out->state = json_deep_copy(kept);
	} else if (!(rc = honest->fingerprint(ctx, loc, policy, out))) {
		json_object_set_new(m->states, key, json_deep_copy(out->state));
	}
	pthread_mutex_unlock(&m->mu);
	free(key);
	return rc;
}

static void with_sessions(struct tether_backend *b)
{
	b->open_store = mem_open_store;
	b->close_store = mem_close_store;
	b->fingerprint = fingerprint_in_session;
	b->identity = identity_in_session;
	b->pin = pin_in_session;
	b->verify = verify_in_session;
	b->fork = fork_in_session;
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
static void lie_delete_if(struct tether_backend *b) { b->delete_working_ref_if = delete_if_ignoring_expect; }
static void lie_descends(struct tether_backend *b) { b->descends = descends_always; }
static void lie_diff(struct tether_backend *b) { b->diff = diff_uncapped; }
static void lie_history(struct tether_backend *b) { b->history = history_oldest_first; }
static void lie_delete_store(struct tether_backend *b) { b->delete_store = delete_store_always; }
static void lie_maturity(struct tether_backend *b) { b->maturity = "beta"; }
static void lie_caps(struct tether_backend *b) { b->caps |= TETHER_CAP_MERGE; } /* without merge */
static void lie_no_verify(struct tether_backend *b) { b->verify = NULL; }          /* PIN without it */
static void lie_verify_many(struct tether_backend *b) { b->verify_many = verify_many_trusting; }
static void lie_diff_streams(struct tether_backend *b) { b->diff_streams = diff_streams_blind; }

static void lie_stale_session(struct tether_backend *b)
{
	with_sessions(b);
	b->fingerprint = fingerprint_stale;
}
static void lie_close_alone(struct tether_backend *b) { b->close_store = mem_close_store; }

static const struct lie lies[] = {
	{"a session keeping a stale state", "sessions: every call answers with ctx->session NULL as with the session",
	 lie_stale_session},
	{"a session keeping a stale state (from threads)",
	 "sessions: calls from several threads on one session answer as without one", lie_stale_session},
	{"a session keeping a stale state (in every check)", "fingerprint: changes after mutate", lie_stale_session},
	{"close_store without open_store", "backend: the struct is well formed", lie_close_alone},
	{"a fingerprint with an undeclared counter", "fingerprint: deterministic", lie_fingerprint},
	{"an identity with a key the locator lacks", "identity: stable and a subset of the locator", lie_identity},
	{"make_locator accepting any option", "make_locator: an unknown option is refused", lie_locator},
	{"a pin_ref without \"pin\"", "pin: pin creates a ref that verify accepts", lie_pin},
	{"pin claiming to create a pin that existed", "pin: pinning the same state twice is idempotent", lie_created},
	{"list_pins listing nothing", "pin: list_pins lists it", lie_list},
	{"unpin doing nothing", "pin: unpin removes it and verify then fails", lie_unpin},
	{"fork ignoring expect", "fork: a stale expect is refused", lie_expect},
	{"delete_working_ref doing nothing", "fork: delete_working_ref removes it", lie_delete},
	{"delete_working_ref_if ignoring expect", "fork: delete_working_ref_if deletes only at the expected head",
	 lie_delete_if},
	{"descends answering yes to everything", "fork: descends tells a fork's writes from a base", lie_descends},
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

	/* With sessions: every check passes, each runs in sessions (calls
	 * carry one), and every session opened is closed. */
	struct tether_backend sessioned = *honest;
	with_sessions(&sessioned);
	text = NULL;
	if (run(&sessioned, &text, &c) != 0 || c.failed || c.passed < 27 || atomic_load(&sessions_open) != 0 ||
	    atomic_load(&sessions_opened) < c.passed || atomic_load(&calls_with_session) == 0) {
		printf("FAIL the memory backend with sessions: %d passed, %d failed; %d sessions opened, %d left "
		       "open, %d calls carried one\n%s", c.passed, c.failed, atomic_load(&sessions_opened),
		       atomic_load(&sessions_open), atomic_load(&calls_with_session), text ? text : "");
		failed++;
	} else {
		printf("ok   the memory backend with sessions passes all %d checks (%d sessions opened and closed, "
		       "%d calls in one)\n", c.passed, atomic_load(&sessions_opened), atomic_load(&calls_with_session));
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
	/* The liars' checks failed; their sessions were closed all the same. */
	if (atomic_load(&sessions_open) != 0) {
		printf("FAIL %d sessions were left open by failing checks\n", atomic_load(&sessions_open));
		failed++;
	} else {
		printf("ok   every session a failing check opened was closed\n");
		passed++;
	}
	tt_memory_reset();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
