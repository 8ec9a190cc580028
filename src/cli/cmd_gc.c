/* tether gc: release pins no commit needs; dry run unless --no-dry-run. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <string.h>

enum { OPT_JSON, OPT_NO_DRY_RUN, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN, OPT_PRUNE, OPT_KEEP, OPT_FORCE_PRUNE,
       OPT_PRUNE_BOOKMARKS };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_NO_DRY_RUN] = { "no-dry-run", 0, ARG_FLAG, NULL, "release the pins and remove the listings" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "only report what would be released (the default)" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; release nothing" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE",
	                    "release only what the plan in FILE names, once re-checked (exit 3 when stale)" },
	[OPT_PRUNE] = { "prune-workspaces", 0, ARG_FLAG, NULL,
	                "also delete dead workspaces' working branches whose head is pinned" },
	[OPT_KEEP] = { "keep-workspace", 0, ARG_LIST, "NAME",
	               "with --prune-workspaces: keep bookmark NAME's working branches (repeatable)" },
	[OPT_FORCE_PRUNE] = { "force-prune", 0, ARG_FLAG, NULL,
	                      "with --prune-workspaces: delete unpinned and storage branches too" },
	/* The spec's caveats spell it so: a workspace is a bookmark's working
	 * branches (tether.ws.<dataset8>.<bookmark>), so both name one thing. */
	[OPT_PRUNE_BOOKMARKS] = { "prune-bookmarks", 0, ARG_FLAG, NULL, "the same as --prune-workspaces" },
};

/* from: the plan file of --from-plan, or NULL. */
static void print_footer(const json_t *report, int dry, const char *from)
{
	const json_t *release = json_object_get(report, "release");
	const json_t *listings = json_object_get(report, "listings");
	long long n_release = (long long)json_array_size(release), n_listings = (long long)json_array_size(listings);
	long long commits = out_int(report, "commits"), referenced = out_int(report, "referenced");
	printf("%s%lld %s and %lld %s unreferenced (%lld %s walked, %lld %s referenced)\n", dry ? "dry run: " : "",
	       n_release, out_plural(n_release, "pin", "pins"), n_listings, out_plural(n_listings, "listing", "listings"),
	       commits, out_plural(commits, "commit", "commits"), referenced, out_plural(referenced, "pin", "pins"));
	const char *file = out_str(report, "plan_file");
	if (file)
		printf("plan saved to %s; apply it with `tether gc --from-plan %s`\n", out_escape(file), out_escape(file));
	else if (dry && from && (json_array_size(release) || json_array_size(listings)))
		/* --from-plan acts unless --dry-run: the plan checked is applied by
		 * the same command without it. */
		printf("the plan still holds: apply it with `tether gc --from-plan %s`\n", out_escape(from));
	else if (dry && (json_array_size(release) || json_array_size(listings)))
		printf("run `tether gc --no-dry-run` to release them\n");
	if (out_bool(report, "commit_needed"))
		printf("the removed listings were committed: `tether commit` records their removal (`tether status` lists it)\n");
}

static void print_prune(const json_t *report, int dry)
{
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(report, "prune"), i, p) {
		int del = strcmp(out_str_or(p, "action", ""), "delete") == 0;
		const char *state = !del ? "keeping" : dry ? "would delete" : out_bool(p, "done") ? "deleted" : "FAILED";
		printf("  %-14s %s branch %s (%s)\n", state, out_str_or(p, "kind", "?"), out_escape(out_str_or(p, "branch", "?")),
		       out_escape(out_str_or(p, "reason", "")));
	}
}

static void print_gc(const json_t *report, const char *from)
{
	int dry = out_bool(report, "dry_run");
	size_t i;
	json_t *r;
	print_prune(report, dry);
	json_array_foreach(json_object_get(report, "release"), i, r) {
		const char *state = dry ? "would release" : out_bool(r, "done") ? "released" : "FAILED";
		printf("  %-14s %s pin %s\n", state, out_str_or(r, "kind", "?"), out_escape(out_str_or(r, "pin", "?")));
	}
	json_array_foreach(json_object_get(report, "listings"), i, r)
		printf("  %-14s listing %.16s…\n", dry ? "would remove" : "removed", json_string_value(r));
	json_array_foreach(json_object_get(report, "skipped"), i, r) {
		if (out_str(r, "pin"))
			printf("  %-14s pin %s (%s)\n", "skipped", out_escape(out_str(r, "pin")),
			       out_escape(out_str_or(r, "reason", "")));
		else if (out_str(r, "store"))
			printf("  %-14s %s (%s)\n", "skipped", out_escape(out_str(r, "store")), out_escape(out_str_or(r, "reason", "")));
		else
			printf("  %-14s listing %.16s… (%s)\n", "skipped", out_str_or(r, "listing", "?"),
			       out_escape(out_str_or(r, "reason", "")));
	}
	print_footer(report, dry, from);
}

/* A dry run unless --no-dry-run or --from-plan says to act, and --dry-run
 * is not given after --no-dry-run. */
static int is_dry_run(const struct args *a)
{
	if (args_has(a, OPT_DRY_RUN))
		return args_later(a, OPT_DRY_RUN, OPT_NO_DRY_RUN);
	return !args_has(a, OPT_NO_DRY_RUN) && !args_has(a, OPT_FROM_PLAN);
}

static int run_gc(const struct args *a)
{
	const char *from = args_value(a, OPT_FROM_PLAN);
	if (args_has(a, OPT_PLAN) && !is_dry_run(a))
		return out_usage("gc", "--plan only plans: it cannot be combined with --no-dry-run for 'gc'");
	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	const char *const *keep = args_values(a, OPT_KEEP);
	size_t n_keep = 0;
	while (keep && keep[n_keep])
		n_keep++;
	struct tether_gc_opts opts = {
		TETHER_GC_OPTS_INIT,
		.dry_run = is_dry_run(a),
		.progress = out_progress_allowed(),
		.progress_fn = out_progress,
		.plan_out = args_value(a, OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
		.prune_workspaces = args_has(a, OPT_PRUNE) || args_has(a, OPT_PRUNE_BOOKMARKS),
		.keep_workspaces = keep,
		.n_keep = n_keep,
		.force_prune = args_has(a, OPT_FORCE_PRUNE),
	};
	json_t *report = NULL;
	int err = tether_gc(repo, &opts, &report);
	tether_repo_free(repo);
	json_decref(plan);
	if (err) {
		json_decref(report);
		return out_error(err);
	}
	rc = args_has(a, OPT_JSON) ? out_json(report) : (print_gc(report, from), 0);
	/* A pin that could not be released is in the report; the exit code
	 * says so too. */
	size_t n_errors = json_array_size(json_object_get(report, "errors"));
	if (rc == 0 && n_errors) {
		fprintf(stderr, "tether: error: gc could not release everything: %s\n",
		        out_escape(json_string_value(json_array_get(json_object_get(report, "errors"), 0))));
		rc = tether_exit_code(TETHER_ERROR);
	}
	json_decref(report);
	return rc;
}

const struct cli_command cmd_gc = {
	.name = "gc",
	.summary = "release pins that no commit references",
	.usage = "gc [--no-dry-run | --plan FILE | --from-plan FILE [--dry-run]]\n"
	         "   [--prune-workspaces | --prune-bookmarks [--keep-workspace NAME]... [--force-prune]] [--json]",
	.description =
		"Walk every commit reachable from any ref, and the working copy, collecting\n"
		"the pins their manifests name. Each store's tether pins of this dataset\n"
		"that none of them names are released, and listings no working manifest\n"
		"names are removed. A dry run (the default) only reports; --no-dry-run\n"
		"acts. gc never releases a pin that any manifest in history names.\n"
		"\n"
		"--plan FILE saves what a run would release as a plan. --from-plan FILE\n"
		"walks history again and releases only the plan's pins and listings: one\n"
		"referenced again since refuses the plan (exit 3, nothing released), one\n"
		"already gone is skipped. With --dry-run it only checks the plan.\n"
		"\n"
		"--prune-workspaces also deletes the working branches (tether.ws.<dataset8>.\n"
		"<bookmark>) of workspaces that are gone: their bookmark is no longer a\n"
		"local branch (jj: bookmark), nor this checkout's, nor named by\n"
		"--keep-workspace. Only a branch whose head a pin holds is deleted; one\n"
		"with unpinned work, or in a store whose branches are its storage, needs\n"
		"--force-prune. Not combined with --plan or --from-plan.\n"
		"--prune-bookmarks is the same flag: a workspace is a bookmark's working\n"
		"branches, so the bookmarks pruned are the tether.ws.* branches whose\n"
		"bookmark is gone.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_gc,
};
