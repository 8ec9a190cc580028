#ifndef TETHER_CORE_REGISTRY_H
#define TETHER_CORE_REGISTRY_H

#include <tether/backend.h>

extern const struct tether_backend tt_backend_file;
extern const struct tether_backend tt_backend_memory;

/* Load every tether-backend-<kind>.so on the module path (a module that
 * does not load is left out), as `tether backends` does. */
void tt_backends_load_modules(void);
/* The backends known now: built-ins first, then the registered ones by
 * kind. malloc'd, NULL-terminated, *n of them. */
const struct tether_backend **tt_backends_loaded(size_t *n);
/* A backend already known, without loading a module; NULL otherwise. */
const struct tether_backend *tt_backend_find_loaded(const char *kind);
/* tether_backend_find, also saying (*unknown, may be NULL) whether a
 * failure means no module offers the kind, as against a module that is
 * there and was refused (its message then says why). */
const struct tether_backend *tt_backend_find(const char *kind, int *unknown);

/* Capabilities of one object: the backend's, refined by
 * effective_capabilities, less PIN under `pin = "record"`. */
int tt_object_caps(const struct tether_backend *b, const struct tether_bctx *ctx,
                   const json_t *locator, const json_t *policy, unsigned *caps);

#endif
