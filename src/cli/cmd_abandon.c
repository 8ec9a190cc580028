/* tether abandon REV: drop a dataset commit through the VCS. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>

enum { OPT_JSON, OPT_FORCE, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_FORCE] = { "force", 0, ARG_FLAG, NULL, "abandon a commit that is pushed or in another branch too" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "check and say what would happen; write nothing" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; write nothing else" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE",
	                    "re-check the plan in FILE and abandon its commit (exit 3 when stale)" },
};

static const char *const positionals[] = { "REV", NULL };

static void print_pins(const json_t *report, int dry_run)
{
	const json_t *pins = json_object_get(report, "pins");
	long long n = (long long)json_array_size(pins);
	if (!n) {
		printf("%s\n", dry_run ? "it brings in no pin" : "no pin is left unnamed: gc has nothing to release");
		return;
	}
	printf("%s %lld %s:\n", dry_run ? "it brings in" : "named by no commit now, released by the next `tether gc`:",
	       n, out_plural(n, "pin", "pins"));
	size_t i;
	json_t *p;
	json_array_foreach(pins, i, p)
		printf("  %-24s %s\n", out_escape(out_str_or(p, "key", "?")), out_str_or(p, "pin", "?"));
}

static void print_abandon(const json_t *report)
{
	int dry_run = out_bool(report, "dry_run");
	const json_t *refs = json_object_get(report, "refs");
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r)
		out_warning("%s still holds %.12s (--force)", out_str_or(r, "ref", "?"), out_str_or(report, "commit", ""));
	if (dry_run)
		printf("dry run: would abandon %.12s (HEAD %.12s)\n", out_str_or(report, "commit", ""),
		       out_str_or(report, "head_before", ""));
	else
		printf("Abandoned %.12s%s; HEAD is now %.12s\n", out_str_or(report, "commit", ""),
		       out_bool(report, "finished") ? " (finishing an interrupted run)" : "", out_str_or(report, "head", ""));
	print_pins(report, dry_run);
	if (dry_run)
		out_plan_footer(report, "abandon");
}

static int run_abandon(const struct args *a)
{
	const char *from = args_value(a, OPT_FROM_PLAN);
	if (from && (a->npos || args_has(a, OPT_FORCE)))
		return out_usage("abandon", "--from-plan takes no REV and no --force (the plan names them) for 'abandon'");
	if (!from && !a->npos)
		return out_usage("abandon", "missing REV, the commit to drop, for 'abandon'");
	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	struct tether_abandon_opts opts = {
		TETHER_ABANDON_OPTS_INIT,
		.rev = a->npos ? a->pos[0] : NULL,
		.force = args_has(a, OPT_FORCE),
		.dry_run = args_has(a, OPT_DRY_RUN),
		.plan_out = args_value(a, OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
	};
	json_t *report = NULL;
	int err = tether_abandon(repo, &opts, &report);
	return cli_finish_engine_call(repo, plan, err, report, args_has(a, OPT_JSON), print_abandon);
}

const struct cli_command cmd_abandon = {
	.name = "abandon",
	.summary = "drop a dataset commit from the branch's history",
	.usage = "abandon REV [--force] [--dry-run | --plan FILE] [--json] | abandon --from-plan FILE",
	.description =
		"Drop commit REV through the VCS: on jj `jj abandon REV`; on git a rebase\n"
		"of the current branch that re-creates REV's descendants onto its parent\n"
		"and moves the branch (only if HEAD is still where it was). Linear history\n"
		"only: a merge between HEAD and REV, or a descendant that changes a path\n"
		"REV changed, is refused (exit 3), and so is a dirty working tree. A\n"
		"commit already pushed (a remote-tracking ref holds it) or in another\n"
		"branch or tag is refused unless --force.\n"
		"\n"
		"Then it lists the pins only REV named: no commit names them now, and the\n"
		"next `tether gc --no-dry-run` releases them. --dry-run checks everything\n"
		"and lists the pins REV brought in, writing nothing; --plan FILE also saves\n"
		"the plan, and --from-plan FILE abandons its commit, refusing (exit 3) when\n"
		"HEAD or the refs holding the commit moved since. A run killed part-way is\n"
		"finished by running it again.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .min_positionals = 0, .max_positionals = 1 },
	.run = run_abandon,
};
