/* The harness for `lance`: every system is a fresh dataset that pylance
 * makes and writes, through tests/e2e/lance_oracle.py serve (oracle_proc.h):
 *
 *   {"op": "create", "path": P}               -> {"ok": true}
 *   {"op": "append", "path": P, "branch": B}  -> {"ok": true, "version": N}
 *
 * $TETHER_LANCE_PYTHON is the Python with pylance installed,
 * $TETHER_LANCE_ORACLE the script. Layout: <scratch>/data.lance. */
#include "testing/harnesses.h"

#include "testing/oracle_proc.h"
#include "testing/suite.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tt_oracle oracle = {-1, NULL, NULL, "lance"};

static int new_object(void *ud, json_t **locator)
{
	(void)ud;
	char path[PATH_MAX + 16];
	int rc = tt_harness_scratch_child("tether-conformance-lance", "data.lance", path, sizeof path);
	if (rc == 0 && !(*locator = json_pack("{s:s, s:s}", "uri", path, "branch", "main")))
		rc = tether_error_set(TETHER_ERROR, "out of memory");
	if (rc == 0 && (rc = tt_oracle_call(&oracle, json_pack("{s:s, s:s}", "op", "create", "path", path), NULL))) {
		json_decref(*locator);
		*locator = NULL;
	}
	return rc;
}

static int mutate(void *ud, const json_t *locator, const json_t *working_ref)
{
	(void)ud;
	return tt_oracle_write(&oracle, "append", locator, working_ref);
}

const struct tether_harness *tt_harness_lance(void)
{
	static const struct tether_harness h = {
		TETHER_HARNESS_INIT,
		.new_object = new_object,
		.mutate = mutate,
		.cleanup = tt_oracle_cleanup,
	};
	if (oracle.pid < 0 && tt_oracle_start(&oracle, "TETHER_LANCE_PYTHON", "TETHER_LANCE_ORACLE",
	                                      "a Python with pylance; tests/e2e/lance_oracle.py") != 0)
		return NULL;
	return &h;
}
