/* The `changes_made` column of ducklake_snapshot_changes: a comma-separated
 * list of type:value, the value a quoted name ("main"."t") or a decimal
 * table id; commas inside quotes do not split. */
#include "backends/ducklake/dl.h"

#include <stdlib.h>
#include <string.h>

/* The next entry of a list at *p: [start, end) with *colon at its ':'. */
static int next_entry(const char **p, const char **start, const char **end, const char **colon)
{
	const char *s = *p;
	while (*s == ',' || *s == ' ')
		s++;
	if (!*s)
		return 0;
	*start = s;
	*colon = NULL;
	int quoted = 0;
	for (; *s && (quoted || *s != ','); s++) {
		if (*s == '"')
			quoted = !quoted;
		else if (*s == ':' && !quoted && !*colon)
			*colon = s;
	}
	*end = s;
	*p = s;
	return 1;
}

int dl_changes_altered(const char *changes, int64_t **ids, size_t *n)
{
	const char *p = changes, *start, *end, *colon;
	while (next_entry(&p, &start, &end, &colon)) {
		if (!colon || (size_t)(colon - start) != strlen("altered_table") ||
		    strncmp(start, "altered_table", (size_t)(colon - start)) != 0)
			continue;
		int64_t *v = realloc(*ids, (*n + 1) * sizeof *v);
		if (!v)
			return tether_error_set(TETHER_ERROR, "out of memory");
		*ids = v;
		(*ids)[(*n)++] = strtoll(colon + 1, NULL, 10);
	}
	return 0;
}
