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
		/* A commit counts the pins it made; promote and merge, their
		 * moves (done and planned); restore and drop, the objects they
		 * act on. */
		const json_t *moves = json_object_get(e, "moves"), *keys = json_object_get(e, "keys");
		long long done = 0;
		size_t k;
		json_t *m;
		json_array_foreach(moves, k, m) done += json_is_true(json_object_get(m, "done"));
		char count[64];
		if (json_is_array(moves))
			snprintf(count, sizeof count, "%lld/%lld %s", done, (long long)json_array_size(moves),
			         out_plural((long long)json_array_size(moves), "move", "moves"));
		else if (json_is_array(keys))
			snprintf(count, sizeof count, "%lld %s", (long long)json_array_size(keys),
			         out_plural((long long)json_array_size(keys), "object", "objects"));
		else
			snprintf(count, sizeof count, "%lld %s", pins, out_plural(pins, "pin", "pins"));
		/* Every field is the journal file's, which anything that can write
		 * the repository's directory can bend: each is escaped, not just
		 * the message, so an entry cannot drive the terminal. */
		printf("%-10s %-7s %s  %s  %.12s  %s\n", out_escape(out_str_or(e, "status", "?")),
		       out_escape(out_str_or(e, "op", "?")), out_escape(out_str_or(e, "started", "")), count,
		       out_escape(out_str_or(e, "commit", "-")), out_escape(out_str_or(e, "message", "")));
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
		"List the journal: each commit, new, promote, merge, restore, drop,\n"
		"abandon and undo, with its status. INCOMPLETE means the operation is\n"
		"running or its process died part-way: for a commit, between creating\n"
		"pins and the VCS commit (gc keeps those pins, and the next commit\n"
		"finishes the work); for the others, between their steps (running the\n"
		"command again finishes it). PARTIAL: a promote moved some bases, then\n"
		"one failed. `tether undo` reads the journal.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_ops,
};
