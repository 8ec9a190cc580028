/* Canonical JSON: tt_cjson writes exactly what jansson's json_dumps with
 * JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY writes, the form every
 * pin id already recorded was hashed from. Checked on fixed cases and on
 * many random values, with keys and strings that need escaping, non-ASCII,
 * embedded NULs, reals and extreme integers. */
#include "check.h"

#include "format/cjson.h"

#include <stdint.h>

static const int flags = JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY;

static int same_as_jansson(const json_t *v)
{
	char *mine = tt_cjson(v), *theirs = json_dumps(v, flags);
	int same = mine && theirs && strcmp(mine, theirs) == 0;
	if (!same)
		fprintf(stderr, "  tt_cjson: %s\n  jansson:  %s\n", mine ? mine : "(null)", theirs ? theirs : "(null)");
	free(mine);
	free(theirs);
	return same;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Short strings drawn from an alphabet that has every kind of character
 * the writer treats differently. */
static json_t *random_string(void)
{
	static const char *const pieces[] = {"a", "Z", "0", "_", "/", " ", "\"", "\\", "\n", "\t", "\x01",
	                                     "\x1f", "\x7f", "é", "€", "𝄞", "{", ":", ","};
	char buf[64];
	size_t len = 0, n = next() % 6;
	for (size_t i = 0; i < n; i++) {
		const char *p = pieces[next() % (sizeof pieces / sizeof *pieces)];
		size_t pl = strlen(p);
		memcpy(buf + len, p, pl);
		len += pl;
	}
	if (next() % 17 == 0)
		buf[len++] = '\0'; /* an embedded NUL, which jansson allows */
	return json_stringn(buf, len);
}

static json_t *random_value(int depth)
{
	switch (next() % (depth > 3 ? 6 : 8)) {
	case 0:
		return json_null();
	case 1:
		return json_boolean(next() & 1);
	case 2: {
		static const json_int_t edges[] = {0, -1, 1, INT64_MAX, INT64_MIN, 1000000007};
		return json_integer(next() & 1 ? edges[next() % 6] : (json_int_t)(next() % 100000) - 50000);
	}
	case 3: {
		static const double reals[] = {0.0, -0.0, 0.1, 1.5, 1e300, -2.5e-300, 3.0, 123456789.125};
		return json_real(reals[next() % 8]);
	}
	case 4:
	case 5:
		return random_string();
	case 6: {
		json_t *a = json_array();
		for (size_t i = 0, n = next() % 4; i < n; i++)
			json_array_append_new(a, random_value(depth + 1));
		return a;
	}
	default: {
		json_t *o = json_object();
		for (size_t i = 0, n = next() % 20; i < n; i++) {
			json_t *k = random_string();
			json_object_setn_new(o, json_string_value(k), json_string_length(k), random_value(depth + 1));
			json_decref(k);
		}
		return o;
	}
	}
}

int main(void)
{
	/* Fixed cases. */
	json_t *doc = json_pack("{s:s, s:i, s:{s:b, s:n, s:f}, s:[i, s, {}]}", "z", "last", "a", 1, "m", "y",
	                        1, "x", "r", 0.5, "arr", -3, "q\"uote", "e", 1);
	CHECK(same_as_jansson(doc));
	char *text = tt_cjson(doc);
	CHECK_STR(text, "{\"a\":1,\"arr\":[-3,\"q\\\"uote\",{}],\"m\":{\"r\":0.5,\"x\":null,\"y\":true},\"z\":\"last\"}");
	free(text);
	json_decref(doc);

	json_t *scalars[] = {json_null(), json_true(), json_false(), json_integer(0), json_integer(INT64_MIN),
	                     json_real(1e21), json_real(2.0), json_string(""), json_string("ünïcødé"),
	                     json_string("tab\there"), json_array(), json_object()};
	for (size_t i = 0; i < sizeof scalars / sizeof *scalars; i++) {
		CHECK(same_as_jansson(scalars[i]));
		json_decref(scalars[i]);
	}

	/* Keys that sort differently by bytes than by anything else: a
	 * prefix before its extension, upper before lower, UTF-8 after ASCII. */
	json_t *keys = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "ab", 1, "a", 2, "B", 3, "b", 4, "é", 5, "a b", 6);
	CHECK(same_as_jansson(keys));
	json_decref(keys);

	/* An object bigger than the writer's stack-held key list. */
	json_t *big = json_object();
	for (int i = 0; i < 100; i++) {
		char k[16];
		snprintf(k, sizeof k, "k%03d", (i * 37) % 100);
		json_object_set_new(big, k, json_integer(i));
	}
	CHECK(same_as_jansson(big));
	json_decref(big);

	/* NULL has no canonical form. */
	CHECK(tt_cjson(NULL) == NULL);

	/* Random values. */
	int mismatches = 0;
	for (int i = 0; i < 20000; i++) {
		json_t *v = random_value(0);
		if (v && !same_as_jansson(v))
			mismatches++;
		json_decref(v);
	}
	CHECK(mismatches == 0);
	CHECK_DONE();
}
