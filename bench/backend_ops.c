/* The C side of the backend benchmarks (5, 10, 11, 12, 13, 14, 15, 16):
 * one backend's fingerprint or pin, called through the public backend
 * API as the engine calls it, N times, each call timed on its own, so
 * process start is out of the figures.
 *
 *     backend_ops [OPTIONS] KIND LOCATOR fingerprint|pin N
 *
 * KIND names the backend (its module is found as tether finds it,
 * $TETHER_MODULE_PATH); LOCATOR is the object's locator as JSON, as a
 * manifest records it. Before the timed calls one fingerprint is made
 * untimed: it loads what a first call loads (the module's libraries, a
 * catalog's driver), gives the state a pin pins and the state every timed
 * fingerprint must read again (a benchmark of a moving object measures
 * nothing, so a change is an error).
 *
 *   --session          all calls (the untimed one too, so it makes the
 *                      connection) share one store session, opened with
 *                      open_store on the locator's identity and closed
 *                      after, as the engine does for one command; without
 *                      it every call runs without a session, as one
 *                      command's first call about a store does
 *   --thread-per-call  each call on a thread of its own, so what a backend
 *                      keeps per thread (icechunk's parsed repo file)
 *                      never helps: one command reads the object once
 *   --config JSON      ctx->config: [backends.KIND] of tether.toml
 *   --secrets JSON     ctx->secrets: the object's secrets.toml entry
 *   --uri-secrets JSON ctx->uri_secrets: secrets.toml's [uris] (a
 *                      server's login, a store's options)
 *
 * A pin is made under a fresh pin id per call. Prints one JSON line:
 * {"kind", "op", "n", "session", "seconds": [...], "state"}. Exit 0, 1 on
 * a failed call (the backend's error on stderr), 2 on bad arguments. */
#define _POSIX_C_SOURCE 200809L
#include <tether/backend.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define USAGE                                                                                                  \
	"usage: backend_ops [--session] [--thread-per-call] [--config JSON] [--secrets JSON] [--uri-secrets JSON]" \
	" KIND LOCATOR fingerprint|pin N\n"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One timed call: what it needs, and what it measured. */
struct call {
	const struct tether_backend *b;
	const struct tether_bctx *ctx;
	const json_t *loc;
	const json_t *pin_state; /* NULL: a fingerprint */
	unsigned pin_no;
	json_t *state; /* a fingerprint's, for the caller */
	double seconds;
	int rc;
};

static void *run_call(void *p)
{
	struct call *c = p;
	double t0;
	if (c->pin_state) {
		char pin[64];
		json_t *ref = NULL;
		int created = 0;
		snprintf(pin, sizeof pin, "%.8s.%016x", c->ctx->dataset_id, c->pin_no);
		t0 = now();
		c->rc = c->b->pin(c->ctx, c->loc, c->pin_state, pin, &ref, &created);
		c->seconds = now() - t0;
		json_decref(ref);
	} else {
		struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
		t0 = now();
		c->rc = c->b->fingerprint(c->ctx, c->loc, NULL, &fp);
		c->seconds = now() - t0;
		c->state = fp.state;
	}
	return NULL;
}

static json_t *parse_object(const char *what, const char *text)
{
	json_error_t err;
	json_t *v = json_loads(text, 0, &err);
	if (!json_is_object(v)) {
		fprintf(stderr, "backend_ops: %s: not a JSON object (line %d:%d: %s)\n", what, err.line, err.column,
		        v ? "another JSON value" : err.text);
		json_decref(v);
		return NULL;
	}
	return v;
}

static int failed(const char *what)
{
	fprintf(stderr, "backend_ops: %s: %s\n", what, tether_error_last());
	return 1;
}

/* The arguments, parsed; the JSON ones owned. */
struct args {
	bool session, thread_per_call;
	json_t *config, *secrets, *uri_secrets, *loc;
	const char *kind, *op;
	int n;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	int i = 1;
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		json_t **slot = strcmp(argv[i], "--config") == 0        ? &a->config
		                : strcmp(argv[i], "--secrets") == 0     ? &a->secrets
		                : strcmp(argv[i], "--uri-secrets") == 0 ? &a->uri_secrets
		                                                        : NULL;
		if (strcmp(argv[i], "--session") == 0)
			a->session = true;
		else if (strcmp(argv[i], "--thread-per-call") == 0)
			a->thread_per_call = true;
		else if (!slot || i + 1 >= argc) {
			fprintf(stderr, "backend_ops: %s: %s\n" USAGE, argv[i], slot ? "needs a value" : "unknown option");
			return 2;
		} else {
			json_decref(*slot);
			if (!(*slot = parse_object(argv[i], argv[i + 1])))
				return 2;
			i++;
		}
	}
	if (argc - i != 4) {
		fputs(USAGE, stderr);
		return 2;
	}
	a->kind = argv[i];
	a->op = argv[i + 2];
	char *end;
	long n = strtol(argv[i + 3], &end, 10);
	if (strcmp(a->op, "fingerprint") != 0 && strcmp(a->op, "pin") != 0) {
		fprintf(stderr, "backend_ops: %s: the operation is fingerprint or pin\n", a->op);
		return 2;
	}
	if (*end || end == argv[i + 3] || n < 1 || n > 1000000) {
		fprintf(stderr, "backend_ops: %s: N is a count of calls, 1 to 1000000\n", argv[i + 3]);
		return 2;
	}
	a->n = (int)n;
	return (a->loc = parse_object("LOCATOR", argv[i + 1])) ? 0 : 2;
}

/* The N timed calls, after the untimed first fingerprint (in *first). */
static int timed_calls(const struct args *a, const struct tether_backend *b, const struct tether_bctx *ctx,
                       const json_t *first, json_t *times)
{
	bool pin = strcmp(a->op, "pin") == 0;
	for (int i = 0; i < a->n; i++) {
		struct call c = {b, ctx, a->loc, pin ? first : NULL, (unsigned)i, NULL, 0, 0};
		if (a->thread_per_call) {
			pthread_t t;
			if (pthread_create(&t, NULL, run_call, &c) != 0 || pthread_join(t, NULL) != 0) {
				fputs("backend_ops: cannot start a thread\n", stderr);
				return 1;
			}
		} else {
			run_call(&c);
		}
		bool moved = !pin && c.rc == 0 && !json_equal(c.state, first);
		json_decref(c.state);
		if (c.rc)
			return failed(a->op);
		if (moved) {
			fprintf(stderr, "backend_ops: the object's state moved during the benchmark\n");
			return 1;
		}
		json_array_append_new(times, json_real(c.seconds));
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = {0};
	int rc = parse_args(argc, argv, &a);
	const struct tether_backend *b = rc ? NULL : tether_backend_find(a.kind);
	if (!rc && !b)
		rc = failed(a.kind);
	if (!rc && strcmp(a.op, "pin") == 0 && !b->pin) {
		fprintf(stderr, "backend_ops: %s: the backend does not pin\n", a.kind);
		rc = 2;
	}
	if (!rc && a.session && (!b->open_store || !b->identity)) {
		fprintf(stderr, "backend_ops: %s: the backend has no store sessions (--session)\n", a.kind);
		rc = 2;
	}
	struct tether_bctx ctx = {TETHER_BCTX_INIT, .dataset_id = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", .threads = 1,
	                          .config = a.config, .secrets = a.secrets, .uri_secrets = a.uri_secrets};
	json_t *identity = NULL, *times = json_array();
	void *session = NULL;
	if (!rc && a.session &&
	    (b->identity(&ctx, a.loc, &identity) != 0 || b->open_store(&ctx, a.loc, identity, &session) != 0))
		rc = failed("open_store");
	ctx.session = session;
	struct tether_fingerprint first = {TETHER_FINGERPRINT_INIT};
	if (!rc && b->fingerprint(&ctx, a.loc, NULL, &first) != 0)
		rc = failed("fingerprint");
	if (!rc)
		rc = timed_calls(&a, b, &ctx, first.state, times);
	if (session)
		b->close_store(&ctx, session);
	if (!rc) {
		json_t *out = json_pack("{s:s, s:s, s:i, s:b, s:O, s:O*}", "kind", a.kind, "op", a.op, "n", a.n, "session",
		                        a.session, "seconds", times, "state", first.state);
		char *text = json_dumps(out, JSON_COMPACT);
		puts(text);
		free(text);
		json_decref(out);
	}
	json_decref(first.state);
	json_decref(times);
	json_decref(identity);
	json_decref(a.loc);
	json_decref(a.config);
	json_decref(a.secrets);
	json_decref(a.uri_secrets);
	return rc;
}
