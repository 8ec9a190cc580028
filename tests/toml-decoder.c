/* The toml-test decoder protocol: one TOML document on stdin; on success the
 * suite's tagged JSON on stdout (every scalar as {"type": T, "value": "..."})
 * and exit 0; on a document that is not valid TOML, the error on stderr and
 * exit 1.
 *
 * With --roundtrip it instead checks our writer against the parser: parse,
 * write, parse again; the two values must be equal (json_equal, made exact
 * for keys holding U+0000, see same_value) and writing the second must give
 * the same bytes as the first. Any difference exits 2. */
#include "format/toml.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(FILE *in, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, in);
		if (n < cap)
			break;
		char *bigger = realloc(buf, cap * 2);
		if (!bigger) {
			free(buf);
			return NULL;
		}
		buf = bigger;
		cap *= 2;
	}
	if (buf && ferror(in)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static json_t *tagged(const char *type, const char *value, size_t len)
{
	return json_pack("{s:s, s:s%}", "type", type, "value", value, len);
}

/* Our special values are objects with one "$..." key; the suite spells them
 * as scalars whose type is that key without the '$'. */
static json_t *tag_special(const json_t *obj)
{
	if (json_object_size(obj) != 1)
		return NULL;
	static const char *const types[][2] = {
		{"$datetime", "datetime"},     {"$datetime-local", "datetime-local"},
		{"$date-local", "date-local"}, {"$time-local", "time-local"},
		{"$float", "float"},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		json_t *text = json_object_get(obj, types[i][0]);
		if (json_is_string(text))
			return tagged(types[i][1], json_string_value(text), json_string_length(text));
	}
	return NULL;
}

/* The shortest "%.*g" that reads back as the same double. */
static void format_real(double d, char *out, size_t n)
{
	for (int precision = 1; precision <= 17; precision++) {
		snprintf(out, n, "%.*g", precision, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

static json_t *to_tagged(const json_t *v);

static json_t *tag_object(const json_t *obj)
{
	json_t *special = tag_special(obj);
	if (special)
		return special;
	json_t *out = json_object();
	void *iter = json_object_iter((json_t *)obj);
	for (; out && iter; iter = json_object_iter_next((json_t *)obj, iter)) {
		json_t *child = to_tagged(json_object_iter_value(iter));
		if (!child || json_object_setn_new(out, json_object_iter_key(iter),
		                                   json_object_iter_key_len(iter), child)) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

static json_t *tag_array(const json_t *array)
{
	json_t *out = json_array();
	for (size_t i = 0; out && i < json_array_size(array); i++) {
		if (json_array_append_new(out, to_tagged(json_array_get(array, i)))) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

static json_t *to_tagged(const json_t *v)
{
	char text[64];
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return tag_object(v);
	case JSON_ARRAY:
		return tag_array(v);
	case JSON_STRING:
		return tagged("string", json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return tagged("integer", text, strlen(text));
	case JSON_REAL:
		format_real(json_real_value(v), text, sizeof text);
		return tagged("float", text, strlen(text));
	case JSON_TRUE:
		return tagged("bool", "true", 4);
	case JSON_FALSE:
		return tagged("bool", "false", 5);
	case JSON_NULL:
		break;
	}
	return NULL;
}

static int decode(const char *buf, size_t len)
{
	char err[512];
	json_t *doc = tt_toml_parse(buf, len, "<stdin>", err, sizeof err);
	if (!doc) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	json_t *out = to_tagged(doc);
	json_decref(doc);
	if (!out || json_dumpf(out, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) || puts("") == EOF) {
		fprintf(stderr, "toml-decoder: cannot print the result\n");
		json_decref(out);
		return 3;
	}
	json_decref(out);
	return 0;
}

/* json_equal, except that object keys are compared with their lengths:
 * jansson's looks them up as C strings, so a key holding U+0000 (legal in
 * TOML as "\u0000") would never match, or would match the wrong key. Zeros
 * must agree in sign too, since the writer spells -0.0 and 0.0 apart. */
static bool same_value(const json_t *a, const json_t *b)
{
	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_real(a))
		return json_real_value(a) == json_real_value(b) &&
		       signbit(json_real_value(a)) == signbit(json_real_value(b));
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same_value(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	if (!json_is_object(a))
		return json_equal(a, b);
	if (json_object_size(a) != json_object_size(b))
		return false;
	for (void *it = json_object_iter((json_t *)a); it; it = json_object_iter_next((json_t *)a, it)) {
		const json_t *other = json_object_getn(b, json_object_iter_key(it), json_object_iter_key_len(it));
		if (!other || !same_value(json_object_iter_value(it), other))
			return false;
	}
	return true;
}

static int roundtrip(const char *buf, size_t len)
{
	char err[512];
	int status = 2;
	char *first = NULL, *second = NULL;
	json_t *again = NULL, *doc = tt_toml_parse(buf, len, "<stdin>", err, sizeof err);
	if (!doc) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (!(first = tt_toml_write(doc, err, sizeof err))) {
		fprintf(stderr, "roundtrip: write failed: %s\n", err);
	} else if (!(again = tt_toml_parse(first, strlen(first), "<written>", err, sizeof err))) {
		fprintf(stderr, "roundtrip: cannot parse our own output: %s\n--- written:\n%s", err, first);
	} else if (!same_value(doc, again)) {
		fprintf(stderr, "roundtrip: value changed\n--- written:\n%s", first);
	} else if (!(second = tt_toml_write(again, err, sizeof err))) {
		fprintf(stderr, "roundtrip: second write failed: %s\n", err);
	} else if (strcmp(first, second) != 0) {
		fprintf(stderr, "roundtrip: output not stable\n--- first:\n%s--- second:\n%s", first, second);
	} else {
		status = 0;
	}
	free(first);
	free(second);
	json_decref(doc);
	json_decref(again);
	return status;
}

int main(int argc, char **argv)
{
	bool check_roundtrip = argc == 2 && strcmp(argv[1], "--roundtrip") == 0;
	if (argc > 2 || (argc == 2 && !check_roundtrip)) {
		fprintf(stderr, "usage: %s [--roundtrip] < document.toml\n", argv[0]);
		return 64;
	}
	size_t len = 0;
	char *buf = read_all(stdin, &len);
	if (!buf) {
		fprintf(stderr, "toml-decoder: cannot read standard input\n");
		return 3;
	}
	int status = check_roundtrip ? roundtrip(buf, len) : decode(buf, len);
	free(buf);
	return status;
}
