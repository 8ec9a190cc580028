/* What `tether promote` and `tether merge` share: their options, the call,
 * and the report's text. */
#ifndef TETHER_CLI_LAND_H
#define TETHER_CLI_LAND_H

#include "args.h"

enum { LAND_OPT_JSON, LAND_OPT_DRY_RUN, LAND_OPT_PLAN, LAND_OPT_FROM_PLAN, LAND_OPT_MESSAGE };

/* Run promote (merge = 0) or merge with the parsed command line. */
int cli_land(const struct args *a, int merge);

#endif
