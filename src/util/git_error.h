/* libgit2 failures as tether errors, for the modules built on libgit2 (the
 * git VCS and the git backend): one mapping of codes, one message form. */
#ifndef TETHER_UTIL_GIT_ERROR_H
#define TETHER_UTIL_GIT_ERROR_H

#include <stdarg.h>

/* The TETHER_E* code for a libgit2 return code (and its last error). */
int tt_git_code(int git_rc);
/* Set "<context>: <libgit2's message>" and return the mapped code. */
int tt_git_failv(int git_rc, const char *fmt, va_list ap);
int tt_git_fail(int git_rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
