/* Thread-local error slot: the message of the last failure on this thread.
 * Thread-local because objects are worked on concurrently and each worker's
 * failure must stay its own until the engine collects it. */
#include <tether/backend.h>

#include <stdio.h>
#include <string.h>

static _Thread_local char last_msg[1024];
static _Thread_local char last_hint[512];
static _Thread_local int has_hint;

const char *tether_version(void)
{
	return TETHER_VERSION;
}

int tether_error_setv(int code, const char *fmt, va_list ap)
{
	/* Callers wrap the last message ("key: %s", tether_error_last()), so
	 * format aside first: the arguments may point into last_msg. */
	char msg[sizeof last_msg];
	vsnprintf(msg, sizeof msg, fmt, ap);
	memcpy(last_msg, msg, sizeof last_msg);
	has_hint = 0;
	return code;
}

int tether_error_set(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tether_error_setv(code, fmt, ap);
	va_end(ap);
	return code;
}

void tether_error_set_hint(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_hint, sizeof last_hint, fmt, ap);
	va_end(ap);
	has_hint = 1;
}

void tether_error_clear(void)
{
	last_msg[0] = '\0';
	has_hint = 0;
}

const char *tether_error_last(void)
{
	return last_msg;
}

const char *tether_error_hint(void)
{
	return has_hint ? last_hint : NULL;
}

int tether_exit_code(int err)
{
	switch (err) {
	case TETHER_OK:
		return 0;
	case TETHER_EUSAGE:
		return 2;
	case TETHER_EREFUSED:
		return 3;
	case TETHER_ELOCK:
		return 4;
	case TETHER_ECANCELLED: {
		int why = tether_cancel_reason();
		return why > 0 && why < 64 ? 128 + why : why == 0 ? 124 : 130;
	}
	default:
		return 1;
	}
}
