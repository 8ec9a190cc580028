/* Everything the tether command prints goes through here: errors and
 * warnings on stderr, reports as JSON or text on stdout, colour, and the
 * small formatters (sizes, times) the text renderings share. */
#ifndef TETHER_CLI_OUTPUT_H
#define TETHER_CLI_OUTPUT_H

#include <jansson.h>

#include <stddef.h>

/* Print the engine's last error ("tether: error: MSG", then "hint: ..."
 * when there is one) and return the exit code for `err`. */
int out_error(int err);
/* Print "tether: error: MSG" and return exit code 1. */
int out_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print a usage error with a hint pointing at the command's --help
 * (command NULL: at `tether --help`), and return exit code 2. */
int out_usage(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "warning: MSG" on stderr. */
void out_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Each string of report["warnings"] as a warning. */
void out_warnings(const json_t *report);

/* The report on stdout as JSON: two-space indent, sorted keys, a final
 * newline; the format scripts may rely on. Returns 0, or 1 after printing
 * an error when stdout cannot be written. */
int out_json(const json_t *report);
/* Flush stdout. A failed write (a full disk, a closed descriptor) makes
 * the exit code 1 whatever it was, since the report asked for is lost. */
int out_finish(int code);

/* May the engine print a progress line? Only when a person is watching. */
int out_progress_allowed(void);
/* The options' progress_fn: draws the engine's progress on stderr. */
struct tether_progress;
void out_progress(void *ud, const struct tether_progress *p);

/* ANSI colour for stdout: "" unless stdout is a terminal and NO_COLOR is
 * unset (https://no-color.org). */
enum out_color { OUT_RESET, OUT_BOLD, OUT_RED, OUT_GREEN, OUT_YELLOW, OUT_CYAN };
const char *out_color(enum out_color c);

/* A byte count for people: "12 B", "4.0 KiB", "1.2 MiB", "3.5 GiB".
 * Negative counts get "-"; with `sign`, the others get "+". */
void out_size(char *buf, size_t len, long long bytes, int sign);
/* Unix seconds as ISO 8601 local time: "2024-05-01T12:34:56+02:00". */
void out_time(char *buf, size_t len, long long seconds);

/* The noun a count takes: `one` when n is 1, else `many`, so a line
 * reads "1 commit walked" and "2 commits walked". */
const char *out_plural(long long n, const char *one, const char *many);

/* The last line of a planned run's text (--dry-run, --plan FILE): where
 * the plan was saved and the `tether COMMAND --from-plan FILE` that
 * applies it, else "dry run: nothing written". The file name is escaped
 * as out_escape does. */
void out_plan_footer(const json_t *report, const char *command);

/* A name (a path, a uri, a ref) or a free-text field (a detail, a reason,
 * a message) for one line of text output: itself when every byte is
 * printable UTF-8, else with each control character escaped (\n, \t, \r,
 * ..., else \x1B) and each byte that is not UTF-8 as \xFF, the way the
 * engine reports a file name that is not UTF-8, so a newline or an escape
 * sequence in a file name can neither forge a line nor drive the
 * terminal. JSON output is not passed through it: JSON escapes already.
 * The string lives until the 16th call after, on the same thread. */
const char *out_escape(const char *s);

/* Fields of a report object, tolerant of a missing or mistyped field so a
 * rendering never crashes on an engine that says less than expected. */
const char *out_str(const json_t *obj, const char *key);                  /* or NULL */
const char *out_str_or(const json_t *obj, const char *key, const char *dflt);
long long out_int(const json_t *obj, const char *key);                    /* or 0 */
int out_bool(const json_t *obj, const char *key);                         /* or 0 */

#endif
