/* Reading a directory listing back (the format tt_scan_listing writes, in
 * scan.h): each line's name and token as the bytes they stand for.
 *
 * Not through jansson: a name that is not valid UTF-8 is spelled with lone
 * surrogates (\uDC80-\uDCFF for the bytes 0x80-0xFF), which jansson
 * refuses. A listing comes from a commit, so it is untrusted: every line
 * is checked, and a line that is not exactly a listing line is refused. */
#ifndef TETHER_CORE_LISTING_READ_H
#define TETHER_CORE_LISTING_READ_H

#include <stddef.h>
#include <stdint.h>

struct tt_listing_line {
	char *path;    /* "p": the name's bytes, NUL-terminated (none inside) */
	size_t path_len;
	char *token;   /* "k": a sha256 hex, or "symlink:" and the target's bytes */
	size_t token_len;
	int64_t size;  /* "s", at least 0 */
};

/* Parse one line (n bytes, without its '\n'): a JSON object with the
 * string members "k" and "p" and the integer member "s" (others are
 * skipped when they are strings or integers). Strings are decoded to bytes:
 * standard JSON escapes, surrogate pairs, and a lone \uDC80-\uDCFF as the
 * one byte 0x80-0xFF it stands for, accepted only where the writer would
 * have put it (a byte that does not begin valid UTF-8: otherwise two
 * spellings would name one file). Refused: invalid UTF-8 in the text, any
 * other lone surrogate, \u0000, duplicate members, a negative or too big
 * "s". Returns 0, or -1 (no message: the caller names the line). */
int tt_listing_parse_line(const char *text, size_t n, struct tt_listing_line *out);
void tt_listing_line_free(struct tt_listing_line *line);

/* A whole listing read line by line, for merging two in one pass: no
 * allocation per line, the strings decoded into buffers the reader
 * reuses. Each line is checked as tt_listing_parse_line checks it, and
 * the paths must strictly increase in byte order (the order
 * tt_scan_listing writes), so a repeated or out-of-order path is refused
 * too: a merge of two listings relies on it.
 *
 * tt_listing_reader_next returns 1 with *line set (valid until the next
 * call), 0 at the end, or one of the negative codes below;
 * tt_listing_reader_lineno names the line (from 1) it stopped at. The
 * text must outlive the reader. */
enum {
	TT_LISTING_MALFORMED = -1,
	TT_LISTING_UNORDERED = -2,
	TT_LISTING_NOMEM = -3,
	TT_LISTING_SOURCE = -4, /* the source failed: its message is set */
};
struct tt_listing_reader;
struct tt_listing_reader *tt_listing_reader_new(const char *text, size_t len);
/* The same over a text that comes in pieces: fill(ud, buf, cap, &got) puts
 * up to cap bytes in buf (got 0 at the end) and returns 0, or non-zero
 * with the error set. Memory: the longest line and a 256 KiB window. */
typedef int (*tt_listing_fill_fn)(void *ud, char *buf, size_t cap, size_t *got);
struct tt_listing_reader *tt_listing_reader_from(tt_listing_fill_fn fill, void *ud);
int tt_listing_reader_next(struct tt_listing_reader *r, const struct tt_listing_line **line);
size_t tt_listing_reader_lineno(const struct tt_listing_reader *r);
/* After TT_LISTING_SOURCE: what the source's fill returned. */
int tt_listing_reader_source_rc(const struct tt_listing_reader *r);
void tt_listing_reader_free(struct tt_listing_reader *r);

/* A name as a report shows it: the name itself when it is valid UTF-8,
 * else with each byte that is not part of valid UTF-8 written \xHH, and
 * then *bytes_hex is set to the lower-case hex of all of the name's bytes
 * (NULL for a valid name), since the display alone may equal a real name.
 * Both malloc'd; NULL when out of memory. */
char *tt_listing_display_name(const char *name, size_t len, char **bytes_hex);

#endif
