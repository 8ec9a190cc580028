/* A backend module's init and shutdown hooks (struct tether_module). */
#ifndef TETHER_CORE_MODULE_HOOKS_H
#define TETHER_CORE_MODULE_HOOKS_H

#include <tether/backend.h>

/* Run m's init, the first time m is seen (a module is loaded once, but its
 * descriptor is met again when another of its kinds is looked up), and
 * keep its shutdown for the end of the process. 0, or TETHER_ERROR naming
 * the module (`path`) when init failed; a module whose init failed is
 * refused from then on, and its shutdown never runs. */
int tt_module_hooks_start(const struct tether_module *m, const char *path);

#endif
