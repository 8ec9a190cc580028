/* Benchmark 12's C side: the ducklake backend's fingerprint, called through
 * the public backend API exactly as the engine calls it, each call timed on
 * its own.
 *
 *     ducklake_ops METADATA N
 *
 * METADATA is a locator's metadata ("ducklake:sqlite:FILE", a DuckDB file
 * with $TETHER_LIBDUCKDB, ...). Every call opens the catalog, reads it in
 * a transaction of its own and closes it, as each command does; the first
 * call (which loads the module and the catalog library) is made before the
 * timed ones, as process start is excluded on both sides. Prints one JSON
 * line: {"op", "n", "seconds": [...], "state"}. The module is found as
 * tether finds it ($TETHER_MODULE_PATH). */
#define _POSIX_C_SOURCE 200809L
#include <tether/backend.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fputs("usage: ducklake_ops METADATA N\n", stderr);
		return 2;
	}
	int n = atoi(argv[2]);
	const struct tether_backend *b = tether_backend_find("ducklake");
	if (!b) {
		fprintf(stderr, "ducklake_ops: %s\n", tether_error_last());
		return 1;
	}
	struct tether_bctx ctx = {TETHER_BCTX_INIT, .dataset_id = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", .threads = 1};
	json_t *loc = json_pack("{s:s}", "metadata", argv[1]);
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	if (b->fingerprint(&ctx, loc, NULL, &fp) != 0) {
		fprintf(stderr, "ducklake_ops: %s\n", tether_error_last());
		return 1;
	}
	json_t *times = json_array();
	for (int i = 0; i < n; i++) {
		struct tether_fingerprint again = {TETHER_FINGERPRINT_INIT};
		double t0 = now();
		int rc = b->fingerprint(&ctx, loc, NULL, &again);
		double t1 = now();
		if (rc || !json_equal(again.state, fp.state)) {
			fprintf(stderr, "ducklake_ops: %s\n", rc ? tether_error_last() : "the state moved");
			return 1;
		}
		json_decref(again.state);
		json_array_append_new(times, json_real(t1 - t0));
	}
	json_t *out = json_pack("{s:s, s:i, s:o, s:O}", "op", "fingerprint", "n", n, "seconds", times, "state", fp.state);
	char *text = json_dumps(out, JSON_COMPACT);
	puts(text);
	free(text);
	json_decref(out);
	json_decref(fp.state);
	json_decref(loc);
	return 0;
}
