/* tether import SOURCE --query SQL: a registry's rows planned into adds,
 * updates and removals of manifests. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <string.h>

enum { OPT_QUERY, OPT_SYNC, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN, OPT_JSON };

static const struct arg_option options[] = {
	[OPT_QUERY] = { "query", 0, ARG_VALUE, "SQL", "the query whose rows name the objects (key, kind, uri, ...)" },
	[OPT_SYNC] = { "sync", 0, ARG_FLAG, NULL, "also remove the objects no row names" },
	[OPT_DRY_RUN] = { "dry-run", 'n', ARG_FLAG, NULL, "print the plan; write nothing" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE; write nothing else" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE", "apply a saved plan (no SOURCE, no --query)" },
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
};

static const char *const positionals[] = { "SOURCE", NULL };

static void print_actions(const json_t *actions)
{
	size_t i;
	json_t *a;
	json_array_foreach(actions, i, a) {
		const char *action = out_str_or(a, "action", "?");
		char mark = strcmp(action, "add") == 0 ? '+' : strcmp(action, "remove") == 0 ? '-' : '~';
		printf("  %c %s\n", mark, out_escape(out_str_or(a, "key", "?")));
	}
}

static void print_report(const json_t *report)
{
	const json_t *plan = json_object_get(report, "plan");
	if (plan) {
		size_t n = json_array_size(json_object_get(plan, "actions"));
		const char *file = out_str(report, "plan_file");
		printf("import plan: %zu change%s%s%s\n", n, n == 1 ? "" : "s", file ? ", saved to " : "",
		       file ? out_escape(file) : "");
		print_actions(json_object_get(plan, "actions"));
		return;
	}
	static const char *const lists[] = { "added", "updated", "removed" };
	static const char marks[] = { '+', '~', '-' };
	size_t total = 0;
	for (size_t k = 0; k < 3; k++) {
		size_t i;
		json_t *key;
		json_array_foreach(json_object_get(report, lists[k]), i, key) {
			printf("  %c %s\n", marks[k], out_escape(json_string_value(key)));
			total++;
		}
	}
	if (!total)
		printf("nothing to import: the manifests already say what the rows say\n");
	else
		printf("%zu change%s written; `tether commit` records the objects' states\n", total,
		       total == 1 ? "" : "s");
}

static int run_import(const struct args *a)
{
	const char *from = args_value(a, OPT_FROM_PLAN);
	if (from && (a->npos || args_has(a, OPT_QUERY) || args_has(a, OPT_SYNC)))
		return out_usage("import", "--from-plan takes no SOURCE, --query or --sync (the plan holds them)");
	if (!from && (!a->npos || !args_has(a, OPT_QUERY)))
		return out_usage("import", "give SOURCE and --query SQL (or --from-plan FILE)");
	if (args_has(a, OPT_DRY_RUN) + args_has(a, OPT_PLAN) + (from != NULL) > 1)
		return out_usage("import", "--dry-run, --plan and --from-plan exclude each other");
	json_t *plan = NULL;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	json_t *report = NULL;
	int err = 0;
	if (from) {
		err = tether_import_apply(repo, plan, from, &report);
	} else {
		struct tether_import_opts opts = {
			TETHER_IMPORT_OPTS_INIT,
			.source = a->pos[0],
			.query = args_value(a, OPT_QUERY),
			.sync = args_has(a, OPT_SYNC),
			.plan_out = args_value(a, OPT_PLAN),
		};
		json_t *made = NULL;
		err = tether_import_plan(repo, &opts, &made);
		if (!err && (args_has(a, OPT_DRY_RUN) || opts.plan_out)) {
			report = json_pack("{s:o, s:b, s:s?}", "plan", made, "dry_run", 1, "plan_file", opts.plan_out);
		} else if (!err) {
			err = tether_import_apply(repo, made, NULL, &report);
			json_decref(made);
		}
	}
	return cli_finish_engine_call(repo, plan, err, report, args_has(a, OPT_JSON), print_report);
}

const struct cli_command cmd_import = {
	.name = "import",
	.summary = "plan objects from a registry's SQL rows",
	.usage = "import SOURCE --query SQL [--sync] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"Run --query on SOURCE (postgresql://... or a SQLite file) and make the\n"
		"manifests say what its rows say: each row names an object by the\n"
		"columns key and kind, uri, and any option `tether add` takes for the\n"
		"kind (write, pin, file, branch, ...; a null cell is an option not\n"
		"given). A key not yet tracked is added, one whose manifest differs is\n"
		"updated; with --sync an object no row names is removed. Every row is\n"
		"checked first: a bad one (unknown kind, repeated key, a key outside the\n"
		"dataset, a value its kind refuses) refuses the whole import, naming its\n"
		"row and column, and nothing is written. Nothing is recorded or pinned:\n"
		"`tether commit` does that. --dry-run prints the plan; --plan FILE saves\n"
		"it; --from-plan FILE writes exactly it, or nothing when a manifest it\n"
		"touches changed since.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .max_positionals = 1 },
	.run = run_import,
};
