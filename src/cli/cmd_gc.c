/* tether gc: release pins no commit needs; dry run unless --no-dry-run. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>

enum { OPT_JSON, OPT_NO_DRY_RUN, OPT_DRY_RUN };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_NO_DRY_RUN] = { "no-dry-run", 0, ARG_FLAG, NULL, "release the pins and remove the listings" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "only report what would be released (the default)" },
};

static void print_gc(const json_t *report)
{
	int dry = out_bool(report, "dry_run");
	const json_t *release = json_object_get(report, "release");
	const json_t *listings = json_object_get(report, "listings");
	size_t i;
	json_t *r;
	json_array_foreach(release, i, r) {
		const char *state = dry ? "would release" : out_bool(r, "done") ? "released" : "FAILED";
		printf("  %-14s %s pin %s\n", state, out_str_or(r, "kind", "?"), out_str_or(r, "pin", "?"));
	}
	json_array_foreach(listings, i, r)
		printf("  %-14s listing %.16s…\n", dry ? "would remove" : "removed", json_string_value(r));
	printf("%s%zu pin%s and %zu listing%s unreferenced (%lld commits walked, %lld pins referenced)\n",
	       dry ? "dry run: " : "", json_array_size(release), json_array_size(release) == 1 ? "" : "s",
	       json_array_size(listings), json_array_size(listings) == 1 ? "" : "s", out_int(report, "commits"),
	       out_int(report, "referenced"));
	if (dry && (json_array_size(release) || json_array_size(listings)))
		printf("run `tether gc --no-dry-run` to release them\n");
}

static int run_gc(const struct args *a)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_gc_opts opts = { .dry_run = !args_has(a, OPT_NO_DRY_RUN) || args_later(a, OPT_DRY_RUN, OPT_NO_DRY_RUN),
	                               .progress = out_progress_allowed() };
	json_t *report = NULL;
	int err = tether_gc(repo, &opts, &report);
	tether_repo_free(repo);
	if (err) {
		json_decref(report);
		return out_error(err);
	}
	rc = args_has(a, OPT_JSON) ? out_json(report) : (print_gc(report), 0);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_gc = {
	.name = "gc",
	.summary = "release pins that no commit references",
	.usage = "gc [--no-dry-run] [--json]",
	.description =
		"Walk every commit reachable from any ref, and the working copy, collecting\n"
		"the pins their manifests name. Each store's tether pins of this dataset\n"
		"that none of them names are released, and listings no working manifest\n"
		"names are removed. A dry run (the default) only reports; --no-dry-run\n"
		"acts. gc never releases a pin that any manifest in history names.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_gc,
};
