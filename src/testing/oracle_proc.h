/* A harness's oracle: the system's own library in a Python child process
 * (tests/e2e/<kind>_oracle.py serve), fed one JSON request per line and
 * answering one JSON object per line, {"ok": true, ...} or {"ok": false,
 * "error"}. The icechunk and lance harnesses write their systems through
 * one, since tether itself never writes data. */
#ifndef TETHER_TESTING_ORACLE_PROC_H
#define TETHER_TESTING_ORACLE_PROC_H

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

struct tt_oracle {
	pid_t pid; /* -1: not started */
	FILE *to, *from;
	const char *what; /* "icechunk", "lance": for messages */
};

/* Start `python script serve`, both named by environment variables (the
 * message names them when unset); stopped at exit. */
int tt_oracle_start(struct tt_oracle *o, const char *python_var, const char *script_var, const char *needs);
/* Send request (consumed), read the answer: *answer a new reference when
 * not NULL. An answer that is not ok is TETHER_ERROR with its error. */
int tt_oracle_call(struct tt_oracle *o, json_t *request, json_t **answer);
void tt_oracle_stop(struct tt_oracle *o);
/* A harness's mutate: {"op": op, "path": the locator's uri, "branch": the
 * working ref's branch, else the locator's, else "main"}. */
int tt_oracle_write(struct tt_oracle *o, const char *op, const json_t *locator, const json_t *working_ref);
/* A harness's cleanup of a system at <scratch directory>/<name>: the
 * scratch directory removed. */
void tt_oracle_cleanup(void *ud, const json_t *locator);

#endif
