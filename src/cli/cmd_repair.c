/* tether repair: re-create missing pins whose state the system still holds. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>

enum { OPT_JSON, OPT_ALL_HISTORY, OPT_DRY_RUN };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_ALL_HISTORY] = { "all-history", 0, ARG_FLAG, NULL, "every pin any commit of any ref names" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "only report what would be re-pinned" },
};

static void print_repair(const json_t *report)
{
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(report, "objects"), i, o) {
		const char *detail = out_str(o, "detail");
		printf("  %-11s %s pin %s%s%s\n", out_str_or(o, "action", "?"), out_str_or(o, "key", "?"),
		       out_str_or(o, "pin", "?"), detail ? ": " : "", detail ? out_escape(detail) : "");
	}
	printf("%s\n", out_bool(report, "ok") ? "every pinned state is held" : "some states could not be recovered");
}

static int run_repair(const struct args *a)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_repair_opts opts = { TETHER_REPAIR_OPTS_INIT, .all_history = args_has(a, OPT_ALL_HISTORY),
	                                   .dry_run = args_has(a, OPT_DRY_RUN) };
	json_t *report = NULL;
	int err = tether_repair(repo, &opts, &report);
	tether_repo_free(repo);
	if (err)
		return out_error(err);
	rc = args_has(a, OPT_JSON) ? out_json(report) : (print_repair(report), 0);
	if (rc == 0 && !out_bool(report, "ok"))
		rc = tether_exit_code(TETHER_EREFUSED);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_repair = {
	.name = "repair",
	.summary = "re-create missing pins whose state the system still holds",
	.usage = "repair [--all-history] [--dry-run] [--json]",
	.description =
		"For every pinned state the working copy records (with --all-history: that any\n"
		"commit of any ref records), check the pin; where it is gone but the system\n"
		"still holds the state, pin it again under the same id. States the system\n"
		"no longer holds are reported as lost, and the command exits 3.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_repair,
};
