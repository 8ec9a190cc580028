/* Reading backends' `tether add` declarations (add_options.h). */
#include "core/add_options.h"

#include "core/abi.h"

#include <stdio.h>
#include <string.h>

int tt_add_option_at(const struct tether_backend *b, size_t i, struct tether_add_option *out)
{
	memset(out, 0, sizeof *out);
	const char *base = b ? (const char *)(const void *)TT_BACKEND_GET(b, add_options) : NULL;
	if (!base)
		return 0;
	/* The module's stride, not ours: the entries it built are the first
	 * one's size apart. Copied as bytes, since the module's struct may be
	 * another (older or newer) layout; a size too small to hold the name
	 * is a broken table (tt_add_options_check refuses it). */
	uint32_t stride;
	memcpy(&stride, base + offsetof(struct tether_add_option, size), sizeof stride);
	if (stride < offsetof(struct tether_add_option, name) + sizeof out->name)
		return 0;
	memcpy(out, base + i * stride, stride < sizeof *out ? stride : sizeof *out);
	if (!out->name) {
		memset(out, 0, sizeof *out);
		return 0;
	}
	return 1;
}

int tt_add_option_find(const struct tether_backend *b, const char *name, struct tether_add_option *out)
{
	for (size_t i = 0; tt_add_option_at(b, i, out); i++)
		if (strcmp(out->name, name) == 0)
			return 1;
	memset(out, 0, sizeof *out);
	return 0;
}

int tt_add_option_allows(const struct tether_add_option *o, const char *value)
{
	if (!o->choices)
		return 1;
	for (size_t i = 0; o->choices[i]; i++)
		if (strcmp(o->choices[i], value) == 0)
			return 1;
	return 0;
}

void tt_choices_join(const char *const *choices, int quote, char *out, size_t n)
{
	size_t o = 0;
	out[0] = '\0';
	const char *q = quote ? "\"" : "";
	for (size_t i = 0; choices && choices[i] && o < n; i++) {
		const char *sep = i == 0 ? "" : choices[i + 1] ? ", " : " or ";
		int w = snprintf(out + o, n - o, "%s%s%s%s", sep, q, choices[i], q);
		if (w < 0)
			break;
		o += (size_t)w;
	}
}

static int name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

/* What is wrong with one entry on its own, or NULL. */
static const char *entry_fault(const struct tether_add_option *o)
{
	if (!name_ok(o->name))
		return "is not 1-64 of a-z 0-9 - _";
	if (o->field != TETHER_ADD_LOCATOR && o->field != TETHER_ADD_POLICY)
		return "has no field (locator or policy)";
	if (o->field == TETHER_ADD_POLICY && !o->choices)
		return "lands in the policy without choices";
	if (o->default_value && !tt_add_option_allows(o, o->default_value))
		return "has a default outside its choices";
	return NULL;
}

int tt_add_options_check(const struct tether_backend *b)
{
	const struct tether_add_option *first = TT_BACKEND_GET(b, add_options);
	struct tether_add_option o, other;
	if (first && first->name && !tt_add_option_at(b, 0, &o))
		return tether_error_set(TETHER_ERROR,
		                        "backend %s: add_options[0].size is %u (fill it with TETHER_ADD_OPTION_INIT)",
		                        b->kind, first->size);
	for (size_t i = 0; tt_add_option_at(b, i, &o); i++) {
		const char *why = entry_fault(&o);
		for (size_t j = 0; !why && j < i && tt_add_option_at(b, j, &other); j++)
			if (strcmp(other.name, o.name) == 0)
				why = "is declared twice";
		if (why)
			return tether_error_set(TETHER_ERROR, "backend %s: add option '%s' %s", b->kind, o.name, why);
	}
	return 0;
}

json_t *tt_add_options_json(const struct tether_backend *b)
{
	json_t *list = json_array();
	struct tether_add_option o;
	for (size_t i = 0; list && tt_add_option_at(b, i, &o); i++) {
		json_t *choices = json_null();
		if (o.choices) {
			choices = json_array();
			for (size_t c = 0; o.choices[c]; c++)
				json_array_append_new(choices, json_string(o.choices[c]));
		}
		json_array_append_new(
			list, json_pack("{s:s, s:s, s:s, s:o, s:o, s:s, s:b}", "name", o.name, "value_name",
		                    o.value_name ? o.value_name : "VALUE", "help", o.help ? o.help : "", "choices",
		                    choices, "default", o.default_value ? json_string(o.default_value) : json_null(),
		                    "field", o.field == TETHER_ADD_POLICY ? "policy" : "locator", "defaults",
		                    (o.flags & TETHER_ADD_DEFAULTS) != 0));
	}
	return list;
}
