/* One process-wide stop request. A signal handler may set it, so it is a
 * plain int written once (sig_atomic_t is int on every platform tether
 * builds on: checked below), read by every loop through a volatile load. */
#include "core/cancel.h"

#include <tether.h>
#include <tether/backend.h>

#include <signal.h>

_Static_assert(_Generic((sig_atomic_t)0, int: 1, default: 0), "sig_atomic_t must be int");

static volatile sig_atomic_t requested;
static volatile sig_atomic_t why = -1;

void tether_cancel(int reason)
{
	why = reason;
	requested = 1;
}

void tether_cancel_reset(void)
{
	requested = 0;
	why = -1;
}

int tether_cancel_reason(void)
{
	return requested ? why : -1;
}

volatile int *tt_cancel_flag(void)
{
	return (volatile int *)&requested;
}

int tt_cancelled(void)
{
	return requested != 0;
}

const char *tt_cancel_why(void)
{
	switch (why) {
	case SIGINT:
		return "SIGINT";
	case SIGTERM:
		return "SIGTERM";
	case 0:
		return "deadline passed";
	default:
		return "stop asked";
	}
}

int tt_cancel_error(const char *what)
{
	return tether_error_set(TETHER_ECANCELLED, "cancelled (%s): %s stopped", tt_cancel_why(),
	                        what ? what : "the command");
}

int tether_bctx_cancel(const struct tether_bctx *ctx, const char *what)
{
	(void)ctx;
	return tt_cancel_error(what);
}
