/* tether-vcs-git's way to libgit2 (git_native.h): the module
 * tether-vcs-libgit2.so, beside this one (both are built into the build
 * directory and installed into the module directory together), loaded on
 * first need, once per process. */
#define _GNU_SOURCE
#include "vcs/git_native.h"

#include <tether/backend.h>

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct tether_vcs_ops *loaded;
static char why[PATH_MAX + 256];

static void load(void)
{
	Dl_info info;
	char path[PATH_MAX];
	if (!dladdr((const void *)&tt_git_native_ops, &info) || !info.dli_fname) {
		snprintf(why, sizeof why, "cannot tell where tether-vcs-git.so was loaded from");
		return;
	}
	const char *slash = strrchr(info.dli_fname, '/');
	int dirlen = slash ? (int)(slash - info.dli_fname) : 1;
	snprintf(path, sizeof path, "%.*s/tether-vcs-libgit2.so", dirlen, slash ? info.dli_fname : ".");
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const struct tether_vcs_ops *const *mod = h ? dlsym(h, "tether_vcs_module") : NULL;
	if (!mod || !mod[0] || mod[0]->version != TETHER_VCS_OPS_VERSION || mod[0]->size != sizeof *mod[0]) {
		snprintf(why, sizeof why, "cannot load %s: %s", path, h ? "no usable tether_vcs_module" : dlerror());
		return;
	}
	loaded = mod[0];
}

const struct tether_vcs_ops *tt_git_full_ops(void)
{
	pthread_once(&once, load);
	if (!loaded)
		tether_error_set(TETHER_ERROR, "%s", why);
	return loaded;
}
