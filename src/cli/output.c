#include "output.h"

#include <tether.h>

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One line of stderr: a name in the message (a file's, a uri) may hold a
 * newline or an escape sequence, shown escaped rather than obeyed. */
static void print_line(const char *prefix, const char *fmt, va_list ap)
{
	char msg[2048];
	vsnprintf(msg, sizeof msg, fmt, ap);
	fprintf(stderr, "%s%s\n", prefix, out_escape(msg));
}

static void print_error_line(const char *fmt, va_list ap)
{
	print_line("tether: error: ", fmt, ap);
}

/* Words for an error code the engine left without a message, so the user
 * never sees a bare "tether: error: ". */
static const char *describe_code(int err)
{
	switch (err) {
	case TETHER_EUSAGE:
		return "invalid arguments";
	case TETHER_EREFUSED:
		return "refused";
	case TETHER_ELOCK:
		return "timed out waiting for a lock";
	case TETHER_ENOTFOUND:
		return "not found";
	case TETHER_ECONFIG:
		return "malformed configuration";
	case TETHER_EIO:
		return "input/output failure";
	case TETHER_ENOREPO:
		return "not inside a tether dataset";
	case TETHER_EAUTH:
		return "the store refused the credentials";
	case TETHER_ETRANSIENT:
		return "the store failed for now (try again)";
	case TETHER_ECANCELLED:
		return "stopped";
	default:
		return "failed";
	}
}

int out_error(int err)
{
	const char *msg = tether_error_last();
	const char *hint = tether_error_hint();
	fprintf(stderr, "tether: error: %s\n", out_escape(msg && *msg ? msg : describe_code(err)));
	if (hint)
		fprintf(stderr, "hint: %s\n", out_escape(hint));
	return tether_exit_code(err);
}

int out_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	print_error_line(fmt, ap);
	va_end(ap);
	return tether_exit_code(TETHER_ERROR);
}

int out_usage(const char *command, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	print_error_line(fmt, ap);
	va_end(ap);
	if (command)
		fprintf(stderr, "hint: see 'tether %s --help'\n", command);
	else
		fputs("hint: see 'tether --help'\n", stderr);
	return tether_exit_code(TETHER_EUSAGE);
}

void out_warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	print_line("warning: ", fmt, ap);
	va_end(ap);
}

void out_warnings(const json_t *report)
{
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(report, "warnings"), i, w) {
		if (json_is_string(w))
			out_warning("%s", json_string_value(w));
	}
}

int out_json(const json_t *report)
{
	if (json_dumpf(report, stdout, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY) < 0 ||
	    fputc('\n', stdout) == EOF)
		return out_fail("cannot write the report to stdout");
	return 0;
}

int out_finish(int code)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return code;
	fprintf(stderr, "tether: error: cannot write to stdout: %s\n", strerror(errno));
	return tether_exit_code(TETHER_EIO);
}

int out_progress_allowed(void)
{
	return isatty(STDERR_FILENO);
}

/* One line on stderr, redrawn in place; several objects' scans may report
 * at once from their threads, so the drawing takes turns. */
static pthread_mutex_t progress_turn = PTHREAD_MUTEX_INITIALIZER;

void out_progress(void *ud, const struct tether_progress *p)
{
	(void)ud;
	pthread_mutex_lock(&progress_turn);
	if (p->finished) {
		fputs("\r\033[K", stderr);
	} else if (p->phase && strcmp(p->phase, "scanning") == 0) {
		fprintf(stderr, "\rscanning: %llu file%s, %.1f MiB hashed\033[K", p->done,
		        out_plural((long long)p->done, "", "s"),
		        (double)p->bytes / (1024.0 * 1024.0));
	} else {
		fprintf(stderr, "\r%s%s%s: %llu", p->phase ? p->phase : "working", p->key ? " " : "",
		        p->key ? p->key : "", p->done);
		if (p->total)
			fprintf(stderr, "/%llu", p->total);
		if (p->bytes)
			fprintf(stderr, ", %.1f MiB", (double)p->bytes / (1024.0 * 1024.0));
		fputs("\033[K", stderr);
	}
	fflush(stderr);
	pthread_mutex_unlock(&progress_turn);
}

/* Decided once: isatty and getenv are cheap, but a rendering asks per line. */
static int color_enabled(void)
{
	static int enabled = -1;
	if (enabled < 0) {
		const char *no_color = getenv("NO_COLOR");
		enabled = isatty(STDOUT_FILENO) && !(no_color && *no_color);
	}
	return enabled;
}

const char *out_color(enum out_color c)
{
	static const char *const codes[] = {
		[OUT_RESET] = "\033[0m",   [OUT_BOLD] = "\033[1m",    [OUT_RED] = "\033[31m",
		[OUT_GREEN] = "\033[32m",  [OUT_YELLOW] = "\033[33m", [OUT_CYAN] = "\033[36m",
	};
	return color_enabled() ? codes[c] : "";
}

void out_size(char *buf, size_t len, long long bytes, int sign)
{
	static const char *const units[] = { "KiB", "MiB", "GiB" };
	const char *prefix = bytes < 0 ? "-" : sign ? "+" : "";
	/* Through unsigned so that LLONG_MIN's magnitude is representable. */
	unsigned long long magnitude = bytes < 0 ? 0ull - (unsigned long long)bytes
	                                         : (unsigned long long)bytes;
	if (magnitude < 1024) {
		snprintf(buf, len, "%s%llu B", prefix, magnitude);
		return;
	}
	double v = (double)magnitude / 1024.0;
	size_t unit = 0;
	/* Move up while the value would print as 1024.0 or more. */
	while (unit + 1 < sizeof units / sizeof units[0] && v >= 1023.95) {
		v /= 1024.0;
		unit++;
	}
	snprintf(buf, len, "%s%.1f %s", prefix, v, units[unit]);
}

void out_time(char *buf, size_t len, long long seconds)
{
	time_t t = (time_t)seconds;
	struct tm tm;
	char zone[8];
	if (!localtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm) == 0 ||
	    strftime(zone, sizeof zone, "%z", &tm) != 5) {
		snprintf(buf, len, "@%lld", seconds);
		return;
	}
	/* strftime's %z is "+0200"; ISO 8601's extended form wants "+02:00". */
	size_t used = strlen(buf);
	snprintf(buf + used, len - used, "%.3s:%.2s", zone, zone + 3);
}

const char *out_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

const char *out_str_or(const json_t *obj, const char *key, const char *dflt)
{
	const char *s = out_str(obj, key);
	return s ? s : dflt;
}

long long out_int(const json_t *obj, const char *key)
{
	return (long long)json_integer_value(json_object_get(obj, key));
}

int out_bool(const json_t *obj, const char *key)
{
	return json_is_true(json_object_get(obj, key));
}

const char *out_plural(long long n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void out_plan_footer(const json_t *report, const char *command)
{
	const char *file = out_str(report, "plan_file");
	if (file)
		printf("plan saved to %s; apply it with `tether %s --from-plan %s`\n", out_escape(file), command,
		       out_escape(file));
	else
		printf("dry run: nothing written\n");
}

/* The length of the UTF-8 sequence at s that a terminal shows as text:
 * 1-4, or 0 for a byte to escape (a control character, C1 controls
 * U+0080-U+009F included, or a byte that starts no valid sequence). */
static size_t printable_utf8(const unsigned char *s)
{
	if (*s < 0x20 || *s == 0x7f)
		return 0;
	if (*s < 0x80)
		return 1;
	size_t n = *s >= 0xf0 && *s <= 0xf4 ? 4 : *s >= 0xe0 ? 3 : *s >= 0xc2 && *s < 0xe0 ? 2 : 0;
	if (n == 0 || (n == 3 && *s > 0xef))
		return 0;
	unsigned long cp = *s & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	static const unsigned long least[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return n;
}

/* Recent results, so that several may sit in one printf's arguments. */
enum { ESCAPED_SLOTS = 16 };
static _Thread_local char *escaped_slot[ESCAPED_SLOTS];
static _Thread_local unsigned escaped_next;

const char *out_escape(const char *s)
{
	if (!s)
		return NULL;
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;
	while (u[i] && (n = printable_utf8(u + i)) > 0)
		i += n;
	if (!u[i])
		return s;
	/* At most 4 bytes for each byte ("\xFF") and the NUL. */
	char *out = malloc(strlen(s) * 4 + 1), *o = out;
	if (!out)
		return "?";
	static const char named[] = "\a\b\t\n\v\f\r";
	static const char letters[] = "abtnvfr";
	for (i = 0; u[i]; i += n) {
		n = printable_utf8(u + i);
		const char *c = strchr(named, u[i]);
		if (n) {
			memcpy(o, u + i, n);
			o += n;
			continue;
		}
		n = 1;
		if (c)
			o += sprintf(o, "\\%c", letters[c - named]);
		else
			o += sprintf(o, "\\x%02X", u[i]);
	}
	*o = '\0';
	free(escaped_slot[escaped_next]);
	escaped_slot[escaped_next] = out;
	escaped_next = (escaped_next + 1) % ESCAPED_SLOTS;
	return out;
}
