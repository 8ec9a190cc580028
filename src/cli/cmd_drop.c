/* tether drop: remove objects from the dataset (the next commit records it). */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

enum { OPT_JSON, OPT_FORCE, OPT_DELETE_STORE, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_FORCE] = { "force", 0, ARG_FLAG, NULL, "delete working branches whose head no pin holds, too" },
	[OPT_DELETE_STORE] = { "delete-store", 0, ARG_FLAG, NULL,
	                       "also delete stores tether created that are still ref-empty" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "print the plan; write nothing" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; write nothing else" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE",
	                    "re-check the plan in FILE and perform exactly its actions (exit 3 when stale)" },
};

static const char *const positionals[] = { "KEY", NULL };

static const char *verb(const char *what, int dry, int done)
{
	if (strcmp(what, "delete") == 0)
		return dry ? "would delete" : done ? "deleted" : "FAILED";
	if (strcmp(what, "keep") == 0)
		return dry ? "would keep" : "kept";
	return "gone";
}

static void print_object(const json_t *o, int dry)
{
	const char *key = out_escape(out_str_or(o, "key", "?"));
	int done = out_bool(o, "done");
	printf("  %s: manifest %s\n", key, dry ? "would be removed" : "removed (the next commit records it)");
	const char *fork = out_str_or(o, "fork", "none");
	if (strcmp(fork, "none") != 0)
		printf("  %s: %s branch %s (%s)\n", key, verb(fork, dry, done), out_escape(out_str_or(o, "branch", "?")),
		       out_escape(out_str_or(o, "fork_reason", "")));
	if (strcmp(fork, "keep") == 0 && json_object_get(o, "head"))
		printf(dry ? "  hint: `tether commit` first keeps those writes in history; `tether drop --force %s` deletes "
		             "the branch anyway\n"
		           : "  hint: the branch stays in the store: to delete it, restore %s's manifest from the last "
		             "commit and run `tether drop --force` on it\n", key);
	const char *store = out_str_or(o, "store", "none");
	if (strcmp(store, "none") != 0)
		printf("  %s: %s the store (%s)\n", key, verb(store, dry, done),
		       out_escape(strcmp(store, "gone") == 0 ? "deleted by the interrupted drop"
		                                             : out_str_or(o, "store_reason", "")));
}

static void print_drop(const json_t *report)
{
	int dry = out_bool(report, "dry_run");
	const json_t *list = dry ? json_object_get(json_object_get(report, "plan"), "actions")
	                         : json_object_get(report, "objects");
	long long n = (long long)json_array_size(list);
	printf("%s %lld %s\n", dry ? "plan: drop" : "Dropped", n, out_plural(n, "object", "objects"));
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o)
		print_object(o, dry);
	if (dry)
		out_plan_footer(report, "drop");
}

static int run_drop(const struct args *a)
{
	const char *from = args_value(a, OPT_FROM_PLAN);
	if (from && (a->npos || args_has(a, OPT_FORCE) || args_has(a, OPT_DELETE_STORE)))
		return out_usage("drop", "--from-plan takes no KEY, --force or --delete-store (the plan names them) "
		                         "for 'drop'");
	if (!from && !a->npos)
		return out_usage("drop", "missing argument KEY for 'drop'");
	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	struct tether_drop_opts opts = {
		TETHER_DROP_OPTS_INIT,
		.keys = a->pos,
		.n_keys = (size_t)a->npos,
		.force = args_has(a, OPT_FORCE),
		.delete_store = args_has(a, OPT_DELETE_STORE),
		.dry_run = args_has(a, OPT_DRY_RUN),
		.plan_out = args_value(a, OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
	};
	json_t *report = NULL;
	int err = tether_drop(repo, &opts, &report);
	return cli_finish_engine_call(repo, plan, err, report, args_has(a, OPT_JSON), print_drop);
}

const struct cli_command cmd_drop = {
	.name = "drop",
	.summary = "remove objects from the dataset",
	.usage = "drop KEY... [--force] [--delete-store] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"Remove each KEY's manifest from the working copy, as `git rm` removes a\n"
		"file: the next `tether commit` records the removal, and history keeps\n"
		"every earlier state and the pins that hold them. This workspace's working\n"
		"branch of the object is deleted when a pin in history holds its head;\n"
		"one holding writes no commit pinned is kept, and the report says so:\n"
		"`tether commit` first keeps those writes, --force deletes the branch.\n"
		"\n"
		"--delete-store also deletes a store tether created (`add --create`) when\n"
		"no other object names it and no commit records a state of it; the backend\n"
		"checks that this dataset made it and that it is still ref-empty just\n"
		"before it deletes. An unknown KEY is an error (exit 1); a branch that\n"
		"moved since the plan, or a store the backend will not delete, is refused\n"
		"(exit 3) before any manifest is removed.\n"
		"\n"
		"--dry-run prints the plan; --plan FILE also saves it; --from-plan FILE\n"
		"performs it, refusing (exit 3) when it is stale, naming what changed. The\n"
		"run is journaled (`tether ops`): one killed part-way is finished by\n"
		"running it again.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .min_positionals = 0, .max_positionals = INT_MAX },
	.run = run_drop,
};
