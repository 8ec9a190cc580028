#ifndef TETHER_CORE_REGISTRY_H
#define TETHER_CORE_REGISTRY_H

#include <tether/backend.h>

extern const struct tether_backend tt_backend_file;
extern const struct tether_backend tt_backend_memory;

/* tether_backend_find, also saying (*unknown, may be NULL) whether a
 * failure means no module offers the kind, as against a module that is
 * there and was refused (its message then says why). */
const struct tether_backend *tt_backend_find(const char *kind, int *unknown);

/* Capabilities of one object: the backend's, refined by
 * effective_capabilities, less PIN under `pin = "record"`. */
int tt_object_caps(const struct tether_backend *b, const struct tether_bctx *ctx,
                   const json_t *locator, const json_t *policy, unsigned *caps);

#endif
