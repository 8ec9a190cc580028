/* dladdr() is a GNU extension: it finds the directory libtether came from. */
#define _GNU_SOURCE
#include "core/module.h"

#include <tether/backend.h>

#include "tether_config.h"
#include "util/fsutil.h"

#include <dirent.h>
#include <jansson.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;

static char *library_dir(void)
{
	Dl_info info;
	if (!dladdr((void *)&tether_backend_find, &info) || !info.dli_fname)
		return NULL;
	char real[PATH_MAX];
	if (!realpath(info.dli_fname, real))
		return NULL;
	char *slash = strrchr(real, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return strdup(real);
}

static void *try_open(const char *dir, const char *file, char **found)
{
	char *path = tt_path_join(dir, file);
	void *h = tt_exists(path) ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!h && tt_exists(path))
		tether_error_set(TETHER_ERROR, "cannot load module %s: %s", path, dlerror());
	if (h && found)
		*found = path;
	else
		free(path);
	return h;
}

/* Modules do not link libtether.so: the tether_* symbols they call are
 * bound at dlopen to the host's copy, which must be in the global scope.
 * It is when the host is the tether binary (libtether inside, its API
 * exported) or links libtether.so; it is not when the host dlopened
 * libtether.so itself with RTLD_LOCAL (a language binding, a plug-in
 * host), and a module would then fail on its first undefined symbol. So
 * libtether promotes itself to the global scope before the first module:
 * RTLD_NOLOAD finds the object already mapped and maps nothing. (In the
 * tether binary that finds the binary or nothing; either way no change.)
 * The reference it takes is kept, as the modules are. Under module_lock. */
static void export_api_to_modules(void)
{
	static int done;
	Dl_info info;

	if (done)
		return;
	done = 1;
	if (dladdr((void *)&tether_backend_find, &info) && info.dli_fname && *info.dli_fname)
		(void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
	(void)dlerror();
}

static void *open_module(const char *file, char **found)
{
	void *h = NULL;
	export_api_to_modules();
	const char *env = getenv("TETHER_MODULE_PATH");
	if (env && *env) {
		char *copy = strdup(env), *save = NULL;
		for (char *d = strtok_r(copy, ":", &save); d && !h; d = strtok_r(NULL, ":", &save))
			h = try_open(d, file, found);
		free(copy);
	}
	char *libdir = h ? NULL : library_dir();
	if (libdir) {
		char *sub = tt_path_join(libdir, "tether");
		h = try_open(sub, file, found);
		if (!h)
			h = try_open(libdir, file, found);
		free(sub);
		free(libdir);
	}
	if (!h)
		h = try_open(TETHER_MODULEDIR, file, found);
	return h;
}

void *tt_module_open(const char *file, char **path, int *missing)
{
	pthread_mutex_lock(&module_lock);
	tether_error_clear();
	if (path)
		*path = NULL;
	void *h = open_module(file, path);
	if (missing)
		*missing = !h && !*tether_error_last();
	if (!h && !*tether_error_last())
		tether_error_set(TETHER_ENOTFOUND, "module %s not found (searched $TETHER_MODULE_PATH, "
		                 "libtether's directory and %s)", file, TETHER_MODULEDIR);
	pthread_mutex_unlock(&module_lock);
	return h;
}

void *tt_module_symbol(const char *file, const char *symbol)
{
	char *path = NULL;
	void *h = tt_module_open(file, &path, NULL);
	void *sym = h ? dlsym(h, symbol) : NULL;
	if (h && !sym)
		tether_error_set(TETHER_ERROR, "module %s has no symbol %s", path, symbol);
	free(path);
	return sym;
}

void *tt_module_find(void *handle, const char *symbol)
{
	return dlsym(handle, symbol);
}

static void scan_dir(const char *dir, const char *prefix, json_t *seen, void (*cb)(void *, const char *), void *ud)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	size_t pl = strlen(prefix);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n <= pl + 3 || strncmp(e->d_name, prefix, pl) != 0 || strcmp(e->d_name + n - 3, ".so") != 0)
			continue;
		if (json_object_get(seen, e->d_name))
			continue;
		json_object_set_new(seen, e->d_name, json_true());
		cb(ud, e->d_name);
	}
	closedir(d);
}

void tt_module_each(const char *prefix, void (*cb)(void *ud, const char *name), void *ud)
{
	json_t *seen = json_object();
	const char *env = getenv("TETHER_MODULE_PATH");
	if (env && *env) {
		char *copy = strdup(env), *save = NULL;
		for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
			scan_dir(d, prefix, seen, cb, ud);
		free(copy);
	}
	char *libdir = library_dir();
	if (libdir) {
		char *sub = tt_path_join(libdir, "tether");
		scan_dir(sub, prefix, seen, cb, ud);
		scan_dir(libdir, prefix, seen, cb, ud);
		free(sub);
		free(libdir);
	}
	scan_dir(TETHER_MODULEDIR, prefix, seen, cb, ud);
	json_decref(seen);
}
