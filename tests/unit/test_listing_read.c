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

static int parses(const char *line)
{
	struct tt_listing_line l;
	int rc = tt_listing_parse_line(line, strlen(line), &l);
	tt_listing_line_free(&l);
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

int main(void)
{
	test_round_trips();
	test_invalid_never_spells_a_valid_name();
	test_refused();
	test_display_name();
	CHECK_DONE();
}
