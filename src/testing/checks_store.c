/* Store faults: a backend over a byte store (tether/store.h) must surface
 * the store's failure as an error, never as success or a wrong answer, and
 * must leave nothing half-written: after a failed call the system reads as
 * before, or as if the call had finished, and calling again finishes it.
 * These checks run when the harness's objects live on the fault store
 * (their locator's "uri" is fault+file://..., which `tether-conformance
 * --fault-store` arranges), and are skipped otherwise. */
#include "testing/suite.h"

#include <string.h>

/* The most store writes one call is expected to make; a call still
 * faulting at the last is reported, not looped on for ever. */
#define MAX_WRITES 64

static int over_fault_store(struct conf_run *r)
{
	const char *uri = json_string_value(json_object_get(r->loc, "uri"));
	if (uri && strncmp(uri, "fault+", 6) == 0)
		return 0;
	return conf_skip(r, "the object is not on the fault store (run tether-conformance with --fault-store)");
}

static int set_fault(struct conf_run *r, const char *fmt, unsigned long n)
{
	char spec[64];
	snprintf(spec, sizeof spec, fmt, n);
	return tether_fault_store_set(spec) ? conf_fail(r, "fault spec %s: %s", spec, tether_error_last()) : 0;
}

static void clear_fault(void)
{
	tether_fault_store_set(NULL);
}

static int check_read_failure(struct conf_run *r)
{
	json_t *s0, *s1;
	int rc = over_fault_store(r);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	static const char *const actions[] = {"fail", "transient", "auth", NULL};
	for (int i = 0; !rc && actions[i]; i++) {
		char spec[48];
		snprintf(spec, sizeof spec, "read:1+:%s", actions[i]);
		if ((rc = set_fault(r, spec, 0)))
			break;
		struct tether_fingerprint fp = {0};
		tether_error_clear();
		int got = r->b->fingerprint(conf_ctx(r, r->loc), r->loc, r->s->policy, &fp);
		unsigned long fired = tether_fault_store_fired();
		clear_fault();
		json_decref(fp.state);
		free(fp.listing);
		if (!fired)
			return conf_skip(r, "fingerprint read nothing from the store");
		if (got == 0)
			return conf_fail(r, "fingerprint succeeded while every store read failed (%s)", actions[i]);
		if (!*tether_error_last())
			return conf_fail(r, "fingerprint failed (%s) with no message", conf_code_name(got));
	}
	/* A slow store is not a failing one. */
	if (!rc && !(rc = set_fault(r, "any:1+:delay=%lu", 5))) {
		rc = conf_fingerprint_as(r, "fingerprint on a slow store", r->loc, &s1, NULL, NULL);
		clear_fault();
		if (!rc && !json_equal(s0, s1))
			rc = conf_fail(r, "a slow store gave state %s, not %s", conf_show(r, s1), conf_show(r, s0));
	}
	clear_fault();
	return rc;
}

/* pin with the n-th store write faulting (spec "write:%lu:ACTION");
 * *fired = 0 when the call made fewer writes. */
static int pin_with_fault(struct conf_run *r, const char *spec, unsigned long n, const json_t *state,
                          const char *pin_id, int *fired)
{
	json_t *ref = NULL;
	int created = 0;
	int rc = set_fault(r, spec, n);
	if (rc)
		return rc;
	tether_error_clear();
	rc = r->b->pin(conf_ctx(r, r->loc), r->loc, state, pin_id, &ref, &created);
	*fired = tether_fault_store_fired() > 0;
	clear_fault();
	if (rc == 0 && ref)
		conf_undo_push(r, UNDO_PIN, r->loc, ref);
	json_decref(ref);
	if (*fired && rc == 0)
		return conf_fail(r, "pin succeeded though store write %lu failed", n);
	if (!*fired && rc != 0)
		return conf_call_failed(r, "pin (no fault fired)", rc);
	return 0;
}

/* After a failed pin: the state reads as before, and the pin is either
 * absent or whole (verify holds it). */
static int nothing_half_done(struct conf_run *r, const json_t *s0, const char *pin_id, unsigned long n)
{
	json_t *now, *pins;
	int rc = conf_fingerprint_as(r, "fingerprint after a failed pin", r->loc, &now, NULL, NULL);
	if (!rc && !conf_same_content(r->s, s0, now))
		rc = conf_fail(r, "after store write %lu failed, the state is %s, not %s", n, conf_show(r, now),
		               conf_show(r, s0));
	if (!rc)
		rc = conf_list_pins(r, r->loc, &pins);
	json_t *left = rc ? NULL : conf_find_pin(pins, pin_id);
	if (left) {
		int ok = 0;
		const char *detail = NULL;
		conf_undo_push(r, UNDO_PIN, r->loc, left);
		if (!(rc = conf_verify(r, r->loc, s0, left, &ok, &detail)) && !ok)
			rc = conf_fail(r, "after store write %lu failed, pin %s is listed but does not hold the state: %s",
			               n, pin_id, detail ? detail : "");
	}
	return rc;
}

static int check_write_failure(struct conf_run *r, const char *spec)
{
	json_t *s0, *ref;
	char pin_id[TT_PIN_ID_LEN + 1];
	int rc = over_fault_store(r);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	if (!rc)
		rc = conf_pin_id(r, r->loc, s0, pin_id);
	unsigned long n = 1;
	for (int fired = 1; !rc && fired; n++) {
		if (n > MAX_WRITES)
			return conf_fail(r, "pin still made store writes after %d", MAX_WRITES);
		if ((rc = pin_with_fault(r, spec, n, s0, pin_id, &fired)) || !fired)
			break;
		rc = nothing_half_done(r, s0, pin_id, n);
		/* Release a whole pin the failed call left, so the next round
		 * starts from nothing again. */
		json_t *pins = NULL, *left;
		if (!rc && !(rc = conf_list_pins(r, r->loc, &pins)) && (left = conf_find_pin(pins, pin_id)))
			rc = conf_unpin(r, r->loc, left);
	}
	if (rc)
		return rc;
	if (n == 2)
		return conf_skip(r, "pin wrote nothing to the store");
	/* With the store well again, pin finishes and holds the state. */
	int ok = 0;
	const char *detail = NULL;
	if ((rc = conf_pin(r, r->loc, s0, &ref)) || (rc = conf_verify(r, r->loc, s0, ref, &ok, &detail)))
		return rc;
	return ok ? 0 : conf_fail(r, "after the faults, the pin does not hold the state: %s", detail);
}

static int check_write_fails(struct conf_run *r)
{
	return check_write_failure(r, "write:%lu:fail");
}

static int check_write_tears(struct conf_run *r)
{
	return check_write_failure(r, "write:%lu:tear");
}

/* fork with the n-th write failing: the fork is reported failed; asked
 * again, it is made, at the state. */
static int check_fork_failure(struct conf_run *r)
{
	json_t *s0, *pin_ref, *wref, *at;
	int rc = over_fault_store(r);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	if (!rc)
		rc = conf_pin_if_pinnable(r, r->loc, s0, &pin_ref);
	unsigned long n = 1;
	for (int fired = 1; !rc && fired; n++) {
		if (n > MAX_WRITES)
			return conf_fail(r, "fork still made store writes after %d", MAX_WRITES);
		json_t *ref = NULL;
		if ((rc = set_fault(r, "write:%lu:fail", n)))
			break;
		tether_error_clear();
		int got = r->b->fork(conf_ctx(r, r->loc), r->loc, s0, pin_ref, CONF_BRANCH, NULL, &ref);
		fired = tether_fault_store_fired() > 0;
		clear_fault();
		if (got == 0 && ref)
			conf_undo_push(r, UNDO_WREF, r->loc, ref);
		json_decref(ref);
		if (fired && got == 0)
			rc = conf_fail(r, "fork succeeded though store write %lu failed", n);
		else if (!fired && got != 0)
			rc = conf_call_failed(r, "fork (no fault fired)", got);
		else if (fired && (rc = conf_fork(r, r->loc, s0, pin_ref, CONF_BRANCH, NULL, &wref)) == 0 &&
		         (rc = conf_fork_state(r, wref, &at)) == 0 && !conf_same_content(r->s, s0, at))
			rc = conf_fail(r, "after store write %lu failed, fork again reads %s, not %s", n, conf_show(r, at),
			               conf_show(r, s0));
	}
	return rc;
}

const struct conf_check conf_checks_store[] = {
	{"store: a failing or slow store read surfaces as an error, or as the same state", TETHER_CAP_FINGERPRINT,
	 NULL, 0, check_read_failure},
	{"store: a failed write at any point of pin leaves nothing half-written", TETHER_CAP_PIN, NULL, 0,
	 check_write_fails},
	{"store: a torn write at any point of pin is an error, and pin again finishes it", TETHER_CAP_PIN, NULL, 0,
	 check_write_tears},
	{"store: a failed write at any point of fork is an error, and fork again makes it", TETHER_CAP_FORK, NULL, 0,
	 check_fork_failure},
	{NULL, 0, NULL, 0, NULL},
};
