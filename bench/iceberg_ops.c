/* The Iceberg fingerprint benchmark's C side: the iceberg backend's
 * fingerprint, called through the public backend API as the engine calls
 * it, N times, each call timed on its own. Every call opens the catalog
 * (connection included), reads the table's row and its metadata file, as
 * one tether command does.
 *
 *     iceberg_ops IDENTIFIER N cold|session
 *
 * cold: every call without a store session, so it connects to the
 * catalog itself (one command's first call). session: the calls share one
 * store session (open_store once, as the engine opens one per store for a
 * command), so the connection is made by the first call only (not timed:
 * it is made before the timed calls).
 * The catalog comes from $BENCH_ICEBERG_CATALOG, a JSON object of catalog
 * properties (type, warehouse, uri, password, token, ...): type and
 * warehouse are handed over as tether.toml's [backends.iceberg] catalog,
 * the rest as secrets.toml's. Prints one JSON line: {"op", "n",
 * "seconds": [...]}. The module is found as tether finds it
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
	if (argc != 4 || (strcmp(argv[3], "cold") != 0 && strcmp(argv[3], "session") != 0)) {
		fputs("usage: iceberg_ops IDENTIFIER N cold|session\n", stderr);
		return 2;
	}
	int n = atoi(argv[2]);
	json_error_t err;
	const char *spec = getenv("BENCH_ICEBERG_CATALOG");
	json_t *props = spec ? json_loads(spec, 0, &err) : NULL;
	if (!json_is_object(props)) {
		fputs("iceberg_ops: $BENCH_ICEBERG_CATALOG must be a JSON object of catalog properties\n", stderr);
		return 2;
	}
	json_t *committed = json_object(), *secret = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(props, k, v)
		json_object_set(strcmp(k, "type") == 0 || strcmp(k, "warehouse") == 0 ? committed : secret, k, v);
	json_t *config = json_pack("{s:o}", "catalog", committed);
	json_t *secrets = json_pack("{s:o}", "catalog", secret);
	const struct tether_backend *b = tether_backend_find("iceberg");
	if (!b) {
		fprintf(stderr, "iceberg_ops: %s\n", tether_error_last());
		return 1;
	}
	struct tether_bctx ctx = {TETHER_BCTX_INIT, .dataset_id = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", .threads = 1,
	                          .config = config, .secrets = secrets};
	json_t *loc = json_pack("{s:s, s:s, s:s}", "identifier", argv[1], "branch", "main", "catalog_name",
	                        json_string_value(json_object_get(props, "name")) ? json_string_value(json_object_get(props, "name"))
	                                                                          : "default");
	json_object_del(secret, "name");
	json_t *times = json_array();
	json_t *state = NULL;
	void *session = NULL;
	if (strcmp(argv[3], "session") == 0) {
		struct tether_fingerprint first = {TETHER_FINGERPRINT_INIT};
		if (b->open_store(&ctx, loc, loc, &session) != 0 || (ctx.session = session, 0) ||
		    b->fingerprint(&ctx, loc, NULL, &first) != 0) {
			fprintf(stderr, "iceberg_ops: %s\n", tether_error_last());
			return 1;
		}
		json_decref(first.state);
	}
	for (int i = 0; i < n; i++) {
		struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
		double t0 = now();
		int rc = b->fingerprint(&ctx, loc, NULL, &fp);
		double t1 = now();
		if (rc) {
			fprintf(stderr, "iceberg_ops: %s\n", tether_error_last());
			return 1;
		}
		json_decref(state);
		state = fp.state;
		json_array_append_new(times, json_real(t1 - t0));
	}
	if (session)
		b->close_store(&ctx, session);
	json_t *out = json_pack("{s:s, s:i, s:o, s:O}", "op", argv[3], "n", n, "seconds", times, "state", state);
	char *text = json_dumps(out, JSON_COMPACT);
	puts(text);
	free(text);
	json_decref(out);
	json_decref(state);
	json_decref(loc);
	json_decref(config);
	json_decref(secrets);
	json_decref(props);
	return 0;
}
