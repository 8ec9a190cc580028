/* The helpers checks are written with: every backend and harness call
 * goes through one of these, so a failing call always becomes a reason
 * that names the call, its error code and the backend's message, and
 * everything a call returns is freed or undone when the check ends. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "core/abi.h"
#include "testing/suite.h"

#include <ftw.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(void)
{
	fputs("tether conformance: out of memory\n", stderr);
	abort();
}

static char *vformat(const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!s)
		oom();
	vsnprintf(s, (size_t)n + 1, fmt, again);
	va_end(again);
	return s;
}

static int record(struct conf_run *r, int code, const char *fmt, va_list ap)
{
	if (!r->why)
		r->why = vformat(fmt, ap);
	return code;
}

int conf_fail(struct conf_run *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	record(r, CONF_FAIL, fmt, ap);
	va_end(ap);
	return CONF_FAIL;
}

int conf_skip(struct conf_run *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	record(r, CONF_SKIP, fmt, ap);
	va_end(ap);
	return CONF_SKIP;
}

const char *conf_code_name(int rc)
{
	switch (rc) {
	case TETHER_OK: return "0";
	case TETHER_ERROR: return "TETHER_ERROR";
	case TETHER_EUSAGE: return "TETHER_EUSAGE";
	case TETHER_EREFUSED: return "TETHER_EREFUSED";
	case TETHER_ELOCK: return "TETHER_ELOCK";
	case TETHER_ENOTFOUND: return "TETHER_ENOTFOUND";
	case TETHER_ECONFIG: return "TETHER_ECONFIG";
	case TETHER_EIO: return "TETHER_EIO";
	case TETHER_ENOREPO: return "TETHER_ENOREPO";
	case TETHER_EAUTH: return "TETHER_EAUTH";
	case TETHER_ETRANSIENT: return "TETHER_ETRANSIENT";
	case TETHER_ECANCELLED: return "TETHER_ECANCELLED";
	default: return "an unknown code";
	}
}

int conf_call_failed(struct conf_run *r, const char *call, int rc)
{
	const char *msg = tether_error_last();
	return conf_fail(r, "%s returned %s (%d)%s%s", call, conf_code_name(rc), rc, *msg ? ": " : " with no message",
	                 msg);
}

int conf_want_refused(struct conf_run *r, const char *call, int rc)
{
	if (rc == 0)
		return conf_fail(r, "%s succeeded; it must be refused with TETHER_EREFUSED", call);
	if (rc != TETHER_EREFUSED)
		return conf_fail(r, "%s returned %s (%d), not TETHER_EREFUSED", call, conf_code_name(rc), rc);
	if (!*tether_error_last())
		return conf_fail(r, "%s was refused without a message (tether_error_set)", call);
	return 0;
}

json_t *conf_keep(struct conf_run *r, json_t *v)
{
	if (v)
		json_array_append_new(r->arena, v);
	return v;
}

char *conf_keep_str(struct conf_run *r, char *s)
{
	if (!s)
		return NULL;
	if (r->nstrs == r->capstrs) {
		r->capstrs = r->capstrs ? 2 * r->capstrs : 16;
		r->strs = realloc(r->strs, r->capstrs * sizeof *r->strs);
		if (!r->strs)
			oom();
	}
	r->strs[r->nstrs++] = s;
	return s;
}

void conf_undo_push(struct conf_run *r, int what, const json_t *locator, const json_t *ref)
{
	for (size_t i = 0; i < r->nundo; i++)
		if ((int)r->undo[i].what == what && json_equal(r->undo[i].locator, locator) &&
		    (r->undo[i].ref == ref || json_equal(r->undo[i].ref, ref)))
			return;
	if (r->nundo == r->capundo) {
		r->capundo = r->capundo ? 2 * r->capundo : 8;
		r->undo = realloc(r->undo, r->capundo * sizeof *r->undo);
		if (!r->undo)
			oom();
	}
	r->undo[r->nundo++] = (struct conf_undo){what, json_deep_copy(locator), json_deep_copy(ref)};
}

void conf_undo_drop(struct conf_run *r, int what, const json_t *ref)
{
	for (size_t i = r->nundo; i-- > 0;) {
		struct conf_undo *u = &r->undo[i];
		if ((int)u->what == what && json_equal(u->ref, ref)) {
			json_decref(u->locator);
			json_decref(u->ref);
			memmove(u, u + 1, (r->nundo - i - 1) * sizeof *u);
			r->nundo--;
			return;
		}
	}
}

/* Sessions. The identity is asked without a session (the engine asks it
 * before it has one); a store whose identity cannot be read gets none. */
void *conf_session_for(struct conf_run *r, const json_t *loc)
{
	const struct tether_backend *b = r->b;
	if (!r->s->sessions || r->no_session || !json_is_object(loc))
		return NULL;
	struct tether_bctx plain = r->s->ctx;
	plain.session = NULL;
	json_t *identity = NULL;
	if (b->identity(&plain, loc, &identity) != 0 || !json_is_object(identity)) {
		json_decref(identity);
		tether_error_clear();
		return NULL;
	}
	char *id = json_dumps(identity, JSON_COMPACT | JSON_SORT_KEYS);
	if (!id)
		oom();
	for (size_t i = 0; i < r->nsessions; i++) {
		if (strcmp(r->sessions[i].identity, id) == 0) {
			free(id);
			json_decref(identity);
			return r->sessions[i].session;
		}
	}
	void *session = NULL;
	if (TT_BACKEND_GET(b, open_store)(&plain, loc, identity, &session) != 0)
		session = NULL;
	tether_error_clear();
	json_decref(identity);
	if (r->nsessions == r->capsessions) {
		r->capsessions = r->capsessions ? 2 * r->capsessions : 4;
		r->sessions = realloc(r->sessions, r->capsessions * sizeof *r->sessions);
		if (!r->sessions)
			oom();
	}
	r->sessions[r->nsessions++] = (struct conf_session){id, session};
	return session;
}

const struct tether_bctx *conf_ctx(struct conf_run *r, const json_t *loc)
{
	r->ctx = r->s->ctx;
	r->ctx.session = conf_session_for(r, loc);
	return &r->ctx;
}

void conf_sessions_close(struct conf_run *r)
{
	struct tether_bctx ctx = r->s->ctx;
	ctx.session = NULL;
	ctx.key = NULL; /* close_store gets a context without key */
	for (size_t i = r->nsessions; i-- > 0;) {
		if (r->sessions[i].session)
			TT_BACKEND_GET(r->b, close_store)(&ctx, r->sessions[i].session);
		free(r->sessions[i].identity);
	}
	free(r->sessions);
	r->sessions = NULL;
	r->nsessions = r->capsessions = 0;
}

static int harness_result(struct conf_run *r, const char *call, int rc, json_t *locator)
{
	if (rc)
		return conf_call_failed(r, call, rc);
	if (!json_is_object(locator)) {
		json_decref(locator);
		return conf_fail(r, "%s gave no locator object", call);
	}
	return 0;
}

int conf_new_object(struct conf_run *r, json_t **locator)
{
	const struct tether_harness *h = r->s->h;
	json_t *loc = NULL;
	tether_error_clear();
	int rc = h->new_object(h->ud, &loc);
	rc = harness_result(r, "harness new_object", rc, loc);
	if (rc)
		return rc;
	conf_undo_push(r, UNDO_OBJECT, loc, NULL);
	*locator = conf_keep(r, loc);
	return 0;
}

int conf_new_locator(struct conf_run *r, json_t **locator)
{
	const struct tether_harness *h = r->s->h;
	json_t *loc = NULL;
	tether_error_clear();
	int rc = TT_STRUCT_GET(struct tether_harness, h, new_locator)(h->ud, &loc);
	rc = harness_result(r, "harness new_locator", rc, loc);
	if (rc)
		return rc;
	conf_undo_push(r, UNDO_OBJECT, loc, NULL);
	*locator = conf_keep(r, loc);
	return 0;
}

int conf_mutate(struct conf_run *r, const json_t *locator, const json_t *working_ref)
{
	const struct tether_harness *h = r->s->h;
	tether_error_clear();
	int rc = h->mutate(h->ud, locator, working_ref);
	return rc ? conf_call_failed(r, working_ref ? "harness mutate (working ref)" : "harness mutate", rc) : 0;
}

json_t *conf_working_locator(struct conf_run *r, const json_t *locator, const json_t *working_ref)
{
	json_t *at = conf_keep(r, json_deep_copy(locator));
	if (json_is_object(working_ref))
		json_object_update(at, (json_t *)working_ref);
	return at;
}

/* The state a fork reads, through the locator with the working ref merged
 * in: the engine reads forks that way, so a backend must answer it. */
int conf_fork_state(struct conf_run *r, const json_t *wref, json_t **state)
{
	return conf_fingerprint_as(r, "fingerprint of the locator with the working ref merged in",
	                           conf_working_locator(r, r->loc, wref), state, NULL, NULL);
}

/* What the fork reads after a write on it, which must differ from the
 * fork point `s0`: if it does not, the working ref does not name the fork
 * when merged into the locator, and every later comparison would mislead. */
int conf_written_fork_state(struct conf_run *r, const json_t *wref, const json_t *s0, json_t **state)
{
	int rc = conf_fork_state(r, wref, state);
	if (rc)
		return rc;
	if (conf_same_content(r->s, *state, s0))
		return conf_fail(r, "after a write on the working ref, the locator with the working ref merged in "
		                 "still reads %s: it does not name the fork (a working ref is a locator overlay)",
		                 conf_show(r, *state));
	return 0;
}

int conf_fingerprint(struct conf_run *r, const json_t *loc, json_t **state, const char **listing,
                     size_t *listing_len)
{
	return conf_fingerprint_as(r, "fingerprint", loc, state, listing, listing_len);
}

int conf_fingerprint_as(struct conf_run *r, const char *what, const json_t *loc, json_t **state,
                        const char **listing, size_t *listing_len)
{
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	tether_error_clear();
	int rc = r->b->fingerprint(conf_ctx(r, loc), loc, r->s->policy, &fp);
	conf_keep(r, fp.state);
	conf_keep_str(r, fp.listing);
	if (rc)
		return conf_call_failed(r, what, rc);
	if (!json_is_object(fp.state) || json_object_size(fp.state) == 0)
		return conf_fail(r, "%s returned 0 but its state is %s, not a non-empty object", what,
		                 conf_show(r, fp.state));
	*state = fp.state;
	if (listing)
		*listing = fp.listing;
	if (listing_len)
		*listing_len = fp.listing ? fp.listing_len : 0;
	return 0;
}

int conf_identity(struct conf_run *r, const json_t *loc, json_t **identity)
{
	json_t *id = NULL;
	tether_error_clear();
	int rc = r->b->identity(conf_ctx(r, loc), loc, &id);
	conf_keep(r, id);
	if (rc)
		return conf_call_failed(r, "identity", rc);
	if (!json_is_object(id))
		return conf_fail(r, "identity returned 0 but gave %s, not an object", conf_show(r, id));
	*identity = id;
	return 0;
}

int conf_pin_id(struct conf_run *r, const json_t *loc, const json_t *state, char pin_id[TT_PIN_ID_LEN + 1])
{
	json_t *identity = NULL;
	int rc = conf_identity(r, loc, &identity);
	if (rc)
		return rc;
	json_t *content = conf_keep(r, tt_content_state(r->b, state));
	rc = tt_pin_id(CONF_DATASET_ID, r->b->kind, identity, content, pin_id);
	return rc ? conf_call_failed(r, "the pin id", rc) : 0;
}

int conf_pin_created(struct conf_run *r, const json_t *loc, const json_t *state, json_t **pin_ref, int *created)
{
	char pin_id[TT_PIN_ID_LEN + 1];
	int rc = conf_pin_id(r, loc, state, pin_id);
	if (rc)
		return rc;
	json_t *ref = NULL;
	int made = -1;
	tether_error_clear();
	rc = TT_BACKEND_GET(r->b, pin)(conf_ctx(r, loc), loc, state, pin_id, &ref, &made);
	conf_keep(r, ref);
	if (rc)
		return conf_call_failed(r, "pin", rc);
	if (made != 0 && made != 1)
		return conf_fail(r, "pin returned 0 but set *created to %d, not 0 or 1", made);
	if (created)
		*created = made;
	if (!json_is_object(ref))
		return conf_fail(r, "pin returned 0 but its pin_ref is %s, not an object", conf_show(r, ref));
	const char *named = json_string_value(json_object_get(ref, "pin"));
	if (!named || strcmp(named, pin_id) != 0)
		return conf_fail(r, "pin_ref %s does not carry \"pin\": \"%s\" (backend.h: gc reads it)",
		                 conf_show(r, ref), pin_id);
	conf_undo_push(r, UNDO_PIN, loc, ref);
	*pin_ref = ref;
	return 0;
}

int conf_pin(struct conf_run *r, const json_t *loc, const json_t *state, json_t **pin_ref)
{
	return conf_pin_created(r, loc, state, pin_ref, NULL);
}

int conf_pin_if_pinnable(struct conf_run *r, const json_t *loc, const json_t *state, json_t **pin_ref)
{
	*pin_ref = NULL;
	return (r->s->caps & TETHER_CAP_PIN) ? conf_pin(r, loc, state, pin_ref) : 0;
}

int conf_unpin(struct conf_run *r, const json_t *loc, const json_t *pin_ref)
{
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, unpin)(conf_ctx(r, loc), loc, pin_ref);
	if (rc)
		return conf_call_failed(r, "unpin", rc);
	conf_undo_drop(r, UNDO_PIN, pin_ref);
	return 0;
}

int conf_list_pins(struct conf_run *r, const json_t *loc, json_t **refs)
{
	json_t *list = NULL;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, list_pins)(conf_ctx(r, loc), loc, &list);
	conf_keep(r, list);
	if (rc)
		return conf_call_failed(r, "list_pins", rc);
	if (!json_is_array(list))
		return conf_fail(r, "list_pins returned 0 but gave %s, not an array", conf_show(r, list));
	*refs = list;
	return 0;
}

int conf_verify(struct conf_run *r, const json_t *loc, const json_t *state, const json_t *pin_ref, int *ok,
                const char **detail)
{
	char *d = NULL;
	int o = -1;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, verify)(conf_ctx(r, loc), loc, state, pin_ref, &o, &d);
	conf_keep_str(r, d);
	if (rc)
		return conf_call_failed(r, "verify", rc);
	if (o != 0 && o != 1)
		return conf_fail(r, "verify returned 0 but set *ok to %d, not 0 or 1", o);
	if (!o && !d)
		return conf_fail(r, "verify said not ok without a detail saying why");
	*ok = o;
	if (detail)
		*detail = d;
	return 0;
}

int conf_fork(struct conf_run *r, const json_t *loc, const json_t *state, const json_t *pin_ref,
              const char *branch, const json_t *expect, json_t **working_ref)
{
	json_t *ref = NULL;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, fork)(conf_ctx(r, loc), loc, state, pin_ref, branch, expect, &ref);
	conf_keep(r, ref);
	if (rc)
		return conf_call_failed(r, "fork", rc);
	if (!json_is_object(ref))
		return conf_fail(r, "fork returned 0 but its working_ref is %s, not an object", conf_show(r, ref));
	conf_undo_push(r, UNDO_WREF, loc, ref);
	*working_ref = ref;
	return 0;
}

int conf_open(struct conf_run *r, const json_t *loc, const json_t *state, const json_t *pin_ref,
              const json_t *working_ref, int read_only, json_t **handle)
{
	json_t *hd = NULL;
	tether_error_clear();
	int rc = TT_BACKEND_GET(r->b, open)(conf_ctx(r, loc), loc, state, pin_ref, working_ref, read_only, &hd);
	conf_keep(r, hd);
	if (rc)
		return conf_call_failed(r, read_only ? "open (read-only)" : "open (writable)", rc);
	if (!json_is_object(hd))
		return conf_fail(r, "open returned 0 but gave %s, not a handle object", conf_show(r, hd));
	const char *kind = json_string_value(json_object_get(hd, "kind"));
	if (!kind || strcmp(kind, r->b->kind) != 0)
		return conf_fail(r, "the handle's \"kind\" is %s, not \"%s\"", conf_show(r, json_object_get(hd, "kind")),
		                 r->b->kind);
	json_t *ro = json_object_get(hd, "read_only");
	if (!json_is_boolean(ro) || json_is_true(ro) != !!read_only)
		return conf_fail(r, "a %s handle has \"read_only\": %s, not %s", read_only ? "read-only" : "writable",
		                 conf_show(r, ro), read_only ? "true" : "false");
	*handle = hd;
	return 0;
}

int conf_same_content(const struct conf_suite *s, const json_t *a, const json_t *b)
{
	return tt_same_content(s->b, a, b);
}

json_t *conf_expect_absent(void)
{
	return json_null();
}

json_t *conf_find_pin(const json_t *refs, const char *pin_id)
{
	size_t i;
	json_t *ref;
	json_array_foreach(refs, i, ref) {
		const char *p = json_string_value(json_object_get(ref, "pin"));
		if (p && strcmp(p, pin_id) == 0)
			return ref;
	}
	return NULL;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) == 0 ? 0 : -1;
}

int conf_rmtree(const char *path)
{
	return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

const char *conf_show(struct conf_run *r, const json_t *v)
{
	if (!v)
		return "nothing";
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	return s ? conf_keep_str(r, s) : "(unprintable)";
}

int conf_run_threads(struct conf_run *r, int n, void *(*fn)(void *), void *workers, size_t stride, size_t why_at)
{
	pthread_t tid[CONF_MAX_THREADS];
	int started = 0;
	if (n > CONF_MAX_THREADS)
		return conf_fail(r, "cannot start %d threads (at most %d)", n, CONF_MAX_THREADS);
	for (; started < n; started++)
		if (pthread_create(&tid[started], NULL, fn, (char *)workers + (size_t)started * stride) != 0)
			break;
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (started < n)
		return conf_fail(r, "cannot start %d threads", n);
	for (int i = 0; i < n; i++) {
		const char *why = (const char *)workers + (size_t)i * stride + why_at;
		if (why[0])
			return conf_fail(r, "%s", why);
	}
	return 0;
}
