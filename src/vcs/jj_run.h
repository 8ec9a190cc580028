/* Running the jj command line, for tether-vcs-jj.
 *
 * jj has no library with a stable C interface: every write and every
 * revset goes through the `jj` executable. It is spawned directly (no
 * shell: revsets and paths are never re-parsed), with stdin on /dev/null
 * and both outputs captured. Internal to the jj module. */
#ifndef TETHER_VCS_JJ_RUN_H
#define TETHER_VCS_JJ_RUN_H

#include <stddef.h>

struct tt_jj_result {
	int status;     /* jj's exit status; 128 + the signal when killed */
	char *out;      /* standard output, NUL-terminated */
	size_t out_len; /* excluding the NUL */
	char *err;      /* standard error, NUL-terminated */
};

/* Run `jj -R <root> --no-pager --color=never <args...>` (args is
 * NULL-terminated) and wait for it. The executable is $TETHER_JJ when set,
 * else `jj` found on PATH; the environment is passed through unchanged, so
 * the user's identity (JJ_USER, JJ_EMAIL, their config) is jj's as usual.
 * Returns 0 when jj ran to its end, whatever its exit status (the caller
 * reads res->status and frees res), TETHER_ECONFIG (with a hint) when jj
 * cannot be found or started, TETHER_EIO when its output cannot be read. */
int tt_jj_run(const char *root, const char *const *args, struct tt_jj_result *res);

void tt_jj_result_free(struct tt_jj_result *res);

/* What a failed run said, for an error message, copied into buf (size n,
 * truncated): jj's first line starting with `prefix` ("Error: ", "Hint: "),
 * without it, with any "Caused by:" lines after it joined on. With no such
 * line: for "Error: ", the first line of stderr, else "jj exited with
 * status N"; for any other prefix, "" (and 0 returned). Returns 1 when
 * something was found. */
int tt_jj_message(const struct tt_jj_result *res, const char *prefix, char *buf, size_t n);

#endif
