/* Listing lines read back as bytes (the rules are in listing_read.h). */
#include "core/listing_read.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

struct cursor {
	const unsigned char *p, *end;
};

static void skip_ws(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
		c->p++;
}

static int take(struct cursor *c, unsigned char ch)
{
	skip_ws(c);
	if (c->p == c->end || *c->p != ch)
		return -1;
	c->p++;
	return 0;
}

static int hex4(struct cursor *c, unsigned *out)
{
	if (c->end - c->p < 4)
		return -1;
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned char h = c->p[i];
		unsigned d;
		if (h >= '0' && h <= '9')
			d = h - '0';
		else if (h >= 'a' && h <= 'f')
			d = h - 'a' + 10;
		else if (h >= 'A' && h <= 'F')
			d = h - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	c->p += 4;
	*out = v;
	return 0;
}

static size_t put_utf8(unsigned char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | cp >> 6);
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | cp >> 12);
		o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | cp >> 18);
	o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* After a \u: one code point (a pair when it is a high surrogate) into o,
 * or a byte escape (U+DC80-U+DCFF) with *escaped set. Returns the bytes
 * written, or 0 for what is refused. */
static size_t unicode_escape(struct cursor *c, unsigned char *o, int *escaped)
{
	unsigned cp;
	if (hex4(c, &cp) != 0 || cp == 0)
		return 0;
	*escaped = 0;
	if (cp >= 0xdc00 && cp <= 0xdfff) {
		if (cp < 0xdc80 || cp > 0xdcff)
			return 0;
		o[0] = (unsigned char)(cp - 0xdc00);
		*escaped = 1;
		return 1;
	}
	if (cp >= 0xd800 && cp <= 0xdbff) {
		unsigned lo;
		if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
			return 0;
		c->p += 2;
		if (hex4(c, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
			return 0;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	return put_utf8(o, cp);
}

/* Were the escaped bytes escaped where the writer escapes, and only there?
 * Walking the units from the start, an escaped byte must not begin a valid
 * sequence (literal characters are whole sequences, checked as read). */
static int canonical(const unsigned char *s, const unsigned char *escaped, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (escaped[i]) {
			if (tt_utf8_sequence(s + i, n - i) != 0)
				return 0;
			i++;
		} else {
			size_t seq = s[i] < 0x80 ? 1 : tt_utf8_sequence(s + i, n - i);
			i += seq ? seq : 1;
		}
	}
	return 1;
}

/* Where a line's strings are decoded: each buffer holds at least the
 * line's length + 1 bytes, which no decoded string of the line exceeds (an
 * escape is never shorter than what it stands for). */
struct line_bufs {
	char *path, *token, *scratch;
	unsigned char *escaped; /* one flag per decoded byte: was it a \uDCXX */
};

/* Does the string at the cursor, up to its closing quote, need decoding?
 * Most names are plain ASCII without escapes: those are copied whole. The
 * loop has no early exit so that it stays cheap on long names. */
static size_t plain_span(const struct cursor *c)
{
	const unsigned char *q = memchr(c->p, '"', (size_t)(c->end - c->p));
	if (!q)
		return 0;
	unsigned bad = 0;
	for (const unsigned char *s = c->p; s < q; s++)
		bad |= (unsigned)(*s < 0x20) | (unsigned)(*s == '\\') | (unsigned)(*s >= 0x80);
	return bad ? 0 : (size_t)(q - c->p) + 1;
}

/* A JSON string at the cursor, decoded to bytes into s (NUL-terminated),
 * with escaped[] as scratch. */
static int read_string(struct cursor *c, char *out, unsigned char *escaped, size_t *out_len)
{
	if (take(c, '"') != 0)
		return -1;
	unsigned char *s = (unsigned char *)out;
	size_t plain = plain_span(c);
	if (plain) {
		memcpy(s, c->p, plain - 1);
		s[plain - 1] = '\0';
		*out_len = plain - 1;
		c->p += plain;
		return 0;
	}
	size_t n = 0;
	int any_escaped = 0;
	for (;;) {
		if (c->p == c->end)
			return -1;
		unsigned char ch = *c->p;
		if (ch == '"') {
			c->p++;
			break;
		}
		if (ch < 0x20)
			return -1;
		if (ch >= 0x80) {
			size_t seq = tt_utf8_sequence(c->p, (size_t)(c->end - c->p));
			if (seq == 0)
				return -1;
			memcpy(s + n, c->p, seq);
			memset(escaped + n, 0, seq);
			n += seq;
			c->p += seq;
			continue;
		}
		c->p++;
		if (ch != '\\') {
			escaped[n] = 0;
			s[n++] = ch;
			continue;
		}
		if (c->p == c->end)
			return -1;
		unsigned char e = *c->p++;
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *hit = e ? strchr(from, e) : NULL;
		if (hit) {
			escaped[n] = 0;
			s[n++] = (unsigned char)to[hit - from];
		} else if (e == 'u') {
			int esc = 0;
			size_t w = unicode_escape(c, s + n, &esc);
			if (w == 0)
				return -1;
			memset(escaped + n, 0, w);
			escaped[n] = (unsigned char)esc;
			any_escaped |= esc;
			n += w;
		} else {
			return -1;
		}
	}
	if (any_escaped && !canonical(s, escaped, n))
		return -1;
	s[n] = '\0';
	*out_len = n;
	return 0;
}

/* A non-negative JSON integer that fits int64_t (no sign, fraction or
 * exponent: the writer never puts one). */
static int read_size(struct cursor *c, int64_t *out)
{
	skip_ws(c);
	if (c->p == c->end || *c->p < '0' || *c->p > '9')
		return -1;
	if (*c->p == '0' && c->end - c->p > 1 && c->p[1] >= '0' && c->p[1] <= '9')
		return -1;
	uint64_t v = 0;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		unsigned d = (unsigned)(*c->p++ - '0');
		if (v > ((uint64_t)INT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* One line into out, its strings decoded into b (the rules are in
 * listing_read.h). out->path and out->token point into b. */
static int parse_line(const char *text, size_t n, struct line_bufs *b, struct tt_listing_line *out)
{
	memset(out, 0, sizeof *out);
	struct cursor c = {(const unsigned char *)text, (const unsigned char *)text + n};
	int have_path = 0, have_token = 0, have_size = 0;
	if (take(&c, '{') != 0)
		return -1;
	for (;;) {
		size_t key_len;
		if (read_string(&c, b->scratch, b->escaped, &key_len) != 0 || take(&c, ':') != 0)
			return -1;
		/* A decoded key holds no NUL: strcmp compares all of it. */
		int rc;
		if (strcmp(b->scratch, "p") == 0)
			rc = have_path++ ? -1 : read_string(&c, b->path, b->escaped, &out->path_len);
		else if (strcmp(b->scratch, "k") == 0)
			rc = have_token++ ? -1 : read_string(&c, b->token, b->escaped, &out->token_len);
		else if (strcmp(b->scratch, "s") == 0)
			rc = have_size++ ? -1 : read_size(&c, &out->size);
		else {
			/* Another member: a string or an integer, skipped. */
			size_t skipped_len;
			int64_t ignored;
			skip_ws(&c);
			rc = c.p < c.end && *c.p == '"' ? read_string(&c, b->scratch, b->escaped, &skipped_len)
			                                : read_size(&c, &ignored);
		}
		if (rc != 0)
			return -1;
		skip_ws(&c);
		if (c.p < c.end && *c.p == ',') {
			c.p++;
			continue;
		}
		if (take(&c, '}') != 0)
			return -1;
		break;
	}
	skip_ws(&c);
	if (c.p != c.end || !have_path || !have_token || !have_size)
		return -1;
	out->path = b->path;
	out->token = b->token;
	return 0;
}

static int bufs_reserve(struct line_bufs *b, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 256;
	while (ncap < need)
		ncap *= 2;
	char *p = realloc(b->path, ncap), *t = p ? realloc(b->token, ncap) : NULL;
	if (p)
		b->path = p;
	if (t)
		b->token = t;
	char *s = t ? realloc(b->scratch, ncap) : NULL;
	if (s)
		b->scratch = s;
	unsigned char *e = s ? realloc(b->escaped, ncap) : NULL;
	if (!e)
		return -1;
	b->escaped = e;
	*cap = ncap;
	return 0;
}

static void bufs_free(struct line_bufs *b)
{
	free(b->path);
	free(b->token);
	free(b->scratch);
	free(b->escaped);
	memset(b, 0, sizeof *b);
}

int tt_listing_parse_line(const char *text, size_t n, struct tt_listing_line *out)
{
	memset(out, 0, sizeof *out);
	struct line_bufs b = {0};
	size_t cap = 0;
	if (bufs_reserve(&b, &cap, n + 1) != 0 || parse_line(text, n, &b, out) != 0) {
		bufs_free(&b);
		memset(out, 0, sizeof *out);
		return -1;
	}
	/* The line's own copies: the caller frees them. */
	b.path = b.token = NULL;
	bufs_free(&b);
	return 0;
}

void tt_listing_line_free(struct tt_listing_line *line)
{
	free(line->path);
	free(line->token);
	memset(line, 0, sizeof *line);
}

/* The reader keeps two path buffers, the current line's and the one
 * before, to check the order without copying a name. */
struct tt_listing_reader {
	const char *p, *end;
	size_t lineno;
	struct line_bufs b;
	char *prev;
	size_t prev_len, cap;
	int have_prev;
	struct tt_listing_line line;
	/* a source: the text comes in pieces into win (p and end point there) */
	tt_listing_fill_fn fill;
	void *ud;
	char *win;
	size_t win_cap;
	int eof, source_rc;
};

struct tt_listing_reader *tt_listing_reader_new(const char *text, size_t len)
{
	struct tt_listing_reader *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->p = text;
	r->end = text + len;
	r->eof = 1;
	return r;
}

#define WINDOW (256 * 1024)

struct tt_listing_reader *tt_listing_reader_from(tt_listing_fill_fn fill, void *ud)
{
	struct tt_listing_reader *r = calloc(1, sizeof *r);
	if (!r || !(r->win = malloc(WINDOW))) {
		free(r);
		return NULL;
	}
	r->win_cap = WINDOW;
	r->fill = fill;
	r->ud = ud;
	r->p = r->end = r->win;
	return r;
}

void tt_listing_reader_free(struct tt_listing_reader *r)
{
	if (!r)
		return;
	bufs_free(&r->b);
	free(r->prev);
	free(r->win);
	free(r);
}

int tt_listing_reader_source_rc(const struct tt_listing_reader *r)
{
	return r->source_rc;
}

size_t tt_listing_reader_lineno(const struct tt_listing_reader *r)
{
	return r->lineno;
}

/* A whole line in [p, end), or the source's end: what is left moves to
 * the start of the window, which grows for a line longer than it. */
static int fill_line(struct tt_listing_reader *r, const char **nl)
{
	size_t scanned = 0;
	while (!(*nl = memchr(r->p + scanned, '\n', (size_t)(r->end - r->p) - scanned)) && !r->eof) {
		size_t have = (size_t)(r->end - r->p);
		scanned = have;
		memmove(r->win, r->p, have);
		if (have == r->win_cap) {
			char *grown = realloc(r->win, 2 * r->win_cap);
			if (!grown)
				return TT_LISTING_NOMEM;
			r->win = grown;
			r->win_cap *= 2;
		}
		size_t got = 0;
		if ((r->source_rc = r->fill(r->ud, r->win + have, r->win_cap - have, &got)) != 0)
			return TT_LISTING_SOURCE;
		r->p = r->win;
		r->end = r->win + have + got;
		if (!got)
			r->eof = 1;
	}
	return 0;
}

int tt_listing_reader_next(struct tt_listing_reader *r, const struct tt_listing_line **line)
{
	const char *nl = NULL;
	*line = NULL;
	if (r->fill) {
		int frc = fill_line(r, &nl);
		if (frc)
			return frc;
	} else if (r->p != r->end) {
		nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
	}
	if (r->p == r->end)
		return 0;
	size_t n = nl ? (size_t)(nl - r->p) : (size_t)(r->end - r->p);
	r->lineno++;
	if (r->cap < n + 1) {
		size_t cap = r->cap;
		if (bufs_reserve(&r->b, &cap, n + 1) != 0)
			return TT_LISTING_NOMEM;
		char *prev = realloc(r->prev, cap);
		if (!prev)
			return TT_LISTING_NOMEM;
		r->prev = prev;
		r->cap = cap;
	}
	/* The line before's path moves to prev; its buffer takes the next. */
	if (r->have_prev) {
		char *t = r->prev;
		r->prev = r->b.path;
		r->b.path = t;
		r->prev_len = r->line.path_len;
	}
	if (parse_line(r->p, n, &r->b, &r->line) != 0)
		return TT_LISTING_MALFORMED;
	if (r->have_prev) {
		size_t m = r->prev_len < r->line.path_len ? r->prev_len : r->line.path_len;
		int c = memcmp(r->prev, r->line.path, m);
		if (c > 0 || (c == 0 && r->prev_len >= r->line.path_len))
			return TT_LISTING_UNORDERED;
	}
	r->have_prev = 1;
	r->p = nl ? nl + 1 : r->end;
	*line = &r->line;
	return 1;
}

char *tt_listing_display_name(const char *name, size_t len, char **bytes_hex)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *s = (const unsigned char *)name;
	*bytes_hex = NULL;
	char *out = malloc(4 * len + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	int invalid = 0;
	for (size_t i = 0; i < len;) {
		size_t seq = s[i] < 0x80 ? 1 : tt_utf8_sequence(s + i, len - i);
		if (seq) {
			memcpy(out + o, s + i, seq);
			o += seq;
			i += seq;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[s[i] >> 4];
		out[o++] = hex[s[i] & 15];
		invalid = 1;
		i++;
	}
	out[o] = '\0';
	if (invalid) {
		static const char lower[] = "0123456789abcdef";
		char *h = malloc(2 * len + 1);
		if (!h) {
			free(out);
			return NULL;
		}
		for (size_t i = 0; i < len; i++) {
			h[2 * i] = lower[s[i] >> 4];
			h[2 * i + 1] = lower[s[i] & 15];
		}
		h[2 * len] = '\0';
		*bytes_hex = h;
	}
	return out;
}
