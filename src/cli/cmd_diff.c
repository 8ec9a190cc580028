/* tether diff [A [B]]: which objects differ between two revisions, and
 * with --content what changed inside each, from the backends' metadata. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_CONTENT, OPT_MAX_ENTRIES, OPT_JSON };

static const struct arg_option options[] = {
	[OPT_CONTENT] = { "content", 0, ARG_FLAG, NULL,
	                  "also show what changed inside each object (from metadata only)" },
	[OPT_MAX_ENTRIES] = { "max-entries", 0, ARG_VALUE, "N",
	                      "with --content, list at most N entries per object (default 2000)" },
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
};

static const char *const positionals[] = { "A", "B", NULL };

static const char *pin_label(const json_t *o, const char *field)
{
	return out_str_or(o, field, "(no pin)");
}

/* " (+12 B)" for an added entry, " (-1.2 MiB)" for a removed one, " +4.0 KiB"
 * for a modified one; "" for an entry without sizes (a unit that is not
 * files). */
static void entry_amount(const json_t *e, const char *change, char *buf, size_t len)
{
	const json_t *size = json_object_get(e, "size");
	const json_t *delta = json_object_get(e, "size_delta");
	int added = strcmp(change, "added") == 0;
	char human[32];

	buf[0] = '\0';
	/* A text diff counts lines, not bytes: "+3 -1". */
	if (json_is_integer(json_object_get(e, "lines_added"))) {
		snprintf(buf, len, " +%lld -%lld", out_int(e, "lines_added"), out_int(e, "lines_deleted"));
		return;
	}
	if (added || strcmp(change, "removed") == 0) {
		if (!json_is_integer(size))
			return;
		long long bytes = llabs(json_integer_value(size));
		out_size(human, sizeof human, added ? bytes : -bytes, 1);
		snprintf(buf, len, " (%s)", human);
	} else if (json_is_integer(delta)) {
		out_size(human, sizeof human, json_integer_value(delta), 1);
		snprintf(buf, len, " %s", human);
	}
}

static enum out_color change_color(const char *change)
{
	if (strcmp(change, "added") == 0)
		return OUT_GREEN;
	if (strcmp(change, "removed") == 0)
		return OUT_RED;
	return OUT_YELLOW;
}

/* "~ KEY  from -> to", "+ KEY  to", "- KEY  from". */
static void print_object_line(const json_t *o)
{
	const char *change = out_str_or(o, "change", "?");
	const char *color = out_color(change_color(change));
	const char *key = out_str_or(o, "key", "?");
	const char *reset = out_color(OUT_RESET);
	const char *error = out_str(o, "error");
	if (strcmp(change, "added") == 0)
		printf("%s+ %s%s  %s", color, key, reset, pin_label(o, "to_pin"));
	else if (strcmp(change, "removed") == 0)
		printf("%s- %s%s  %s", color, key, reset, pin_label(o, "from_pin"));
	else if (strcmp(change, "error") == 0)
		printf("%s! %s%s  %s -> ?", out_color(OUT_RED), key, reset, pin_label(o, "from_pin"));
	else
		printf("%s~ %s%s  %s -> %s", color, key, reset, pin_label(o, "from_pin"),
		       pin_label(o, "to_pin"));
	if (error)
		printf("  (error: %s)", out_escape(error));
	putchar('\n');
}

/* "    added a/b.txt (+12 B)", "    modified /a (2 chunks)" */
static void print_entry(const json_t *e)
{
	const char *change = out_str_or(e, "change", "?");
	char amount[48];
	entry_amount(e, change, amount, sizeof amount);
	const char *old = out_str(e, "old_path");
	const char *detail = out_str(e, "detail");
	printf("    %s%s%s %s%s%s%s%s%s%s\n", out_color(change_color(change)), change, out_color(OUT_RESET),
	       old ? out_escape(old) : "", old ? " -> " : "", out_escape(out_str_or(e, "path", "?")), amount,
	       detail && *detail ? " (" : "", detail && *detail ? out_escape(detail) : "", detail && *detail ? ")" : "");
}

/* "    3 added, 1 removed, 2 modified, +10.1 KiB" (or "net +4 lines"); a
 * unit that is not files or lines has no size ("…, 1 renamed"). */
static void print_totals(const json_t *totals, int in_lines)
{
	char delta[32] = "";
	if (!json_is_integer(json_object_get(totals, "size_delta")))
		snprintf(delta, sizeof delta, "%lld renamed", out_int(totals, "renamed"));
	else if (in_lines)
		snprintf(delta, sizeof delta, "net %+lld %s", out_int(totals, "size_delta"),
		         out_plural(llabs(out_int(totals, "size_delta")), "line", "lines"));
	else
		out_size(delta, sizeof delta, out_int(totals, "size_delta"), 1);
	printf("    %lld added, %lld removed, %lld modified, %s\n", out_int(totals, "added"),
	       out_int(totals, "removed"), out_int(totals, "modified"), delta);
}

static void print_content(const json_t *content)
{
	const json_t *entries = json_object_get(content, "entries");
	const json_t *totals = json_object_get(content, "totals");
	size_t i;
	json_t *e;
	json_array_foreach(entries, i, e)
		print_entry(e);
	if (out_bool(content, "truncated")) {
		/* Counts are exact even when the entries are capped. */
		long long total = out_int(totals, "added") + out_int(totals, "removed") +
		                  out_int(totals, "modified");
		long long shown = (long long)json_array_size(entries);
		total += out_int(totals, "renamed");
		if (total > shown)
			printf("    … %lld more\n", total - shown);
		else
			printf("    … more\n");
	}
	if (json_is_object(totals))
		print_totals(totals, json_is_integer(json_object_get(json_array_get(entries, 0), "lines_added")));
	else if (out_str(content, "summary") && *out_str(content, "summary"))
		printf("    %s\n", out_escape(out_str(content, "summary")));
	if (out_str(content, "note") && *out_str(content, "note"))
		printf("    (%s)\n", out_escape(out_str(content, "note")));
}

static void print_diff(const json_t *report, int content)
{
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(report, "objects"), i, o) {
		print_object_line(o);
		if (!content)
			continue;
		const json_t *c = json_object_get(o, "content");
		if (json_is_object(c))
			print_content(c);
		else if (strcmp(out_str_or(o, "change", ""), "changed") == 0 && !out_str(o, "error"))
			printf("    (no content diff for kind %s)\n", out_str_or(o, "kind", "?"));
	}
}

static int run_diff(const struct args *a)
{
	long max_entries = 0;
	int rc = args_integer(a, OPT_MAX_ENTRIES, 1, LONG_MAX, &max_entries);
	if (rc)
		return rc;
	tether_repo *repo;
	rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_diff_opts opts = {
		TETHER_DIFF_OPTS_INIT,
		.from = a->npos > 0 ? a->pos[0] : "HEAD",
		.to = a->npos > 1 ? a->pos[1] : NULL, /* the working state, "@" */
		.content = args_has(a, OPT_CONTENT),
		.max_entries = (size_t)max_entries,
	};
	json_t *report = NULL;
	int err = tether_diff(repo, &opts, &report);
	tether_repo_free(repo);
	if (err && !report)
		return out_error(err);
	if (args_has(a, OPT_JSON))
		rc = out_json(report);
	else
		print_diff(report, opts.content);
	/* Every other object is compared; the first failure's error decides
	 * the exit code. */
	if (rc == 0 && err)
		rc = out_error(err);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_diff = {
	.name = "diff",
	.summary = "compare the objects of two revisions",
	.usage = "diff [A [B]] [--content] [--max-entries N] [--json]",
	.description =
		"Compare the manifests at revision A (default HEAD) with those at revision B\n"
		"(default the working state, @): objects added (+), removed (-) and\n"
		"changed (~), with their pins. With --content, each changed object's backend\n"
		"also says what changed inside it, reading metadata only. An object whose\n"
		"system cannot be read is marked (!, error) and the others still compared;\n"
		"then the first error's exit code.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .max_positionals = 2 },
	.run = run_diff,
};
