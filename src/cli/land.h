/* What `tether promote` and `tether merge` share: their options, the call,
 * and the report's text. */
#ifndef TETHER_CLI_LAND_H
#define TETHER_CLI_LAND_H

#include "args.h"

enum { LAND_OPT_JSON, LAND_OPT_DRY_RUN, LAND_OPT_PLAN, LAND_OPT_FROM_PLAN, LAND_OPT_MESSAGE };

/* The options both commands take, for their option tables (merge adds
 * LAND_OPT_MESSAGE). */
#define LAND_SHARED_OPTIONS \
	[LAND_OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" }, \
	[LAND_OPT_DRY_RUN] = { "dry-run", 0, ARG_FLAG, NULL, "print the plan; write nothing" }, \
	[LAND_OPT_PLAN] = { "plan", 0, ARG_VALUE, "FILE", "save the plan to FILE as JSON; write nothing else" }, \
	[LAND_OPT_FROM_PLAN] = { "from-plan", 0, ARG_VALUE, "FILE", \
	                         "re-check the plan in FILE and perform exactly its actions (exit 3 when stale)" }

/* Run promote (merge = 0) or merge with the parsed command line. */
int cli_land(const struct args *a, int merge);

#endif
