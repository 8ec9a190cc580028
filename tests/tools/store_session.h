/* The JSON command session of store-tool (store_session.c says what the
 * commands are). */
#ifndef TETHER_TEST_STORE_SESSION_H
#define TETHER_TEST_STORE_SESSION_H

#include <tether/store.h>

#include <stdio.h>

/* Answer each command line of in on out until in ends; 0. */
int store_session(tether_store *s, FILE *in, FILE *out);
/* A store that would not open, answered as a command's failure is (the
 * error's code and message) on out; the exit code for it. */
int store_session_refused(int rc, FILE *out);

#endif
