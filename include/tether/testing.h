/* tether's backend conformance suite: the definition of "a backend works".
 *
 * A harness hands the suite a backend and three ways to act on the real
 * system behind it: make a fresh system, change its state, and clean up.
 * tether_conformance_run() then drives the backend through the lifecycle
 * its tier and flags promise (fingerprint, pin, fork, diff, history,
 * create, promote, merge), one fresh system per check, and prints one line
 * per check. A backend that declares sessions (open_store/close_store) is
 * called as the engine calls it: each call with its store's session in
 * ctx->session, closed when the check ends; added checks compare calls
 * with the session to calls with ctx->session NULL, from one thread and
 * from several at once:
 *
 *     ok   pin: identical states share one pin
 *     FAIL fork: a stale expect is refused (TETHER_EREFUSED): fork with a stale
 *          expect succeeded; it must be refused with TETHER_EREFUSED
 *     skip create: create_store then ...: the harness has no new_locator
 *
 * Link libtether-testing (pkg-config tether-testing, which brings libtether),
 * or validate a module with the `tether-conformance` runner, which loads a
 * harness from a shared object exporting tether_harness_entry. See
 * docs/BACKENDS.md. */
#ifndef TETHER_TESTING_H
#define TETHER_TESTING_H

#include <tether/backend.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Begin a harness with TETHER_HARNESS_INIT: { TETHER_HARNESS_INIT,
 * .new_object = ..., .mutate = ... }. A harness of a version newer than
 * the suite's is refused, naming both. */
#define TETHER_HARNESS_VERSION 1
#define TETHER_HARNESS_INIT TETHER_STRUCT_INIT(struct tether_harness, TETHER_HARNESS_VERSION)
struct tether_harness {
	uint32_t version; /* TETHER_HARNESS_INIT */
	uint32_t size;
	/* The backend under test. A harness module may leave it NULL: the
	 * runner fills in the backend it found by kind. */
	const struct tether_backend *backend;
	/* The capabilities to check: 0 = backend->caps. A harness narrows
	 * them for systems that offer less (or widens them when the
	 * backend's effective_capabilities grants more for its objects). */
	unsigned caps;
	/* Passed back to every callback. */
	void *ud;
	/* Make a fresh system, with a state, and return its locator (a new
	 * reference). Each check gets its own. Returns 0 or a TETHER_E* code. */
	int (*new_object)(void *ud, json_t **locator);
	/* Change the current state of the system: of the locator's own branch
	 * when working_ref is NULL, else of that working ref (a fork). Every
	 * call makes a change no earlier call made, and changes from
	 * different refs never conflict (MERGE is checked with them). */
	int (*mutate)(void *ud, const json_t *locator, const json_t *working_ref);
	/* Remove the system. Optional. */
	void (*cleanup)(void *ud, const json_t *locator);

	/* Optional: the locator of a system that does not exist yet. The
	 * CREATE checks need it (create_store makes the system); without it
	 * they are skipped. */
	int (*new_locator)(void *ud, json_t **locator);
	/* Forks need nothing more: the suite reads a fork as the engine does,
	 * through the locator with the working ref merged into it. */
};

/* What a harness module exports, under the name tether_harness_entry. */
typedef const struct tether_harness *(*tether_harness_entry_fn)(void);

struct tether_conformance_counts {
	int passed;
	int failed;
	int skipped;
};

/* Run the checks the harness's tier and flags call for, printing one line
 * per check to `out` (NULL = stdout). Returns the number of failures; a
 * harness that cannot run at all (no backend, no new_object or mutate, no
 * scratch directory) counts as one. */
TETHER_API int tether_conformance_run(const struct tether_harness *h, FILE *out);
/* The same, also reporting how many checks passed, failed and were
 * skipped (counts may be NULL). */
TETHER_API int tether_conformance_run_counts(const struct tether_harness *h, FILE *out,
                                             struct tether_conformance_counts *counts);

/* The fault-injecting store, for testing a backend's error paths.
 * Registered, it serves URIs fault+file:///PATH: the local store at PATH,
 * with a fault on the N-th call of chosen operations. A harness whose
 * locators name their store under "uri" runs over it with
 * `tether-conformance KIND --fault-store`, which adds the checks that a
 * store failure surfaces as an error and leaves nothing half-written.
 * Registering reads a first fault from $TETHER_STORE_FAULT. */
TETHER_API int tether_fault_store_register(void);
/* Set the fault and restart the count; NULL or "" clears it. The spec is
 * OPS:N[+]:ACTION. OPS: get, head, put, copy, delete, list, or read (get,
 * head, list), write (put, copy, delete), any; comma-separated. N: the
 * call (counting from 1 since the fault was set) that faults; N+ that one
 * and every later one. ACTION: fail (TETHER_EIO, not done), transient
 * (TETHER_ETRANSIENT, not done), auth (TETHER_EAUTH, not done), tear
 * (done, then reported as TETHER_ETRANSIENT), delay=MS (done, MS late).
 * TETHER_EUSAGE for a malformed spec. */
TETHER_API int tether_fault_store_set(const char *spec);
/* How many calls faulted since the fault was set. */
TETHER_API unsigned long tether_fault_store_fired(void);

/* The store contract: what every byte store (include/tether/store.h)
 * must do, checked through the store front against the store at uri
 * (any scheme tether has a store for; options: the store options its open
 * is handed, NULL for none, when the store resolves them from the
 * environment). The checks work under a fresh sub-prefix,
 * uri/contract-<random>, each in an area of its own, and delete everything
 * they wrote at the end (the last line reports that). One line per check,
 * as tether_conformance_run prints them, to `out` (NULL = stdout): round
 * trips, ranges, head/stat, conditional writes, version tokens, copy,
 * delete, listing (prefixes, byte order, start_after, paging, list_stat),
 * awkward and invalid keys, staging names, the root, version ids (skipped,
 * saying why, where the store or bucket keeps none), racing conditional
 * writers, and on a fault+ URI the injected faults. Returns the number of
 * failures (a store that cannot be opened counts as one); counts may be
 * NULL. docs/BACKENDS.md, "Writing a store". */
TETHER_API int tether_store_conformance(const char *uri, const json_t *options, FILE *out,
                                        struct tether_conformance_counts *counts);

#ifdef __cplusplus
}
#endif

#endif
