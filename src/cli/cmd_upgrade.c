/* tether upgrade: migrate the dataset's files to the newest layout. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>

enum { OPT_JSON, OPT_DRY_RUN, OPT_ALL_HISTORY, OPT_YES, OPT_FORCE };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "only list what would change; write nothing" },
	[OPT_ALL_HISTORY] = { "all-history", 0, ARG_FLAG, NULL,
	                      "also rewrite every commit of the current branch that holds an older file" },
	[OPT_YES] = { "yes", 0, ARG_FLAG, NULL, "confirm the history rewrite of --all-history" },
	[OPT_FORCE] = { "force", 0, ARG_FLAG, NULL, "rewrite commits that remote-tracking refs reach" },
};

static void print_upgrade(const json_t *report, int refused)
{
	int dry = refused || out_bool(report, "dry_run");
	size_t i, nfiles = json_array_size(json_object_get(report, "files"));
	json_t *o;
	json_array_foreach(json_object_get(report, "files"), i, o)
		printf("  %s  %s  (layout %lld -> %lld)\n", dry ? "would migrate" : "migrated", out_escape(out_str_or(o, "path", "?")),
		       (long long)json_integer_value(json_object_get(o, "from")),
		       (long long)json_integer_value(json_object_get(o, "to")));
	const json_t *history = json_object_get(report, "history");
	size_t ncommits = json_array_size(json_object_get(history, "commits"));
	json_array_foreach(json_object_get(history, "commits"), i, o) {
		const char *now = out_str(o, "new");
		printf("  %s  %.12s%s%.12s  %s\n", now ? "rewrote" : "would rewrite", out_str_or(o, "id", "?"),
		       now ? " -> " : "", now ? now : "", out_escape(out_str_or(o, "summary", "")));
	}
	json_array_foreach(json_object_get(history, "remote"), i, o)
		printf("  published  %.12s  (reached by %s)\n", out_str_or(o, "id", "?"), out_escape(out_str_or(o, "ref", "?")));
	long long to = (long long)json_integer_value(json_object_get(report, "to"));
	char commits[64] = "";
	if (json_is_object(history))
		snprintf(commits, sizeof commits, " and %zu commit%s", ncommits, out_plural((long long)ncommits, "", "s"));
	if (refused)
		return; /* the error says why nothing was written */
	if (nfiles == 0 && ncommits == 0)
		printf("already at layout %lld%s\n", to, json_is_object(history) ? ", history included" : "");
	else if (dry)
		printf("dry run: %zu file%s%s would move to layout %lld\n", nfiles, out_plural((long long)nfiles, "", "s"),
		       commits, to);
	else
		printf("layout %lld: %zu file%s migrated%s; commit them with 'tether commit'\n", to, nfiles,
		       out_plural((long long)nfiles, "", "s"), ncommits ? ", history rewritten" : "");
}

static int run_upgrade(const struct args *a)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_upgrade_opts opts = { TETHER_UPGRADE_OPTS_INIT, .dry_run = args_has(a, OPT_DRY_RUN),
	                                    .all_history = args_has(a, OPT_ALL_HISTORY), .yes = args_has(a, OPT_YES),
	                                    .force = args_has(a, OPT_FORCE) };
	json_t *report = NULL;
	int err = tether_upgrade(repo, &opts, &report);
	tether_repo_free(repo);
	/* A refused rewrite still says what it would have rewritten. */
	if (report && !args_has(a, OPT_JSON))
		print_upgrade(report, err != 0);
	else if (report && !err)
		rc = out_json(report);
	json_decref(report);
	if (err)
		return out_error(err);
	return rc;
}

const struct cli_command cmd_upgrade = {
	.name = "upgrade",
	.summary = "migrate the dataset's files to the newest layout",
	.usage = "upgrade [--dry-run] [--all-history [--yes] [--force]] [--json]",
	.description =
		"Rewrite tether.toml and the manifests of an older layout in the newest one\n"
		"this tether writes (the working copy; commit them with 'tether commit').\n"
		"With --all-history, also re-create every commit of the current branch\n"
		"whose dataset directory holds an older file, changing only those files,\n"
		"and move the branch there: a history rewrite, refused without --yes, and\n"
		"refused when a remote-tracking ref reaches one of those commits unless\n"
		"--force. A jj repository's history is not rewritten.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_upgrade,
};
