/* Stopping a command: SIGINT and SIGTERM, and the deadline of --timeout
 * SECONDS (or TETHER_TIMEOUT), all ask the library to stop
 * (tether_cancel). The command then ends at its next step with "tether:
 * error: cancelled (...)" and exit 130 (SIGINT), 143 (SIGTERM) or 124 (the
 * deadline), having written nothing half-way. A second SIGINT or SIGTERM
 * while it winds down ends the process at once, as the signal would have
 * (what a kill leaves is what the journal recovers from). */
#include "stop.h"

#include "output.h"

#include <tether.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static void on_signal(int sig)
{
	if (tether_cancel_reason() >= 0 && sig != SIGALRM) {
		/* Asked twice: stop now. */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	tether_cancel(sig == SIGALRM ? 0 : sig);
}

static int install(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART; /* a read the stop interrupts goes on; the loop checks */
	return sigaction(sig, &sa, NULL);
}

/* SECONDS: a positive decimal number (fractions allowed), at most a year. */
static int parse_seconds(const char *text, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(text, &end);
	if (!*text || errno || !end || *end || !isfinite(v) || v <= 0 || v > 366.0 * 86400)
		return -1;
	*out = v;
	return 0;
}

int cli_stop_install(const char *timeout)
{
	const char *from = "--timeout";
	if (!timeout || !*timeout) {
		timeout = getenv("TETHER_TIMEOUT");
		from = "TETHER_TIMEOUT";
	}
	if (install(SIGINT) != 0 || install(SIGTERM) != 0)
		return out_fail("cannot install the SIGINT and SIGTERM handlers: %s", strerror(errno));
	if (!timeout || !*timeout)
		return 0;
	double seconds;
	if (parse_seconds(timeout, &seconds) != 0)
		return out_usage(NULL, "%s '%s': give a number of seconds greater than 0", from, timeout);
	struct itimerval it;
	memset(&it, 0, sizeof it);
	it.it_value.tv_sec = (time_t)seconds;
	it.it_value.tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6);
	if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
		it.it_value.tv_usec = 1;
	if (install(SIGALRM) != 0 || setitimer(ITIMER_REAL, &it, NULL) != 0)
		return out_fail("cannot arm the %s deadline: %s", from, strerror(errno));
	return 0;
}
