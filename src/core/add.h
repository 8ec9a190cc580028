/* add.c's core, shared with import. */
#ifndef TETHER_CORE_ADD_H
#define TETHER_CORE_ADD_H

#include <tether/backend.h>

int tt_add_build(const struct tether_backend *b, const struct tether_bctx *ctx, const char *uri, const json_t *given,
                 const char *cwd, int create, json_t **locator_out, json_t **policy_out);

#endif
