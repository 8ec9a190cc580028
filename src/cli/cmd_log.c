/* tether log [REV]: the dataset's commits, newest first, each with the
 * objects it changed. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

enum { OPT_MAX_COUNT, OPT_JSON };

static const struct arg_option options[] = {
	[OPT_MAX_COUNT] = { "max-count", 'n', ARG_VALUE, "N", "show at most N commits" },
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
};

static const char *const positionals[] = { "REV|KEY", NULL };

static char change_marker(const char *change)
{
	if (strcmp(change, "added") == 0)
		return '+';
	if (strcmp(change, "removed") == 0)
		return '-';
	return '~';
}

/* The message indented by four spaces, as git log shows it; a blank line
 * stays empty rather than gaining trailing spaces. */
static void print_message(const char *message)
{
	size_t end = strlen(message);
	while (end > 0 && message[end - 1] == '\n')
		end--;
	for (size_t start = 0; start < end;) {
		size_t n = strcspn(message + start, "\n");
		if (start + n > end)
			n = end - start;
		if (n)
			printf("    %.*s", (int)n, message + start);
		printf("\n");
		start += n + 1;
	}
}

static void print_objects(const json_t *objects)
{
	size_t i;
	json_t *o;
	if (json_array_size(objects) == 0)
		return;
	printf("\n");
	json_array_foreach(objects, i, o) {
		const char *pin = out_str(o, "pin");
		printf("    %c %s", change_marker(out_str_or(o, "change", "")), out_str_or(o, "key", "?"));
		if (pin)
			printf(" pin %s", pin);
		printf("\n");
	}
}

static void print_commit(const json_t *c)
{
	char date[64];
	out_time(date, sizeof date, out_int(c, "time"));
	printf("%scommit %s%s\n", out_color(OUT_YELLOW), out_str_or(c, "id", "?"),
	       out_color(OUT_RESET));
	printf("Author: %s <%s>\n", out_str_or(c, "author", ""), out_str_or(c, "email", ""));
	printf("Date:   %s\n\n", date);
	print_message(out_str_or(c, "message", out_str_or(c, "summary", "")));
	print_objects(json_object_get(c, "objects"));
}

/* An object's native history: "<id>  <time>  <message>  (refs)". */
static void print_native(const json_t *report)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(report, "entries"), i, e) {
		char date[64] = "";
		if (json_is_integer(json_object_get(e, "time")))
			out_time(date, sizeof date, out_int(e, "time"));
		/* The backend's own abbreviation when it gives one (an id its
		 * system accepts back), else the first 12 characters. */
		const char *shown = out_str(e, "short_id");
		printf("%s%.*s%s  %s  %s", out_color(OUT_YELLOW), shown ? (int)strlen(shown) : 12,
		       shown ? shown : out_str_or(e, "id", "?"), out_color(OUT_RESET), date,
		       out_escape(out_str_or(e, "message", "")));
		size_t j;
		json_t *r;
		json_array_foreach(json_object_get(e, "refs"), j, r)
			printf("%s%s", j ? ", " : "  (", out_escape(json_string_value(r)));
		printf("%s\n", json_array_size(json_object_get(e, "refs")) ? ")" : "");
	}
}

static void print_log(const json_t *report)
{
	size_t i;
	json_t *c;
	if (json_object_get(report, "entries")) {
		print_native(report);
		return;
	}
	json_array_foreach(json_object_get(report, "commits"), i, c) {
		if (i > 0)
			printf("\n");
		print_commit(c);
	}
}

static int run_log(const struct args *a)
{
	long max_count = 0;
	int rc = args_integer(a, OPT_MAX_COUNT, 1, INT_MAX, &max_count);
	if (rc)
		return rc;
	tether_repo *repo;
	rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_log_opts opts = {
		TETHER_LOG_OPTS_INIT,
		.rev = a->npos > 0 ? a->pos[0] : NULL,
		.max_count = (int)max_count,
	};
	json_t *report = NULL;
	int err = tether_log(repo, &opts, &report);
	tether_repo_free(repo);
	if (err) {
		json_decref(report);
		return out_error(err);
	}
	if (args_has(a, OPT_JSON))
		rc = out_json(report);
	else
		print_log(report);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_log = {
	.name = "log",
	.summary = "list the dataset's commits",
	.usage = "log [REV | KEY] [-n N] [--json]",
	.description =
		"List the commits that changed the dataset, newest first, from REV\n"
		"(default HEAD), each with the objects it added (+), removed (-) or\n"
		"changed (~) and their pins. Given an object's KEY instead, list that\n"
		"object's native history (snapshots, commits, versions), whose ids\n"
		"`tether add --at` accepts. A KEY wins over a revision of the same name.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .max_positionals = 1 },
	.run = run_log,
};
