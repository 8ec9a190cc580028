/* An application linked against libtether.so (no copy of libtether of its
 * own, nothing exported) loads every module: each module's undefined
 * tether_* symbols bind to this process's libtether.so.
 *
 * host_linked MODULE.so...: each opens with RTLD_NOW (every symbol bound
 * now, or the open fails) and has its entry point; then the engine itself
 * loads the backend modules for "git" and "icechunk" (TETHER_MODULE_PATH).
 * Prints one line per failure; exits 0 when there is none. */
#include <tether/backend.h>

#include <dlfcn.h>
#include <stdio.h>

/* tether_module: the table form (struct tether_module) backend modules
 * such as lakefs and neon export; the others are the older and the
 * internal modules' entry points. */
static const char *const entry_points[] = {"tether_module", "tether_backend_module", "tether_vcs_module", "tether_gitbe_libgit2",
                                           "tether_store_module", "tether_ducklake_pg_open",
                                           "tether_ducklake_mysql_open", "tether_sql_module"};

int main(int argc, char **argv)
{
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
		void *entry = NULL;

		if (!h) {
			printf("FAIL: cannot load %s: %s\n", argv[i], dlerror());
			failed++;
			continue;
		}
		for (size_t k = 0; k < sizeof entry_points / sizeof *entry_points && !entry; k++)
			entry = dlsym(h, entry_points[k]);
		if (!entry) {
			printf("FAIL: %s has no module entry point\n", argv[i]);
			failed++;
		}
	}
	for (const char *const *kind = (const char *const[]){"git", "icechunk", NULL}; *kind; kind++)
		if (!tether_backend_find(*kind)) {
			printf("FAIL: the engine cannot load the %s module: %s\n", *kind, tether_error_last());
			failed++;
		}
	printf("%d modules loaded into a host linked with libtether.so, %d failures\n", argc - 1, failed);
	return failed ? 1 : 0;
}
