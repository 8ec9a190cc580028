/* Reading backends' `tether add` declarations (add_options.h). */
#include "core/add_options.h"

#include <stdio.h>
#include <string.h>

int tt_add_option_at(const struct tether_backend *b, size_t i, struct tether_add_option *out)
{
	memset(out, 0, sizeof *out);
	const struct tether_add_option *first = b ? b->add_options : NULL;
	if (!first || !first->name)
		return 0;
	/* The module's stride, not ours: entries it built are first->size
	 * bytes apart. A size too small to hold the name is a broken table. */
	size_t stride = first->size;
	if (stride < offsetof(struct tether_add_option, name) + sizeof first->name)
		return 0;
	const struct tether_add_option *e =
		(const struct tether_add_option *)(const void *)((const char *)first + i * stride);
	if (!e->name)
		return 0;
	memcpy(out, e, stride < sizeof *out ? stride : sizeof *out);
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
