/* Canonical JSON, byte for byte what jansson's json_dumps(v, JSON_COMPACT |
 * JSON_SORT_KEYS | JSON_ENCODE_ANY) writes (pin ids were first computed
 * that way, and must never change), written directly: json_dumps builds
 * every object's key list through a generic callback and validates every
 * string again, which made it the largest single cost of a history walk's
 * record keys. The common cases are written here; the rare ones (reals,
 * strings with anything to escape or any non-ASCII byte) are handed to
 * jansson for that one value, so their spelling is jansson's by
 * construction. tests/unit/test_cjson.c compares the two on many values. */
#include "format/cjson.h"

#include <tether/backend.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct out {
	char *s;
	size_t len, cap;
	int failed;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		while (o->len + n + 1 > cap)
			cap *= 2;
		char *grown = realloc(o->s, cap);
		if (!grown) {
			o->failed = 1;
			return;
		}
		o->s = grown;
		o->cap = cap;
	}
	memcpy(o->s + o->len, s, n);
	o->len += n;
	o->s[o->len] = '\0';
}

/* jansson's own spelling of one scalar. */
static void put_by_jansson(struct out *o, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s) {
		o->failed = 1;
		return;
	}
	put(o, s, strlen(s));
	free(s);
}

/* Printable ASCII with nothing to escape: written as it is. */
static int plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
			return 0;
	}
	return 1;
}

static void put_string(struct out *o, const char *s, size_t n)
{
	if (plain(s, n)) {
		put(o, "\"", 1);
		put(o, s, n);
		put(o, "\"", 1);
		return;
	}
	json_t *str = json_stringn_nocheck(s, n);
	if (!str) {
		o->failed = 1;
		return;
	}
	put_by_jansson(o, str);
	json_decref(str);
}

struct key {
	const char *s;
	size_t len;
	json_t *value;
};

/* jansson's order: bytes, then length. */
static int by_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static void put_value(struct out *o, const json_t *v);

static void put_object(struct out *o, const json_t *v)
{
	size_t n = json_object_size(v), i = 0;
	struct key small[16];
	struct key *keys = n <= 16 ? small : malloc(n * sizeof *keys);
	if (!keys) {
		o->failed = 1;
		return;
	}
	for (void *it = json_object_iter((json_t *)v); it && i < n; it = json_object_iter_next((json_t *)v, it), i++) {
		keys[i].s = json_object_iter_key(it);
		keys[i].len = json_object_iter_key_len(it);
		keys[i].value = json_object_iter_value(it);
	}
	qsort(keys, i, sizeof *keys, by_key);
	put(o, "{", 1);
	for (size_t k = 0; k < i; k++) {
		if (k)
			put(o, ",", 1);
		put_string(o, keys[k].s, keys[k].len);
		put(o, ":", 1);
		put_value(o, keys[k].value);
	}
	put(o, "}", 1);
	if (keys != small)
		free(keys);
}

static void put_array(struct out *o, const json_t *v)
{
	put(o, "[", 1);
	for (size_t i = 0, n = json_array_size(v); i < n; i++) {
		if (i)
			put(o, ",", 1);
		put_value(o, json_array_get(v, i));
	}
	put(o, "]", 1);
}

static void put_value(struct out *o, const json_t *v)
{
	char num[32];
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		put_object(o, v);
		break;
	case JSON_ARRAY:
		put_array(o, v);
		break;
	case JSON_STRING:
		put_string(o, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		put(o, num, (size_t)snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v)));
		break;
	case JSON_TRUE:
		put(o, "true", 4);
		break;
	case JSON_FALSE:
		put(o, "false", 5);
		break;
	case JSON_NULL:
		put(o, "null", 4);
		break;
	default: /* JSON_REAL */
		put_by_jansson(o, v);
		break;
	}
}

char *tt_cjson(const json_t *v)
{
	struct out o = {0};
	if (!v)
		return NULL;
	put_value(&o, v);
	if (o.failed) {
		free(o.s);
		return NULL;
	}
	return o.s;
}

int tt_cjson_sha256(const json_t *v, char hex[65])
{
	char *s = tt_cjson(v);
	if (!s)
		return tether_error_set(TETHER_ERROR, "value has no canonical JSON form");
	tether_sha256_hex(s, strlen(s), hex);
	free(s);
	return 0;
}
