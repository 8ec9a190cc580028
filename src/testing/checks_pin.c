/* PIN tier: a pin is a durable native reference named tether.<pin id>
 * that holds a state until unpin. verify is how the engine asks whether
 * it still does, and list_pins is how gc finds tether's refs. */
#include "core/abi.h"
#include "testing/suite.h"

#include <string.h>

/* Does some string in the ref name tether.<pin> (possibly under a
 * namespace: refs/tags/tether.<pin>)? */
static int ref_names_pin(const json_t *ref, const char *pin)
{
	size_t want = strlen("tether.") + strlen(pin);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)ref, k, v) {
		const char *s = json_string_value(v);
		size_t n = s ? strlen(s) : 0;
		if (n < want)
			continue;
		const char *tail = s + n - want;
		if (strncmp(tail, "tether.", 7) == 0 && strcmp(tail + 7, pin) == 0 && (tail == s || tail[-1] == '/'))
			return 1;
	}
	return 0;
}

static int check_pin_verifies(struct conf_run *r)
{
	json_t *state, *ref;
	int ok;
	const char *detail;
	int rc = conf_fingerprint(r, r->loc, &state, NULL, NULL);
	if (!rc)
		rc = conf_pin(r, r->loc, state, &ref);
	if (!rc)
		rc = conf_verify(r, r->loc, state, ref, &ok, &detail);
	if (rc)
		return rc;
	return ok ? 0 : conf_fail(r, "verify refused the state just pinned: %s", detail);
}

static int check_list_pins(struct conf_run *r)
{
	json_t *state, *ref, *before, *after, *gone;
	char pin_id[TT_PIN_ID_LEN + 1];
	int rc = conf_fingerprint(r, r->loc, &state, NULL, NULL);
	if (!rc)
		rc = conf_pin_id(r, r->loc, state, pin_id);
	if (!rc)
		rc = conf_list_pins(r, r->loc, &before);
	if (rc)
		return rc;
	if (conf_find_pin(before, pin_id))
		return conf_fail(r, "a fresh system already lists pin %s", pin_id);
	if ((rc = conf_pin(r, r->loc, state, &ref)) || (rc = conf_list_pins(r, r->loc, &after)))
		return rc;
	json_t *listed = conf_find_pin(after, pin_id);
	if (!listed)
		return conf_fail(r, "list_pins gave %s: no entry has \"pin\": \"%s\"", conf_show(r, after), pin_id);
	size_t i;
	json_t *each;
	json_array_foreach(after, i, each) {
		const char *p = json_string_value(json_object_get(each, "pin"));
		if (!json_is_object(each) || !p)
			return conf_fail(r, "list_pins entry %s has no \"pin\"", conf_show(r, each));
		if (!ref_names_pin(each, p))
			return conf_fail(r, "list_pins entry %s names no ref tether.%s (pins are named tether.<pin id>)",
			                 conf_show(r, each), p);
	}
	if (!ref_names_pin(ref, pin_id))
		return conf_fail(r, "pin_ref %s names no ref tether.%s", conf_show(r, ref), pin_id);
	/* gc releases pins with the refs list_pins gives, not the ones pin gave. */
	if ((rc = conf_unpin(r, r->loc, listed)) || (rc = conf_list_pins(r, r->loc, &gone)))
		return rc;
	conf_undo_drop(r, UNDO_PIN, ref);
	if (conf_find_pin(gone, pin_id))
		return conf_fail(r, "unpin with the ref list_pins gave did not remove pin %s", pin_id);
	return 0;
}

static int count_pin(const json_t *refs, const char *pin_id)
{
	int n = 0;
	size_t i;
	json_t *ref;
	json_array_foreach(refs, i, ref) {
		const char *p = json_string_value(json_object_get(ref, "pin"));
		n += p && strcmp(p, pin_id) == 0;
	}
	return n;
}

/* The second pin makes nothing new, and says so: a commit that fails later
 * releases only the pins it created, so a backend claiming to have created
 * a pin that was there already would have an earlier commit's pin deleted. */
static int check_idempotent(struct conf_run *r)
{
	json_t *state, *ref1, *ref2, *list;
	int created1 = 0, created2 = 0;
	int rc = conf_fingerprint(r, r->loc, &state, NULL, NULL);
	if (!rc)
		rc = conf_pin_created(r, r->loc, state, &ref1, &created1);
	if (!rc)
		rc = conf_pin_created(r, r->loc, state, &ref2, &created2);
	if (!rc)
		rc = conf_list_pins(r, r->loc, &list);
	if (rc)
		return rc;
	if (!created1)
		return conf_fail(r, "the first pin of a fresh state set *created to 0: it made the reference");
	if (created2)
		return conf_fail(r, "pinning a state already pinned set *created to 1: the reference was there already");
	if (!json_equal(ref1, ref2))
		return conf_fail(r, "pinning one state twice gave %s, then %s", conf_show(r, ref1), conf_show(r, ref2));
	const char *pin_id = json_string_value(json_object_get(ref1, "pin"));
	int n = count_pin(list, pin_id);
	return n == 1 ? 0 : conf_fail(r, "after pinning one state twice list_pins has %d entries for it", n);
}

static int check_shared(struct conf_run *r)
{
	json_t *s1, *s2, *ref1, *ref2, *list;
	char p1[TT_PIN_ID_LEN + 1], p2[TT_PIN_ID_LEN + 1];
	int rc = conf_fingerprint(r, r->loc, &s1, NULL, NULL);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s2, NULL, NULL);
	if (!rc)
		rc = conf_pin_id(r, r->loc, s1, p1);
	if (!rc)
		rc = conf_pin_id(r, r->loc, s2, p2);
	if (rc)
		return rc;
	if (strcmp(p1, p2) != 0)
		return conf_fail(r, "two reads of one state have pin ids %s and %s", p1, p2);
	/* Each read pinned under the shared id: the second is the first's pin,
	 * whatever its volatile keys say. */
	if ((rc = conf_pin(r, r->loc, s1, &ref1)) || (rc = conf_pin(r, r->loc, s2, &ref2)) ||
	    (rc = conf_list_pins(r, r->loc, &list)))
		return rc;
	if (!json_equal(ref1, ref2))
		return conf_fail(r, "the two reads pinned as %s and %s", conf_show(r, ref1), conf_show(r, ref2));
	int n = count_pin(list, p1);
	return n == 1 ? 0 : conf_fail(r, "list_pins has %d entries for pin %s", n, p1);
}

static int check_unpin(struct conf_run *r)
{
	json_t *state, *ref, *list;
	int ok;
	const char *detail;
	int rc = conf_fingerprint(r, r->loc, &state, NULL, NULL);
	if (!rc)
		rc = conf_pin(r, r->loc, state, &ref);
	if (!rc)
		rc = conf_unpin(r, r->loc, ref);
	if (!rc)
		rc = conf_list_pins(r, r->loc, &list);
	if (rc)
		return rc;
	const char *pin_id = json_string_value(json_object_get(ref, "pin"));
	if (conf_find_pin(list, pin_id))
		return conf_fail(r, "list_pins still lists pin %s after unpin", pin_id);
	if ((rc = conf_verify(r, r->loc, state, ref, &ok, &detail)))
		return rc;
	return ok ? conf_fail(r, "verify still accepts a released pin (%s)", conf_show(r, ref)) : 0;
}

static int check_survives(struct conf_run *r)
{
	json_t *s0, *s1, *ref, *list;
	int ok;
	const char *detail;
	int rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	if (!rc)
		rc = conf_pin(r, r->loc, s0, &ref);
	for (int i = 0; i < 2 && !rc; i++)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s1, NULL, NULL);
	if (!rc)
		rc = conf_verify(r, r->loc, s0, ref, &ok, &detail);
	if (rc)
		return rc;
	if (conf_same_content(r->s, s0, s1))
		return conf_fail(r, "mutate did not change the state");
	if (!ok)
		return conf_fail(r, "the pinned state no longer verifies after the system moved on: %s", detail);
	if ((rc = conf_list_pins(r, r->loc, &list)))
		return rc;
	return conf_find_pin(list, json_string_value(json_object_get(ref, "pin")))
	               ? 0
	               : conf_fail(r, "list_pins lost the pin after the system moved on");
}

static int check_two_pins(struct conf_run *r)
{
	json_t *s0, *s1, *ref0, *ref1, *list;
	int ok0, ok1;
	const char *d0, *d1;
	int rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	if (!rc)
		rc = conf_pin(r, r->loc, s0, &ref0);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s1, NULL, NULL);
	if (!rc)
		rc = conf_pin(r, r->loc, s1, &ref1);
	if (!rc)
		rc = conf_verify(r, r->loc, s0, ref0, &ok0, &d0);
	if (!rc)
		rc = conf_verify(r, r->loc, s1, ref1, &ok1, &d1);
	if (!rc)
		rc = conf_list_pins(r, r->loc, &list);
	if (rc)
		return rc;
	if (json_equal(ref0, ref1))
		return conf_fail(r, "two states got one pin_ref %s", conf_show(r, ref0));
	if (!ok0 || !ok1)
		return conf_fail(r, "with two pins, the %s state does not verify: %s", ok0 ? "second" : "first",
		                 ok0 ? d1 : d0);
	if (!conf_find_pin(list, json_string_value(json_object_get(ref0, "pin"))) ||
	    !conf_find_pin(list, json_string_value(json_object_get(ref1, "pin"))))
		return conf_fail(r, "list_pins does not list both pins: %s", conf_show(r, list));
	/* A pin's ref must not be able to vouch for another state. */
	if ((rc = conf_verify(r, r->loc, s1, ref0, &ok0, &d0)))
		return rc;
	return ok0 ? conf_fail(r, "verify accepted the second state against the first state's pin") : 0;
}

/* Optional: verify_many gives, item by item, verify's answers: a held pin,
 * a released one, a pin that vouches for another state, and states
 * checked without a pin. */
static int has_verify_many(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, verify_many) != NULL;
}

static int check_verify_many(struct conf_run *r)
{
	json_t *s0, *s1, *ref0, *ref1;
	int rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	if (!rc)
		rc = conf_pin(r, r->loc, s0, &ref0);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s1, NULL, NULL);
	if (!rc)
		rc = conf_pin(r, r->loc, s1, &ref1);
	if (!rc)
		rc = conf_unpin(r, r->loc, ref1);
	if (rc)
		return rc;
#define ITEM(s, ref) {TETHER_VERIFY_ITEM_INIT, .locator = r->loc, .state = (s), .pin_ref = (ref), .ok = -1}
	struct tether_verify_item items[] = {
		ITEM(s0, ref0), ITEM(s1, ref1), ITEM(s1, ref0), ITEM(s0, NULL), ITEM(s1, NULL),
	};
#undef ITEM
	static const char *const what[] = {"a held pin", "a released pin", "a state against another state's pin",
	                                   "the first state without its pin", "the second state without a pin"};
	size_t n = sizeof items / sizeof *items;
	tether_error_clear();
	rc = TT_BACKEND_GET(r->b, verify_many)(conf_ctx(r, r->loc), items, n);
	for (size_t i = 0; i < n; i++)
		conf_keep_str(r, items[i].detail);
	if (rc)
		return conf_call_failed(r, "verify_many", rc);
	for (size_t i = 0; i < n; i++) {
		int ok;
		const char *detail;
		if ((rc = conf_verify(r, items[i].locator, items[i].state, items[i].pin_ref, &ok, &detail)))
			return rc;
		if (items[i].ok != ok)
			return conf_fail(r, "for %s, verify says %s but verify_many says %s", what[i], ok ? "ok" : "not ok",
			                 items[i].ok == 1 ? "ok" : items[i].ok == 0 ? "not ok" : "nothing");
		if (!ok && !items[i].detail)
			return conf_fail(r, "verify_many said %s is not ok without a detail saying why", what[i]);
	}
	return 0;
}

static int has_verify_deep(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, verify_deep) != NULL;
}

/* verify_deep's answer for one state and pin, checked as conf_verify checks
 * verify's. */
static int deep(struct conf_run *r, const json_t *state, const json_t *ref, int *ok, const char **detail)
{
	char *d = NULL;
	int o = -1;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, verify_deep)(conf_ctx(r, r->loc), r->loc, state, ref, &o, &d);
	conf_keep_str(r, d);
	if (rc)
		return conf_call_failed(r, "verify_deep", rc);
	if (o != 0 && o != 1)
		return conf_fail(r, "verify_deep returned 0 but set *ok to %d, not 0 or 1", o);
	if (!o && !d)
		return conf_fail(r, "verify_deep said not ok without a detail saying why");
	*ok = o;
	*detail = d;
	return 0;
}

/* A deep check is verify and more: it accepts a held pin (whose data is
 * intact), and never a pin that verify refuses. */
static int check_verify_deep(struct conf_run *r)
{
	json_t *s0, *ref0;
	int ok;
	const char *detail;
	int rc = conf_fingerprint(r, r->loc, &s0, NULL, NULL);
	if (!rc)
		rc = conf_pin(r, r->loc, s0, &ref0);
	if (!rc)
		rc = deep(r, s0, ref0, &ok, &detail);
	if (rc)
		return rc;
	if (!ok)
		return conf_fail(r, "verify_deep refused the state just pinned: %s", detail);
	if ((rc = conf_unpin(r, r->loc, ref0)) || (rc = deep(r, s0, ref0, &ok, &detail)))
		return rc;
	return ok ? conf_fail(r, "verify_deep accepts a released pin (%s), which verify refuses", conf_show(r, ref0)) : 0;
}

const struct conf_check conf_checks_pin[] = {
	{"pin: pin creates a ref that verify accepts", TETHER_CAP_PIN, NULL, 0, check_pin_verifies},
	{"pin: list_pins lists it (names start with \"tether.\")", TETHER_CAP_PIN, NULL, 0, check_list_pins},
	{"pin: pinning the same state twice is idempotent, and *created says which call made it", TETHER_CAP_PIN, NULL, 0, check_idempotent},
	{"pin: identical states share one pin", TETHER_CAP_PIN, NULL, 0, check_shared},
	{"pin: unpin removes it and verify then fails", TETHER_CAP_PIN, NULL, 0, check_unpin},
	{"pin: pins survive mutate", TETHER_CAP_PIN, NULL, 0, check_survives},
	{"pin: two states get two pins, each vouching only for its own", TETHER_CAP_PIN, NULL, 0, check_two_pins},
	{"pin: verify_many answers as verify does, state by state", TETHER_CAP_PIN, has_verify_many, 0,
	 check_verify_many},
	{"pin: verify_deep accepts a held pin and refuses a released one", TETHER_CAP_PIN, has_verify_deep, 0,
	 check_verify_deep},
	{NULL, 0, NULL, 0, NULL},
};
