/* FlexBuffers: hand-made buffers of every type and width, the bytes Rust's
 * flexbuffers crate writes (both directions), round trips, and hostile
 * buffers. */
#include "check.h"

#include "format/flexbuf.h"

#include <tether.h>

#include <stdint.h>

/* ---- helpers ---------------------------------------------------- */

static size_t unhex(const char *hex, uint8_t *out)
{
	size_t n = 0;
	for (; hex[0] && hex[1]; hex += 2) {
		unsigned v;
		sscanf(hex, "%2x", &v);
		out[n++] = (uint8_t)v;
	}
	return n;
}

/* Decodes an exact-size copy of b (ASan sees any overread). NULL on error. */
static json_t *dec(const uint8_t *b, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	if (n)
		memcpy(c, b, n);
	json_t *v = (json_t *)1;
	int rc = flex_decode(c, n, &v);
	free(c);
	if (rc) {
		if (v != NULL)
			fprintf(stderr, "  decode failed but left a value\n");
		return NULL;
	}
	return v;
}

static json_t *dec_hex(const char *hex)
{
	uint8_t b[4096];
	return dec(b, unhex(hex, b));
}

/* hex decodes to the JSON text want (compared as values). */
static int decodes_to(const char *hex, const char *want)
{
	json_t *got = dec_hex(hex);
	json_t *w = json_loads(want, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	int ok = got && w && json_equal(got, w);
	if (!ok) {
		char *g = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;
		fprintf(stderr, "  %s decoded to %s, wanted %s (%s)\n", hex, g ? g : "(error)", want,
		        got ? "" : tether_error_last());
		free(g);
	}
	json_decref(got);
	json_decref(w);
	return ok;
}

/* Decoding fails with TETHER_EIO and a message mentioning word. */
static int refused(const uint8_t *b, size_t n, const char *word)
{
	json_t *v = dec(b, n);
	if (v) {
		json_decref(v);
		fprintf(stderr, "  decoded what should be refused (%s)\n", word);
		return 0;
	}
	const char *msg = tether_error_last();
	if (strncmp(msg, "flexbuffer: ", 12) != 0 || !strstr(msg, word)) {
		fprintf(stderr, "  message: %s (wanted %s)\n", msg, word);
		return 0;
	}
	return 1;
}

static int refused_hex(const char *hex, const char *word)
{
	uint8_t b[4096];
	return refused(b, unhex(hex, b), word);
}

/* The encoding of JSON text, as hex. */
static char *enc_hex(const char *json)
{
	json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	uint8_t *b;
	size_t n;
	char *hex = NULL;
	if (v && flex_encode(v, &b, &n) == 0) {
		hex = malloc(2 * n + 1);
		for (size_t i = 0; i < n; i++)
			sprintf(hex + 2 * i, "%02x", b[i]);
		hex[2 * n] = '\0';
		free(b);
	}
	json_decref(v);
	return hex;
}

static int encodes_to(const char *json, const char *want)
{
	char *got = enc_hex(json);
	int ok = got && strcmp(got, want) == 0;
	if (!ok)
		fprintf(stderr, "  %s encoded to %s, wanted %s\n", json, got ? got : "(error)", want);
	free(got);
	return ok;
}

/* encode -> decode gives the value back. */
static int round_trips(const json_t *v)
{
	uint8_t *b;
	size_t n;
	if (flex_encode(v, &b, &n) != 0) {
		fprintf(stderr, "  encode failed: %s\n", tether_error_last());
		return 0;
	}
	json_t *back = dec(b, n);
	free(b);
	int ok = back && json_equal(v, back);
	if (!ok) {
		char *a = json_dumps(v, JSON_ENCODE_ANY), *c = back ? json_dumps(back, JSON_ENCODE_ANY) : NULL;
		fprintf(stderr, "  round trip: %.200s came back as %.200s\n", a, c ? c : tether_error_last());
		free(a);
		free(c);
	}
	json_decref(back);
	return ok;
}

static int round_trips_text(const char *json)
{
	json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	int ok = v && round_trips(v);
	json_decref(v);
	return ok;
}

static void put_le(uint8_t *b, uint64_t v, unsigned w)
{
	for (unsigned i = 0; i < w; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static unsigned lg(unsigned w)
{
	return w == 1 ? 0 : w == 2 ? 1 : w == 4 ? 2 : 3;
}

/* ---- Rust's bytes ----------------------------------------------- */

static void test_rust_bytes(void)
{
	/* From the research note (Rust flexbuffers as Icechunk 2.2.2 runs it). */
	CHECK(encodes_to("{\"is_root\": true}", "69735f726f6f740001090101010168022401"));
	CHECK(encodes_to("3", "030801"));
	CHECK(encodes_to("\"c-writer\"", "08632d77726974657200091401"));
	CHECK(decodes_to("69735f726f6f740001090101010168022401", "{\"is_root\": true}"));
	CHECK(decodes_to("030801", "3"));
	CHECK(decodes_to("08632d77726974657200091401", "\"c-writer\""));
	/* Commit and repository metadata Icechunk 2.3.0 wrote (in the fuzz
	 * corpus as rust-meta-*). */
	CHECK(encodes_to("{\"x\": [1, -2, 3.25]}", "780000000300000001000000feffffff000050400a060e0118010101142a022401"));
	CHECK(encodes_to("{\"a\": [1, 2, {\"b\": \"c\"}]}", "61006200016300010601010107140301020508082401160101010b28022401"));
	CHECK(encodes_to("\"tether\"", "0674657468657200071401"));
	CHECK(decodes_to("780000000300000001000000feffffff000050400a060e0118010101142a022401", "{\"x\": [1, -2, 3.25]}"));
	CHECK(decodes_to("61006200016300010601010107140301020508082401160101010b28022401", "{\"a\": [1, 2, {\"b\": \"c\"}]}"));
}

/* ---- every type and width, by hand ------------------------------ */

static void test_scalars(void)
{
	CHECK(decodes_to("000001", "null"));
	CHECK(decodes_to("016801", "true"));
	CHECK(decodes_to("006801", "false"));
	CHECK(decodes_to("00006902", "false")); /* a 16-bit bool */
	CHECK(decodes_to("ff0401", "-1"));
	CHECK(decodes_to("d4fe0502", "-300"));
	CHECK(decodes_to("000000800604", "-2147483648"));
	CHECK(decodes_to("00000000000000800708", "-9223372036854775808"));
	CHECK(decodes_to("030801", "3"));
	CHECK(decodes_to("e8030902", "1000"));
	CHECK(decodes_to("ffffffff0a04", "4294967295"));
	CHECK(decodes_to("ffffffffffffff7f0b08", "9223372036854775807"));
	CHECK(refused_hex("ffffffffffffffff0b08", "above 2^63-1"));
	CHECK(decodes_to("0000c03f0e04", "1.5"));
	CHECK(decodes_to("9a9999999999b93f0f08", "0.1"));
	CHECK(refused_hex("000c01", "float narrower"));
	CHECK(refused_hex("00000d02", "float narrower"));
	CHECK(decodes_to("0000c07f0e04", "null")); /* NaN: null, as serde_json reads it */
	CHECK(decodes_to("000000000000f07f0f08", "null")); /* +inf */
	/* Keys, strings of every length width, indirect scalars. */
	CHECK(decodes_to("616200031001", "\"ab\""));
	CHECK(decodes_to("0200686900031501", "\"hi\""));
	CHECK(decodes_to("0200000068690000041601", "\"hi\""));
	CHECK(decodes_to("020000000000000068690000041701", "\"hi\""));
	CHECK(decodes_to("0000011401", "\"\""));
	CHECK(decodes_to("fb011801", "-5"));
	CHECK(decodes_to("e803021d01", "1000"));
	CHECK(decodes_to("0000000000000440082301", "2.5"));
	CHECK(decodes_to("00002040042201", "2.5"));
	CHECK(refused_hex("ffffffffffffffff081f01", "above 2^63-1")); /* indirect */
	/* A string's NUL terminator is not required (Rust does not check it). */
	CHECK(decodes_to("026869021401", "\"hi\""));
	/* A root of 2- and 8-byte width. */
	CHECK(decodes_to("02006869000004001502", "\"hi\""));
}

/* A typed vector (types 11..15 prefixed, 16..24 fixed, 36 bools) of width
 * w holding 1, 2, 3...: decodes to the same numbers. */
static int typed_vector_case(unsigned type, unsigned w)
{
	unsigned n = type >= 16 && type <= 24 ? (type - 16) / 3 + 2 : 3;
	int prefixed = type < 16 || type == 36;
	unsigned elem = type == 36 ? 26 : type < 16 ? type - 11 + 1 : (type - 16) % 3 + 1;
	uint8_t b[128] = {0};
	size_t at = 0;
	if (prefixed) {
		put_le(b, n, w);
		at = w;
	}
	size_t start = at;
	json_t *want = json_array();
	for (unsigned i = 0; i < n; i++) {
		if (elem == 3) { /* float */
			if (w == 4) {
				float f = (float)i + 0.5f;
				uint32_t u;
				memcpy(&u, &f, 4);
				put_le(b + at, u, 4);
			} else {
				double d = (double)i + 0.5;
				uint64_t u;
				memcpy(&u, &d, 8);
				put_le(b + at, u, 8);
			}
			json_array_append_new(want, json_real((double)i + 0.5));
		} else if (elem == 26) {
			put_le(b + at, i % 2, w);
			json_array_append_new(want, json_boolean(i % 2));
		} else if (elem == 1) {
			put_le(b + at, (uint64_t)-(int64_t)(i + 1), w);
			json_array_append_new(want, json_integer(-(json_int_t)(i + 1)));
		} else {
			put_le(b + at, i + 1, w);
			json_array_append_new(want, json_integer(i + 1));
		}
		at += w;
	}
	b[at] = (uint8_t)(at - start); /* root slot: offset back to the elements */
	b[at + 1] = (uint8_t)(type << 2 | lg(w));
	b[at + 2] = 1;
	json_t *got = dec(b, at + 3);
	int ok = got && json_equal(got, want);
	if (!ok)
		fprintf(stderr, "  typed vector type %u width %u: %s\n", type, w, got ? "wrong value" : tether_error_last());
	json_decref(got);
	json_decref(want);
	return ok;
}

static void test_vectors(void)
{
	int all = 1;
	static const unsigned types[] = {11, 12, 13, 16, 17, 18, 19, 20, 21, 22, 23, 24, 36};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		for (unsigned w = 1; w <= 8; w *= 2) {
			int is_float = types[i] == 13 || (types[i] >= 16 && types[i] <= 24 && (types[i] - 16) % 3 == 2);
			if (is_float && w < 4) {
				/* 8- and 16-bit floats do not exist: refused. */
				uint8_t b[32] = {0};
				unsigned n = types[i] == 13 ? 2 : (types[i] - 16) / 3 + 2;
				size_t at = 0;
				if (types[i] == 13) {
					b[0] = (uint8_t)n;
					at = w;
				}
				size_t start = at;
				at += n * w;
				b[at] = (uint8_t)(at - start);
				b[at + 1] = (uint8_t)(types[i] << 2 | lg(w));
				b[at + 2] = 1;
				all &= refused(b, at + 3, "float narrower");
				continue;
			}
			all &= typed_vector_case(types[i], w);
		}
	CHECK(all);

	/* Untyped vector: a bool, a null, an int. */
	CHECK(decodes_to("030100ff680004062801", "[true, null, -1]"));
	/* Keys and (deprecated) strings in typed vectors. */
	CHECK(decodes_to("61006200020504023801", "[\"a\", \"b\"]"));
	CHECK(decodes_to("01610002626300020705023c01", "[\"a\", \"bc\"]"));
	/* ... of width 2, where each string's length is 2 bytes wide too:
	 * 0 "a" (length 0100) | 4 "bc" (0200, NUL, pad) | 10 length 0200,
	 * offsets 0a00 0800 | 16 root slot 04, type 0x3d, width 1 */
	CHECK(decodes_to("0100610002006263000002000a000800043d01", "[\"a\", \"bc\"]"));
	/* Empty vectors, typed and untyped, and an empty map. */
	CHECK(decodes_to("00002801", "[]"));
	CHECK(decodes_to("00002c01", "[]"));
	CHECK(encodes_to("[]", "00002801"));
	/* An empty container stored before any value was pushed (found by
	 * fuzz_flexbuf under clang's UBSan: arithmetic on the null stack). */
	CHECK(encodes_to("{}", "00000100002401"));
	CHECK(encodes_to("[[]]", "00010128022801"));
}

static void test_maps(void)
{
	char *hex = enc_hex("{}");
	CHECK(hex && decodes_to(hex, "{}"));
	free(hex);
	/* A map's keys vector and value count disagree. */
	uint8_t b[64];
	size_t n = unhex("69735f726f6f740001090101010168022401", b);
	b[8] = 2; /* keys vector claims 2 keys */
	CHECK(refused(b, n, "as many keys as values"));
	n = unhex("69735f726f6f740001090101010168022401", b);
	b[11] = 3; /* keys width 3 */
	CHECK(refused(b, n, "keys of bad width"));
	n = unhex("69735f726f6f740001090101010168022401", b);
	b[10] = 20; /* keys offset before the buffer */
	CHECK(refused(b, n, "before the buffer"));
	n = unhex("69735f726f6f740001090101010168022401", b);
	b[0] = 0xff; /* key not UTF-8 */
	CHECK(refused(b, n, "not valid UTF-8"));
	/* A map in a map, keys shared: {"a": {"a": 1}, "b": [{"a": 2}]} */
	CHECK(round_trips_text("{\"a\": {\"a\": 1}, \"b\": [{\"a\": 2}]}"));
	hex = enc_hex("[{\"name\": 1}, {\"name\": 2}]");
	/* The key "name" is written once. */
	CHECK(hex && strstr(hex, "6e616d6500") && !strstr(strstr(hex, "6e616d6500") + 2, "6e616d6500"));
	free(hex);
	/* A map read by Python's writer, which orders its keys' bytes
	 * differently but sorts the keys vector. */
	CHECK(decodes_to("610001030101010104620061000103010101020401032402181002010216092428042401",
	                 "{\"a\": {\"a\": 1}, \"b\": [{\"a\": 2}]}"));
}

/* ---- encode details --------------------------------------------- */

static void test_encode(void)
{
	/* Widths chosen as Rust chooses them. */
	CHECK(encodes_to("null", "000001"));
	CHECK(encodes_to("true", "016801"));
	CHECK(encodes_to("false", "006801"));
	CHECK(encodes_to("-1", "ff0401"));
	CHECK(encodes_to("255", "ff0801"));
	CHECK(encodes_to("256", "00010902"));
	CHECK(encodes_to("-129", "7fff0502"));
	CHECK(encodes_to("65536", "000001000a04"));
	CHECK(encodes_to("4294967296", "00000000010000000b08"));
	CHECK(encodes_to("-9223372036854775808", "00000000000000800708"));
	CHECK(encodes_to("1.5", "0000c03f0e04"));
	CHECK(encodes_to("0.1", "9a9999999999b93f0f08"));
	CHECK(encodes_to("1e300", "9c7500883ce4377e0f08"));
	CHECK(encodes_to("\"\"", "0000011401"));

	/* Round trips of varied, nested values. */
	static const char *const values[] = {
	    "{\"author\": \"seed\", \"k\": {\"x\": [1, -2, 3.25]}, \"empty\": {}, \"e2\": []}",
	    "[null, true, false, 0, -0.0, 1e-300, 123456789012345, -9223372036854775808, 9223372036854775807]",
	    "[\"h\\u00e9llo \\u2713 \\ud83e\\uddca\", \"nul\\u0000inside\", \"\"]",
	    "[[[[[[[[[[{\"deep\": [[[]]]}]]]]]]]]]]",
	    "{\"b\": 1, \"a\": 2, \"ab\": 3, \"\": 4, \"\\u00e9\": 5, \"B\": 6}",
	    "[1, \"mixed\", 2.5, [\"nested\", {\"m\": null}], {\"z\": [true]}]",
	    "{\"is_root\": true}",
	};
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
		CHECK(round_trips_text(values[i]));

	/* Sizes that need wider lengths and offsets: a 300-byte and a
	 * 70000-byte string, a 300-element array, 300 keys. */
	json_t *big = json_object();
	char *s = malloc(70001);
	memset(s, 'x', 70000);
	s[70000] = '\0';
	json_object_set_new(big, "long", json_string(s));
	s[300] = '\0';
	json_object_set_new(big, "mid", json_string(s));
	json_t *arr = json_array();
	for (int i = 0; i < 300; i++)
		json_array_append_new(arr, i % 3 ? json_integer(i * 1000003) : json_string("v"));
	json_object_set_new(big, "arr", arr);
	json_t *many = json_object();
	for (int i = 0; i < 300; i++) {
		char k[16];
		snprintf(k, sizeof k, "key%03d", i);
		json_object_set_new(many, k, json_real(i + 0.25));
	}
	json_object_set_new(big, "many", many);
	CHECK(round_trips(big));
	/* The same value gives the same bytes every time. */
	uint8_t *b1 = NULL, *b2 = NULL;
	size_t n1 = 0, n2 = 1;
	CHECK(flex_encode(big, &b1, &n1) == 0 && flex_encode(big, &b2, &n2) == 0);
	CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0);
	free(b1);
	free(b2);
	json_decref(big);
	free(s);

	/* Keys are sorted bytewise: "B" < "a" < "b". */
	char *hex = enc_hex("{\"b\": 1, \"a\": 2, \"B\": 3}");
	json_t *v = hex ? dec_hex(hex) : NULL;
	CHECK(v && json_object_size(v) == 3);
	CHECK(hex && strstr(hex, "4200") && strstr(hex, "6100") && strstr(hex, "6200"));
	json_decref(v);
	free(hex);

	/* 64 levels of nesting encode and decode; 65 are refused both ways. */
	json_t *deep = json_array(), *inner = deep;
	for (int i = 1; i < 64; i++) {
		json_t *next = json_array();
		json_array_append_new(inner, next);
		inner = next;
	}
	CHECK(round_trips(deep));
	json_array_append_new(inner, json_array());
	uint8_t *out;
	size_t olen;
	CHECK(flex_encode(deep, &out, &olen) == TETHER_EUSAGE && out == NULL);
	CHECK(strstr(tether_error_last(), "64") != NULL);
	json_decref(deep);

	/* A key with a NUL byte cannot be a FlexBuffer key. */
	json_t *nk = json_object();
	json_object_setn_new(nk, "a\0b", 3, json_true());
	CHECK(flex_encode(nk, &out, &olen) == TETHER_EUSAGE && out == NULL);
	json_decref(nk);
	CHECK(flex_encode(NULL, &out, &olen) == TETHER_EUSAGE);
}

/* ---- hostile buffers -------------------------------------------- */

static void test_hostile(void)
{
	CHECK(refused_hex("", "shorter"));
	CHECK(refused_hex("0001", "shorter"));
	CHECK(refused_hex("000003", "root of bad width"));
	CHECK(refused_hex("000000", "root of bad width"));
	CHECK(refused_hex("00000008", "root before the start"));
	CHECK(refused_hex("051401", "before the buffer"));
	CHECK(refused_hex("09006869021501", "string longer than the buffer"));
	CHECK(refused_hex("ff6869021401", "string longer than the buffer"));
	CHECK(refused_hex("6162021001", "without a terminating NUL"));
	CHECK(refused_hex("ff002801", "vector longer than the buffer"));
	CHECK(refused_hex("ffffffff002a01", "vector longer than the buffer"));
	CHECK(refused_hex("ffffffffffffffff002b01", "longer than the buffer"));
	CHECK(refused_hex("006c01", "unknown type"));
	CHECK(refused_hex("00fc01", "unknown type"));
	CHECK(refused_hex("008c01", "unknown type"));
	CHECK(refused_hex("02c32800031401", "not valid UTF-8"));
	CHECK(refused_hex("03eda08000041401", "not valid UTF-8"));
	CHECK(refused_hex("02aabb026401", "blob"));
	/* A vector's length slot before the buffer's start. */
	CHECK(refused_hex("00002a01", "before the start") || refused_hex("00002a01", "outside"));
	/* A map's prefix before the start. */
	CHECK(refused_hex("0000012401", "map prefix before the start"));

	/* 64 nested vectors decode, 65 are refused. */
	for (int levels = 64; levels <= 65; levels++) {
		uint8_t b[512];
		size_t at = 0;
		b[at++] = 0; /* innermost: empty vector, elements at 1 */
		size_t prev = at;
		for (int i = 1; i < levels; i++) {
			b[at++] = 1;          /* length */
			size_t elems = at;
			b[at] = (uint8_t)(at - prev); /* element: offset back */
			at++;
			b[at++] = 10 << 2;    /* its type: vector, width 1 */
			prev = elems;
		}
		b[at] = (uint8_t)(at - prev);
		at++;
		b[at++] = 10 << 2;
		b[at++] = 1;
		json_t *v = dec(b, at);
		if (levels == 64)
			CHECK(v != NULL);
		else
			CHECK(v == NULL && strstr(tether_error_last(), "deeper than 64"));
		json_decref(v);
	}

	/* A DAG bomb: each level a vector of two offsets to the level below,
	 * 40 levels (2^40 values if followed naively): refused, quickly. */
	uint8_t bomb[512];
	size_t at = 0;
	bomb[at++] = 0;
	size_t prev = at;
	for (int i = 0; i < 40; i++) {
		bomb[at++] = 2;
		size_t elems = at;
		bomb[at] = (uint8_t)(at - prev);
		at++;
		bomb[at] = (uint8_t)(at - prev);
		at++;
		bomb[at++] = 10 << 2;
		bomb[at++] = 10 << 2;
		prev = elems;
	}
	bomb[at] = (uint8_t)(at - prev);
	at++;
	bomb[at++] = 10 << 2;
	bomb[at++] = 1;
	CHECK(refused(bomb, at, "more data than the buffer"));

	/* A text bomb: one 60000-byte string behind 30000 offsets. */
	size_t slen = 60000, nref = 30000;
	size_t tlen = 4 + slen + 4 + 4 + nref * 4 + nref + 4 + 2;
	uint8_t *tb = calloc(1, tlen);
	put_le(tb, slen, 4);
	memset(tb + 4, 'q', slen);
	size_t str = 4;
	size_t vec = (4 + slen + 1 + 3) / 4 * 4 + 4;
	put_le(tb + vec - 4, nref, 4);
	for (size_t i = 0; i < nref; i++) {
		put_le(tb + vec + 4 * i, vec + 4 * i - str, 4);
		tb[vec + 4 * nref + i] = 5 << 2 | 2; /* string, 4-byte length */
	}
	size_t root = vec + 5 * nref;
	put_le(tb + root, root - vec, 4);
	tb[root + 4] = 10 << 2 | 2;
	tb[root + 5] = 4;
	CHECK(refused(tb, root + 6, "more data than the buffer"));
	free(tb);

	/* Every prefix and every byte flip of a real buffer: errors or values,
	 * never a crash or an overread. */
	uint8_t good[256];
	size_t glen = unhex("61006200016300010601010107140301020508082401160101010b28022401", good);
	json_t *whole = dec(good, glen);
	int cut_differs = whole != NULL;
	for (size_t cut = 0; cut < glen; cut++) {
		json_t *v = dec(good, cut);
		cut_differs &= !(v && json_equal(v, whole)); /* a cut moves the root */
		json_decref(v);
	}
	CHECK(cut_differs);
	json_decref(whole);
	for (size_t i = 0; i < glen; i++)
		for (int x = 1; x < 256; x += 17) {
			uint8_t c[256];
			memcpy(c, good, glen);
			c[i] ^= (uint8_t)x;
			json_decref(dec(c, glen));
		}
}

int main(void)
{
	test_rust_bytes();
	test_scalars();
	test_vectors();
	test_maps();
	test_encode();
	test_hostile();
	CHECK_DONE();
}
