/* A harness's oracle process (oracle_proc.h). */
#include "testing/oracle_proc.h"

#include "testing/suite.h"

#include <tether/backend.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The oracles started, stopped at exit (a harness starts one per kind). */
static struct tt_oracle *started[4];

void tt_oracle_stop(struct tt_oracle *o)
{
	if (o->to)
		fclose(o->to);
	if (o->from)
		fclose(o->from);
	if (o->pid > 0)
		waitpid(o->pid, NULL, 0);
	o->to = o->from = NULL;
	o->pid = -1;
}

static void stop_all(void)
{
	for (size_t i = 0; i < sizeof started / sizeof *started; i++)
		if (started[i])
			tt_oracle_stop(started[i]);
}

int tt_oracle_start(struct tt_oracle *o, const char *python_var, const char *script_var, const char *needs)
{
	const char *python = getenv(python_var), *script = getenv(script_var);
	if (!python || !*python || !script || !*script)
		return tether_error_set(TETHER_ERROR, "set %s and %s (%s)", python_var, script_var, needs);
	int in[2], out[2];
	if (pipe(in) != 0)
		return tether_error_set(TETHER_EIO, "pipe: %s", strerror(errno));
	if (pipe(out) != 0) {
		close(in[0]);
		close(in[1]);
		return tether_error_set(TETHER_EIO, "pipe: %s", strerror(errno));
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addclose(&fa, in[1]);
	posix_spawn_file_actions_addclose(&fa, out[0]);
	char *argv[] = {(char *)python, (char *)script, "serve", NULL};
	int rc = posix_spawn(&o->pid, python, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	if (rc != 0) {
		close(in[1]);
		close(out[0]);
		o->pid = -1;
		return tether_error_set(TETHER_EIO, "cannot start %s: %s", python, strerror(rc));
	}
	o->to = fdopen(in[1], "w");
	o->from = fdopen(out[0], "r");
	size_t i = 0;
	while (i < sizeof started / sizeof *started && started[i] && started[i] != o)
		i++;
	if (i < sizeof started / sizeof *started && !started[i]) {
		if (i == 0)
			atexit(stop_all);
		started[i] = o;
	}
	return o->to && o->from ? 0 : tether_error_set(TETHER_EIO, "fdopen: %s", strerror(errno));
}

int tt_oracle_call(struct tt_oracle *o, json_t *request, json_t **answer)
{
	char *line = json_dumps(request, JSON_COMPACT);
	json_decref(request);
	if (!line)
		return tether_error_set(TETHER_ERROR, "cannot encode an oracle request");
	int rc = 0;
	if (fprintf(o->to, "%s\n", line) < 0 || fflush(o->to) != 0)
		rc = tether_error_set(TETHER_EIO, "the %s oracle is gone (writing)", o->what);
	free(line);
	char *reply = NULL;
	size_t cap = 0;
	if (rc == 0 && getline(&reply, &cap, o->from) < 0)
		rc = tether_error_set(TETHER_EIO, "the %s oracle is gone (reading)", o->what);
	json_t *doc = rc ? NULL : json_loads(reply, 0, NULL);
	free(reply);
	const char *error = json_string_value(json_object_get(doc, "error"));
	if (rc == 0 && !json_is_true(json_object_get(doc, "ok")))
		rc = tether_error_set(TETHER_ERROR, "%s oracle: %s", o->what, error ? error : "no answer");
	if (rc == 0 && answer)
		*answer = json_incref(doc);
	json_decref(doc);
	return rc;
}

int tt_oracle_write(struct tt_oracle *o, const char *op, const json_t *locator, const json_t *working_ref)
{
	const char *branch = json_string_value(json_object_get(working_ref, "working_branch"));
	if (!branch)
		branch = json_string_value(json_object_get(locator, "branch"));
	return tt_oracle_call(o, json_pack("{s:s, s:O, s:s}", "op", op, "path", json_object_get(locator, "uri"), "branch",
	                                   branch ? branch : "main"),
	                      NULL);
}

void tt_oracle_cleanup(void *ud, const json_t *locator)
{
	(void)ud;
	const char *path = json_string_value(json_object_get(locator, "uri"));
	char copy[PATH_MAX];
	if (!path || strlen(path) >= sizeof copy)
		return;
	strcpy(copy, path);
	conf_rmtree(dirname(copy));
}
