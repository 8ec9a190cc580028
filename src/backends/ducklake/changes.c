/* The `changes_made` column of ducklake_snapshot_changes: a comma-separated
 * list of type:value, the value a quoted name ("main"."t") or a decimal
 * table id; commas inside quotes do not split. */
#include "backends/ducklake/dl.h"

#include <stdio.h>
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

static const struct {
	const char *type, *words;
} words[] = {
	{"created_schema", "created schema"},
	{"created_table", "created table"},
	{"created_view", "created view"},
	{"dropped_schema", "dropped schema"},
	{"dropped_table", "dropped table"},
	{"dropped_view", "dropped view"},
	{"altered_table", "altered table"},
	{"altered_view", "altered view"},
	{"inserted_into_table", "inserted into table"},
	{"inlined_insert", "inserted into table"},
	{"deleted_from_table", "deleted from table"},
	{"inlined_delete", "deleted from table"},
	{"compacted_table", "compacted table"},
	{"merge_adjacent", "compacted table"},
	{"rewrite_delete", "compacted table"},
	{"inline_flush", "flushed inlined data of table"},
	{"flushed_inlined", "flushed inlined data of table"},
	{NULL, NULL},
};

char *dl_changes_describe(const char *changes)
{
	size_t cap = strlen(changes) * 3 + 16;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	size_t n = 0;
	out[0] = '\0';
	const char *p = changes, *start, *end, *colon;
	while (next_entry(&p, &start, &end, &colon)) {
		size_t tlen = colon ? (size_t)(colon - start) : (size_t)(end - start);
		const char *w = NULL;
		for (size_t i = 0; words[i].type; i++)
			if (strlen(words[i].type) == tlen && strncmp(words[i].type, start, tlen) == 0)
				w = words[i].words;
		const char *value = colon ? colon + 1 : end;
		/* Quoted names are shown as they are quoted in the list. */
		int len = snprintf(out + n, cap - n, "%s%s%s%.*s", n ? ", " : "", w ? w : "", w ? " " : "",
		                   w ? (int)(end - value) : (int)(end - start), w ? value : start);
		if (len < 0 || (size_t)len >= cap - n)
			break;
		n += (size_t)len;
	}
	return out;
}
