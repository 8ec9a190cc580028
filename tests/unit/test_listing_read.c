/* Listing lines read back (core/listing_read.h): every name tt_scan_listing
 * writes decodes to its own bytes, a name with invalid UTF-8 never reads
 * as a valid one, and a line the writer could not have written is refused. */
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/listing_read.h"
#include "core/scan.h"

#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* The listing line tt_scan_listing writes for one file or symlink. */
static char *listing_of(const char *name, const char *target)
{
	struct tt_scan_entry e = {0};
	e.path = (char *)name;
	e.kind = target ? TT_SCAN_LINK : TT_SCAN_FILE;
	e.link_target = (char *)target;
	e.size = target ? 0 : 7;
	struct tt_scan_result r = {.entries = &e, .count = 1};
	size_t len;
	char *text = tt_scan_listing(&r, &len);
	CHECK(text != NULL && len > 0 && text[len - 1] == '\n');
	if (text)
		text[len - 1] = '\0';
	return text;
}

/* One line, parsed alone and through a reader: both must agree. */
static int parses(const char *line)
{
	struct tt_listing_line l;
	int rc = tt_listing_parse_line(line, strlen(line), &l);
	tt_listing_line_free(&l);
	struct tt_listing_reader *r = tt_listing_reader_new(line, strlen(line));
	const struct tt_listing_line *rl;
	int got = r ? tt_listing_reader_next(r, &rl) : -9;
	CHECK(got == (*line ? (rc == 0 ? 1 : TT_LISTING_MALFORMED) : 0));
	tt_listing_reader_free(r);
	return rc == 0;
}

/* Written and read back: the same bytes. */
static void check_round_trip(const char *name, const char *target)
{
	char *text = listing_of(name, target);
	if (!text)
		return;
	struct tt_listing_line l;
	CHECK(tt_listing_parse_line(text, strlen(text), &l) == 0);
	CHECK(l.path && l.path_len == strlen(name) && memcmp(l.path, name, l.path_len) == 0);
	if (target) {
		CHECK(l.token && strncmp(l.token, "symlink:", 8) == 0 && strcmp(l.token + 8, target) == 0);
		CHECK(l.size == 0);
	} else {
		CHECK(l.size == 7);
	}
	if (!l.path || strcmp(l.path, name) != 0)
		fprintf(stderr, "  round trip of %s lost it\n", text);
	tt_listing_line_free(&l);
	free(text);
}

static void test_round_trips(void)
{
	const char *names[] = {
		"plain", "q\"\\/", "n\n\t\r\b\f\001\037\177",
		"x\xc3\xbf",                 /* xÿ */
		"x\xff",                     /* x and a byte that is not UTF-8 */
		"\xf0\x9f\x98\x80 emoji",    /* 😀 */
		"e\xcc\x81",                 /* e + COMBINING ACUTE ACCENT */
		"\xed\xa0\x80\xed\xb0\x80",  /* a surrogate pair encoded as UTF-8 (CESU): invalid */
		"\xc0\xaf\xe0\x80\xaf",      /* overlong forms */
		"\xe2\x82",                  /* a truncated sequence */
		("\xe2\x82" "A\x80\xbf"),    /* truncated, then stray continuation bytes */
		"\xf4\x90\x80\x80",          /* past U+10FFFF */
		"\xc3\xbf\xff\xc3\xbf",      /* valid around invalid */
		"\xed\xb2\x80",              /* U+DC80 encoded in UTF-8 (invalid) */
	};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		check_round_trip(names[i], NULL);
		check_round_trip("l", names[i]);
	}
	/* Every two-byte name whose bytes are from 0x80: each decodes to
	 * itself, and no two share a spelling. */
	char name[3] = {0};
	for (int a = 0x80; a <= 0xff; a++) {
		for (int b = 0x80; b <= 0xff; b += 7) {
			name[0] = (char)a;
			name[1] = (char)b;
			check_round_trip(name, NULL);
		}
	}
}

/* The collision of issue 9: "x\xff" listed as "x\u00FF", which is "xÿ". */
static void test_invalid_never_spells_a_valid_name(void)
{
	char *invalid = listing_of("x\xff", NULL);
	char *valid = listing_of("x\xc3\xbf", NULL);
	CHECK(invalid && valid && strcmp(invalid, valid) != 0);
	CHECK(invalid && strstr(invalid, "\"p\":\"x\\uDCFF\"") != NULL);
	CHECK(valid && strstr(valid, "\"p\":\"x\xc3\xbf\"") != NULL);
	free(invalid);
	free(valid);

	/* \u00FF read back is the character ÿ, never the byte 0xff. */
	struct tt_listing_line l;
	const char *line = "{\"k\":\"" SHA_EMPTY "\",\"p\":\"x\\u00FF\",\"s\":0}";
	CHECK(tt_listing_parse_line(line, strlen(line), &l) == 0);
	CHECK(l.path && strcmp(l.path, "x\xc3\xbf") == 0);
	tt_listing_line_free(&l);
}

static void test_refused(void)
{
	/* What the writer writes parses; hand-spaced JSON, other escapes and
	 * unknown members are read too. */
	CHECK(parses("{\"k\":\"" SHA_EMPTY "\",\"p\":\"a\",\"s\":0}"));
	CHECK(parses(" { \"s\" : 12 , \"p\" : \"a\\u0041\\/\" , \"k\" : \"x\" , \"extra\":\"y\", \"n\": 3 } "));
	CHECK(parses("{\"k\":\"x\",\"p\":\"\\ud83d\\ude00\",\"s\":0}"));

	/* Two spellings of one name would make two listings of one tree:
	 * bytes that form valid UTF-8 are never escaped one by one. */
	CHECK(!parses("{\"k\":\"x\",\"p\":\"x\\uDCC3\\uDCBF\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"\\uDCE2\\uDC82\\uDCAC\",\"s\":0}"));
	CHECK(parses("{\"k\":\"x\",\"p\":\"\\uDCE2\\uDC82A\",\"s\":0}"));
	/* Surrogates other than the byte escapes, and NUL. */
	CHECK(!parses("{\"k\":\"x\",\"p\":\"\\uDC7F\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"\\uDD00\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"\\uD800\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"\\uD800x\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\\u0000b\",\"s\":0}"));
	/* Raw invalid UTF-8 and raw control bytes in the text. */
	CHECK(!parses("{\"k\":\"x\",\"p\":\"x\xff\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"x\ty\",\"s\":0}"));
	/* Members: missing, repeated, mistyped. */
	CHECK(!parses("{\"k\":\"x\",\"s\":0}"));
	CHECK(!parses("{\"p\":\"a\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\"}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"p\":\"b\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":0,\"s\":1}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":-1}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":1.0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":01}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":9223372036854775808}"));
	CHECK(parses("{\"k\":\"x\",\"p\":\"a\",\"s\":9223372036854775807}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":\"1\"}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":1,\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":0,\"o\":{}}"));
	/* Not one object. */
	CHECK(!parses(""));
	CHECK(!parses("{"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":0} x"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\",\"s\":0,}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\\q\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"a\\u12\",\"s\":0}"));
	CHECK(!parses("{\"k\":\"x\",\"p\":\"unterminated"));
}

static void test_display_name(void)
{
	char *bytes = (char *)"unset";
	char *shown = tt_listing_display_name("x\xc3\xbf", 3, &bytes);
	CHECK_STR(shown, "x\xc3\xbf");
	CHECK(bytes == NULL);
	free(shown);

	shown = tt_listing_display_name("x\xff\xc3\xbf\xe2\x82", 6, &bytes);
	CHECK_STR(shown, "x\\xFF\xc3\xbf\\xE2\\x82");
	CHECK_STR(bytes, "78ffc3bfe282");
	free(shown);
	free(bytes);
}

/* Read every line of text; returns the reader's last code, and the
 * paths read, joined by '|', in out. */
static int read_all(const char *text, char *out, size_t cap, size_t *lineno)
{
	struct tt_listing_reader *r = tt_listing_reader_new(text, strlen(text));
	const struct tt_listing_line *l;
	int rc;
	size_t used = 0;
	out[0] = '\0';
	while ((rc = tt_listing_reader_next(r, &l)) == 1) {
		CHECK(l->path_len == strlen(l->path) && l->token_len == strlen(l->token));
		used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "|" : "", l->path);
	}
	*lineno = tt_listing_reader_lineno(r);
	tt_listing_reader_free(r);
	return rc;
}

#define LINE(p) "{\"k\":\"" SHA_EMPTY "\",\"p\":\"" p "\",\"s\":0}\n"

static void test_reader(void)
{
	char got[8192];
	size_t n;
	/* Byte order: "a/b" < "a0" ('/' < '0'), a long name grows the
	 * buffers between two short ones, an escaped byte 0xff sorts last. */
	char long_name[3000];
	memset(long_name, 'm', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	char *text = NULL;
	size_t tl = 0;
	FILE *f = open_memstream(&text, &tl);
	fprintf(f, LINE("a/b") LINE("a0") "{\"k\":\"x\",\"p\":\"%s\",\"s\":1}\n" LINE("n") LINE("x\\u00FF")
	        LINE("x\\uDCFF"), long_name);
	fclose(f);
	CHECK(read_all(text, got, sizeof got, &n) == 0 && n == 6);
	char want[8192];
	snprintf(want, sizeof want, "a/b|a0|%s|n|x\xc3\xbf|x\xff", long_name);
	CHECK_STR(got, want);
	free(text);
	/* The last line may lack its newline; an empty text has no lines. */
	CHECK(read_all(LINE("a") "{\"k\":\"x\",\"p\":\"b\",\"s\":0}", got, sizeof got, &n) == 0 && n == 2);
	CHECK(read_all("", got, sizeof got, &n) == 0 && n == 0);
	/* Repeated, out of order (by bytes, not by characters), malformed. */
	CHECK(read_all(LINE("a") LINE("b") LINE("b"), got, sizeof got, &n) == TT_LISTING_UNORDERED && n == 3);
	CHECK_STR(got, "a|b");
	CHECK(read_all(LINE("b") LINE("a"), got, sizeof got, &n) == TT_LISTING_UNORDERED && n == 2);
	CHECK(read_all(LINE("ab") LINE("a"), got, sizeof got, &n) == TT_LISTING_UNORDERED && n == 2);
	CHECK(read_all(LINE("x\\uDCFF") LINE("x\\u00FF"), got, sizeof got, &n) == TT_LISTING_UNORDERED && n == 2);
	/* The same name spelled twice (escaped and not) is a repeat too. */
	CHECK(read_all(LINE("a") LINE("\\u0061"), got, sizeof got, &n) == TT_LISTING_UNORDERED && n == 2);
	CHECK(read_all(LINE("a") "\n" LINE("b"), got, sizeof got, &n) == TT_LISTING_MALFORMED && n == 2);
	CHECK(read_all(LINE("a") LINE("b\\uDCC3\\uDCBF"), got, sizeof got, &n) == TT_LISTING_MALFORMED && n == 2);
}

int main(void)
{
	test_reader();
	test_round_trips();
	test_invalid_never_spells_a_valid_name();
	test_refused();
	test_display_name();
	CHECK_DONE();
}
