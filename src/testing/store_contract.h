/* The store contract suite's insides (tether_store_conformance,
 * include/tether/testing.h): one run over one store, and the helpers its
 * checks are written with.
 *
 * The suite opens the store at URI/contract-<random> and gives each check
 * an area of its own under it ("c07/..."), so checks never see each
 * other's keys; at the end it deletes every key under the contract root
 * and removes the root. A check is a function over a `struct sc_run`;
 * helpers record the first failure's reason and return SC_FAIL, so a
 * check reads as a list of steps that each `return` on failure. */
#ifndef TETHER_TESTING_STORE_CONTRACT_H
#define TETHER_TESTING_STORE_CONTRACT_H

#include <tether/store.h>
#include <tether/testing.h>

#include <stddef.h>
#include <stdint.h>

/* As the backend suite's CONF_PASS, CONF_FAIL, CONF_SKIP (its conf_report prints both). */
enum { SC_PASS = 0, SC_FAIL = -1, SC_SKIP = 1 };

/* Writers in the concurrent checks. */
#define SC_RACERS 8

struct sc_suite {
	char *uri;               /* the contract root: the store URI given, + "/contract-<random>" */
	const json_t *options;   /* the store options every open is handed */
	tether_store *st;        /* the store at uri */
	unsigned flags;          /* its TETHER_STORE_* flags */
	int fault;               /* the store is the fault-injecting one (fault+...) */
	int local;               /* uri is a local path (the checks may look at the files) */
	FILE *out;
	struct tether_conformance_counts counts;
};

#define SC_KEYS 8
#define SC_KEY_MAX 512

struct sc_run {
	struct sc_suite *s;
	tether_store *st;
	char area[16];               /* this check's key prefix, "c07" */
	char keys[SC_KEYS][SC_KEY_MAX];
	int next_key;
	char *why;                   /* the first failure's (or the skip's) reason */
};

struct sc_check {
	const char *name;
	int (*run)(struct sc_run *r);
};

/* The checks, by area; each table ends with a NULL name. */
extern const struct sc_check sc_checks_objects[];
extern const struct sc_check sc_checks_listing[];
extern const struct sc_check sc_checks_versions[];
extern const struct sc_check sc_checks_race[];

int sc_fail(struct sc_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sc_skip(struct sc_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "<area>/<key>", in one of SC_KEYS rotating buffers of the run. */
const char *sc_key(struct sc_run *r, const char *key);

/* rc of `what` must be 0: else fail with its code name and message. */
int sc_ok(struct sc_run *r, const char *what, int rc);
/* rc of `what` must be `want` (a TETHER_E* code) with a message. */
int sc_want(struct sc_run *r, const char *what, int rc, int want);

/* n bytes of a pattern that differs with seed, malloc'd (never NULL). */
uint8_t *sc_pattern(size_t n, unsigned seed);

/* Store calls on the run's area, checked (a failure fails the check). */
int sc_put(struct sc_run *r, const char *key, const void *data, size_t len,
           struct tether_store_version *new_version);
/* The object's bytes must be exactly data[0..len). */
int sc_expect_bytes(struct sc_run *r, const char *key, const void *data, size_t len);
/* head must say the object is absent. */
int sc_expect_absent(struct sc_run *r, const char *key);
/* Every key under the area's `prefix` ("" = the area), in order, through a
 * listing of page_size keys a page; *keys is a JSON array of the keys
 * relative to the area (a new reference). */
int sc_list(struct sc_run *r, const char *prefix, const char *start_after, size_t page_size, json_t **keys);

/* The name of a TETHER_E* code, for messages (the backend suite's, suite.h). */
const char *conf_code_name(int rc);

#endif
