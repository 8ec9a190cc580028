/* tether commit -m MSG: pin or record every object, write the manifests
 * and make the VCS commit. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_MESSAGE, OPT_STRICT, OPT_JSON, OPT_DRY_RUN, OPT_PLAN, OPT_FROM_PLAN, OPT_FORCE };

static const struct arg_option options[] = {
	[OPT_MESSAGE] = { "message", 'm', ARG_VALUE, "MSG", "the commit message (required, unless the plan has one)" },
	[OPT_STRICT] = { "strict", 0, ARG_FLAG, NULL,
	                 "refuse (exit 3) when an object can be neither pinned nor addressed" },
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "print the plan; write nothing" },
	[OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; write nothing else" },
	[OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE",
	                    "re-check the plan in FILE and perform exactly its actions (exit 3 when stale)" },
	[OPT_FORCE] = { "force", 0, ARG_FLAG, NULL,
	                "commit even while a system that needs quiescence reports active writers" },
};

/* git's short form of a commit id. */
enum { SHORT_ID = 7 };

static enum out_color action_color(const char *action)
{
	if (strcmp(action, "pinned") == 0)
		return OUT_GREEN;
	if (strcmp(action, "recorded") == 0)
		return OUT_CYAN;
	return OUT_RESET;
}

/* "  pinned    raw/plate1 pin ab12cd34.0123456789abcdef" */
static void print_object(const json_t *o)
{
	const char *action = out_str_or(o, "action", "?");
	const char *pin = out_str(o, "pin");
	printf("  %s%-9s%s %s", out_color(action_color(action)), action, out_color(OUT_RESET),
	       out_str_or(o, "key", "?"));
	if (pin)
		printf(" pin %s", pin);
	/* An Observed object's state is recorded but cannot be brought back;
	 * say so where it happens, not only in the warnings. */
	if (json_is_false(json_object_get(o, "recoverable")) && strcmp(action, "unchanged") != 0)
		printf(" (not recoverable)");
	printf("\n");
}

/* "  pin       raw/plate1 pin ab12cd34.0123456789abcdef" */
static void print_action(const json_t *a)
{
	const char *action = out_str_or(a, "action", "?");
	printf("  %-9s %s", action, out_str_or(a, "key", "?"));
	if (out_str(a, "pin"))
		printf(" pin %s", out_str(a, "pin"));
	if (json_is_false(json_object_get(a, "recoverable")) && strcmp(action, "unchanged") != 0)
		printf(" (not recoverable)");
	printf("\n");
}

/* A fork new.auto_fork plans after the commit, with its condition. */
static void print_planned_fork(const json_t *f)
{
	const json_t *expect = json_object_get(f, "expect");
	char *at = json_is_object(expect) ? json_dumps(expect, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	printf("  %-9s %s -> %s", out_str_or(f, "action", "?"), out_str_or(f, "key", "?"), out_str_or(f, "branch", "?"));
	if (json_is_null(expect))
		printf(" (if the branch does not exist)");
	else if (at)
		printf(" (if the branch is still at %s)", at);
	printf("\n");
	free(at);
}

static void print_plan(const json_t *report)
{
	const json_t *plan = json_object_get(report, "plan");
	const char *message = out_str_or(report, "message", "");
	const char *head = out_str(json_object_get(plan, "preconditions"), "head");
	printf("plan: commit \"%.*s\" on %s%.12s\n", (int)strcspn(message, "\n"), message,
	       head ? "" : "an unborn branch", head ? head : "");
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(plan, "actions"), i, a)
		print_action(a);
	json_array_foreach(json_object_get(report, "files"), i, a)
		printf("  %-9s %s\n", out_str_or(a, "change", "?"), out_escape(out_str_or(a, "path", "?")));
	const json_t *forks = json_object_get(plan, "forks");
	if (json_array_size(forks))
		printf("then, once the commit lands (new.auto_fork):\n");
	json_array_foreach(forks, i, a)
		print_planned_fork(a);
	out_plan_footer(report, "commit");
}

static void print_commit(const json_t *report, const char *message)
{
	if (out_bool(report, "dry_run")) {
		print_plan(report);
		return;
	}
	const char *id = out_str(report, "commit");
	if (!id) {
		printf("nothing to commit: every object is unchanged\n");
		return;
	}
	/* The header shows the message's first line, as git does. */
	size_t first_line = strcspn(message, "\n");
	printf("[%.*s] %.*s\n", SHORT_ID, id, (int)first_line, message);
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(report, "objects"), i, o)
		print_object(o);
	json_array_foreach(json_object_get(report, "files"), i, o)
		printf("  %-9s %s\n", out_str_or(o, "change", "?"), out_escape(out_str_or(o, "path", "?")));
	/* A re-fork that left a branch where the commit found it is not news. */
	json_array_foreach(json_object_get(report, "forks"), i, o)
		if (strcmp(out_str_or(o, "action", ""), "forked") == 0)
			printf("  %-9s %s -> %s\n", "forked", out_str_or(o, "key", "?"), out_str_or(o, "branch", "?"));
}

static int run_commit(const struct args *a)
{
	const char *message = args_value(a, OPT_MESSAGE);
	const char *from = args_value(a, OPT_FROM_PLAN);
	if (!message && !from)
		return out_usage("commit", "missing option -m MSG for 'commit'");
	if (message && !*message)
		return out_usage("commit", "empty commit message for 'commit'");

	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	struct tether_commit_opts opts = {
		TETHER_COMMIT_OPTS_INIT,
		.message = message,
		.strict = args_has(a, OPT_STRICT),
		.progress = out_progress_allowed(),
		.progress_fn = out_progress,
		.dry_run = args_has(a, OPT_DRY_RUN),
		.plan_out = args_value(a, OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
		.force = args_has(a, OPT_FORCE),
	};
	json_t *report = NULL;
	int err = tether_commit(repo, &opts, &report);
	tether_repo_free(repo);
	json_decref(plan);
	if (err) {
		json_decref(report);
		return out_error(err);
	}
	if (args_has(a, OPT_JSON))
		rc = out_json(report);
	else
		print_commit(report, out_str_or(report, "message", message));
	fflush(stdout); /* the result first, then what to watch out for */
	out_warnings(report);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_commit = {
	.name = "commit",
	.summary = "record every object's state in a VCS commit",
	.usage = "commit -m MSG [--strict] [--force] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.description =
		"Fingerprint every object, pin the ones that can be pinned, record the\n"
		"state of the others, write the manifests and make the VCS commit.\n"
		"Objects that can only be observed are recorded with a warning (their\n"
		"state cannot be recovered later); --strict refuses them instead. When no\n"
		"object changed, no commit is made.\n"
		"\n"
		"A system that needs writers stopped for a consistent state\n"
		"(NEEDS_QUIESCENCE) is asked first whether writers are active; while one\n"
		"is, the commit refuses (exit 3), naming the object, before anything is\n"
		"read or written. --force skips that check (with a warning per object).\n"
		"\n"
		"On a bookmark `tether new` put the checkout on, with [new] auto_fork =\n"
		"true (the default), the commit then leaves every object with write = fork\n"
		"on the bookmark's working branch at the state just recorded: it forks the\n"
		"ones with no working ref yet (conditionally) and re-forks the others. A\n"
		"fork that fails is a warning; the commit stands.\n"
		"\n"
		"--dry-run prints the plan (one line per object: pin, record or unchanged)\n"
		"and writes nothing; --plan FILE also saves it. --from-plan FILE snapshots\n"
		"again, refuses (exit 3) when HEAD, a manifest or an object's state moved\n"
		"since the plan, and otherwise performs exactly its actions (the plan's\n"
		"message, unless -m is given).",
	.spec = { ARGS_OPTIONS(options) },
	.run = run_commit,
};
