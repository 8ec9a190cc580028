/* tether new: move the checkout and fork writable branches off its pins. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>

enum { OPT_JSON, OPT_BRANCH };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_BRANCH] = { "branch", 'b', ARG_VALUE, "NAME", "create branch NAME at REV and work on it" },
};

static const char *const positionals[] = { "REV", NULL };

static void print_new(const json_t *report)
{
	printf("Now on %s (%.12s)\n", out_str_or(report, "bookmark", "?"), out_str_or(report, "commit", ""));
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(report, "objects"), i, o) {
		const char *action = out_str_or(o, "action", "?");
		if (out_str(o, "branch"))
			printf("  %-9s %s -> %s\n", action, out_str_or(o, "key", "?"), out_str(o, "branch"));
		else
			printf("  %-9s %s (%s)\n", action, out_str_or(o, "key", "?"), out_str_or(o, "detail", ""));
	}
}

static int run_new(const struct args *a)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_new_opts opts = { .rev = a->npos ? a->pos[0] : NULL, .branch = args_value(a, OPT_BRANCH) };
	json_t *report = NULL;
	int err = tether_new(repo, &opts, &report);
	tether_repo_free(repo);
	if (err) {
		json_decref(report);
		return out_error(err);
	}
	rc = args_has(a, OPT_JSON) ? out_json(report) : (print_new(report), 0);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_new = {
	.name = "new",
	.summary = "move the checkout and fork writable branches off its pins",
	.usage = "new [REV] [-b NAME] [--json]",
	.description =
		"Check out REV (a new branch NAME there with -b), then give every forkable\n"
		"object with write = fork a writable branch tether.ws.<dataset8>.<bookmark>\n"
		"off the state REV records. Objects with write = track keep writing to their\n"
		"upstream branch. A working branch that moved since tether last left it\n"
		"(writes not yet committed) is not overwritten: the fork is refused.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .min_positionals = 0, .max_positionals = 1 },
	.run = run_new,
};
