/* Benchmark 11's C side: the dolt backend's fingerprint, called through
 * the public backend API exactly as the engine calls it, each call timed
 * on its own.
 *
 *     dolt_ops PORT DATABASE fingerprint|fingerprint-session N
 *
 * fingerprint makes each call without a store session, so each opens its
 * own connection (what one `tether status` of one object costs the
 * server); fingerprint-session makes them in one session (open_store),
 * whose pooled connection the calls share, as the calls of one command
 * about one server do. The login comes from $BENCH_DOLT_USER and
 * $BENCH_DOLT_PASSWORD, handed over as secrets.toml's
 * [uris."mysql://127.0.0.1:PORT"] would be. Prints one JSON line:
 * {"op", "n", "seconds": [...]}. The module is found as tether finds it
 * ($TETHER_MODULE_PATH). */
#define _POSIX_C_SOURCE 200809L
#include <tether/backend.h>

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

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[3], "fingerprint") != 0 && strcmp(argv[3], "fingerprint-session") != 0)) {
		fputs("usage: dolt_ops PORT DATABASE fingerprint|fingerprint-session N\n", stderr);
		return 2;
	}
	int port = atoi(argv[1]), n = atoi(argv[4]);
	const struct tether_backend *b = tether_backend_find("dolt");
	if (!b) {
		fprintf(stderr, "dolt_ops: %s\n", tether_error_last());
		return 1;
	}
	char server[64];
	snprintf(server, sizeof server, "mysql://127.0.0.1:%d", port);
	const char *user = getenv("BENCH_DOLT_USER"), *password = getenv("BENCH_DOLT_PASSWORD");
	json_t *uri_secrets = json_pack("{s:{s:s, s:s}}", server, "user", user ? user : "root", "password",
	                                password ? password : "");
	struct tether_bctx ctx = {TETHER_BCTX_INIT, .dataset_id = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", .threads = 1,
	                          .uri_secrets = uri_secrets};
	json_t *loc = json_pack("{s:s, s:i, s:s, s:s}", "host", "127.0.0.1", "port", port, "database", argv[2],
	                        "branch", "main");
	json_t *identity = NULL;
	void *session = NULL;
	if (strcmp(argv[3], "fingerprint-session") == 0 &&
	    (b->identity(&ctx, loc, &identity) != 0 || b->open_store(&ctx, loc, identity, &session) != 0)) {
		fprintf(stderr, "dolt_ops: %s\n", tether_error_last());
		return 1;
	}
	ctx.session = session;
	json_t *times = json_array();
	for (int i = 0; i < n; i++) {
		struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
		double t0 = now();
		int rc = b->fingerprint(&ctx, loc, NULL, &fp);
		double t1 = now();
		json_decref(fp.state);
		if (rc) {
			fprintf(stderr, "dolt_ops: %s\n", tether_error_last());
			return 1;
		}
		json_array_append_new(times, json_real(t1 - t0));
	}
	if (session)
		b->close_store(&ctx, session);
	json_t *out = json_pack("{s:s, s:i, s:o}", "op", argv[3], "n", n, "seconds", times);
	char *text = json_dumps(out, JSON_COMPACT);
	puts(text);
	free(text);
	json_decref(out);
	json_decref(loc);
	json_decref(identity);
	json_decref(uri_secrets);
	return 0;
}
