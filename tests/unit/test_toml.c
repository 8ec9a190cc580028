/* Unit tests for the TOML reader and writer: error positions and messages,
 * the value mapping, the writer's exact output, and round trips. */
#include "format/toml.h"

#include "check.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Parses `doc`, expecting failure; returns the message (static storage). */
static const char *parse_error(const char *doc)
{
	static char err[512];
	json_t *v = tt_toml_parse(doc, strlen(doc), "doc.toml", err, sizeof err);
	if (v) {
		json_decref(v);
		return "(parsed without error)";
	}
	return err;
}

static json_t *parse_ok(const char *doc)
{
	char err[512];
	json_t *v = tt_toml_parse(doc, strlen(doc), "doc.toml", err, sizeof err);
	if (!v)
		fprintf(stderr, "unexpected parse error: %s\n", err);
	return v;
}

/* Writes the JSON text `json` as TOML; returns the output or the error, as a
 * malloc'd string the caller frees. */
static char *write_json(const char *json)
{
	json_error_t jerr;
	json_t *v = json_loads(json, JSON_DECODE_ANY, &jerr);
	if (!v) {
		fprintf(stderr, "bad test JSON: %s\n", jerr.text);
		return NULL;
	}
	char err[512];
	char *out = tt_toml_write(v, err, sizeof err);
	json_decref(v);
	if (!out) {
		size_t n = strlen(err) + 8;
		out = malloc(n);
		if (out)
			snprintf(out, n, "ERROR: %s", err);
	}
	return out;
}

static void check_written(const char *json, const char *want)
{
	char *got = write_json(json);
	CHECK_STR(got, want);
	free(got);
}

static void test_error_positions(void)
{
	CHECK_STR(parse_error("a = 1\nb = 2\na = 3\n"), "doc.toml:3:1: duplicate key 'a'");
	CHECK_STR(parse_error("a = 1\ns = \"abc\n"),
	          "doc.toml:2:5: unterminated string (a \"...\" string ends on its line)");
	CHECK_STR(parse_error("s = \"a\\qb\""),
	          "doc.toml:1:7: invalid escape sequence: backslash followed by 'q'");
	CHECK_STR(parse_error("d = 2023-02-30"),
	          "doc.toml:1:13: invalid date: day 30 is out of range for 2023-02");
	CHECK_STR(parse_error("d = 2023-13-01"), "doc.toml:1:10: invalid date: month 13 is out of range");
	CHECK_STR(parse_error("t = 07:32"), "doc.toml:1:5: invalid time: expected HH:MM:SS");
	CHECK_STR(parse_error("[a]\nx = 1\n[a]\n"), "doc.toml:3:2: table 'a' is defined twice");
	CHECK_STR(parse_error("t = {x = 1}\nt.y = 2\n"),
	          "doc.toml:2:1: 't' is an inline table, which cannot be extended");
	CHECK_STR(parse_error("a = [1, 2]\n[[a]]\n"),
	          "doc.toml:2:3: 'a' is already defined and is not an array of tables");
	CHECK_STR(parse_error("[x]\ny.z = 1\n[x.y]\n"), "doc.toml:3:4: table 'x.y' is defined twice");
	CHECK_STR(parse_error("a = { b = 1, }"),
	          "doc.toml:1:14: a trailing comma is not allowed in an inline table");
	CHECK_STR(parse_error("n = 9223372036854775808"), "doc.toml:1:5: integer does not fit in 64 bits");
	CHECK_STR(parse_error("n = 012"), "doc.toml:1:5: leading zeros are not allowed");
	CHECK_STR(parse_error("n = 1__2"),
	          "doc.toml:1:6: an underscore in a number must be between two digits");
	CHECK_STR(parse_error("a = 1 b = 2"), "doc.toml:1:7: expected a newline, found 'b'");
	CHECK_STR(parse_error("s = \"\"\"abc\n\ndef"), "doc.toml:1:5: unterminated multi-line string");
	CHECK_STR(parse_error("s = \"\\uD800\""),
	          "doc.toml:1:6: escape \\uD800 is not a Unicode scalar value");
}

/* Columns count characters, not bytes; CRLF and a BOM do not shift them. */
static void test_error_columns(void)
{
	CHECK_STR(parse_error("k = \"\xC3\xA9\\q\""),
	          "doc.toml:1:7: invalid escape sequence: backslash followed by 'q'");
	CHECK_STR(parse_error("a = 1\r\nb = 2\r\nb = 3\r\n"), "doc.toml:3:1: duplicate key 'b'");
	CHECK_STR(parse_error("\xEF\xBB\xBF" "a = 1\na = 2"), "doc.toml:2:1: duplicate key 'a'");
	CHECK_STR(parse_error("a = 1\n# \xE2\x82\xAC \xC3\x28\n"), "doc.toml:2:5: invalid UTF-8");
	CHECK_STR(parse_error("a = 1\rb = 2"),
	          "doc.toml:1:6: expected a newline, found control character U+000D");
	CHECK_STR(parse_error("\ta\t=\t\"\t\x01\""),
	          "doc.toml:1:8: control character U+0001 is not allowed in a string");
}

static void test_error_buffer_handling(void)
{
	const char *doc = "a = ";
	CHECK(tt_toml_parse(doc, strlen(doc), "x", NULL, 0) == NULL);
	char small[12];
	CHECK(tt_toml_parse(doc, strlen(doc), "doc.toml", small, sizeof small) == NULL);
	CHECK_STR(small, "doc.toml:1:");
	char err[128];
	CHECK(tt_toml_parse(doc, strlen(doc), NULL, err, sizeof err) == NULL);
	CHECK_STR(err, "<input>:1:5: expected a value, found end of input");
	json_t *empty = tt_toml_parse(NULL, 0, "x", err, sizeof err);
	CHECK(json_is_object(empty) && json_object_size(empty) == 0);
	json_decref(empty);
	/* Length, not NUL termination, ends the document. */
	json_t *v = tt_toml_parse("a = 1\nb = 2", 5, "x", err, sizeof err);
	CHECK(json_object_size(v) == 1);
	json_decref(v);
	/* An embedded NUL is a control character, not the end. */
	CHECK(tt_toml_parse("a = 1\n\0", 7, "x", err, sizeof err) == NULL);
}

static const char *special_text(const json_t *obj, const char *tag)
{
	return json_object_size(obj) == 1 ? json_string_value(json_object_get(obj, tag)) : NULL;
}

static void test_value_mapping(void)
{
	json_t *v = parse_ok("odt = 1979-05-27 07:32:00.500z\n"
	                     "odt2 = 1979-05-27t07:32:00-08:00\n"
	                     "ldt = 1979-05-27T07:32:00\n"
	                     "ld = 1979-05-27\n"
	                     "lt = 07:32:00.999999\n"
	                     "pinf = +inf\nninf = -inf\nnnan = -nan\n"
	                     "min = -9223372036854775808\nhex = 0xDEAD_beef\n"
	                     "f = 6.626e-34\nz = -0.0\n"
	                     "s = \"\\u00e9\\U0001F600\\u0000\"\n");
	CHECK(v != NULL);
	if (!v)
		return;
	CHECK_STR(special_text(json_object_get(v, "odt"), "$datetime"), "1979-05-27T07:32:00.500Z");
	CHECK_STR(special_text(json_object_get(v, "odt2"), "$datetime"), "1979-05-27T07:32:00-08:00");
	CHECK_STR(special_text(json_object_get(v, "ldt"), "$datetime-local"), "1979-05-27T07:32:00");
	CHECK_STR(special_text(json_object_get(v, "ld"), "$date-local"), "1979-05-27");
	CHECK_STR(special_text(json_object_get(v, "lt"), "$time-local"), "07:32:00.999999");
	CHECK_STR(special_text(json_object_get(v, "pinf"), "$float"), "inf");
	CHECK_STR(special_text(json_object_get(v, "ninf"), "$float"), "-inf");
	CHECK_STR(special_text(json_object_get(v, "nnan"), "$float"), "nan");
	CHECK(json_integer_value(json_object_get(v, "min")) == INT64_MIN);
	CHECK(json_integer_value(json_object_get(v, "hex")) == 0xDEADBEEF);
	CHECK(json_real_value(json_object_get(v, "f")) == 6.626e-34);
	CHECK(json_is_real(json_object_get(v, "z")) && signbit(json_real_value(json_object_get(v, "z"))));
	json_t *s = json_object_get(v, "s");
	CHECK(json_string_length(s) == 7 && memcmp(json_string_value(s), "\xC3\xA9\xF0\x9F\x98\x80", 7) == 0);
	json_decref(v);
}

static void test_table_rules(void)
{
	/* Headers may define sub-tables of dotted tables, and a table that only
	 * headers implied may be defined once, later. */
	json_t *v = parse_ok("[fruit]\napple.color = 'red'\n[fruit.apple.texture]\nsmooth = true\n"
	                     "[a.b.c]\n[a]\nx = 1\n[[arr]]\n[arr.sub]\n[[arr]]\n");
	CHECK(v != NULL);
	json_t *arr = json_object_get(v, "arr");
	CHECK(json_array_size(arr) == 2 && json_object_get(json_array_get(arr, 0), "sub") != NULL);
	json_decref(v);
	CHECK(strstr(parse_error("[a.b]\n[a]\nb.c = 1\n"), "doc.toml:3:1: table 'b' is already defined") != NULL);
	CHECK(strstr(parse_error("a = {}\n[a.b]\n"), "inline table") != NULL);
	CHECK(strstr(parse_error("[[t]]\n[t]\n"), "doc.toml:2:2:") != NULL);
	CHECK(strstr(parse_error("a.b = 1\na.b.c = 2\n"), "doc.toml:2:3: key 'a.b' already holds a value") != NULL);
	CHECK(strstr(parse_error("a = {b.a = 1, b = 2}\n"), "duplicate key 'b'") != NULL);
}

/* Deep nesting is refused with a message rather than by overflowing a stack. */
static void test_nesting_limit(void)
{
	size_t depth = 100000;
	char *doc = malloc(2 * depth + 8);
	if (!doc)
		return;
	memcpy(doc, "a = ", 4);
	memset(doc + 4, '[', depth);
	memset(doc + 4 + depth, ']', depth);
	doc[4 + 2 * depth] = '\0';
	CHECK(strstr(parse_error(doc), "nest more than") != NULL);
	for (size_t i = 0; i < depth; i++)
		doc[2 * i] = 'a', doc[2 * i + 1] = '.';
	memcpy(doc + 2 * depth - 1, "=1", 3);
	CHECK(strstr(parse_error(doc), "nest more than") != NULL);
	free(doc);
}

static void test_writer_layout(void)
{
	check_written("{\"b\": {\"c\": {\"d\": 1}, \"x\": 2}, \"a\": 1}",
	              "a = 1\n\n[b]\nx = 2\n\n[b.c]\nd = 1\n");
	/* A table holding only tables needs no header of its own. */
	check_written("{\"a\": {\"b\": {\"c\": true}}}", "[a.b]\nc = true\n");
	check_written("{\"empty\": {}, \"none\": []}", "none = []\n\n[empty]\n");
	check_written("{\"srv\": [{\"name\": \"a\", \"port\": 1}, {\"name\": \"b\", \"opts\": {\"x\": 1}}, {}]}",
	              "[[srv]]\nname = \"a\"\nport = 1\n\n"
	              "[[srv]]\nname = \"b\"\n\n[srv.opts]\nx = 1\n\n"
	              "[[srv]]\n");
	/* Arrays mixing tables with other values stay inline. */
	check_written("{\"m\": [1, {\"k\": \"v\", \"e\": {}}, [2, []]]}", "m = [1, { e = {}, k = \"v\" }, [2, []]]\n");
	check_written("{}", "");
}

static void test_writer_scalars(void)
{
	check_written("{\"s\": \"q\\\" b\\\\ \\b\\t\\n\\f\\r \\u0001 \\u007f \\u00e9 \\u20ac\"}",
	              "s = \"q\\\" b\\\\ \\b\\t\\n\\f\\r \\u0001 \\u007F \xC3\xA9 \xE2\x82\xAC\"\n");
	check_written("{\"f\": [1.0, 0.1, 1e300, -0.0, 100.0, 0.30000000000000004, 1e-7, 123456.5]}",
	              "f = [1.0, 0.1, 1e+300, -0.0, 100.0, 0.30000000000000004, 1e-07, 123456.5]\n");
	check_written("{\"f\": [1e16, 1e17, 1.5e-5, 0.0001, 2.5e16, 5e-324, 1.7976931348623157e308]}",
	              "f = [10000000000000000.0, 1e+17, 1.5e-05, 0.0001, 25000000000000000.0, 5e-324, "
	              "1.7976931348623157e+308]\n");
	check_written("{\"i\": [0, -1, 9223372036854775807, -9223372036854775808]}",
	              "i = [0, -1, 9223372036854775807, -9223372036854775808]\n");
	check_written("{\"t\": true, \"f\": false}", "f = false\nt = true\n");
}

static void test_writer_keys(void)
{
	check_written("{\"bare-key_9\": 1, \"a.b\": 2, \"\": 3, \"sp ace\": 4, \"\\u00e9\": 5, \"q\\\"\": 6}",
	              "\"\" = 3\n\"a.b\" = 2\nbare-key_9 = 1\n\"q\\\"\" = 6\n\"sp ace\" = 4\n\"\xC3\xA9\" = 5\n");
	check_written("{\"x y\": {\"a.b\": {\"k\": 1}}}", "[\"x y\".\"a.b\"]\nk = 1\n");
	/* Bytewise order: uppercase before lowercase, shorter prefix first. */
	check_written("{\"b\": 1, \"B\": 2, \"ab\": 3, \"a\": 4}", "B = 2\na = 4\nab = 3\nb = 1\n");
}

static void test_writer_special_values(void)
{
	check_written("{\"odt\": {\"$datetime\": \"1979-05-27T07:32:00.5-08:00\"},"
	              " \"ldt\": {\"$datetime-local\": \"1979-05-27T07:32:00.25\"},"
	              " \"ld\": {\"$date-local\": \"1979-05-27\"},"
	              " \"lt\": {\"$time-local\": \"07:32:00\"},"
	              " \"fl\": [{\"$float\": \"inf\"}, {\"$float\": \"-inf\"}, {\"$float\": \"nan\"}]}",
	              "fl = [inf, -inf, nan]\nld = 1979-05-27\nldt = 1979-05-27T07:32:00.25\n"
	              "lt = 07:32:00\nodt = 1979-05-27T07:32:00.5-08:00\n");
	/* Arrays of special values are values, not arrays of tables. */
	check_written("{\"d\": [{\"$date-local\": \"2000-02-29\"}]}", "d = [2000-02-29]\n");
	/* Only the reader's own spelling makes a special value; anything else is
	 * a table that happens to have a "$..." key, and is written as one. */
	check_written("{\"x\": {\"$datetime\": \"1979-05-27\"}}", "[x]\n\"$datetime\" = \"1979-05-27\"\n");
	check_written("{\"x\": {\"$datetime\": \"1979-05-27 07:32:00z\"}}",
	              "[x]\n\"$datetime\" = \"1979-05-27 07:32:00z\"\n");
	check_written("{\"x\": {\"$date-local\": \"2001-02-29\"}}", "[x]\n\"$date-local\" = \"2001-02-29\"\n");
	check_written("{\"x\": [{\"$float\": \"-nan\"}]}", "[[x]]\n\"$float\" = \"-nan\"\n");
	check_written("{\"x\": {\"$time-local\": 2}}", "[x]\n\"$time-local\" = 2\n");
	check_written("{\"x\": {\"$datetime\": \"1979-05-27T00:00:00Z\\nb = 1\"}}",
	              "[x]\n\"$datetime\" = \"1979-05-27T00:00:00Z\\nb = 1\"\n");
}

static void test_writer_refusals(void)
{
	check_written("{\"a\": {\"b\": [1, null]}}", "ERROR: null cannot be written in TOML (at 'a.b[1]')");
	check_written("{\"n\": null}", "ERROR: null cannot be written in TOML (at 'n')");
	check_written("{\"t\": [{\"k\": null}]}", "ERROR: null cannot be written in TOML (at 't[0].k')");
	check_written("[1, 2]", "ERROR: a TOML document must be a table (a JSON object)");
	check_written("\"text\"", "ERROR: a TOML document must be a table (a JSON object)");
	char err[128];
	CHECK(tt_toml_write(NULL, err, sizeof err) == NULL);
	CHECK(tt_toml_write(NULL, NULL, 0) == NULL);
	json_t *bad = json_pack("{s:o}", "s", json_stringn_nocheck("\xFF", 1));
	CHECK(tt_toml_write(bad, err, sizeof err) == NULL);
	CHECK_STR(err, "string is not valid UTF-8 (at 's')");
	json_decref(bad);
}

/* write(v) parses back to v, and writing that again gives the same bytes. */
static void check_round_trip(const json_t *v)
{
	char err[512];
	char *first = tt_toml_write(v, err, sizeof err);
	CHECK(first != NULL);
	if (!first)
		return;
	json_t *again = tt_toml_parse(first, strlen(first), "written", err, sizeof err);
	CHECK(again != NULL && json_equal(v, again));
	char *second = again ? tt_toml_write(again, err, sizeof err) : NULL;
	CHECK_STR(second, first);
	free(first);
	free(second);
	json_decref(again);
}

static void test_round_trips(void)
{
	static const char *const docs[] = {
		"title = \"TOML\"\n[owner]\nname = \"Tom\"\ndob = 1979-05-27T07:32:00-08:00\n"
		"[database]\nports = [8000, 8001]\ndata = [[\"delta\", \"phi\"], [3.14]]\n"
		"temp = { cpu = 79.5, case = 72.0 }\n[servers.alpha]\nip = \"10.0.0.1\"\n",
		"[[fruit]]\nname = \"apple\"\n[fruit.physical]\ncolor = \"red\"\n[[fruit.variety]]\n"
		"name = \"red delicious\"\n[[fruit]]\nname = \"banana\"\n[[fruit.variety]]\nname = \"plantain\"\n",
		"a.b.c = 1\na.\"b.c\".d = 2\n'' = 3\n\"\\t\" = { x = [ { y = 1979-05-27 }, 07:00:00 ] }\n",
		"f = [0.1, 1e300, -0.0, 5e-324, 1.7976931348623157e308, -inf, nan, 3.0]\n"
		"m = [1, 'two', [3], { four = 4 }]\nml = \"\"\"\nline\n  \\\"quoted\\\"\\u0001\"\"\"\n",
		"x = []\ny = [{}]\nz = [[{}]]\n[e]\n[[f]]\n[[f]]\n[g.h]\n",
		/* Tables that merely look like special values stay tables. */
		"a = [{\"$time-local\" = 2}]\nb = {\"$datetime\" = \"1979-05-27 07:32:00\"}\n"
		"c = {\"$float\" = \"nan\", d = 1}\n",
	};
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		json_t *v = parse_ok(docs[i]);
		CHECK(v != NULL);
		if (v)
			check_round_trip(v);
		json_decref(v);
	}
	json_t *built = json_pack("{s:f, s:[{s:{}}], s:{s:{s:[i, {s:s}]}}}", "r", 2.5, "aot", "e",
	                          "deep", "er", "est", 1, "k", "v");
	check_round_trip(built);
	json_decref(built);
}

static void check_where(const struct tt_toml_where *w, const json_t *table, const char *key, size_t line,
                        size_t col)
{
	size_t l, c;
	int found = tt_toml_where_key(w, table, key, &l, &c);
	CHECK(found == (line != 0));
	if (l != line || c != col)
		fprintf(stderr, "key %s: got %zu:%zu, want %zu:%zu\n", key, l, c, line, col);
	CHECK(l == line && c == col);
}

/* Every key's line and column, for validators' messages. */
static void test_key_positions(void)
{
	const char *doc = "kind = \"file\"\n"
	                  "# a comment\n"
	                  "[locator]\n"
	                  "  uri = \"/x\"\n"
	                  "[objects.\"a b\"]\n"
	                  "\"\xc3\xa9t\xc3\xa9\".x = 1\n" /* a key of two-byte characters: columns count them once */
	                  "inline = { k = 2, 'q' = 3 }\n"
	                  "[[list]]\n"
	                  "n = 4\n";
	char err[256];
	struct tt_toml_where *w = NULL;
	json_t *v = tt_toml_parse_at(doc, strlen(doc), "doc.toml", err, sizeof err, &w);
	CHECK(v != NULL && w != NULL);
	if (!v || !w) {
		json_decref(v);
		tt_toml_where_free(w);
		return;
	}
	json_t *objects = json_object_get(v, "objects"), *ab = json_object_get(objects, "a b");
	check_where(w, v, "kind", 1, 1);
	check_where(w, v, "locator", 3, 2);
	check_where(w, json_object_get(v, "locator"), "uri", 4, 3);
	check_where(w, v, "objects", 5, 2);
	check_where(w, objects, "a b", 5, 10);
	check_where(w, ab, "\xc3\xa9t\xc3\xa9", 6, 1);
	check_where(w, json_object_get(ab, "\xc3\xa9t\xc3\xa9"), "x", 6, 7);
	check_where(w, ab, "inline", 7, 1);
	check_where(w, json_object_get(ab, "inline"), "k", 7, 12);
	check_where(w, json_object_get(ab, "inline"), "q", 7, 19);
	check_where(w, v, "list", 8, 3);
	check_where(w, json_array_get(json_object_get(v, "list"), 0), "n", 9, 1);
	check_where(w, v, "nope", 0, 0);
	check_where(w, json_object_get(v, "locator"), "kind", 0, 0);
	tt_toml_where_free(w);
	json_decref(v);
	/* A failed parse hands out no positions. */
	w = (struct tt_toml_where *)1;
	CHECK(tt_toml_parse_at("a = \n", 5, "doc.toml", err, sizeof err, &w) == NULL && w == NULL);
}

/* A file a merge left conflicted is named as such, at the first marker,
 * whatever the parser tripped on; a marker inside a string that parses is
 * content; a line of six, or one with text glued on, is no marker. */
static void test_conflict_markers(void)
{
	static const char *const conflicted =
		"kind = \"file\"\n<<<<<<< HEAD\nfile = \"mutable\"\n=======\nfile = \"immutable\"\n>>>>>>> other\n";
	static const char *const want =
		"doc.toml:2:1: unresolved merge conflict markers; resolve the conflict (e.g. keep one side) and retry";
	CHECK_STR(parse_error(conflicted), want);
	CHECK_STR(parse_error("kind = \"file\"\n=======\r\na = 1\n"), want);
	/* jj's markers, longer ones included. */
	CHECK_STR(parse_error("a = 1\n<<<<<<<<<< Conflict 1 of 1\n%%%%%%%%%% Changes\n"), want);
	CHECK_STR(parse_error("a = 1\n+++++++ Contents of side #2\n"), want);
	CHECK_STR(parse_error("a = 1\n<<<<<< six\n"), "doc.toml:2:1: expected a key, found '<'");
	CHECK_STR(parse_error("a = 1\n<<<<<<<x\n"), "doc.toml:2:1: expected a key, found '<'");
	json_t *v = parse_ok("s = \"\"\"\n<<<<<<< HEAD\n=======\n\"\"\"\n");
	CHECK(v && strcmp(json_string_value(json_object_get(v, "s")), "<<<<<<< HEAD\n=======\n") == 0);
	json_decref(v);
}

int main(void)
{
	test_conflict_markers();
	test_key_positions();
	test_error_positions();
	test_error_columns();
	test_error_buffer_handling();
	test_value_mapping();
	test_table_rules();
	test_nesting_limit();
	test_writer_layout();
	test_writer_scalars();
	test_writer_keys();
	test_writer_special_values();
	test_writer_refusals();
	test_round_trips();
	CHECK_DONE();
}
