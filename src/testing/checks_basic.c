/* Checks every backend answers: the struct itself, locators, identity,
 * fingerprints, volatile keys, verify and open where present, and calls
 * on several objects at once. */
#include "core/abi.h"
#include "testing/suite.h"

#include <stdlib.h>
#include <string.h>

#define KNOWN_CAPS                                                                                         \
	(TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |                  \
	 TETHER_CAP_CHEAP_FINGERPRINT | TETHER_CAP_RETENTION_BOUND | TETHER_CAP_NEEDS_QUIESCENCE |             \
	 TETHER_CAP_ATOMIC_REF | TETHER_CAP_CONDITIONAL_REF | TETHER_CAP_DIFF | TETHER_CAP_HISTORY |           \
	 TETHER_CAP_PROMOTE | TETHER_CAP_MERGE | TETHER_CAP_CREATE | TETHER_CAP_BRANCH_IS_STORAGE | \
	 TETHER_CAP_REMOTE_FINGERPRINT)

const char *conf_missing_function(const struct tether_backend *b, unsigned caps)
{
	if (!b->make_locator)
		return "every backend needs make_locator";
	if (!b->identity)
		return "every backend needs identity";
	if (!b->fingerprint)
		return "every backend needs fingerprint";
	if ((caps & TETHER_CAP_PIN) && (!TT_BACKEND_GET(b, pin) || !TT_BACKEND_GET(b, unpin) ||
	                                !TT_BACKEND_GET(b, list_pins) || !TT_BACKEND_GET(b, verify)))
		return "PIN needs pin, unpin, list_pins and verify";
	if ((caps & TETHER_CAP_FORK) && (!TT_BACKEND_GET(b, fork) || !TT_BACKEND_GET(b, delete_working_ref) ||
	                                 !TT_BACKEND_GET(b, open)))
		return "FORK needs fork, delete_working_ref and open";
	if ((caps & TETHER_CAP_DIFF) && !TT_BACKEND_GET(b, diff))
		return "DIFF needs diff";
	if ((caps & TETHER_CAP_HISTORY) && !TT_BACKEND_GET(b, history))
		return "HISTORY needs history";
	if ((caps & TETHER_CAP_PROMOTE) && !TT_BACKEND_GET(b, promote))
		return "PROMOTE needs promote";
	if ((caps & TETHER_CAP_MERGE) && !TT_BACKEND_GET(b, merge))
		return "MERGE needs merge";
	if ((caps & TETHER_CAP_CREATE) && (!TT_BACKEND_GET(b, create_store) || !TT_BACKEND_GET(b, delete_store)))
		return "CREATE needs create_store and delete_store";
	return NULL;
}

/* A kind names a module file (tether-backend-<kind>.so) and a TOML table. */
static int kind_is_safe(const char *kind)
{
	size_t n = strlen(kind);
	if (n == 0 || n > 64)
		return 0;
	for (const char *p = kind; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			return 0;
	return 1;
}

/* Which capabilities a capability needs: tiers nest, and flags that move
 * or make refs need the tier that has refs. */
static const char *caps_inconsistent(unsigned caps)
{
	if (caps & ~KNOWN_CAPS)
		return "caps has bits backend.h does not define";
	if (!(caps & TETHER_CAP_FINGERPRINT))
		return "every backend has the FINGERPRINT tier";
	if ((caps & TETHER_CAP_PIN) && !(caps & TETHER_CAP_ADDRESSABLE))
		return "PIN without ADDRESSABLE (each tier includes the ones before it)";
	if ((caps & TETHER_CAP_FORK) && !(caps & TETHER_CAP_PIN))
		return "FORK without PIN (each tier includes the ones before it)";
	if ((caps & TETHER_CAP_ATOMIC_REF) && !(caps & TETHER_CAP_PIN))
		return "ATOMIC_REF without PIN: there are no refs to make";
	if ((caps & (TETHER_CAP_CONDITIONAL_REF | TETHER_CAP_PROMOTE | TETHER_CAP_MERGE | TETHER_CAP_BRANCH_IS_STORAGE)) &&
	    !(caps & TETHER_CAP_FORK))
		return "CONDITIONAL_REF, PROMOTE, MERGE and BRANCH_IS_STORAGE need FORK";
	return NULL;
}

static int check_struct(struct conf_run *r)
{
	const struct tether_backend *b = r->b;
	unsigned harness_caps = r->s->h->caps;
	/* A version 3 backend reaches the suite as tether's adapter of it,
	 * which is version 4: anything below is not a backend tether reads. */
	if (b->version < 4 || b->version > TETHER_BACKEND_VERSION)
		return conf_fail(r, "version is %u; this tether reads backends of versions 4 to %u",
		                 (unsigned)b->version, (unsigned)TETHER_BACKEND_VERSION);
	if (b->size < TT_BACKEND_V4_SIZE || b->size > sizeof *b)
		return conf_fail(r, "size is %u, which no version up to %u has (begin the struct with "
		                 "TETHER_BACKEND_INIT)", (unsigned)b->size, (unsigned)TETHER_BACKEND_VERSION);
	if (!kind_is_safe(b->kind))
		return conf_fail(r, "kind \"%s\" is not 1-64 characters of a-z, 0-9, '-' and '_'", b->kind);
	if (!b->maturity || (strcmp(b->maturity, "stable") != 0 && strcmp(b->maturity, "experimental") != 0))
		return conf_fail(r, "maturity is \"%s\", not \"stable\" or \"experimental\"",
		                 b->maturity ? b->maturity : "(null)");
	if (!b->summary || !*b->summary || strchr(b->summary, '\n'))
		return conf_fail(r, "summary must be one non-empty line (tether backends prints it)");
	if (!TT_BACKEND_GET(b, open_store) != !TT_BACKEND_GET(b, close_store))
		return conf_fail(r, "%s is set without %s: sessions need both or neither",
		                 TT_BACKEND_GET(b, open_store) ? "open_store" : "close_store",
		                 TT_BACKEND_GET(b, open_store) ? "close_store" : "open_store");
	const char *why = caps_inconsistent(b->caps);
	if (why)
		return conf_fail(r, "%s", why);
	if ((why = conf_missing_function(b, b->caps)))
		return conf_fail(r, "%s", why);
	if (harness_caps) {
		if ((why = caps_inconsistent(harness_caps)))
			return conf_fail(r, "the harness's caps: %s", why);
		if ((harness_caps & ~b->caps) && !TT_BACKEND_GET(b, effective_capabilities))
			return conf_fail(r, "the harness checks capabilities the backend neither declares nor grants "
			                 "through effective_capabilities");
		if ((why = conf_missing_function(b, harness_caps)))
			return conf_fail(r, "for the harness's caps: %s", why);
	}
	const char *const *vk = TT_BACKEND_GET(b, volatile_keys);
	for (size_t i = 0; vk && vk[i]; i++) {
		if (!*vk[i])
			return conf_fail(r, "volatile_keys[%zu] is empty", i);
		for (size_t j = 0; j < i; j++)
			if (strcmp(vk[i], vk[j]) == 0)
				return conf_fail(r, "volatile key \"%s\" is listed twice", vk[i]);
	}
	return 0;
}

static int has_effective_caps(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, effective_capabilities) != NULL;
}

static int check_effective_caps(struct conf_run *r)
{
	unsigned caps = r->b->caps;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, effective_capabilities)(conf_ctx(r, r->loc), r->loc, r->s->policy, &caps);
	if (rc)
		return conf_call_failed(r, "effective_capabilities", rc);
	unsigned wanted = r->s->caps & ~(unsigned)TETHER_CAP_PIN; /* pin = "record" may take PIN away */
	if ((caps & wanted) != wanted) {
		json_t *lacking = conf_keep(r, tether_cap_names(wanted & ~caps));
		return conf_fail(r, "the harness's object is %s with %s missing; the suite checks %s", tether_tier_name(caps),
		                 conf_show(r, lacking), tether_tier_name(r->s->caps));
	}
	return 0;
}

static int check_unknown_option(struct conf_run *r)
{
	json_t *opts = conf_keep(r, json_pack("{s:s}", "no-such-option-for-conformance", "1"));
	json_t *loc = NULL;
	tether_error_clear();
	int rc = r->b->make_locator(conf_ctx(r, NULL), r->s->scratch, opts, r->s->scratch, &loc);
	if (rc == 0) {
		json_decref(loc);
		return conf_fail(r, "make_locator accepted an unknown option");
	}
	if (rc != TETHER_EUSAGE)
		return conf_fail(r, "make_locator returned %s for an unknown option, not TETHER_EUSAGE (check options "
		                 "before the URI)", conf_code_name(rc));
	return 0;
}

static int check_identity(struct conf_run *r)
{
	json_t *id1, *id2;
	int rc = conf_identity(r, r->loc, &id1);
	if (!rc)
		rc = conf_identity(r, r->loc, &id2);
	if (rc)
		return rc;
	if (!json_equal(id1, id2))
		return conf_fail(r, "two calls gave %s and %s", conf_show(r, id1), conf_show(r, id2));
	if (json_object_size(id1) == 0)
		return conf_fail(r, "identity is empty: every system would share pins");
	const char *k;
	json_t *v;
	json_object_foreach(id1, k, v) {
		if (!json_equal(v, json_object_get(r->loc, k)))
			return conf_fail(r, "identity[\"%s\"] = %s, but the locator has %s", k, conf_show(r, v),
			                 conf_show(r, json_object_get(r->loc, k)));
	}
	/* Stable across mutations too: the system is the same one. */
	if ((rc = conf_mutate(r, r->loc, NULL)) || (rc = conf_identity(r, r->loc, &id2)))
		return rc;
	if (!json_equal(id1, id2))
		return conf_fail(r, "identity changed with the data: %s, then %s", conf_show(r, id1), conf_show(r, id2));
	return 0;
}

static int check_deterministic(struct conf_run *r)
{
	json_t *s1, *s2;
	const char *l1, *l2;
	size_t n1, n2;
	int rc = conf_fingerprint(r, r->loc, &s1, &l1, &n1);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s2, &l2, &n2);
	if (rc)
		return rc;
	if (!conf_same_content(r->s, s1, s2))
		return conf_fail(r, "two reads of an unchanged system gave %s and %s", conf_show(r, s1), conf_show(r, s2));
	if (!l1 != !l2 || (l1 && (n1 != n2 || memcmp(l1, l2, n1) != 0)))
		return conf_fail(r, "two reads of an unchanged system gave different listings");
	return 0;
}

static int check_changes(struct conf_run *r)
{
	json_t *s1, *s2;
	int rc = conf_fingerprint(r, r->loc, &s1, NULL, NULL);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s2, NULL, NULL);
	if (rc)
		return rc;
	if (conf_same_content(r->s, s1, s2))
		return conf_fail(r, "the state's content keys did not change: %s, then %s", conf_show(r, s1),
		                 conf_show(r, s2));
	return 0;
}

static int check_volatile(struct conf_run *r)
{
	json_t *s1, *s2, *s3;
	char p1[TT_PIN_ID_LEN + 1], p2[TT_PIN_ID_LEN + 1], p3[TT_PIN_ID_LEN + 1];
	int rc = conf_fingerprint(r, r->loc, &s1, NULL, NULL);
	if (!rc)
		rc = conf_fingerprint(r, r->loc, &s2, NULL, NULL);
	if (!rc)
		rc = conf_pin_id(r, r->loc, s1, p1);
	if (!rc)
		rc = conf_pin_id(r, r->loc, s2, p2);
	if (rc)
		return rc;
	json_t *content = conf_keep(r, tt_content_state(r->b, s1));
	if (json_object_size(content) == 0)
		return conf_fail(r, "every key of %s is volatile: no two states could be told apart", conf_show(r, s1));
	if (strcmp(p1, p2) != 0)
		return conf_fail(r, "two reads of an unchanged system pin differently (%s, %s): what differs must be "
		                 "listed in volatile_keys", conf_show(r, s1), conf_show(r, s2));
	if ((rc = conf_mutate(r, r->loc, NULL)) || (rc = conf_fingerprint(r, r->loc, &s3, NULL, NULL)) ||
	    (rc = conf_pin_id(r, r->loc, s3, p3)))
		return rc;
	if (strcmp(p1, p3) == 0)
		return conf_fail(r, "a mutate changed only volatile keys (%s, then %s)", conf_show(r, s1), conf_show(r, s3));
	return 0;
}

/* The policy make_policy writes must be what policy_options declares, or
 * the engine would refuse the manifest `tether add` just wrote. */
static int has_declared_policy(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, policy_options) != NULL;
}

static int check_policy_declared(struct conf_run *r)
{
	const char *k;
	json_t *v;
	json_object_foreach(r->s->policy, k, v) {
		if (strcmp(k, "write") == 0 || strcmp(k, "pin") == 0)
			continue;
		const struct tether_policy_option *o = TT_BACKEND_GET(r->b, policy_options);
		while (o->key && strcmp(o->key, k) != 0)
			o++;
		if (!o->key)
			return conf_fail(r, "make_policy writes \"%s\", which policy_options does not declare", k);
		size_t i = 0;
		while (o->choices && o->choices[i] && !(json_is_string(v) && strcmp(o->choices[i], json_string_value(v)) == 0))
			i++;
		if (!o->choices || !o->choices[i])
			return conf_fail(r, "make_policy writes %s = %s, not one of the choices policy_options declares", k,
			                 conf_show(r, v));
	}
	return 0;
}

static int has_check_state(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, check_state) != NULL;
}

/* check_state must accept what fingerprint records, before and after a
 * write, or every manifest the backend records would be refused. */
static int check_state_accepts_fingerprints(struct conf_run *r)
{
	for (int round = 0; round < 2; round++) {
		json_t *state;
		int rc = round ? conf_mutate(r, r->loc, NULL) : 0;
		if (!rc)
			rc = conf_fingerprint(r, r->loc, &state, NULL, NULL);
		if (rc)
			return rc;
		const char *key = NULL;
		tether_error_clear();
		if (TT_BACKEND_GET(r->b, check_state)(state, &key) != 0)
			return conf_fail(r, "check_state refused the state fingerprint gave (%s): %s (key %s)", conf_show(r, state),
			                 tether_error_last(), key ? key : "(none)");
		json_t *wrong = conf_keep(r, json_deep_copy(state));
		json_object_set_new(wrong, json_object_iter_key(json_object_iter(wrong)), json_pack("[i]", 1));
		if (TT_BACKEND_GET(r->b, check_state)(wrong, &key) == 0)
			return conf_fail(r, "check_state accepted %s, whose first key is an array", conf_show(r, wrong));
		tether_error_clear();
	}
	return 0;
}

static int has_verify(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, verify) != NULL;
}

/* Observed only: nothing but the system itself holds a state. */
static int observed_with_verify(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, verify) && !(s->caps & (TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN));
}

static int has_open(const struct conf_suite *s)
{
	return TT_BACKEND_GET(s->b, open) != NULL;
}

static int check_verify_current(struct conf_run *r)
{
	json_t *state;
	int ok;
	const char *detail;
	int rc = conf_fingerprint(r, r->loc, &state, NULL, NULL);
	if (!rc)
		rc = conf_verify(r, r->loc, state, NULL, &ok, &detail);
	if (rc)
		return rc;
	return ok ? 0 : conf_fail(r, "verify refused the state just read: %s", detail);
}

static int check_verify_observed(struct conf_run *r)
{
	json_t *state;
	int ok;
	const char *detail;
	int rc = conf_fingerprint(r, r->loc, &state, NULL, NULL);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc)
		rc = conf_verify(r, r->loc, state, NULL, &ok, &detail);
	if (rc)
		return rc;
	return ok ? conf_fail(r, "an observed backend verified a state its system no longer has") : 0;
}

static int check_open_addressable(struct conf_run *r)
{
	json_t *state, *handle;
	int rc = conf_fingerprint(r, r->loc, &state, NULL, NULL);
	if (!rc)
		rc = conf_open(r, r->loc, state, NULL, NULL, 1, &handle);
	return rc;
}

/* Calls on different objects may run at once on the engine's workers. */
#define N_THREADS 4
#define ROUNDS 3

struct worker {
	struct conf_suite *s;
	const json_t *loc;
	const json_t *expected; /* the state the main thread read */
	struct tether_bctx ctx; /* with the object's session, if any */
	char why[512];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct tether_backend *b = w->s->b;
	const struct tether_bctx *ctx = &w->ctx;
	for (int round = 0; round < ROUNDS && !w->why[0]; round++) {
		struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
		int rc = b->fingerprint(ctx, w->loc, w->s->policy, &fp);
		if (rc || !tt_same_content(b, fp.state, w->expected)) {
			snprintf(w->why, sizeof w->why, "fingerprint on a worker thread: %s",
			         rc ? tether_error_last() : "a different state than the main thread read");
		} else if (w->s->caps & TETHER_CAP_PIN) {
			json_t *identity = NULL, *content = tt_content_state(b, fp.state), *ref = NULL;
			char pin_id[TT_PIN_ID_LEN + 1];
			int ok = 0;
			char *detail = NULL;
			rc = b->identity(ctx, w->loc, &identity);
			if (!rc)
				rc = tt_pin_id(ctx->dataset_id, b->kind, identity, content, pin_id);
			if (!rc)
				rc = TT_BACKEND_GET(b, pin)(ctx, w->loc, fp.state, pin_id, &ref, &(int){0});
			if (!rc)
				rc = TT_BACKEND_GET(b, verify)(ctx, w->loc, fp.state, ref, &ok, &detail);
			if (rc || !ok)
				snprintf(w->why, sizeof w->why, "pin and verify on a worker thread: %s",
				         rc ? tether_error_last() : detail ? detail : "not ok");
			if (ref && TT_BACKEND_GET(b, unpin)(ctx, w->loc, ref) != 0 && !w->why[0])
				snprintf(w->why, sizeof w->why, "unpin on a worker thread: %s", tether_error_last());
			free(detail);
			json_decref(ref);
			json_decref(content);
			json_decref(identity);
		}
		json_decref(fp.state);
		free(fp.listing);
	}
	return NULL;
}

static int check_threads(struct conf_run *r)
{
	struct worker w[N_THREADS];
	int rc = 0;
	memset(w, 0, sizeof w);
	/* The harness is driven from this thread only: it need not be thread-safe. */
	for (int i = 0; i < N_THREADS && !rc; i++) {
		json_t *loc, *state;
		rc = conf_new_object(r, &loc);
		if (!rc)
			rc = conf_fingerprint(r, loc, &state, NULL, NULL);
		if (!rc)
			w[i] = (struct worker){.s = r->s, .loc = loc, .expected = state, .ctx = *conf_ctx(r, loc)};
	}
	if (rc)
		return rc;
	return conf_run_threads(r, N_THREADS, work, w, sizeof *w, offsetof(struct worker, why));
}

const struct conf_check conf_checks_basic[] = {
	{"backend: the struct is well formed", 0, NULL, CONF_OWN_OBJECTS | CONF_NO_CALLS, check_struct},
	{"capabilities: effective_capabilities grants what is checked", 0, has_effective_caps, 0, check_effective_caps},
	{"make_locator: an unknown option is refused (TETHER_EUSAGE)", 0, NULL, CONF_OWN_OBJECTS, check_unknown_option},
	{"identity: stable and a subset of the locator", 0, NULL, 0, check_identity},
	{"fingerprint: deterministic (two reads of an unchanged system agree)", 0, NULL, 0, check_deterministic},
	{"fingerprint: changes after mutate", 0, NULL, 0, check_changes},
	{"fingerprint: volatile keys never change content equality", 0, NULL, 0, check_volatile},
	{"make_policy: writes only the keys and values policy_options declares", 0, has_declared_policy, 0,
	 check_policy_declared},
	{"check_state: accepts every state fingerprint gives, refuses a mistyped one", 0, has_check_state, 0,
	 check_state_accepts_fingerprints},
	{"verify: accepts the state just read", 0, has_verify, 0, check_verify_current},
	{"verify: an observed state the system moved on from fails", 0, observed_with_verify, 0, check_verify_observed},
	{"open: read-only at a recorded state", TETHER_CAP_ADDRESSABLE, has_open, 0, check_open_addressable},
	{"threads: calls on different objects run concurrently", 0, NULL, CONF_OWN_OBJECTS, check_threads},
	{NULL, 0, NULL, 0, NULL},
};
