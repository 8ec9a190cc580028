/* tether status: each object's state against the one last recorded. */
#include "args.h"
#include "output.h"

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

/* How an object's line is labelled and coloured, in the order the summary
 * counts them. An object whose data was not fingerprinted (status
 * "unknown") is labelled by what happened to its manifest instead. */
struct label {
	const char *field;
	const char *value;
	const char *text;
	enum out_color color;
};

static const struct label labels[] = {
	{ "status", "clean", "clean", OUT_GREEN },
	{ "status", "modified", "modified", OUT_YELLOW },
	{ "status", "never-recorded", "never recorded", OUT_CYAN },
	{ "status", "drifted", "drifted", OUT_RED },
	{ "status", "unpinned", "unpinned", OUT_RED },
	{ "status", "error", "error", OUT_RED },
	{ "status", "unreachable", "unreachable", OUT_RED },
	{ "manifest", "unchanged", "unchanged", OUT_RESET },
	{ "manifest", "added", "added", OUT_CYAN },
	{ "manifest", "changed", "changed", OUT_YELLOW },
	{ "manifest", "removed", "removed", OUT_RED },
	{ "status", "unknown", "not checked", OUT_RESET },
};

#define NLABELS (sizeof labels / sizeof labels[0])

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

static int is(const char *value, const char *expected)
{
	return value && strcmp(value, expected) == 0;
}

static const struct label *find_label(const char *field, const char *value)
{
	for (size_t i = 0; i < NLABELS; i++)
		if (strcmp(labels[i].field, field) == 0 && is(value, labels[i].value))
			return &labels[i];
	return NULL;
}

/* The object's label, or NULL for a status this CLI does not know. */
static const struct label *object_label(const json_t *o)
{
	const char *status = out_str(o, "status");
	const struct label *l = NULL;
	if (is(status, "unknown"))
		l = find_label("manifest", out_str(o, "manifest"));
	return l ? l : find_label("status", status);
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

/* "  drifted         raw/plate1  (file, observed): size changed" */
static void print_object(const json_t *o, int key_width)
{
	const struct label *l = object_label(o);
	const char *status = out_str_or(o, "status", "?");
	const char *manifest = out_str_or(o, "manifest", "unchanged");
	const char *detail = out_str(o, "detail");

	printf("  %s%-14s%s  %-*s  (%s, %s", out_color(l ? l->color : OUT_RESET),
	       l ? l->text : status, out_color(OUT_RESET), key_width, out_str_or(o, "key", "?"),
	       out_str_or(o, "kind", "?"), out_str_or(o, "tier", "?"));
	/* The label says it already when it is the manifest's. */
	if ((!l || strcmp(l->field, "status") == 0) && !is(manifest, "unchanged"))
		printf(", manifest %s", manifest);
	printf(")%s%s\n", detail ? ": " : "", detail ? out_escape(detail) : "");
	/* A drifted object whose pin is gone as well ([verify] on_status). */
	if (out_str(o, "pin_detail"))
		printf("  %-14s  %s\n", "", out_escape(out_str(o, "pin_detail")));
}

/* "4 objects: 2 clean, 1 modified, 1 drifted": the labels' counts in the
 * table's order, leaving out the zeros. */
static void print_summary(const json_t *objects, int snapshot)
{
	size_t n = json_array_size(objects);
	if (n == 0) {
		printf("no objects; register one with 'tether add'\n");
		return;
	}
	size_t counts[NLABELS] = { 0 }, other = 0, i;
	json_t *o;
	json_array_foreach(objects, i, o) {
		const struct label *l = object_label(o);
		if (l)
			counts[l - labels]++;
		else
			other++;
	}
	printf("%zu %s", n, out_plural((long long)n, "object", "objects"));
	const char *sep = ": ";
	for (size_t k = 0; k < NLABELS; k++) {
		if (counts[k]) {
			printf("%s%zu %s", sep, counts[k], labels[k].text);
			sep = ", ";
		}
	}
	if (other)
		printf("%s%zu other", sep, other);
	if (!snapshot)
		printf("; data not checked (run 'tether status --snapshot')");
	printf("\n");
}

/* Drift, or a recorded state whose pin is gone ([verify] on_status). */
static int any_refused(const json_t *objects)
{
	size_t i;
	json_t *o;
	json_array_foreach(objects, i, o) {
		if (is(out_str(o, "status"), "drifted") || is(out_str(o, "status"), "unpinned") || out_str(o, "pin_detail"))
			return 1;
	}
	return 0;
}

/* A stale workspace first: every line below is read through it. */
static void print_workspace(const json_t *ws)
{
	const char *hint = out_str(ws, "hint");
	if (out_bool(ws, "stale"))
		printf("%sworkspace stale%s: %s\n", out_color(OUT_RED), out_color(OUT_RESET),
		       out_escape(out_str_or(ws, "reason", "")));
	if (hint)
		printf("%s%s\n", out_bool(ws, "stale") ? "  " : "workspace: ", out_escape(hint));
}

static void print_status(const json_t *report)
{
	const json_t *objects = json_object_get(report, "objects");
	print_workspace(json_object_get(report, "workspace"));
	int key_width = key_column_width(objects);
	size_t i;
	json_t *o;
	json_array_foreach(objects, i, o)
		print_object(o, key_width);
	/* Dataset files the next commit records besides the manifests. */
	json_array_foreach(json_object_get(report, "files"), i, o)
		printf("  %-14s  %s  (to be recorded by the next commit)\n", out_str_or(o, "change", "?"),
		       out_escape(out_str_or(o, "path", "?")));
	print_summary(objects, out_bool(report, "snapshot"));
	const json_t *pins = json_object_get(report, "pins");
	if (pins) {
		long long checked = out_int(pins, "checked"), missing = (long long)json_array_size(json_object_get(pins, "missing"));
		printf("%lld %s checked ([verify] on_status)%s", checked, out_plural(checked, "pin", "pins"),
		       missing ? "" : ": all held\n");
		if (missing)
			printf(": %lld missing; `tether repair` re-creates a pin whose state the system still holds\n", missing);
	}
	const json_t *layout = json_object_get(report, "layout");
	long long dataset = (long long)json_integer_value(json_object_get(layout, "dataset")),
	          current = (long long)json_integer_value(json_object_get(layout, "current"));
	if (out_bool(layout, "upgrade") && dataset < current)
		printf("dataset layout %lld (this tether writes layout %lld): run 'tether upgrade' to migrate it\n",
		       dataset, current);
	else if (out_bool(layout, "upgrade")) /* a manifest an older branch brought in */
		printf("some manifests are of a layout older than %lld: run 'tether upgrade' to migrate them\n",
		       current);
}

static int run_status(const struct args *a)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_status_opts opts = {
		TETHER_STATUS_OPTS_INIT,
		.snapshot = snapshot_choice(a),
		.progress = out_progress_allowed(),
		.progress_fn = out_progress,
	};
	json_t *report = NULL;
	int err = tether_status(repo, &opts, &report);
	tether_repo_free(repo);
	if (err && !report)
		return out_error(err);
	if (args_has(a, OPT_JSON))
		rc = out_json(report);
	else
		print_status(report);
	/* Objects that could not be checked: the report is printed, then the
	 * first one's error decides the exit code. Drift of immutable data is
	 * a refusal-grade fact: scripts and CI see it in the exit code
	 * whichever format they read. */
	if (rc == 0 && err)
		rc = out_error(err);
	else if (rc == 0 && any_refused(json_object_get(report, "objects")))
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
		"modified, never recorded, drifted (immutable data that changed; exit 3),\n"
		"or error (its system could not be read: every other object is still\n"
		"reported, then the first error's exit code).\n"
		"With [verify] on_status = true in tether.toml, status also checks that\n"
		"every pin HEAD's manifests name still exists (one listing per store) and\n"
		"reports an object whose pin is gone as unpinned (exit 3); not with\n"
		"--no-snapshot, which contacts no system.\n"
		"Without a snapshot the data is not fingerprinted, and each object shows\n"
		"whether its manifest was added or changed instead. Of --snapshot and\n"
		"--no-snapshot, the one given last wins.\n"
		"A stale workspace (the checkout moved to another bookmark without `tether\n"
		"new`, so .tether/workspace.toml names another bookmark's working branches)\n"
		"is said first, with the fix; commit and writable open refuse until then.",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_status,
};
