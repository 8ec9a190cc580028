/* The Iceberg REST catalog client (src/backends/iceberg/catalog_rest.h)
 * from the command line, for the tests and the benchmark:
 *
 *   iceberg-rest-tool CONFIG load NS TABLE
 *       {"metadata-location": ..., "metadata": {...}} on stdout
 *   iceberg-rest-tool CONFIG commit NS TABLE REQUIREMENTS UPDATES
 *       (two JSON arrays) the table's metadata after the commit
 *   iceberg-rest-tool CONFIG watch NS TABLE REF N PAUSE_MS
 *       on one open catalog, N loads PAUSE_MS apart (a long command whose
 *       token expires); REF's snapshot id after each, one per line
 *   iceberg-rest-tool CONFIG fingerprint NS TABLE REF N
 *       N times: open the catalog, load the table, read REF's snapshot id
 *       (what a tether fingerprint does); {"snapshot_id", "seconds"} with
 *       the mean time of one, process start excluded
 *
 * CONFIG is a JSON file {"name": ..., "props": {...}, "secrets": {...}},
 * the catalog's committed properties and its secrets.toml entry. A failure
 * prints "iceberg-rest-tool: CODE: message" (CODE the TETHER_E* name) and
 * exits 2 (EUSAGE), 3 (EREFUSED) or 1. */
#include "backends/iceberg/catalog_rest.h"
#include "backends/iceberg/rest_outcome.h"

#include <tether.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *code_name(int rc)
{
	switch (rc) {
	case TETHER_EUSAGE: return "EUSAGE";
	case TETHER_EREFUSED: return "EREFUSED";
	case TETHER_ENOTFOUND: return "ENOTFOUND";
	case TETHER_ECONFIG: return "ECONFIG";
	case TETHER_EIO: return "EIO";
	case TETHER_EAUTH: return "EAUTH";
	case TETHER_ETRANSIENT: return "ETRANSIENT";
	case TETHER_ECANCELLED: return "ECANCELLED";
	default: return "ERROR";
	}
}

static int fail(int rc)
{
	fprintf(stderr, "iceberg-rest-tool: %s: %s\n", code_name(rc), tether_error_last());
	return rc == TETHER_EUSAGE ? 2 : rc == TETHER_EREFUSED ? 3 : 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: iceberg-rest-tool CONFIG load NS TABLE\n"
	                "       iceberg-rest-tool CONFIG commit NS TABLE REQUIREMENTS UPDATES\n"
	                "       iceberg-rest-tool CONFIG watch NS TABLE REF N PAUSE_MS\n"
	                "       iceberg-rest-tool CONFIG fingerprint NS TABLE REF N\n");
	return 2;
}

static int open_catalog(const json_t *cfg, struct ib_catalog **cat)
{
	return ib_catalog_rest_open(json_object_get(cfg, "props"), json_object_get(cfg, "secrets"),
	                            json_string_value(json_object_get(cfg, "name")), cat);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	if (s)
		puts(s);
	free(s);
}

static int cmd_watch(const json_t *cfg, const char *ns, const char *table, const char *ref, int n, int pause_ms)
{
	struct ib_catalog *cat;
	int rc = open_catalog(cfg, &cat);
	for (int i = 0; !rc && i < n; i++) {
		if (i) {
			struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
		json_t *md = NULL;
		long long id = -1;
		rc = cat->ops->load(cat, ns, table, &md, NULL);
		if (!rc && ib_rest_ref_snapshot(md, ref, &id))
			id = -1;
		json_decref(md);
		if (!rc)
			printf("%lld\n", id);
		fflush(stdout);
	}
	if (cat)
		cat->ops->close(cat);
	return rc ? fail(rc) : 0;
}

static int cmd_fingerprint(const json_t *cfg, const char *ns, const char *table, const char *ref, int n)
{
	long long id = -1;
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		struct ib_catalog *cat;
		int rc = open_catalog(cfg, &cat);
		json_t *md = NULL;
		if (!rc)
			rc = cat->ops->load(cat, ns, table, &md, NULL);
		if (!rc && ib_rest_ref_snapshot(md, ref, &id))
			id = -1; /* no snapshot yet */
		json_decref(md);
		if (cat)
			cat->ops->close(cat);
		if (rc)
			return fail(rc);
	}
	json_t *out = json_pack("{s:I, s:f}", "snapshot_id", (json_int_t)id, "seconds", (now_s() - t0) / n);
	print_json(out);
	json_decref(out);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 5)
		return usage();
	json_error_t jerr;
	json_t *cfg = json_load_file(argv[1], 0, &jerr);
	if (!json_is_object(cfg)) {
		fprintf(stderr, "iceberg-rest-tool: %s:%d:%d: %s\n", argv[1], jerr.line, jerr.column, jerr.text);
		return 2;
	}
	const char *cmd = argv[2], *ns = argv[3], *table = argv[4];
	int status = 0;
	if (strcmp(cmd, "fingerprint") == 0 && argc == 7) {
		int n = atoi(argv[6]);
		status = n > 0 ? cmd_fingerprint(cfg, ns, table, argv[5], n) : usage();
	} else if (strcmp(cmd, "watch") == 0 && argc == 8) {
		int n = atoi(argv[6]), pause = atoi(argv[7]);
		status = n > 0 && pause >= 0 ? cmd_watch(cfg, ns, table, argv[5], n, pause) : usage();
	} else if (strcmp(cmd, "load") == 0 && argc == 5) {
		struct ib_catalog *cat;
		json_t *md = NULL;
		char *loc = NULL;
		int rc = open_catalog(cfg, &cat);
		if (!rc)
			rc = cat->ops->load(cat, ns, table, &md, &loc);
		if (rc) {
			status = fail(rc);
		} else {
			json_t *out = json_pack("{s:s?, s:o}", "metadata-location", loc, "metadata", md);
			print_json(out);
			json_decref(out);
		}
		free(loc);
		if (cat)
			cat->ops->close(cat);
	} else if (strcmp(cmd, "commit") == 0 && argc == 7) {
		json_t *reqs = json_loads(argv[5], 0, &jerr);
		json_t *upds = reqs ? json_loads(argv[6], 0, &jerr) : NULL;
		struct ib_catalog *cat = NULL;
		json_t *md = NULL;
		if (!upds) {
			fprintf(stderr, "iceberg-rest-tool: a commit's arguments are JSON arrays: %s\n", jerr.text);
			status = 2;
		} else {
			int rc = open_catalog(cfg, &cat);
			if (!rc)
				rc = cat->ops->commit(cat, ns, table, reqs, upds, &md);
			if (rc)
				status = fail(rc);
			else
				print_json(md);
		}
		json_decref(md);
		json_decref(reqs);
		json_decref(upds);
		if (cat)
			cat->ops->close(cat);
	} else {
		status = usage();
	}
	json_decref(cfg);
	return status;
}
