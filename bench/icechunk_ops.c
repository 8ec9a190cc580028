/* Benchmark 5's C side: the icechunk backend's fingerprint and pin, called
 * through the public backend API exactly as the engine calls them, each
 * timed on its own.
 *
 *     icechunk_ops REPO fingerprint|fingerprint-warm|pin N
 *
 * fingerprint reads the head of main N times, each call on a thread of its
 * own: the backend keeps a parsed repo file per thread while the file is
 * unchanged, and a `tether status` is one process that reads it once, so
 * every call here starts cold, as a command does. fingerprint-warm makes
 * the N calls on one thread (what a history walk's repeated reads cost).
 * pin tags the head under N fresh pin ids, each call rewriting the `repo`
 * file as a commit's pin does (a write always reads the file afresh).
 * Prints one JSON line: {"op", "n", "seconds": [...]}. The module is found
 * as tether finds it ($TETHER_MODULE_PATH). REPO may be a store URI
 * (s3://BUCKET/PREFIX: benchmark 10), with $BENCH_STORE_OPTIONS.
 * $BENCH_KIND names another backend whose locator is {uri, branch} too
 * (benchmark 11: "lance", on a Lance dataset). */
#define _POSIX_C_SOURCE 200809L
#include <tether/backend.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct call {
	const struct tether_backend *b;
	struct tether_bctx *ctx;
	json_t *loc;
	double seconds;
	int rc;
};

static void *cold_fingerprint(void *p)
{
	struct call *c = p;
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	double t0 = now();
	c->rc = c->b->fingerprint(c->ctx, c->loc, NULL, &fp);
	c->seconds = now() - t0;
	json_decref(fp.state);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[2], "fingerprint") != 0 && strcmp(argv[2], "fingerprint-warm") != 0 &&
	                  strcmp(argv[2], "pin") != 0)) {
		fputs("usage: icechunk_ops REPO fingerprint|fingerprint-warm|pin N\n", stderr);
		return 2;
	}
	int n = atoi(argv[3]);
	const char *kind = getenv("BENCH_KIND");
	const struct tether_backend *b = tether_backend_find(kind && *kind ? kind : "icechunk");
	if (!b) {
		fprintf(stderr, "icechunk_ops: %s\n", tether_error_last());
		return 1;
	}
	struct tether_bctx ctx = {TETHER_BCTX_INIT, .dataset_id = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", .threads = 1};
	/* $BENCH_STORE_OPTIONS: the store options of REPO, as secrets.toml's
	 * [uris."REPO"] would give them (benchmark 10: allow_http for a local
	 * S3 server; the endpoint and keys come from AWS's variables). */
	const char *store_options = getenv("BENCH_STORE_OPTIONS");
	json_t *uri_secrets = NULL;
	if (store_options && *store_options) {
		json_error_t err;
		json_t *opts = json_loads(store_options, 0, &err);
		if (!json_is_object(opts)) {
			fprintf(stderr, "icechunk_ops: $BENCH_STORE_OPTIONS is not a JSON object: %s\n", err.text);
			return 2;
		}
		uri_secrets = json_pack("{s:o}", argv[1], opts);
		ctx.uri_secrets = uri_secrets;
	}
	json_t *loc = json_pack("{s:s, s:s}", "uri", argv[1], "branch", "main");
	json_t *times = json_array();
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	if (b->fingerprint(&ctx, loc, NULL, &fp) != 0) {
		fprintf(stderr, "icechunk_ops: %s\n", tether_error_last());
		return 1;
	}
	for (int i = 0; i < n; i++) {
		double t0 = now();
		int rc;
		if (strcmp(argv[2], "fingerprint") == 0) {
			struct call c = {b, &ctx, loc, 0, 0};
			pthread_t t;
			if (pthread_create(&t, NULL, cold_fingerprint, &c) != 0 || pthread_join(t, NULL) != 0) {
				fputs("icechunk_ops: cannot start a thread\n", stderr);
				return 1;
			}
			rc = c.rc;
			t0 = now() - c.seconds; /* the call's own time, not the thread's start */
		} else if (strcmp(argv[2], "fingerprint-warm") == 0) {
			struct tether_fingerprint again = {TETHER_FINGERPRINT_INIT};
			rc = b->fingerprint(&ctx, loc, NULL, &again);
			json_decref(again.state);
		} else {
			char pin[64];
			json_t *ref = NULL;
			int created = 0;
			snprintf(pin, sizeof pin, "b0b0b0b0.%016x", (unsigned)i);
			rc = b->pin(&ctx, loc, fp.state, pin, &ref, &created);
			json_decref(ref);
		}
		double t1 = now();
		if (rc) {
			fprintf(stderr, "icechunk_ops: %s\n", tether_error_last());
			return 1;
		}
		json_array_append_new(times, json_real(t1 - t0));
	}
	json_t *out = json_pack("{s:s, s:i, s:o}", "op", argv[2], "n", n, "seconds", times);
	char *text = json_dumps(out, JSON_COMPACT);
	puts(text);
	free(text);
	json_decref(out);
	json_decref(fp.state);
	json_decref(loc);
	json_decref(uri_secrets);
	return 0;
}
