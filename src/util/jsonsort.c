#include "util/jsonsort.h"

#include <stdlib.h>

void tt_json_array_sort(json_t *array, int (*cmp)(const void *, const void *))
{
	size_t n = json_array_size(array);
	json_t **v = calloc(n + 1, sizeof *v);
	if (!v)
		abort(); /* as the callers' own allocations do */
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(array, i));
	qsort(v, n, sizeof *v, cmp);
	json_array_clear(array);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(array, v[i]);
	free(v);
}
