/* Sorting a JSON array in place, with qsort and a comparator of two
 * (json_t *const *): what the engine and the modules that order rows,
 * entries and refs share. In tether-modutil. */
#ifndef TETHER_UTIL_JSONSORT_H
#define TETHER_UTIL_JSONSORT_H

#include <jansson.h>

void tt_json_array_sort(json_t *array, int (*cmp)(const void *, const void *));

#endif
