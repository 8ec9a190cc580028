/* tether promote / tether merge: the command line and the report's text. */
#include "land.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A state in one line for a plan: {"sha":"…"} as JSON, cut short. */
static char *brief(const json_t *state)
{
	char *text = json_is_object(state) ? json_dumps(state, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (text && strlen(text) > 72)
		strcpy(text + 69, "...");
	return text;
}

static void print_planned(const json_t *a)
{
	const char *action = out_str_or(a, "action", "?");
	const char *key = out_escape(out_str_or(a, "key", "?"));
	if (strcmp(action, "promote") != 0 && strcmp(action, "merge") != 0) {
		printf("  %-10s %s (%s)\n", action, key, out_escape(out_str_or(a, "detail", "")));
		return;
	}
	char *from = brief(json_object_get(a, "expect")), *to = brief(json_object_get(a, "head"));
	printf("  %-10s %s from %s (if its base branch is still at %s; its working branch is at %s)\n", action, key,
	       out_escape(out_str_or(a, "branch", "?")), from ? from : "?", to ? to : "?");
	free(from);
	free(to);
}

static void print_plan(const json_t *report, const char *op)
{
	const json_t *plan = json_object_get(report, "plan");
	printf("plan: %s\n", op);
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(plan, "actions"), i, a)
		print_planned(a);
	if (!json_array_size(json_object_get(plan, "actions")))
		printf("  (no object has a working branch in this checkout)\n");
	out_plan_footer(report, op);
}

/* "  promoted   code: main 0123456789ab -> 4567890abcde (from tether.ws.ab12cd34.feat)" */
static void print_done(const json_t *o)
{
	const char *action = out_str_or(o, "action", "?");
	const json_t *base = json_object_get(o, "base");
	if (!json_is_object(base))
		base = NULL;
	printf("  %-10s %s", action, out_escape(out_str_or(o, "key", "?")));
	if (base)
		printf(": %s %.12s -> %.12s", out_escape(out_str_or(base, "branch", "?")), out_str_or(base, "from", "?"),
		       out_str_or(base, "to", "?"));
	if (base && out_str(o, "branch"))
		printf(" (from %s)", out_escape(out_str(o, "branch")));
	if (out_str(o, "detail"))
		printf(" (%s)", out_escape(out_str(o, "detail")));
	printf("\n");
}

static void print_report(const json_t *report, const char *op)
{
	if (out_bool(report, "dry_run")) {
		print_plan(report, op);
		return;
	}
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(report, "objects"), i, o)
		print_done(o);
	if (!json_array_size(json_object_get(report, "objects")))
		printf("nothing to %s: no object has a working branch in this checkout\n", op);
}

int cli_land(const struct args *a, int merge)
{
	const char *op = merge ? "merge" : "promote";
	const char *from = args_value(a, LAND_OPT_FROM_PLAN);
	const char *message = merge ? args_value(a, LAND_OPT_MESSAGE) : NULL;
	if (from && (a->npos || message))
		return out_usage(op, "--from-plan takes no KEY%s (the plan names the objects) for '%s'",
		                 merge ? " and no -m" : "", op);
	json_t *plan;
	tether_repo *repo;
	int rc = cli_find_repo_with_plan(from, &plan, &repo);
	if (rc)
		return rc;
	struct tether_land_opts opts = {
		TETHER_LAND_OPTS_INIT,
		.keys = a->pos,
		.n_keys = (size_t)a->npos,
		.message = message,
		.dry_run = args_has(a, LAND_OPT_DRY_RUN),
		.plan_out = args_value(a, LAND_OPT_PLAN),
		.from_plan = plan,
		.from_plan_file = from,
	};
	json_t *report = NULL;
	int err = merge ? tether_merge(repo, &opts, &report) : tether_promote(repo, &opts, &report);
	tether_repo_free(repo);
	json_decref(plan);
	if (err && !report)
		return out_error(err);
	/* merge: objects that conflicted are in the report, which is printed
	 * before the error (exit 3), as status prints drift. */
	rc = args_has(a, LAND_OPT_JSON) ? out_json(report) : (print_report(report, op), 0);
	json_decref(report);
	if (err)
		return out_error(err);
	return rc;
}
