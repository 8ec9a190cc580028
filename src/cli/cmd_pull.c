/* tether pull: on the trunk, move objects at a detached `at` onto their
 * upstream branches; off it, fast-forward working branches that are behind
 * their base. */
#include "args.h"
#include "output.h"

#include <limits.h>
#include <tether.h>

#include <stdio.h>
#include <stdlib.h>

enum { OPT_JSON, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "print the plan; write nothing" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; write nothing else" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE",
	                    "re-check the plan in FILE and perform exactly its actions (exit 3 when stale)" },
};

static const char *const positionals[] = { "KEY", NULL };

/* "  move      old/imaging: abc123 -> {"snapshot_id":"..."}" or
 * "  stay      code (not at a detached `at`: nothing to move)". */
static void print_object(const json_t *o)
{
	const char *action = out_str_or(o, "action", "?");
	if (out_str(o, "detail")) {
		printf("  %-9s %s (%s)\n", action, out_escape(out_str_or(o, "key", "?")), out_escape(out_str(o, "detail")));
		return;
	}
	char *from = json_dumps(json_object_get(o, "from"), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	char *to = json_dumps(json_object_get(o, "to"), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (out_str(o, "branch"))
		printf("  %-9s %s: %s %s -> its base branch's head %s\n", action, out_escape(out_str_or(o, "key", "?")),
		       out_escape(out_str(o, "branch")), out_escape(from ? from : "?"), out_escape(to ? to : "?"));
	else
		printf("  %-9s %s: at %s -> the branch head %s\n", action, out_escape(out_str_or(o, "key", "?")),
		       out_escape(from ? from : "?"), out_escape(to ? to : "?"));
	free(from);
	free(to);
}

static void print_pull(const json_t *report)
{
	int dry = out_bool(report, "dry_run");
	const json_t *list = dry ? json_object_get(json_object_get(report, "plan"), "actions")
	                         : json_object_get(report, "objects");
	printf("%s on %s\n", dry ? "plan: pull" : "pull", out_str_or(report, "bookmark", "?"));
	size_t i, moved = 0;
	json_t *o;
	json_array_foreach(list, i, o) {
		print_object(o);
		moved += !out_str(o, "detail") && !out_str(o, "branch");
	}
	if (dry)
		out_plan_footer(report, "pull");
	else if (moved)
		printf("`tether commit` pins the %s now on %s\n", moved == 1 ? "object" : "objects",
		       moved == 1 ? "its branch head" : "their branch heads");
}

static int run_pull(const struct args *a)
{
	const char *from = args_value(a, OPT_FROM_PLAN);
	if (from && a->npos)
		return out_usage("pull", "--from-plan takes no KEY (the plan names the objects) for 'pull'");
	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	struct tether_pull_opts opts = {
		TETHER_PULL_OPTS_INIT,
		.keys = a->pos,
		.n_keys = (size_t)a->npos,
		.dry_run = args_has(a, OPT_DRY_RUN),
		.plan_out = args_value(a, OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
	};
	json_t *report = NULL;
	int err = tether_pull(repo, &opts, &report);
	return cli_finish_engine_call(repo, plan, err, report, args_has(a, OPT_JSON), print_pull);
}

const struct cli_command cmd_pull = {
	.name = "pull",
	.summary = "move detached objects onto their branches; bring working branches up to date",
	.usage = "pull [KEY...] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"On the trunk bookmark, move every object (or each KEY) that sits at a\n"
		"detached `at` (add --at / --pick) onto its upstream branch: its working\n"
		"manifest drops `at`, so it reads and writes the branch, and `tether commit`\n"
		"pins the branch head. Objects not at an `at` stay as they are.\n"
		"\n"
		"Off the trunk, bring each object's working branch up to date with its\n"
		"base: one with no work of its own beyond the base (its head in the base's\n"
		"history) is fast-forwarded to the base head, conditional on the working\n"
		"head the plan read, and the next `tether commit` records it; one with its\n"
		"own work while the base moved on is reported `diverged` (with `tether\n"
		"merge KEY` where the system can merge) and left; `up-to-date`, `ahead`,\n"
		"and `unknown` (the system cannot tell) are left too.\n"
		"\n"
		"Refused (exit 3) on a stale workspace. Each move is conditional: the\n"
		"head is read again just before the move, and one that moved since the\n"
		"plan is refused, with every manifest put back.\n"
		"\n"
		"--dry-run prints the plan; --plan FILE also saves it; --from-plan FILE\n"
		"performs exactly that plan, refusing (exit 3) when a branch head or a\n"
		"manifest moved since.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .max_positionals = INT_MAX },
	.run = run_pull,
};
