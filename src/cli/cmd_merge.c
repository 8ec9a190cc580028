/* tether merge: three-way merge each working branch into its base. */
#include "land.h"

#include <limits.h>

static const struct arg_option options[] = {
	LAND_SHARED_OPTIONS,
	[LAND_OPT_MESSAGE] = { "message", 'm', ARG_VALUE, "MSG", "the merge commit's message (default: the system's)" },
};

static const char *const positionals[] = { "KEY", NULL };

static int run_merge(const struct args *a)
{
	return cli_land(a, 1);
}

const struct cli_command cmd_merge = {
	.name = "merge",
	.summary = "three-way merge working branches into their base branches",
	.usage = "merge [KEY...] [-m MSG] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"Merge the working branch of each object in this checkout (or of each KEY)\n"
		"into its base branch, for systems that can merge (MERGE): a fast-forward\n"
		"when the base has not moved on, else a merge commit. The working branch\n"
		"then moves to the merged head, so the next `tether commit` records what\n"
		"the base holds. The working branch must be at the state its manifest\n"
		"records (`tether commit` first). An object that conflicts is reported,\n"
		"nothing is written for it, and the others go on; the exit code is then 3.\n"
		"Every merge is journaled (`tether ops`).\n"
		"\n"
		"--dry-run prints the plan and writes nothing; --plan FILE also saves it.\n"
		"--from-plan FILE refuses (exit 3) when a base or working branch moved\n"
		"since the plan, naming which.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .max_positionals = INT_MAX },
	.run = run_merge,
};
