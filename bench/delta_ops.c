/* Benchmark 12's C side: the delta backend's fingerprint, called through
 * the public backend API exactly as the engine calls it, each call timed
 * on its own.
 *
 *     delta_ops TABLE fingerprint N
 *
 * The backend keeps nothing between calls, so every call reads the log
 * afresh (_last_checkpoint, the listing after it, the commits after the
 * checkpoint, the checkpoint's protocol and metaData), as a `tether
 * status` does. Prints one JSON line: {"op", "n", "seconds": [...],
 * "state": {...}}. The module is found as tether finds it
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
	if (argc != 4 || strcmp(argv[2], "fingerprint") != 0) {
		fputs("usage: delta_ops TABLE fingerprint N\n", stderr);
		return 2;
	}
	int n = atoi(argv[3]);
	const struct tether_backend *b = tether_backend_find("delta");
	if (!b) {
		fprintf(stderr, "delta_ops: %s\n", tether_error_last());
		return 1;
	}
	struct tether_bctx ctx = {TETHER_BCTX_INIT, .dataset_id = "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0", .threads = 1};
	json_t *loc = json_pack("{s:s}", "uri", argv[1]);
	json_t *times = json_array();
	json_t *state = NULL;
	for (int i = 0; i < n; i++) {
		struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
		double t0 = now();
		int rc = b->fingerprint(&ctx, loc, NULL, &fp);
		double t1 = now();
		if (rc) {
			fprintf(stderr, "delta_ops: %s\n", tether_error_last());
			return 1;
		}
		json_array_append_new(times, json_real(t1 - t0));
		json_decref(state);
		state = fp.state;
	}
	json_t *out = json_pack("{s:s, s:i, s:o, s:o*}", "op", argv[2], "n", n, "seconds", times, "state", state);
	char *text = json_dumps(out, JSON_COMPACT);
	puts(text);
	free(text);
	json_decref(out);
	json_decref(loc);
	return 0;
}
