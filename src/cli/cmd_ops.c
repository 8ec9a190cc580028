/* tether ops: the journal of store-writing operations. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>

enum { OPT_JSON };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the journal as JSON" },
};

static void print_ops(const json_t *report)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(report, "ops"), i, e) {
		long long pins = (long long)json_array_size(json_object_get(e, "pins"));
		printf("%-10s %-7s %s  %lld %s  %.12s  %s\n", out_str_or(e, "status", "?"), out_str_or(e, "op", "?"),
		       out_str_or(e, "started", ""), pins, out_plural(pins, "pin", "pins"), out_str_or(e, "commit", "-"),
		       out_escape(out_str_or(e, "message", "")));
	}
	if (!json_array_size(json_object_get(report, "ops")))
		printf("the journal is empty\n");
}

static int run_ops(const struct args *a)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	json_t *report = NULL;
	int err = tether_ops(repo, &report);
	tether_repo_free(repo);
	if (err)
		return out_error(err);
	rc = args_has(a, OPT_JSON) ? out_json(report) : (print_ops(report), 0);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_ops = {
	.name = "ops",
	.summary = "list the journal of store-writing operations",
	.usage = "ops [--json]",
	.description =
		"List the journal: each commit, new, abandon and undo, with its status.\n"
		"INCOMPLETE means the operation is running or its process died: for a\n"
		"commit, between creating pins and the VCS commit (gc keeps those pins,\n"
		"and the next commit finishes the work). `tether undo` reads the journal.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_ops,
};
