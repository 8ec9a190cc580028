/* Modules: shared objects loaded with dlopen on first use. Heavy libraries
 * (libgit2 now; libcurl, libpq later) live only in modules, so a command
 * pays to load them only when it touches what needs them.
 *
 * Search path, first match wins: $TETHER_MODULE_PATH (colon-separated),
 * then the directory libtether was loaded from and its tether/
 * subdirectory, then the install-time module directory. */
#ifndef TETHER_CORE_MODULE_H
#define TETHER_CORE_MODULE_H

/* Load `file` (e.g. "tether-backend-dirsnap.so") and return its handle,
 * and in *path (malloc'd, may be NULL) the file it was found as; NULL with
 * the error set when it is nowhere on the path (*missing = 1; missing may
 * be NULL) or there but does not load (*missing = 0). */
void *tt_module_open(const char *file, char **path, int *missing);
/* The address of `symbol` in a module tt_module_open gave, or NULL. */
void *tt_module_find(void *handle, const char *symbol);

/* Load `file` (e.g. "tether-vcs-git.so") and return the address of
 * `symbol` in it, or NULL with TETHER_ENOTFOUND set. A module is loaded
 * once per process. */
void *tt_module_symbol(const char *file, const char *symbol);

/* Call cb(ud, name) for every file on the module path whose name starts
 * with `prefix` and ends in ".so" (each name once, first directory wins). */
void tt_module_each(const char *prefix, void (*cb)(void *ud, const char *name), void *ud);

#endif
