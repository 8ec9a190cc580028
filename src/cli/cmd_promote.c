/* tether promote: fast-forward each base branch to its working branch. */
#include "land.h"

#include <limits.h>

static const struct arg_option options[] = {
	LAND_SHARED_OPTIONS,
};

static const char *const positionals[] = { "KEY", NULL };

static int run_promote(const struct args *a)
{
	return cli_land(a, 0);
}

const struct cli_command cmd_promote = {
	.name = "promote",
	.summary = "land working branches: fast-forward each base branch to its fork",
	.usage = "promote [KEY...] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"Fast-forward the base branch of each object with a working branch in this\n"
		"checkout (or of each KEY) to the working branch's head, system by system,\n"
		"each move conditional on the base head the plan reviewed. The working\n"
		"branch must be at the state its manifest records: uncommitted work is\n"
		"refused (exit 3; `tether commit` first) before anything moves. The first\n"
		"failure stops the run; the bases moved before it stay moved and the\n"
		"message names them. A base that moved on is refused; where the system\n"
		"can merge, the hint names `tether merge KEY`. Every move is journaled\n"
		"(`tether ops`): a run that dies part-way is finished by running it again.\n"
		"\n"
		"--dry-run prints the plan and writes nothing; --plan FILE also saves it.\n"
		"--from-plan FILE refuses (exit 3) when a base or working branch moved\n"
		"since the plan, naming which.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .max_positionals = INT_MAX },
	.run = run_promote,
};
