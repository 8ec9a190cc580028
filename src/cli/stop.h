/* SIGINT, SIGTERM and the --timeout deadline (stop.c). */
#ifndef TETHER_CLI_STOP_H
#define TETHER_CLI_STOP_H

/* Install the handlers and arm the deadline of `timeout` (--timeout's
 * value), or of TETHER_TIMEOUT when it is NULL. 0, or the exit code of a
 * usage error (a bad number) already reported. */
int cli_stop_install(const char *timeout);

#endif
