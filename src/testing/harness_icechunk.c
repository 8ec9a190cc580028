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

#include "testing/suite.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static struct {
	pid_t pid;
	FILE *to, *from;
	int spec;
} oracle = {-1, NULL, NULL, 2};

static void oracle_stop(void)
{
	if (oracle.to)
		fclose(oracle.to);
	if (oracle.from)
		fclose(oracle.from);
	if (oracle.pid > 0)
		waitpid(oracle.pid, NULL, 0);
	oracle.to = oracle.from = NULL;
	oracle.pid = -1;
}

static int oracle_start(void)
{
	const char *python = getenv("TETHER_ICECHUNK_PYTHON"), *script = getenv("TETHER_ICECHUNK_ORACLE");
	const char *spec = getenv("TETHER_ICECHUNK_SPEC");
	if (!python || !*python || !script || !*script)
		return tether_error_set(TETHER_ERROR, "set TETHER_ICECHUNK_PYTHON (a Python with icechunk and zarr) and "
		                                      "TETHER_ICECHUNK_ORACLE (tests/e2e/icechunk_oracle.py)");
	oracle.spec = spec && *spec ? atoi(spec) : 2;
	int in[2], out[2];
	if (pipe(in) != 0 || pipe(out) != 0)
		return tether_error_set(TETHER_EIO, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addclose(&fa, in[1]);
	posix_spawn_file_actions_addclose(&fa, out[0]);
	char *argv[] = {(char *)python, (char *)script, "serve", NULL};
	int rc = posix_spawn(&oracle.pid, python, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	if (rc != 0) {
		close(in[1]);
		close(out[0]);
		oracle.pid = -1;
		return tether_error_set(TETHER_EIO, "cannot start %s: %s", python, strerror(rc));
	}
	oracle.to = fdopen(in[1], "w");
	oracle.from = fdopen(out[0], "r");
	atexit(oracle_stop);
	return oracle.to && oracle.from ? 0 : tether_error_set(TETHER_EIO, "fdopen: %s", strerror(errno));
}

/* One request, one answer; *answer is the reply's "snapshot" (may be NULL). */
static int oracle_call(json_t *request, json_t **answer)
{
	char *line = json_dumps(request, JSON_COMPACT);
	json_decref(request);
	if (!line)
		return tether_error_set(TETHER_ERROR, "cannot encode an oracle request");
	int rc = 0;
	if (fprintf(oracle.to, "%s\n", line) < 0 || fflush(oracle.to) != 0)
		rc = tether_error_set(TETHER_EIO, "the icechunk oracle is gone (writing)");
	free(line);
	char *reply = NULL;
	size_t cap = 0;
	if (rc == 0 && getline(&reply, &cap, oracle.from) < 0)
		rc = tether_error_set(TETHER_EIO, "the icechunk oracle is gone (reading)");
	json_t *doc = rc ? NULL : json_loads(reply, 0, NULL);
	free(reply);
	if (rc == 0 && !json_is_true(json_object_get(doc, "ok")))
		rc = tether_error_set(TETHER_ERROR, "icechunk oracle: %s",
		                      json_string_value(json_object_get(doc, "error")) ? json_string_value(json_object_get(doc, "error"))
		                                                                      : "no answer");
	if (rc == 0 && answer)
		*answer = json_incref(doc);
	json_decref(doc);
	return rc;
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
	                           oracle.spec),
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
	const char *branch = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!branch)
		branch = json_string_value(json_object_get(locator, "branch"));
	return oracle_call(json_pack("{s:s, s:O, s:s}", "op", "commit", "path", json_object_get(locator, "uri"), "branch",
	                             branch ? branch : "main"),
	                   NULL);
}

static void cleanup(void *ud, const json_t *locator)
{
	(void)ud;
	const char *path = json_string_value(json_object_get(locator, "uri"));
	char copy[PATH_MAX];
	if (!path || strlen(path) >= sizeof copy)
		return;
	strcpy(copy, path);
	conf_rmtree(dirname(copy));
}

const struct tether_harness *tt_harness_icechunk(void)
{
	static const struct tether_harness h = {
		TETHER_HARNESS_INIT,
		.new_object = new_object,
		.mutate = mutate,
		.cleanup = cleanup,
		.new_locator = new_locator,
	};
	if (oracle.pid < 0 && oracle_start() != 0)
		return NULL;
	return &h;
}
