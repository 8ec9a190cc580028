/* tether backends: the kinds of object this build can track. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <string.h>

enum { OPT_JSON };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the list as JSON" },
};

enum { COL_KIND, COL_MATURITY, COL_TIER, COL_FLAGS, NCOLS };

static const char *const headers[NCOLS] = { "KIND", "MATURITY", "TIER", "FLAGS" };

/* The flags array as "cheap_fingerprint,diff", or "-" when empty. */
static void join_flags(const json_t *flags, char *buf, size_t len)
{
	size_t i, used = 0;
	json_t *f;
	buf[0] = '\0';
	json_array_foreach(flags, i, f) {
		if (!json_is_string(f) || used >= len)
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "",
		                 json_string_value(f));
		used += n > 0 ? (size_t)n : 0;
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

static void row_cells(const json_t *b, const char *cells[NCOLS], char *flags, size_t len)
{
	join_flags(json_object_get(b, "flags"), flags, len);
	cells[COL_KIND] = out_str_or(b, "kind", "?");
	cells[COL_MATURITY] = out_str_or(b, "maturity", "?");
	cells[COL_TIER] = out_str_or(b, "tier", "?");
	cells[COL_FLAGS] = flags;
}

static void print_row(const char *const cells[NCOLS], const int width[NCOLS],
                      const char *summary)
{
	for (int c = 0; c < NCOLS; c++)
		printf("%-*s  ", width[c], cells[c]);
	printf("%s\n", summary);
}

/* Columns as wide as their widest cell, so the table lines up whatever
 * third-party backends are registered. */
static void print_table(const json_t *list)
{
	int width[NCOLS];
	char flags[512];
	const char *cells[NCOLS];
	size_t i;
	json_t *b;

	for (int c = 0; c < NCOLS; c++)
		width[c] = (int)strlen(headers[c]);
	json_array_foreach(list, i, b) {
		row_cells(b, cells, flags, sizeof flags);
		for (int c = 0; c < NCOLS; c++)
			if ((int)strlen(cells[c]) > width[c])
				width[c] = (int)strlen(cells[c]);
	}
	printf("%s", out_color(OUT_BOLD));
	print_row(headers, width, "SUMMARY");
	printf("%s", out_color(OUT_RESET));
	json_array_foreach(list, i, b) {
		row_cells(b, cells, flags, sizeof flags);
		print_row(cells, width, out_str_or(b, "summary", ""));
	}
}

static int run_backends(const struct args *a)
{
	json_t *list = tether_backends();
	if (!list)
		return out_error(TETHER_ERROR);
	int rc = 0;
	if (args_has(a, OPT_JSON))
		rc = out_json(list);
	else
		print_table(list);
	json_decref(list);
	return rc;
}

const struct cli_command cmd_backends = {
	.name = "backends",
	.summary = "list the kinds of object tether can track",
	.usage = "backends [--json]",
	.description =
		"List every registered backend: its kind (the --kind of 'tether add'), its\n"
		"maturity, its capability tier (observed, addressable, pinnable, forkable)\n"
		"and its flags.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_backends,
};
