/* A host that links nothing of tether and dlopens libtether.so with
 * RTLD_LOCAL (as a language binding or a plug-in host does): the engine
 * must still load its modules, whose tether_* symbols are not in the
 * global scope until libtether puts them there (module.c,
 * export_api_to_modules).
 *
 * host_dlopen LIBTETHER.so: the engine loads the "git" and "icechunk"
 * backend modules (TETHER_MODULE_PATH). Exits 0 when both load. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: host_dlopen LIBTETHER.so\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("FAIL: cannot load %s: %s\n", argv[1], dlerror());
		return 1;
	}
	const void *(*find)(const char *) = (const void *(*)(const char *))dlsym(lib, "tether_backend_find");
	const char *(*last)(void) = (const char *(*)(void))dlsym(lib, "tether_error_last");
	if (!find || !last) {
		printf("FAIL: %s exports no tether_backend_find or tether_error_last\n", argv[1]);
		return 1;
	}
	int failed = 0;
	for (const char *const *kind = (const char *const[]){"git", "icechunk", NULL}; *kind; kind++)
		if (!find(*kind)) {
			printf("FAIL: libtether.so, loaded RTLD_LOCAL, cannot load the %s module: %s\n", *kind, last());
			failed++;
		}
	printf("modules loaded through a libtether.so opened RTLD_LOCAL, %d failures\n", failed);
	return failed ? 1 : 0;
}
