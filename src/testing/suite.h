/* The conformance suite's insides: one suite run, one check's run, and the
 * helpers checks are written with.
 *
 * A check is a function over a `struct conf_run`: the fresh object the
 * suite made for it, and an arena of everything it creates. Helpers record
 * the first failure's reason and return CONF_FAIL, so a check reads as a
 * list of steps that each `return` on failure; whatever the check made
 * (values, pins, working refs, extra objects) is released by the suite
 * afterwards, whichever way it ended. */
#ifndef TETHER_TESTING_SUITE_H
#define TETHER_TESTING_SUITE_H

#include <tether/testing.h>

#include "core/pinid.h"

#include <stddef.h>

enum { CONF_PASS = 0, CONF_FAIL = -1, CONF_SKIP = 1 };

#define CONF_DATASET_ID "0123456789abcdef0123456789abcdef"
/* Working refs are named as the engine names them: tether.ws.<dataset8>.<bookmark>. */
#define CONF_BRANCH "tether.ws.01234567.conformance"
#define CONF_BRANCH_2 "tether.ws.01234567.conformance-2"

struct conf_suite {
	const struct tether_harness *h;
	const struct tether_backend *b;
	unsigned caps;           /* what is checked: the harness's, or the backend's */
	struct tether_bctx ctx;  /* scratch dataset root and cache */
	json_t *policy;          /* as `tether add` builds it with no options */
	char *scratch;
	volatile int cancel;
	int sessions;            /* the backend declares open_store and close_store */
	FILE *out;
	struct tether_conformance_counts counts;
};

/* Something a check made that must be undone: a pin to release, a working
 * ref to delete, an object to hand to the harness's cleanup. */
struct conf_undo {
	enum { UNDO_PIN, UNDO_WREF, UNDO_OBJECT } what;
	json_t *locator;
	json_t *ref;
};

/* A session a check opened, for one store identity (canonical JSON).
 * session NULL: open_store failed; not asked again in this check, as the
 * engine does not ask again in a command. */
struct conf_session {
	char *identity;
	void *session;
};

struct conf_run {
	struct conf_suite *s;
	const struct tether_backend *b;
	json_t *loc;         /* the check's object, or NULL for checks that make their own */
	json_t *arena;       /* values to drop at the end */
	char **strs;
	size_t nstrs, capstrs;
	struct conf_undo *undo;
	size_t nundo, capundo;
	char *why;           /* the first failure's (or the skip's) reason */
	/* Sessions: when the backend declares them, every call of the check
	 * gets the session of its store, opened on first use as the engine
	 * opens it, and closed when the check ends (after its undo). */
	struct tether_bctx ctx; /* the suite's context, with the call's session */
	struct conf_session *sessions;
	size_t nsessions, capsessions;
	int no_session;         /* set: calls get ctx->session NULL */
};

enum {
	CONF_OWN_OBJECTS = 1, /* the check makes its objects itself (or needs none) */
	CONF_NO_CALLS = 2,    /* the check reads the struct and calls nothing */
};

struct conf_check {
	const char *name;
	unsigned needs;                            /* every one of these capability bits */
	int (*applies)(const struct conf_suite *); /* and this, when set */
	unsigned flags;                            /* CONF_OWN_OBJECTS, CONF_NO_CALLS */
	int (*run)(struct conf_run *r);
};

/* The checks, by area; each table ends with a NULL name. */
extern const struct conf_check conf_checks_basic[];
extern const struct conf_check conf_checks_pin[];
extern const struct conf_check conf_checks_fork[];
extern const struct conf_check conf_checks_flags[];
extern const struct conf_check conf_checks_store[];
extern const struct conf_check conf_checks_session[];

/* The first function the capabilities in `caps` call for that the backend
 * lacks ("PIN needs unpin"), or NULL when none is missing. */
const char *conf_missing_function(const struct tether_backend *b, unsigned caps);

/* One check's line ("ok   NAME", "skip NAME: WHY", "FAIL NAME: WHY") to
 * out, counted; rc CONF_PASS, CONF_SKIP or anything else for a failure.
 * The store contract (store_contract.c) prints its lines with it too. */
void conf_report(FILE *out, struct tether_conformance_counts *counts, const char *name, int rc, const char *why);

/* Failure and skip: record the reason (the first one wins), return the code. */
int conf_fail(struct conf_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Run fn on n threads at once (n <= CONF_MAX_THREADS), each given one of n
 * workers (structs `stride` bytes apart, each holding a NUL-terminated
 * complaint at offset `why_at`, left "" by a worker that found nothing
 * wrong), and wait for all: the first complaint, or threads that would not
 * start, fails the check. */
#define CONF_MAX_THREADS 16
int conf_run_threads(struct conf_run *r, int n, void *(*fn)(void *), void *workers, size_t stride, size_t why_at);
int conf_skip(struct conf_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A backend call returned rc (non-zero): fail with its code name and message. */
int conf_call_failed(struct conf_run *r, const char *call, int rc);
/* rc must be TETHER_EREFUSED with a message; anything else fails. */
int conf_want_refused(struct conf_run *r, const char *call, int rc);
const char *conf_code_name(int rc);

/* The arena: the value (or string) lives until the check ends. */
json_t *conf_keep(struct conf_run *r, json_t *v);
char *conf_keep_str(struct conf_run *r, char *s);
/* Register something to undo when the check ends. */
void conf_undo_push(struct conf_run *r, int what, const json_t *locator, const json_t *ref);
/* Forget a registered pin or working ref (the check released it itself). */
void conf_undo_drop(struct conf_run *r, int what, const json_t *ref);

/* The context for a backend call about `loc`: the suite's, with
 * ctx->session the session of loc's store (opened through open_store on
 * first use) when the backend declares sessions and r->no_session is 0,
 * else NULL. Valid until the next conf_ctx call of this run. */
const struct tether_bctx *conf_ctx(struct conf_run *r, const json_t *loc);
/* The session conf_ctx would hand for `loc` (opening it), or NULL. */
void *conf_session_for(struct conf_run *r, const json_t *loc);
/* Close every session the check opened (newest first). */
void conf_sessions_close(struct conf_run *r);

/* Harness calls. */
int conf_new_object(struct conf_run *r, json_t **locator);
int conf_new_locator(struct conf_run *r, json_t **locator);
int conf_mutate(struct conf_run *r, const json_t *locator, const json_t *working_ref);
/* The locator that reads a working ref: the working ref merged into the
 * locator, as the engine builds it (a working ref is a locator overlay). */
json_t *conf_working_locator(struct conf_run *r, const json_t *locator, const json_t *working_ref);

/* Backend calls, checked: a non-zero return fails the check. Results are
 * kept in the arena; pins and working refs are registered for undo. */
int conf_fingerprint(struct conf_run *r, const json_t *loc, json_t **state, const char **listing,
                     size_t *listing_len);
/* The same, naming the call `what` in a failure. */
int conf_fingerprint_as(struct conf_run *r, const char *what, const json_t *loc, json_t **state,
                        const char **listing, size_t *listing_len);
int conf_identity(struct conf_run *r, const json_t *loc, json_t **identity);
int conf_pin_id(struct conf_run *r, const json_t *loc, const json_t *state,
                char pin_id[TT_PIN_ID_LEN + 1]);
/* Pin `state` under its pin id. */
int conf_pin(struct conf_run *r, const json_t *loc, const json_t *state, json_t **pin_ref);
/* conf_pin, also giving pin's *created (checked to be 0 or 1). */
int conf_pin_created(struct conf_run *r, const json_t *loc, const json_t *state, json_t **pin_ref, int *created);
/* A pin when the tier has PIN, else *pin_ref = NULL (forks from the state). */
int conf_pin_if_pinnable(struct conf_run *r, const json_t *loc, const json_t *state, json_t **pin_ref);
int conf_unpin(struct conf_run *r, const json_t *loc, const json_t *pin_ref);
int conf_list_pins(struct conf_run *r, const json_t *loc, json_t **refs);
int conf_verify(struct conf_run *r, const json_t *loc, const json_t *state, const json_t *pin_ref,
                int *ok, const char **detail);
int conf_fork(struct conf_run *r, const json_t *loc, const json_t *state, const json_t *pin_ref,
              const char *branch, const json_t *expect, json_t **working_ref);
int conf_open(struct conf_run *r, const json_t *loc, const json_t *state, const json_t *pin_ref,
              const json_t *working_ref, int read_only, json_t **handle);

/* What a fork reads: the fingerprint of the locator with the working ref
 * merged in. The "written" form is for after a write on the fork, and
 * fails if the fork still reads its fork point `s0` (the overlay does not
 * name the fork). */
int conf_fork_state(struct conf_run *r, const json_t *wref, json_t **state);
int conf_written_fork_state(struct conf_run *r, const json_t *wref, const json_t *s0, json_t **state);

/* Pure helpers. */
int conf_same_content(const struct conf_suite *s, const json_t *a, const json_t *b);
/* The `expect` that says "this ref must not exist yet": JSON null. (A
 * NULL pointer is no condition at all; a state is "must be at this head".
 * memory.c reads any expect without its content key as absent, so null is
 * the one spelling every backend shares.) */
json_t *conf_expect_absent(void);
/* The entry of a list_pins result whose "pin" is pin_id, or NULL. */
json_t *conf_find_pin(const json_t *refs, const char *pin_id);
/* rm -rf; 0 when the path is gone. */
int conf_rmtree(const char *path);
/* "a, b" of a JSON value, for messages (kept in the arena). */
const char *conf_show(struct conf_run *r, const json_t *v);

#endif
