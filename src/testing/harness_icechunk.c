/* The harness for `icechunk`: every system is a fresh repository that the
 * real Icechunk library makes and writes. tether itself never writes data,
 * so the harness needs a writer, and the library is the honest one: a
 * Python process running tests/e2e/icechunk_oracle.py serve, started once
 * and fed one JSON request per line:
 *
 *   {"op": "create", "path": P, "spec": 2}      -> {"ok": true, "snapshot": ID}
 *   {"op": "commit", "path": P, "branch": B}    -> {"ok": true, "snapshot": ID}
 *
 * $TETHER_ICECHUNK_PYTHON is the Python with icechunk and zarr installed,
 * $TETHER_ICECHUNK_ORACLE the script, $TETHER_ICECHUNK_SPEC the spec
 * version of the repositories (2 unless set). Layout: <scratch>/repo, so
 * new_locator can name a repository create_store then makes. */
#include "testing/harnesses.h"

#include "testing/oracle_proc.h"
#include "testing/suite.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tt_oracle oracle = {-1, NULL, NULL, "icechunk"};
static int spec = 2;

static int oracle_call(json_t *request, json_t **answer)
{
	return tt_oracle_call(&oracle, request, answer);
}

static int new_locator(void *ud, json_t **locator)
{
	(void)ud;
	char path[PATH_MAX + 8];
	int rc = tt_harness_scratch_child("tether-conformance-icechunk", "repo", path, sizeof path);
	if (rc == 0)
		*locator = json_pack("{s:s, s:s}", "uri", path, "branch", "main");
	return rc;
}

static int new_object(void *ud, json_t **locator)
{
	int rc = new_locator(ud, locator);
	if (rc)
		return rc;
	rc = oracle_call(json_pack("{s:s, s:O, s:i}", "op", "create", "path", json_object_get(*locator, "uri"), "spec",
	                           spec),
	                 NULL);
	if (rc) {
		json_decref(*locator);
		*locator = NULL;
	}
	return rc;
}

static int mutate(void *ud, const json_t *locator, const json_t *working_ref)
{
	(void)ud;
	return tt_oracle_write(&oracle, "commit", locator, working_ref);
}

const struct tether_harness *tt_harness_icechunk(void)
{
	static const struct tether_harness h = {
		TETHER_HARNESS_INIT,
		.new_object = new_object,
		.mutate = mutate,
		.cleanup = tt_oracle_cleanup,
		.new_locator = new_locator,
	};
	if (oracle.pid < 0) {
		const char *v = getenv("TETHER_ICECHUNK_SPEC");
		spec = v && *v ? atoi(v) : 2;
		if (tt_oracle_start(&oracle, "TETHER_ICECHUNK_PYTHON", "TETHER_ICECHUNK_ORACLE",
		                    "a Python with icechunk and zarr; tests/e2e/icechunk_oracle.py") != 0)
			return NULL;
	}
	return &h;
}
