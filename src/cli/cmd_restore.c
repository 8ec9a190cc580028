/* tether restore: put working branches back to the state a revision records. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_JSON, OPT_REV, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_REV] = { "rev", 'r', ARG_VALUE, "REV", "the revision whose recorded states to restore (default HEAD)" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "print the plan; write nothing" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; write nothing else" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE",
	                    "re-check the plan in FILE and perform exactly its actions (exit 3 when stale)" },
};

static const char *const positionals[] = { "KEY", NULL };

/* A state in one line, for the text output: {"sha":"..."}, cut short. */
static char *brief(const json_t *state)
{
	char *text = json_is_object(state) ? json_dumps(state, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (text && strlen(text) > 72)
		strcpy(text + 69, "...");
	return text;
}

/* "  reset     code -> tether.ws.ab12cd34.main (to {...}, if it is still at {...})". */
static void print_object(const json_t *o, int planned)
{
	const char *action = out_str_or(o, "action", "?");
	if (!out_str(o, "branch")) {
		printf("  %-9s %s (%s)\n", action, out_escape(out_str_or(o, "key", "?")), out_escape(out_str_or(o, "detail", "")));
		return;
	}
	char *to = brief(json_object_get(o, "to"));
	const json_t *from = json_object_get(o, planned ? "expect" : "from");
	char *was = brief(from);
	printf("  %-9s %s -> %s (%s %s", action, out_escape(out_str_or(o, "key", "?")), out_escape(out_str(o, "branch")),
	       strcmp(action, "unchanged") == 0 ? "already at" : "to", to ? to : "?");
	if (strcmp(action, "reset") == 0 && json_is_null(from))
		printf(planned ? ", if the branch still does not exist" : ", made again");
	else if (strcmp(action, "reset") == 0 && was)
		printf(planned ? ", if the branch is still at %s" : ", from %s", was);
	printf(")\n");
	free(to);
	free(was);
}

static void print_restore(const json_t *report)
{
	int dry = out_bool(report, "dry_run");
	const json_t *list = dry ? json_object_get(json_object_get(report, "plan"), "actions")
	                         : json_object_get(report, "objects");
	long long reset = 0;
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o)
		reset += strcmp(out_str_or(o, "action", ""), "reset") == 0;
	if (dry)
		printf("plan: restore to %s (%.12s)\n", out_escape(out_str_or(report, "rev", "?")),
		       out_str_or(report, "commit", ""));
	else
		printf("Restored %lld %s to %s (%.12s)\n", reset, out_plural(reset, "branch", "branches"),
		       out_escape(out_str_or(report, "rev", "?")), out_str_or(report, "commit", ""));
	json_array_foreach(list, i, o)
		print_object(o, dry);
	if (dry)
		out_plan_footer(report, "restore");
}

static int run_restore(const struct args *a)
{
	const char *from = args_value(a, OPT_FROM_PLAN);
	if (from && (a->npos || args_has(a, OPT_REV)))
		return out_usage("restore", "--from-plan takes no -r and no KEY (the plan names them) for 'restore'");
	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	struct tether_restore_opts opts = {
		TETHER_RESTORE_OPTS_INIT,
		.rev = args_value(a, OPT_REV),
		.keys = a->pos,
		.n_keys = (size_t)a->npos,
		.dry_run = args_has(a, OPT_DRY_RUN),
		.plan_out = args_value(a, OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
	};
	json_t *report = NULL;
	int err = tether_restore(repo, &opts, &report);
	return cli_finish_engine_call(repo, plan, err, report, args_has(a, OPT_JSON), print_restore);
}

const struct cli_command cmd_restore = {
	.name = "restore",
	.summary = "put working branches back to the state a revision records",
	.usage = "restore [-r REV] [KEY...] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"Reset each object's working branch in this workspace to the state REV\n"
		"records (default HEAD: throw away the writes made since), as `jj restore`\n"
		"does for files. No KEY: every object with a working branch here. The next\n"
		"commit records what the branch then holds.\n"
		"\n"
		"A reset moves the branch only from the head the plan read (a conditional\n"
		"fork): a writer that moved it since is refused (exit 3), and the resets this\n"
		"run made are taken back. A base branch is never moved: a KEY with no\n"
		"working branch here (`tether new` forks one), with write = track, of a kind\n"
		"tether cannot restore (local files: tether keeps no copy of their bytes),\n"
		"or that REV does not record, is refused (exit 3); with no KEY those are\n"
		"skipped. An unknown KEY is an error (exit 1).\n"
		"\n"
		"--dry-run prints the plan (per object: reset, unchanged or skip, and the\n"
		"head each reset is conditional on); --plan FILE also saves it; --from-plan\n"
		"FILE performs it, refusing (exit 3) when a branch moved since, naming it.\n"
		"The run is journaled (`tether ops`): one killed part-way is finished by\n"
		"running it again.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .min_positionals = 0, .max_positionals = INT_MAX },
	.run = run_restore,
};
