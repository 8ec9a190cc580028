/* tether new: move the checkout and fork writable branches off its pins. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <stdlib.h>

enum { OPT_JSON, OPT_BRANCH, OPT_ADOPT, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_BRANCH] = { "branch", 'b', ARG_VALUE, "NAME", "create branch NAME at REV and work on it" },
	[OPT_ADOPT] = { "adopt", 0, ARG_FLAG, NULL,
	                "take the checkout's bookmark as the workspace: adopt the working branches that exist, fork the rest" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "print the plan; write nothing" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; write nothing else" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE",
	                    "re-check the plan in FILE and perform exactly its actions (exit 3 when stale)" },
};

static const char *const positionals[] = { "REV", NULL };

/* "  fork      code -> tether.ws.ab12cd34.main" or "  skip      raw/x (not forkable)"; a
 * planned fork also says what it is conditional on. */
static void print_object(const json_t *o)
{
	const char *action = out_str_or(o, "action", "?");
	if (!out_str(o, "branch")) {
		printf("  %-9s %s (%s)\n", action, out_str_or(o, "key", "?"), out_escape(out_str_or(o, "detail", "")));
		return;
	}
	printf("  %-9s %s -> %s", action, out_str_or(o, "key", "?"), out_str(o, "branch"));
	const json_t *expect = json_object_get(o, "expect"), *head = json_object_get(o, "head");
	char *at = json_is_object(expect) ? json_dumps(expect, JSON_COMPACT | JSON_SORT_KEYS)
	           : json_is_object(head) ? json_dumps(head, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (json_is_object(head))
		printf(" (as it is, at %s)", at);
	else if (json_is_null(expect))
		printf(" (if the branch does not exist)");
	else if (at)
		printf(" (if the branch is still at %s)", at);
	free(at);
	printf("\n");
}

static void print_plan(const json_t *report)
{
	const json_t *plan = json_object_get(report, "plan");
	const char *create = out_str(json_object_get(plan, "switch"), "create");
	printf("plan: new on %s at %.12s%s%s%s\n", out_str_or(report, "bookmark", "?"), out_str_or(report, "commit", ""),
	       create ? " (creating branch " : "", create ? create : "", create ? ")" : "");
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(plan, "actions"), i, o)
		print_object(o);
	out_plan_footer(report, "new");
}

static void print_new(const json_t *report)
{
	if (out_bool(report, "dry_run")) {
		print_plan(report);
		return;
	}
	printf("Now on %s (%.12s)\n", out_str_or(report, "bookmark", "?"), out_str_or(report, "commit", ""));
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(report, "objects"), i, o)
		print_object(o);
}

static int run_new(const struct args *a)
{
	const char *from = args_value(a, OPT_FROM_PLAN);
	if (from && (a->npos || args_has(a, OPT_BRANCH) || args_has(a, OPT_ADOPT)))
		return out_usage("new", "--from-plan takes no REV, -b or --adopt (the plan names where to go) for 'new'");
	if (args_has(a, OPT_ADOPT) && (a->npos || args_has(a, OPT_BRANCH)))
		return out_usage("new", "--adopt takes no REV and no -b (it adopts the checkout where it is) for 'new'");
	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	struct tether_new_opts opts = {
		TETHER_NEW_OPTS_INIT,
		.rev = a->npos ? a->pos[0] : NULL,
		.branch = args_value(a, OPT_BRANCH),
		.dry_run = args_has(a, OPT_DRY_RUN),
		.plan_out = args_value(a, OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
		.adopt = args_has(a, OPT_ADOPT),
	};
	json_t *report = NULL;
	int err = tether_new(repo, &opts, &report);
	return cli_finish_engine_call(repo, plan, err, report, args_has(a, OPT_JSON), print_new);
}

const struct cli_command cmd_new = {
	.name = "new",
	.summary = "move the checkout and fork writable branches off its pins",
	.usage = "new [REV] [-b NAME] [--adopt] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"Check out REV (a new branch NAME there with -b), then give every forkable\n"
		"object with write = fork a writable branch tether.ws.<dataset8>.<bookmark>\n"
		"off the state REV records. On the trunk bookmark ([new] trunk in\n"
		"tether.toml, else main, master or trunk) objects work on their upstream\n"
		"branch: nothing is forked. Objects with write = track keep writing to their\n"
		"upstream branch, and an object at a detached `at` stays there until\n"
		"`tether pull`. A working branch that moved since tether last left it\n"
		"(writes not yet committed), or that tether never made here but exists,\n"
		"is not overwritten: the fork is refused (exit 3), checked against the\n"
		"stores before the checkout moves, so nothing moves. A fork that still\n"
		"fails after the move takes back the forks made and moves the checkout\n"
		"back.\n"
		"\n"
		"--dry-run prints the plan (the commit, the bookmark, and per object: fork,\n"
		"track or skip) and writes nothing; --plan FILE also saves it. --from-plan\n"
		"FILE moves to the plan's commit (no REV is resolved), refusing (exit 3)\n"
		"when the branch or HEAD it goes through moved since the plan.\n"
		"\n"
		"--adopt reconciles a stale workspace (the checkout was moved by git or jj\n"
		"itself, or .tether/workspace.toml was lost) without moving anything: the\n"
		"workspace takes the checkout's bookmark, each working branch a store holds\n"
		"already is adopted as it is, and only the missing ones are forked.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .min_positionals = 0, .max_positionals = 1 },
	.run = run_new,
};
