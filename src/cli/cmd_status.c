/* tether status: each object's state against the one last recorded. */
#include "cli/args.h"
#include "cli/output.h"

#include <tether.h>

#include <stdio.h>
#include <string.h>

enum { OPT_SNAPSHOT, OPT_NO_SNAPSHOT, OPT_JSON };

static const struct arg_option options[] = {
	[OPT_SNAPSHOT] = { "snapshot", 0, ARG_FLAG, NULL,
	                   "fingerprint every object now (default: snapshot.auto in tether.toml)" },
	[OPT_NO_SNAPSHOT] = { "no-snapshot", 0, ARG_FLAG, NULL,
	                      "contact no system; compare the manifests only" },
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
};

/* How each status reads and is coloured, in the order the summary counts
 * them. "unknown" (not fingerprinted) is shown by its manifest status. */
struct status_style {
	const char *status;
	const char *label;
	enum out_color color;
};

static const struct status_style styles[] = {
	{ "clean", "clean", OUT_GREEN },
	{ "modified", "modified", OUT_YELLOW },
	{ "never-recorded", "never recorded", OUT_CYAN },
	{ "drifted", "drifted", OUT_RED },
	{ "unknown", "not checked", OUT_RESET },
};

#define NSTYLES (sizeof styles / sizeof styles[0])

static const struct status_style manifest_styles[] = {
	{ "unchanged", "unchanged", OUT_RESET },
	{ "added", "added", OUT_CYAN },
	{ "changed", "changed", OUT_YELLOW },
};

#define NMANIFEST_STYLES (sizeof manifest_styles / sizeof manifest_styles[0])

/* Keys longer than this are not padded, so one long key does not push
 * every other line's kind and tier off the screen. */
enum { MAX_KEY_COLUMN = 40 };

static int snapshot_choice(const struct args *a)
{
	if (args_later(a, OPT_SNAPSHOT, OPT_NO_SNAPSHOT))
		return 1;
	if (args_later(a, OPT_NO_SNAPSHOT, OPT_SNAPSHOT))
		return 0;
	return -1;
}

static const struct status_style *find_style(const struct status_style *table, size_t n,
                                             const char *status)
{
	for (size_t i = 0; status && i < n; i++)
		if (strcmp(table[i].status, status) == 0)
			return &table[i];
	return NULL;
}

static int key_column_width(const json_t *objects)
{
	int width = 0;
	size_t i;
	json_t *o;
	json_array_foreach(objects, i, o) {
		int n = (int)strlen(out_str_or(o, "key", ""));
		if (n > width)
			width = n;
	}
	return width < MAX_KEY_COLUMN ? width : MAX_KEY_COLUMN;
}

/* The label for an object: its status; or, when its data was not
 * fingerprinted, what happened to its manifest. */
static struct status_style object_style(const json_t *o)
{
	const char *status = out_str(o, "status");
	const char *manifest = out_str(o, "manifest");
	const struct status_style *s = NULL;
	if (status && strcmp(status, "unknown") == 0)
		s = find_style(manifest_styles, NMANIFEST_STYLES, manifest);
	if (!s)
		s = find_style(styles, NSTYLES, status);
	if (s)
		return *s;
	return (struct status_style){ status, status ? status : "?", OUT_RESET };
}

/* "  drifted         raw/plate1  (file, observed): size changed" */
static void print_object(const json_t *o, int key_width)
{
	struct status_style s = object_style(o);
	const char *status = out_str_or(o, "status", "");
	const char *manifest = out_str_or(o, "manifest", "unchanged");
	const char *detail = out_str(o, "detail");

	printf("  %s%-14s%s  %-*s  (%s, %s", out_color(s.color), s.label, out_color(OUT_RESET),
	       key_width, out_str_or(o, "key", "?"), out_str_or(o, "kind", "?"),
	       out_str_or(o, "tier", "?"));
	/* Shown by the label already when the data was not checked. */
	if (strcmp(status, "unknown") != 0 && strcmp(manifest, "unchanged") != 0)
		printf(", manifest %s", manifest);
	printf(")%s%s\n", detail ? ": " : "", detail ? detail : "");
}

/* ": 2 clean, 1 drifted": how many objects have each of the table's values
 * of `field`, in the table's order, leaving out the zeros. */
static void print_counts(const json_t *objects, const char *field,
                         const struct status_style *table, size_t ntable)
{
	const char *sep = ": ";
	size_t matched = 0, i;
	json_t *o;
	for (size_t k = 0; k < ntable; k++) {
		size_t count = 0;
		json_array_foreach(objects, i, o) {
			const char *value = out_str(o, field);
			if (value && strcmp(value, table[k].status) == 0)
				count++;
		}
		if (count) {
			printf("%s%zu %s", sep, count, table[k].label);
			sep = ", ";
		}
		matched += count;
	}
	if (matched < json_array_size(objects))
		printf("%s%zu other", sep, json_array_size(objects) - matched);
}

/* "4 objects: 2 clean, 1 modified, 1 drifted"; without a snapshot, the
 * manifests' counts and how to check the data. */
static void print_summary(const json_t *objects, int snapshot)
{
	size_t n = json_array_size(objects);
	if (n == 0) {
		printf("no objects; register one with 'tether add'\n");
		return;
	}
	printf("%zu object%s", n, n == 1 ? "" : "s");
	if (snapshot) {
		print_counts(objects, "status", styles, NSTYLES);
		printf("\n");
	} else {
		print_counts(objects, "manifest", manifest_styles, NMANIFEST_STYLES);
		printf("; data not checked (run 'tether status --snapshot')\n");
	}
}

static int any_drifted(const json_t *objects)
{
	size_t i;
	json_t *o;
	json_array_foreach(objects, i, o) {
		const char *status = out_str(o, "status");
		if (status && strcmp(status, "drifted") == 0)
			return 1;
	}
	return 0;
}

static void print_status(const json_t *report)
{
	const json_t *objects = json_object_get(report, "objects");
	int key_width = key_column_width(objects);
	size_t i;
	json_t *o;
	json_array_foreach(objects, i, o)
		print_object(o, key_width);
	print_summary(objects, out_bool(report, "snapshot"));
}

static int run_status(const struct args *a)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_status_opts opts = {
		.snapshot = snapshot_choice(a),
		.progress = out_progress_allowed(),
	};
	json_t *report = NULL;
	int err = tether_status(repo, &opts, &report);
	tether_repo_free(repo);
	if (err) {
		json_decref(report);
		return out_error(err);
	}
	if (args_has(a, OPT_JSON))
		rc = out_json(report);
	else
		print_status(report);
	/* Drift of immutable data is a refusal-grade fact: scripts and CI see
	 * it in the exit code whichever format they read. */
	if (rc == 0 && any_drifted(json_object_get(report, "objects")))
		rc = tether_exit_code(TETHER_EREFUSED);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_status = {
	.name = "status",
	.summary = "show which objects changed since their last commit",
	.usage = "status [--snapshot | --no-snapshot] [--json]",
	.description =
		"Show every object's state against the state last recorded for it: clean,\n"
		"modified, never recorded, or drifted (immutable data that changed; exit 3).\n"
		"Without a snapshot the data is not fingerprinted, and each object shows\n"
		"whether its manifest was added or changed instead. Of --snapshot and\n"
		"--no-snapshot, the one given last wins.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_status,
};
