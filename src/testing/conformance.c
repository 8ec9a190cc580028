/* tether_conformance_run: pick the checks the tier and flags call for, run
 * each on a fresh object, undo what it made, print one line for it. */
#include "core/abi.h"
#include "testing/suite.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct conf_check *const tables[] = {
	conf_checks_basic,
	conf_checks_pin,
	conf_checks_fork,
	conf_checks_flags,
	conf_checks_store,
	conf_checks_session,
};

/* Undo in reverse: working refs and pins before the object that holds
 * them. Failures here are not the check's: it has already been judged. */
static void undo_all(struct conf_run *r)
{
	const struct conf_suite *s = r->s;
	r->no_session = 0; /* undo runs in the check's sessions, as the engine's cleanup would */
	for (size_t i = r->nundo; i-- > 0;) {
		struct conf_undo *u = &r->undo[i];
		if (u->what == UNDO_WREF && TT_BACKEND_GET(s->b, delete_working_ref))
			TT_BACKEND_GET(s->b, delete_working_ref)(conf_ctx(r, u->locator), u->locator, u->ref);
		else if (u->what == UNDO_PIN && TT_BACKEND_GET(s->b, unpin))
			TT_BACKEND_GET(s->b, unpin)(conf_ctx(r, u->locator), u->locator, u->ref);
		else if (u->what == UNDO_OBJECT && TT_STRUCT_GET(struct tether_harness, s->h, cleanup))
			TT_STRUCT_GET(struct tether_harness, s->h, cleanup)(s->h->ud, u->locator);
		json_decref(u->locator);
		json_decref(u->ref);
	}
	free(r->undo);
}

/* Undo what the check made, then close its sessions -- after the undo,
 * which uses them, and before the harness removes the objects, whose
 * stores a session may hold open. Objects are cleaned up last. */
static void finish(struct conf_run *r)
{
	size_t objects = 0;
	for (size_t i = 0; i < r->nundo; i++)
		objects += r->undo[i].what == UNDO_OBJECT;
	/* Pins and working refs first (they sit after their objects). */
	struct conf_undo *all = r->undo;
	size_t n = r->nundo, k = 0;
	struct conf_undo *objs = objects ? malloc(objects * sizeof *objs) : NULL;
	if (objects && !objs)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (all[i].what == UNDO_OBJECT)
			objs[k++] = all[i];
		else
			all[i - k] = all[i];
	}
	r->nundo = n - k;
	undo_all(r);
	conf_sessions_close(r);
	r->undo = objs;
	r->nundo = k;
	undo_all(r);
}

void conf_report(FILE *out, struct tether_conformance_counts *counts, const char *name, int rc, const char *why)
{
	if (rc == CONF_PASS) {
		counts->passed++;
		fprintf(out, "ok   %s\n", name);
	} else if (rc == CONF_SKIP) {
		counts->skipped++;
		fprintf(out, "skip %s: %s\n", name, why ? why : "not applicable");
	} else {
		counts->failed++;
		fprintf(out, "FAIL %s: %s\n", name, why ? why : "failed");
	}
	fflush(out);
}

static void run_one(struct conf_suite *s, const struct conf_check *c)
{
	struct conf_run r = {.s = s, .b = s->b, .arena = json_array()};
	/* A missing function would crash the check: fail it instead. Every
	 * check may use the functions of the tier it runs at. */
	const char *missing = (c->flags & CONF_NO_CALLS)
	                              ? NULL
	                              : conf_missing_function(s->b, c->needs | (s->caps & TETHER_TIER_MASK));
	int rc = missing ? conf_fail(&r, "the backend cannot be called: %s", missing) : 0;
	if (!rc && !(c->flags & CONF_OWN_OBJECTS))
		rc = conf_new_object(&r, &r.loc);
	if (!rc)
		rc = c->run(&r);
	if (rc < 0)
		rc = CONF_FAIL;
	finish(&r);
	conf_report(s->out, &s->counts, c->name, rc, r.why);
	free(r.why);
	for (size_t i = 0; i < r.nstrs; i++)
		free(r.strs[i]);
	free(r.strs);
	json_decref(r.arena);
	tether_error_clear();
}

/* The policy `tether add` would record with no options. */
static int make_policy(struct conf_suite *s)
{
	json_t *opts = json_object(), *p = NULL;
	int rc = TT_BACKEND_GET(s->b, make_policy) ? TT_BACKEND_GET(s->b, make_policy)(&s->ctx, opts, &p) : 0;
	json_decref(opts);
	if (rc)
		return rc;
	if (!p)
		p = json_object();
	json_object_set_new(p, "write", json_string((s->caps & TETHER_CAP_FORK) ? "fork" : "none"));
	json_object_set_new(p, "pin", json_string((s->caps & TETHER_CAP_PIN) ? "native" : "record"));
	s->policy = p;
	return 0;
}

static int make_scratch(struct conf_suite *s)
{
	const char *tmp = getenv("TMPDIR");
	size_t n = strlen(tmp && *tmp ? tmp : "/tmp") + 64;
	s->scratch = malloc(n);
	char *cache = malloc(n);
	if (!s->scratch || !cache) {
		free(cache);
		return -1;
	}
	snprintf(s->scratch, n, "%s/tether-conformance-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->scratch)) {
		free(cache);
		return -1;
	}
	snprintf(cache, n, "%s/.tether", s->scratch);
	mkdir(cache, 0700);
	snprintf(cache, n, "%s/.tether/cache", s->scratch);
	if (mkdir(cache, 0700) != 0 && errno != EEXIST) {
		free(cache);
		return -1;
	}
	s->ctx.dataset_root = s->scratch;
	s->ctx.cache_dir = cache;
	return 0;
}

static void print_header(struct conf_suite *s)
{
	json_t *flags = tether_cap_names(s->caps);
	char *names = json_dumps(flags, JSON_COMPACT);
	fprintf(s->out, "# conformance of kind %s (%s): tier %s, flags %s\n", s->b->kind,
	        s->b->maturity ? s->b->maturity : "?", tether_tier_name(s->caps), names ? names : "[]");
	free(names);
	json_decref(flags);
}

/* A harness that cannot run is one failure, reported like a check. */
static int harness_unusable(FILE *out, const char *why, struct tether_conformance_counts *counts)
{
	fprintf(out, "FAIL harness: %s\n", why);
	if (counts)
		*counts = (struct tether_conformance_counts){.failed = 1};
	return 1;
}

int tether_conformance_run_counts(const struct tether_harness *h, FILE *out, struct tether_conformance_counts *counts)
{
	if (!out)
		out = stdout;
	if (!h)
		return harness_unusable(out, "no harness", counts);
	char why[200];
	if (h->version < 1 || h->version > TETHER_HARNESS_VERSION ||
	    h->size < TT_SIZE_THROUGH(struct tether_harness, new_locator) || h->size > sizeof *h) {
		snprintf(why, sizeof why, "the harness is struct tether_harness version %u (size %u); this suite "
		         "reads versions 1 to %u: begin it with TETHER_HARNESS_INIT and rebuild it against "
		         "this tether's headers", (unsigned)h->version, (unsigned)h->size,
		         (unsigned)TETHER_HARNESS_VERSION);
		return harness_unusable(out, why, counts);
	}
	if (!h->backend)
		return harness_unusable(out, "no backend in the harness", counts);
	/* A backend the registry gave is of today's layout (a version 3 one
	 * is adapted there); one a harness links directly must be too. */
	if (h->backend->version < 4 || h->backend->version > TETHER_BACKEND_VERSION) {
		snprintf(why, sizeof why, "backend '%s' is struct tether_backend version %u; this suite reads "
		         "versions 4 to %u (load it as a module, which adapts version 3, or rebuild it)",
		         h->backend->version > 3 && h->backend->kind ? h->backend->kind : "?",
		         (unsigned)h->backend->version, (unsigned)TETHER_BACKEND_VERSION);
		return harness_unusable(out, why, counts);
	}
	if (!h->new_object || !h->mutate)
		return harness_unusable(out, "new_object and mutate are required", counts);
	if (!h->backend->kind || !h->backend->fingerprint || !h->backend->identity)
		return harness_unusable(out, "the backend lacks a kind, identity or fingerprint", counts);

	struct conf_suite s = {.h = h, .b = h->backend, .out = out};
	s.caps = h->caps ? h->caps : h->backend->caps;
	s.ctx = (struct tether_bctx){TETHER_BCTX_INIT};
	s.ctx.dataset_id = CONF_DATASET_ID;
	s.ctx.key = "conformance";
	s.ctx.threads = 2;
	s.ctx.cancel = &s.cancel;
	/* Both or neither (backend.h); the struct check fails one alone. */
	s.sessions = TT_BACKEND_GET(s.b, open_store) && TT_BACKEND_GET(s.b, close_store);
	if (make_scratch(&s) != 0) {
		free(s.scratch);
		return harness_unusable(out, "cannot make a scratch directory", counts);
	}
	int rc = make_policy(&s);
	if (rc) {
		char why[512];
		snprintf(why, sizeof why, "make_policy with no options returned %s: %s", conf_code_name(rc),
		         tether_error_last());
		conf_rmtree(s.scratch);
		free(s.scratch);
		free((char *)s.ctx.cache_dir);
		return harness_unusable(out, why, counts);
	}

	print_header(&s);
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
		for (const struct conf_check *c = tables[t]; c->name; c++) {
			if ((c->needs & s.caps) != c->needs || (c->applies && !c->applies(&s)))
				continue;
			run_one(&s, c);
		}
	}

	conf_rmtree(s.scratch);
	free(s.scratch);
	free((char *)s.ctx.cache_dir);
	json_decref(s.policy);
	if (counts)
		*counts = s.counts;
	return s.counts.failed;
}

int tether_conformance_run(const struct tether_harness *h, FILE *out)
{
	return tether_conformance_run_counts(h, out, NULL);
}
