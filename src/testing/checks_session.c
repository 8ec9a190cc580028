/* Sessions (backend.h open_store/close_store). When a backend declares
 * them, every other check already runs with one: each call gets the
 * session of its store in ctx->session, opened on first use and closed
 * when the check ends. These checks add what the engine relies on beyond
 * that: a call answers the same with ctx->session NULL (the engine calls
 * without one outside a command, or when open_store failed), a session
 * never keeps a state the system has moved on from, and calls from
 * several threads on one session (the engine's workers share it) answer
 * as calls without one. */
#include "core/abi.h"
#include "testing/suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int declares_sessions(const struct conf_suite *s)
{
	return s->sessions;
}

/* Open the object's session and use it once, so that whatever it caches
 * is cached before the system changes. */
static int warm_session(struct conf_run *r, json_t **state)
{
	r->no_session = 0;
	if (!conf_session_for(r, r->loc))
		return conf_fail(r, "open_store for the object's identity failed or gave no session: %s",
		                 *tether_error_last() ? tether_error_last() : "no message");
	return conf_fingerprint_as(r, "fingerprint with a session", r->loc, state, NULL, NULL);
}

static int same_identity(struct conf_run *r, const char *when)
{
	json_t *with, *without;
	r->no_session = 0;
	int rc = conf_identity(r, r->loc, &with);
	r->no_session = 1;
	if (!rc)
		rc = conf_identity(r, r->loc, &without);
	r->no_session = 0;
	if (!rc && !json_equal(with, without))
		rc = conf_fail(r, "%s identity with a session is %s, without one %s", when, conf_show(r, with),
		               conf_show(r, without));
	return rc;
}

/* Each call once with the session and once with ctx->session NULL, on
 * the same system: the answers agree, and neither reads a stale state. */
static int check_without_session(struct conf_run *r)
{
	json_t *s0, *plain0, *s1, *plain1;
	int rc = warm_session(r, &s0);
	if (!rc)
		rc = same_identity(r, "before a mutate,");
	if (!rc) {
		r->no_session = 1;
		rc = conf_fingerprint_as(r, "fingerprint with ctx->session NULL", r->loc, &plain0, NULL, NULL);
		if (!rc && !conf_same_content(r->s, s0, plain0))
			rc = conf_fail(r, "fingerprint with a session reads %s, with ctx->session NULL %s", conf_show(r, s0),
			               conf_show(r, plain0));
	}
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	if (!rc) {
		r->no_session = 1;
		rc = conf_fingerprint_as(r, "fingerprint with ctx->session NULL after a mutate", r->loc, &plain1, NULL,
		                         NULL);
	}
	if (!rc) {
		r->no_session = 0;
		rc = conf_fingerprint_as(r, "fingerprint with a session after a mutate", r->loc, &s1, NULL, NULL);
	}
	if (!rc && !conf_same_content(r->s, s1, plain1))
		rc = conf_fail(r, "after a mutate, fingerprint with the session opened before it reads %s, without a "
		               "session %s: the session kept a state the system moved on from", conf_show(r, s1),
		               conf_show(r, plain1));
	if (!rc)
		rc = same_identity(r, "after a mutate,");
	if (rc || !(r->s->caps & TETHER_CAP_PIN))
		return rc;

	/* A pin made with the session is seen without one, and the reverse. */
	json_t *ref, *again, *refs;
	int created = -1, ok = 0;
	const char *detail = NULL;
	char pin_id[TT_PIN_ID_LEN + 1];
	r->no_session = 0;
	rc = conf_pin(r, r->loc, s1, &ref);
	r->no_session = 1;
	if (!rc)
		rc = conf_verify(r, r->loc, s1, ref, &ok, &detail);
	if (!rc && !ok)
		rc = conf_fail(r, "a pin made with a session does not verify with ctx->session NULL: %s", detail);
	if (!rc)
		rc = conf_list_pins(r, r->loc, &refs);
	if (!rc && !conf_pin_id(r, r->loc, s1, pin_id) && !conf_find_pin(refs, pin_id))
		rc = conf_fail(r, "list_pins with ctx->session NULL does not list the pin made with a session");
	if (!rc)
		rc = conf_pin_created(r, r->loc, s1, &again, &created);
	if (!rc && created != 0)
		rc = conf_fail(r, "pinning with ctx->session NULL a state pinned with a session created a new pin");
	if (!rc)
		rc = conf_unpin(r, r->loc, ref);
	r->no_session = 0;
	if (!rc)
		rc = conf_verify(r, r->loc, s1, ref, &ok, &detail);
	if (!rc && ok)
		rc = conf_fail(r, "a pin released with ctx->session NULL still verifies with the session");
	if (!rc)
		rc = conf_list_pins(r, r->loc, &refs);
	if (!rc && conf_find_pin(refs, pin_id))
		rc = conf_fail(r, "list_pins with the session still lists a pin released with ctx->session NULL");
	if (rc || !(r->s->caps & TETHER_CAP_FORK))
		return rc;

	/* A fork made and written without a session reads alike with one. */
	json_t *pin = NULL, *wref, *handle, *fork_plain, *fork_with;
	rc = conf_pin_if_pinnable(r, r->loc, s1, &pin);
	r->no_session = 1;
	if (!rc)
		rc = conf_fork(r, r->loc, s1, pin, CONF_BRANCH, NULL, &wref);
	if (!rc)
		rc = conf_open(r, r->loc, s1, pin, wref, 0, &handle);
	if (!rc)
		rc = conf_mutate(r, r->loc, wref);
	if (!rc)
		rc = conf_written_fork_state(r, wref, s1, &fork_plain);
	r->no_session = 0;
	if (!rc)
		rc = conf_fork_state(r, wref, &fork_with);
	if (!rc && !conf_same_content(r->s, fork_plain, fork_with))
		rc = conf_fail(r, "a fork written after a call without a session reads %s with ctx->session NULL, %s "
		               "with the session", conf_show(r, fork_plain), conf_show(r, fork_with));
	return rc;
}

#define N_THREADS 4
#define ROUNDS 3

struct shared {
	const struct conf_suite *s;
	const json_t *loc;
	const struct tether_bctx *ctx; /* one context, one session, for every thread */
	const json_t *state, *identity, *pin_ref;
	const char *pin_id;
};

struct worker {
	const struct shared *sh;
	char why[512];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct shared *sh = w->sh;
	const struct tether_backend *b = sh->s->b;
	for (int round = 0; round < ROUNDS && !w->why[0]; round++) {
		struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
		json_t *identity = NULL, *refs = NULL;
		int rc = b->fingerprint(sh->ctx, sh->loc, sh->s->policy, &fp);
		if (rc || !tt_same_content(b, fp.state, sh->state))
			snprintf(w->why, sizeof w->why, "fingerprint on one session from %d threads: %s", N_THREADS,
			         rc ? tether_error_last() : "a different state than without a session");
		else if ((rc = b->identity(sh->ctx, sh->loc, &identity)) != 0 || !json_equal(identity, sh->identity))
			snprintf(w->why, sizeof w->why, "identity on one session from %d threads: %s", N_THREADS,
			         rc ? tether_error_last() : "a different identity than without a session");
		else if (sh->pin_ref) {
			int ok = 0;
			char *detail = NULL;
			rc = TT_BACKEND_GET(b, verify)(sh->ctx, sh->loc, sh->state, sh->pin_ref, &ok, &detail);
			if (rc || !ok)
				snprintf(w->why, sizeof w->why, "verify on one session from %d threads: %s", N_THREADS,
				         rc ? tether_error_last() : detail ? detail : "not ok");
			else if ((rc = TT_BACKEND_GET(b, list_pins)(sh->ctx, sh->loc, &refs)) != 0 ||
			         !conf_find_pin(refs, sh->pin_id))
				snprintf(w->why, sizeof w->why, "list_pins on one session from %d threads: %s", N_THREADS,
				         rc ? tether_error_last() : "the pin is not listed");
			free(detail);
		}
		json_decref(refs);
		json_decref(identity);
		json_decref(fp.state);
		free(fp.listing);
	}
	return NULL;
}

/* The answers without a session are read first, after a mutate the
 * session has not seen; then the threads ask the same on the session. */
static int check_threads_one_session(struct conf_run *r)
{
	json_t *s0, *state, *identity, *ref = NULL;
	char pin_id[TT_PIN_ID_LEN + 1] = "";
	int rc = warm_session(r, &s0);
	if (!rc)
		rc = conf_mutate(r, r->loc, NULL);
	r->no_session = 1;
	if (!rc)
		rc = conf_fingerprint_as(r, "fingerprint with ctx->session NULL", r->loc, &state, NULL, NULL);
	if (!rc)
		rc = conf_identity(r, r->loc, &identity);
	if (!rc && (r->s->caps & TETHER_CAP_PIN) && !(rc = conf_pin(r, r->loc, state, &ref)))
		rc = conf_pin_id(r, r->loc, state, pin_id);
	r->no_session = 0;
	if (rc)
		return rc;
	struct tether_bctx ctx = *conf_ctx(r, r->loc);
	struct shared sh = {r->s, r->loc, &ctx, state, identity, ref, pin_id};
	struct worker w[N_THREADS];
	memset(w, 0, sizeof w);
	for (int i = 0; i < N_THREADS; i++)
		w[i].sh = &sh;
	return conf_run_threads(r, N_THREADS, work, w, sizeof *w, offsetof(struct worker, why));
}

const struct conf_check conf_checks_session[] = {
	{"sessions: every call answers with ctx->session NULL as with the session", 0, declares_sessions, 0,
	 check_without_session},
	{"sessions: calls from several threads on one session answer as without one", 0, declares_sessions, 0,
	 check_threads_one_session},
	{NULL, 0, NULL, 0, NULL},
};
