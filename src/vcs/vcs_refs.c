#include "vcs/vcs_refs.h"

#include <jansson.h>
#include <string.h>

int tt_vcs_refs_order(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(json_string_value(json_object_get(x, "type")), json_string_value(json_object_get(y, "type")));
	return c ? c : strcmp(json_string_value(json_object_get(x, "name")), json_string_value(json_object_get(y, "name")));
}
