/* The XML reader of the object stores' answers: see xml.h.
 *
 * A recursive-descent parser over the whole document, one call per
 * element (depth is capped, so the stack is too). Each element keeps its
 * local name, its attributes, its decoded character data and its children
 * as a list. Positions are byte offsets until an error, which then counts
 * lines and columns once. */
#include "format/xml.h"

#include "util/hex.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XML_DEPTH_MAX 64
#define XML_SIZE_MAX ((size_t)64 << 20)

struct xml_attr {
	char *name; /* local name */
	char *value;
};

struct tt_xml_node {
	char *qname; /* as written, prefix included: the close tag must match it */
	const char *name; /* inside qname: the local part */
	struct xml_attr *attrs;
	size_t n_attrs;
	char *text;
	size_t text_len, text_cap;
	struct tt_xml_node *first, *last, *next;
};

struct tt_xml_doc {
	struct tt_xml_node *root;
};

struct parser {
	const char *buf;
	size_t len, pos;
	const char *name;
	char *err;
	size_t errlen;
	int failed;
};

/* Record the first error, at byte offset `at`, as NAME:LINE:COL. */
static void fail_at(struct parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(struct parser *p, size_t at, const char *fmt, ...)
{
	if (p->failed)
		return;
	p->failed = 1;
	if (!p->err || !p->errlen)
		return;
	unsigned long line = 1, col = 1;
	for (size_t i = 0; i < at && i < p->len; i++) {
		if (p->buf[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)p->buf[i] & 0xC0) != 0x80) {
			col++; /* columns count characters, not UTF-8 continuation bytes */
		}
	}
	int n = snprintf(p->err, p->errlen, "%s:%lu:%lu: ", p->name ? p->name : "XML", line, col);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
}

static void oom(struct parser *p)
{
	fail_at(p, p->pos, "out of memory");
}

static int at_end(const struct parser *p)
{
	return p->pos >= p->len;
}

static int starts(const struct parser *p, const char *s)
{
	size_t n = strlen(s);
	return p->len - p->pos >= n && memcmp(p->buf + p->pos, s, n) == 0;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void skip_space(struct parser *p)
{
	while (!at_end(p) && is_space(p->buf[p->pos]))
		p->pos++;
}

/* Skip past the next `end`, or fail naming what was left open. */
static int skip_past(struct parser *p, const char *end, const char *what)
{
	size_t start = p->pos, n = strlen(end);
	for (size_t i = p->pos; i + n <= p->len; i++) {
		if (memcmp(p->buf + i, end, n) == 0) {
			p->pos = i + n;
			return 0;
		}
	}
	fail_at(p, start, "unterminated %s", what);
	return -1;
}

/* Comments, processing instructions (the declaration too) and, outside the
 * root, whitespace. A DOCTYPE is refused: no internal subset, no entity
 * definitions, so nothing expands. 1 when something was skipped. */
static int skip_misc(struct parser *p)
{
	if (starts(p, "<!--"))
		return skip_past(p, "-->", "comment") == 0;
	if (starts(p, "<?"))
		return skip_past(p, "?>", "processing instruction") == 0;
	if (starts(p, "<!DOCTYPE") || starts(p, "<!doctype")) {
		fail_at(p, p->pos, "a DOCTYPE is refused (no DTDs, no entity definitions)");
		return 0;
	}
	return 0;
}

static int name_char(unsigned char c, int first)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' || c >= 0x80)
		return 1;
	return !first && ((c >= '0' && c <= '9') || c == '-' || c == '.');
}

/* A name (element or attribute) as written, malloc'd; NULL on failure. */
static char *read_name(struct parser *p, const char *what)
{
	size_t start = p->pos;
	if (at_end(p) || !name_char((unsigned char)p->buf[p->pos], 1)) {
		fail_at(p, p->pos, "expected %s name", what);
		return NULL;
	}
	while (!at_end(p) && name_char((unsigned char)p->buf[p->pos], 0))
		p->pos++;
	char *s = strndup(p->buf + start, p->pos - start);
	if (!s)
		oom(p);
	return s;
}

static const char *local_part(const char *qname)
{
	const char *c = strrchr(qname, ':');
	return c && c[1] ? c + 1 : qname;
}

struct sbuf {
	char *s;
	size_t len, cap;
};

static int sbuf_add(struct parser *p, struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			oom(p);
			return -1;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static size_t utf8_encode(unsigned long cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The reference at p->pos ('&'), decoded onto b. */
static int read_reference(struct parser *p, struct sbuf *b)
{
	size_t start = p->pos;
	const char *semi = memchr(p->buf + p->pos, ';', p->len - p->pos);
	if (!semi || semi - (p->buf + p->pos) > 12) {
		fail_at(p, start, "'&' starts no entity or character reference (write &amp;)");
		return -1;
	}
	const char *ref = p->buf + p->pos + 1;
	size_t n = (size_t)(semi - ref);
	p->pos = (size_t)(semi - p->buf) + 1;
	static const struct {
		const char *name, *text;
	} predefined[] = {{"lt", "<"}, {"gt", ">"}, {"amp", "&"}, {"apos", "'"}, {"quot", "\""}};
	for (size_t i = 0; i < sizeof predefined / sizeof predefined[0]; i++)
		if (strlen(predefined[i].name) == n && memcmp(ref, predefined[i].name, n) == 0)
			return sbuf_add(p, b, predefined[i].text, 1);
	if (n >= 2 && ref[0] == '#') {
		int hex = ref[1] == 'x';
		size_t i = hex ? 2 : 1;
		unsigned long cp = 0;
		if (i == n)
			goto bad;
		for (; i < n; i++) {
			char c = ref[i];
			int d = hex ? tt_hex_digit(c) : c >= '0' && c <= '9' ? c - '0' : -1;
			if (d < 0)
				goto bad;
			cp = cp * (hex ? 16 : 10) + (unsigned long)d;
			if (cp > 0x10FFFF)
				goto bad;
		}
		if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
			goto bad;
		char out[4];
		return sbuf_add(p, b, out, utf8_encode(cp, out));
	}
bad:
	fail_at(p, start, "bad entity or character reference '&%.*s;'", (int)n, ref);
	return -1;
}

/* Character data up to the next '<' (or, in an attribute, the quote),
 * decoded onto b. */
static int read_chars(struct parser *p, struct sbuf *b, char quote)
{
	while (!at_end(p)) {
		char c = p->buf[p->pos];
		if (c == (quote ? quote : '<'))
			return 0;
		if (c == '\0') {
			fail_at(p, p->pos, "NUL byte");
			return -1;
		}
		if (quote && c == '<') {
			fail_at(p, p->pos, "'<' in an attribute value");
			return -1;
		}
		if (c == '&') {
			if (read_reference(p, b) != 0)
				return -1;
			continue;
		}
		size_t run = p->pos;
		while (run < p->len && p->buf[run] != '&' && p->buf[run] != '\0' && p->buf[run] != '<' &&
		       p->buf[run] != quote)
			run++;
		if (sbuf_add(p, b, p->buf + p->pos, run - p->pos) != 0)
			return -1;
		p->pos = run;
	}
	return 0;
}

static void node_free(struct tt_xml_node *n)
{
	while (n) {
		struct tt_xml_node *next = n->next;
		node_free(n->first); /* depth is capped: this recursion is too */
		free(n->qname);
		for (size_t i = 0; i < n->n_attrs; i++) {
			free(n->attrs[i].name);
			free(n->attrs[i].value);
		}
		free(n->attrs);
		free(n->text);
		free(n);
		n = next;
	}
}

static int read_attributes(struct parser *p, struct tt_xml_node *n)
{
	for (;;) {
		size_t before = p->pos;
		skip_space(p);
		if (at_end(p)) {
			fail_at(p, p->pos, "unclosed start tag <%s", n->qname);
			return -1;
		}
		char c = p->buf[p->pos];
		if (c == '>' || c == '/')
			return 0;
		if (p->pos == before) {
			fail_at(p, p->pos, "expected whitespace, '>' or '/>' in <%s", n->qname);
			return -1;
		}
		size_t at = p->pos;
		char *qname = read_name(p, "attribute");
		if (!qname)
			return -1;
		skip_space(p);
		if (at_end(p) || p->buf[p->pos] != '=') {
			fail_at(p, p->pos, "expected '=' after attribute %s", qname);
			free(qname);
			return -1;
		}
		p->pos++;
		skip_space(p);
		if (at_end(p) || (p->buf[p->pos] != '"' && p->buf[p->pos] != '\'')) {
			fail_at(p, p->pos, "expected a quoted value for attribute %s", qname);
			free(qname);
			return -1;
		}
		char quote = p->buf[p->pos++];
		struct sbuf v = {0};
		if (sbuf_add(p, &v, "", 0) != 0 || read_chars(p, &v, quote) != 0 || at_end(p)) {
			if (!p->failed)
				fail_at(p, at, "unterminated value of attribute %s", qname);
			free(qname);
			free(v.s);
			return -1;
		}
		p->pos++; /* the closing quote */
		for (size_t i = 0; i < n->n_attrs; i++) {
			if (strcmp(local_part(n->attrs[i].name), local_part(qname)) == 0) {
				fail_at(p, at, "attribute %s given twice", qname);
				free(qname);
				free(v.s);
				return -1;
			}
		}
		struct xml_attr *as = realloc(n->attrs, (n->n_attrs + 1) * sizeof *as);
		if (!as) {
			oom(p);
			free(qname);
			free(v.s);
			return -1;
		}
		n->attrs = as;
		as[n->n_attrs].name = qname;
		as[n->n_attrs].value = v.s;
		n->n_attrs++;
	}
}

/* The element at p->pos ('<'), its content and its close tag. */
static struct tt_xml_node *read_element(struct parser *p, int depth)
{
	size_t start = p->pos;
	if (depth > XML_DEPTH_MAX) {
		fail_at(p, start, "elements nested deeper than %d", XML_DEPTH_MAX);
		return NULL;
	}
	p->pos++; /* '<' */
	struct tt_xml_node *n = calloc(1, sizeof *n);
	if (!n) {
		oom(p);
		return NULL;
	}
	if (!(n->qname = read_name(p, "element")))
		goto fail;
	n->name = local_part(n->qname);
	if (read_attributes(p, n) != 0)
		goto fail;
	struct sbuf text = {0};
	if (sbuf_add(p, &text, "", 0) != 0)
		goto fail;
	n->text = text.s;
	if (p->buf[p->pos] == '/') {
		p->pos++;
		if (at_end(p) || p->buf[p->pos] != '>') {
			fail_at(p, p->pos, "expected '>' after '/' in <%s", n->qname);
			goto fail;
		}
		p->pos++;
		return n;
	}
	p->pos++; /* '>' */
	for (;;) {
		if (read_chars(p, &text, 0) != 0) {
			n->text = text.s;
			goto fail;
		}
		n->text = text.s;
		if (at_end(p)) {
			fail_at(p, start, "element <%s> is never closed", n->qname);
			goto fail;
		}
		if (starts(p, "</")) {
			size_t at = p->pos;
			p->pos += 2;
			size_t nlen = strlen(n->qname);
			if (p->len - p->pos < nlen || memcmp(p->buf + p->pos, n->qname, nlen) != 0 ||
			    (p->pos + nlen < p->len && name_char((unsigned char)p->buf[p->pos + nlen], 0))) {
				size_t end = p->pos;
				while (end < p->len && end - p->pos < 64 && name_char((unsigned char)p->buf[end], 0))
					end++;
				fail_at(p, at, "</%.*s> closes <%s>", (int)(end - p->pos), p->buf + p->pos, n->qname);
				goto fail;
			}
			p->pos += nlen;
			skip_space(p);
			if (at_end(p) || p->buf[p->pos] != '>') {
				fail_at(p, p->pos, "expected '>' to end </%s", n->qname);
				goto fail;
			}
			p->pos++;
			return n;
		}
		if (starts(p, "<![CDATA[")) {
			size_t from = p->pos + 9;
			p->pos = from;
			if (skip_past(p, "]]>", "CDATA section") != 0 ||
			    sbuf_add(p, &text, p->buf + from, p->pos - 3 - from) != 0)
				goto fail;
			n->text = text.s;
			if (memchr(p->buf + from, '\0', p->pos - 3 - from)) {
				fail_at(p, from, "NUL byte");
				goto fail;
			}
			continue;
		}
		if (starts(p, "<!--") || starts(p, "<?")) {
			if (!skip_misc(p))
				goto fail;
			continue;
		}
		if (starts(p, "<!")) {
			fail_at(p, p->pos, "unexpected '<!' in <%s>", n->qname);
			goto fail;
		}
		struct tt_xml_node *child = read_element(p, depth + 1);
		if (!child)
			goto fail;
		if (n->last)
			n->last->next = child;
		else
			n->first = child;
		n->last = child;
	}
fail:
	node_free(n);
	return NULL;
}

struct tt_xml_doc *tt_xml_parse(const char *buf, size_t len, const char *name, char *err, size_t errlen)
{
	struct parser p = {.buf = buf, .len = len, .name = name, .err = err, .errlen = errlen};
	if (err && errlen)
		err[0] = '\0';
	if (len > XML_SIZE_MAX) {
		fail_at(&p, 0, "document larger than 64 MiB");
		return NULL;
	}
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		p.pos = 3; /* a UTF-8 byte order mark */
	struct tt_xml_node *root = NULL;
	for (;;) {
		skip_space(&p);
		if (p.failed)
			goto fail;
		if (at_end(&p))
			break;
		if (skip_misc(&p))
			continue;
		if (p.failed)
			goto fail;
		if (p.buf[p.pos] != '<' || root) {
			fail_at(&p, p.pos, root ? "content after the root element" : "expected '<' (no root element)");
			goto fail;
		}
		if (!(root = read_element(&p, 1)))
			goto fail;
	}
	if (!root) {
		fail_at(&p, p.pos, "no root element");
		goto fail;
	}
	struct tt_xml_doc *doc = malloc(sizeof *doc);
	if (!doc) {
		oom(&p);
		goto fail;
	}
	doc->root = root;
	return doc;
fail:
	node_free(root);
	return NULL;
}

void tt_xml_free(struct tt_xml_doc *doc)
{
	if (!doc)
		return;
	node_free(doc->root);
	free(doc);
}

const struct tt_xml_node *tt_xml_root(const struct tt_xml_doc *doc)
{
	return doc->root;
}

const char *tt_xml_name(const struct tt_xml_node *n)
{
	return n->name;
}

static const struct tt_xml_node *first_named(const struct tt_xml_node *n, const char *name)
{
	for (; n; n = n->next)
		if (!name || strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

const struct tt_xml_node *tt_xml_child(const struct tt_xml_node *n, const char *name)
{
	return n ? first_named(n->first, name) : NULL;
}

const struct tt_xml_node *tt_xml_next(const struct tt_xml_node *n, const char *name)
{
	return n ? first_named(n->next, name) : NULL;
}

const char *tt_xml_text(const struct tt_xml_node *n)
{
	return n && n->text ? n->text : "";
}

const char *tt_xml_child_text(const struct tt_xml_node *n, const char *name)
{
	const struct tt_xml_node *c = tt_xml_child(n, name);
	return c ? tt_xml_text(c) : NULL;
}

const char *tt_xml_attr(const struct tt_xml_node *n, const char *name)
{
	for (size_t i = 0; n && i < n->n_attrs; i++)
		if (strcmp(local_part(n->attrs[i].name), name) == 0)
			return n->attrs[i].value;
	return NULL;
}
