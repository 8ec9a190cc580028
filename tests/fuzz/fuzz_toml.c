/* The TOML reader, on the bytes a hostile clone puts in tether.toml, a
 * manifest or workspace.toml. Beyond not crashing, what toml.h promises:
 * a parsed document written canonically parses back to an equal value,
 * and writing that again gives the same bytes (one spelling per value);
 * an error names NAME:LINE:COL; every key the parser made has a position. */
#include "fuzz.h"

#include "format/toml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every key of every table the parser made has a 1-based position. */
static void check_where(const struct tt_toml_where *w, const json_t *v, int depth)
{
	if (depth > 300)
		return;
	if (json_is_object(v)) {
		const char *k;
		json_t *child;
		json_object_foreach((json_t *)v, k, child) {
			size_t line = 0, col = 0;
			if (tt_toml_where_key(w, v, k, &line, &col))
				FUZZ_ASSERT(line >= 1 && col >= 1);
			char at[256];
			tt_toml_where_name(w, v, k, "f", at, sizeof at);
			FUZZ_ASSERT(strncmp(at, "f", 1) == 0);
			check_where(w, child, depth + 1);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *child;
		json_array_foreach(v, i, child)
			check_where(w, child, depth + 1);
	}
}

/* json_equal, but keys compared with their lengths: jansson's looks a key
 * up as a C string, so "\u0000" and "" would not match themselves. */
static int same(const json_t *a, const json_t *b)
{
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_object(a)) {
		if (json_object_size(a) != json_object_size(b))
			return 0;
		for (void *it = json_object_iter((json_t *)a); it; it = json_object_iter_next((json_t *)a, it)) {
			const json_t *other =
			    json_object_getn(b, json_object_iter_key(it), json_object_iter_key_len(it));
			if (!other || !same(json_object_iter_value(it), other))
				return 0;
		}
		return 1;
	}
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	return json_equal(a, b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct tt_toml_where *where = NULL;
	json_t *doc = tt_toml_parse_at((const char *)data, size, "f", err, sizeof err, &where);
	if (!doc) {
		/* "f:LINE:COL: message", LINE and COL from 1. */
		unsigned line = 0, col = 0;
		FUZZ_ASSERT(sscanf(err, "f:%u:%u:", &line, &col) == 2);
		FUZZ_ASSERT(line >= 1 && col >= 1);
		FUZZ_ASSERT(where == NULL);
		return 0;
	}
	FUZZ_ASSERT(json_is_object(doc));
	check_where(where, doc, 0);
	tt_toml_where_free(where);

	/* Whatever the parser returns, the writer can write (it never makes
	 * a null), and the text parses back to an equal value. */
	char *text = tt_toml_write(doc, err, sizeof err);
	if (!text) {
		fprintf(stderr, "cannot write a parsed document: %s\n", err);
		abort();
	}
	json_t *again = tt_toml_parse(text, strlen(text), "canonical", err, sizeof err);
	if (!again) {
		fprintf(stderr, "canonical text does not parse: %s\n---\n%s---\n", err, text);
		abort();
	}
	if (!same(doc, again)) {
		char *a = json_dumps(doc, JSON_SORT_KEYS), *b = json_dumps(again, JSON_SORT_KEYS);
		fprintf(stderr, "round trip differs:\n%s\n%s\n---\n%s---\n", a, b, text);
		abort();
	}
	char *text2 = tt_toml_write(again, err, sizeof err);
	FUZZ_ASSERT(text2 != NULL);
	FUZZ_ASSERT(strcmp(text, text2) == 0);
	free(text2);
	free(text);
	json_decref(again);
	json_decref(doc);
	return 0;
}
