/* tether undo: take back the last operation of the journal. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>

enum { OPT_JSON, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "check and list the steps; write nothing" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; write nothing else" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE",
	                    "re-check the plan in FILE and perform exactly its steps (exit 3 when stale)" },
};

static void print_undo(const json_t *report)
{
	const json_t *undone = json_object_get(report, "undone");
	int dry_run = out_bool(report, "dry_run");
	const char *message = out_str(undone, "message");
	printf("%s %s %s%s%s%s\n", dry_run ? "dry run: would undo" : out_bool(report, "resumed") ? "Finished undoing"
	                                                                                      : "Undid",
	       out_str_or(undone, "op", "?"), out_str_or(undone, "id", "?"), message ? " (\"" : "",
	       message ? out_escape(message) : "", message ? "\")" : "");
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(report, "steps"), i, s)
		printf("  %s\n", out_escape(json_string_value(s)));
	json_array_foreach(json_object_get(report, "released"), i, s)
		printf("  released %s of %s\n", out_str_or(s, "pin", "?"), out_escape(out_str_or(s, "key", "?")));
	json_array_foreach(json_object_get(report, "errors"), i, s)
		out_warning("%s", json_string_value(s));
	if (dry_run)
		out_plan_footer(report, "undo");
}

static int run_undo(const struct args *a)
{
	const char *from = args_value(a, OPT_FROM_PLAN);
	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	struct tether_undo_opts opts = {
		TETHER_UNDO_OPTS_INIT,
		.dry_run = args_has(a, OPT_DRY_RUN),
		.plan_out = args_value(a, OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
	};
	json_t *report = NULL;
	int err = tether_undo(repo, &opts, &report);
	return cli_finish_engine_call(repo, plan, err, report, args_has(a, OPT_JSON), print_undo);
}

const struct cli_command cmd_undo = {
	.name = "undo",
	.summary = "take back the last store-writing operation",
	.usage = "undo [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"Take back the last operation of the journal (`tether ops`) not undone yet:\n"
		"  commit  its VCS commit removed (while it is HEAD and no other ref holds\n"
		"          it), then the pins it created released when no commit names them;\n"
		"          the data stays as it was, uncommitted again\n"
		"  new     the working branches it forked deleted (or moved back) while\n"
		"          untouched, workspace.toml restored, the checkout moved back and a\n"
		"          branch -b made deleted\n"
		"  promote each base branch moved back to its head before, while it is where\n"
		"          promote left it (a compare-and-swap; a backend without move_base\n"
		"          is refused by name)\n"
		"  merge   the same, and the working branch that followed the merge back at\n"
		"          its own head\n"
		"  restore each reset working branch back at its head before, while untouched,\n"
		"          and workspace.toml restored\n"
		"  pull    each moved object back at its detached `at`, while its manifest is\n"
		"          the one pull wrote\n"
		"Refused (exit 3), saying why, when history or a store moved on since, or\n"
		"when the operation has no inverse. A second undo takes back the operation\n"
		"before; an undo is not undone (run the command again). An undo killed\n"
		"part-way is finished by the next one. --dry-run lists the steps; --plan\n"
		"FILE also saves them, and --from-plan FILE performs them, refusing (exit 3)\n"
		"when the operation to undo or its steps changed since.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_undo,
};
