/* tether-conformance KIND [--harness MODULE.so]: run the conformance suite
 * against the backend of kind KIND, with the built-in harness for an
 * in-tree kind or one loaded from a shared object. tether-conformance
 * --store URI: the store contract against the byte store at URI.
 *
 * The runner carries all of libtether (statically) and exports its public
 * API, so a backend module or harness module it loads binds to this copy:
 * one registry, one error slot, whatever the modules were linked with. */
#include <tether/testing.h>

#include "testing/harnesses.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *kind;
	const struct tether_harness *(*entry)(void);
} builtin[] = {
	{"memory", tt_harness_memory},
	{"file", tt_harness_file},
	{"git", tt_harness_git},
	{"icechunk", tt_harness_icechunk},
	{"lance", tt_harness_lance},
	{"delta", tt_harness_delta},
};

static void usage(FILE *f)
{
	fputs("usage: tether-conformance KIND [--harness MODULE.so] [--fault-store]\n"
	      "       tether-conformance --store URI [--store-options JSON|FILE]\n"
	      "\n"
	      "Run tether's backend conformance suite against the backend of kind KIND (found\n"
	      "built in, or as tether-backend-KIND.so on $TETHER_MODULE_PATH). MODULE.so is a\n"
	      "harness exporting `const struct tether_harness *tether_harness_entry(void)`;\n"
	      "without it the built-in harness for KIND is used (memory, file, git, icechunk, lance).\n"
	      "With --fault-store the harness's objects (their locator's \"uri\", a local path)\n"
	      "are put on the fault-injecting store, fault+file://PATH, and the store checks\n"
	      "run: a store failure must surface as an error and leave nothing half-written.\n"
	      "\n"
	      "With --store, the store contract instead: every check a byte store must pass,\n"
	      "through tether's store front, against the store at URI (any scheme; fault+file://\n"
	      "PATH is the fault store, whose injected faults are checked too). The checks work\n"
	      "in a fresh URI/contract-<random> and delete it at the end. The store's options\n"
	      "are a JSON object, given inline or as a file; without them the store resolves\n"
	      "its own (the environment: AWS_ENDPOINT_URL_S3, ...).\n"
	      "\n"
	      "Prints one line per check and \"N passed, N failed\"; exits 1 on any failure.\n",
	      f);
}

static int error(const char *fmt, const char *arg, const char *detail)
{
	fputs("tether-conformance: error: ", stderr);
	fprintf(stderr, fmt, arg);
	if (detail && *detail)
		fprintf(stderr, ": %s", detail);
	fputc('\n', stderr);
	return 1;
}

static const struct tether_harness *load_harness(const char *path, void **module)
{
	/* dlopen searches the library path for a bare name; a harness is a file. */
	char *file = strchr(path, '/') ? strdup(path) : NULL;
	if (!file) {
		size_t n = strlen(path) + 3;
		file = malloc(n);
		if (file)
			snprintf(file, n, "./%s", path);
	}
	*module = file ? dlopen(file, RTLD_NOW | RTLD_LOCAL) : NULL;
	free(file);
	if (!*module) {
		error("cannot load harness %s", path, dlerror());
		return NULL;
	}
	tether_harness_entry_fn entry;
	/* POSIX's way from a data pointer to a function pointer. */
	void *sym = dlsym(*module, "tether_harness_entry");
	memcpy(&entry, &sym, sizeof entry);
	if (!sym) {
		error("%s exports no tether_harness_entry", path, NULL);
		return NULL;
	}
	const struct tether_harness *h = entry();
	if (!h)
		error("%s: tether_harness_entry returned NULL", path, NULL);
	return h;
}

static const struct tether_harness *builtin_harness(const char *kind)
{
	for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
		if (strcmp(builtin[i].kind, kind) != 0)
			continue;
		const struct tether_harness *h = builtin[i].entry();
		if (!h)
			error("the built-in harness for kind %s cannot start", kind, tether_error_last());
		return h;
	}
	error("no built-in harness for kind %s: give one with --harness MODULE.so", kind, NULL);
	return NULL;
}

/* --store-options: a JSON object inline ("{...}") or in a file. */
static json_t *load_store_options(const char *arg)
{
	json_error_t err;
	const char *p = arg;
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	json_t *v = *p == '{' ? json_loads(arg, 0, &err) : json_load_file(arg, 0, &err);
	if (!v) {
		fprintf(stderr, "tether-conformance: error: --store-options %s:%d:%d: %s\n", *p == '{' ? "(inline)" : arg,
		        err.line, err.column, err.text);
		return NULL;
	}
	if (!json_is_object(v)) {
		fprintf(stderr, "tether-conformance: error: --store-options %s: not a JSON object\n",
		        *p == '{' ? "(inline)" : arg);
		json_decref(v);
		return NULL;
	}
	return v;
}

static int run_store_contract(const char *uri, const char *options_arg)
{
	json_t *options = NULL;
	if (options_arg && !(options = load_store_options(options_arg)))
		return 2;
	struct tether_conformance_counts counts;
	tether_store_conformance(uri, options, stdout, &counts);
	json_decref(options);
	if (counts.skipped)
		printf("# %d skipped\n", counts.skipped);
	printf("%d passed, %d failed\n", counts.passed, counts.failed);
	return counts.failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *kind = NULL, *module_path = NULL, *store_uri = NULL, *store_options = NULL;
	int fault_store = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--harness") == 0 && i + 1 < argc) {
			module_path = argv[++i];
		} else if (strncmp(argv[i], "--harness=", 10) == 0) {
			module_path = argv[i] + 10;
		} else if (strcmp(argv[i], "--fault-store") == 0) {
			fault_store = 1;
		} else if (strcmp(argv[i], "--store") == 0 && i + 1 < argc) {
			store_uri = argv[++i];
		} else if (strncmp(argv[i], "--store=", 8) == 0) {
			store_uri = argv[i] + 8;
		} else if (strcmp(argv[i], "--store-options") == 0 && i + 1 < argc) {
			store_options = argv[++i];
		} else if (strncmp(argv[i], "--store-options=", 16) == 0) {
			store_options = argv[i] + 16;
		} else if (argv[i][0] != '-' && !kind) {
			kind = argv[i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (store_uri || store_options) {
		if (!store_uri || kind || module_path || fault_store) {
			usage(stderr);
			return 2;
		}
		return run_store_contract(store_uri, store_options);
	}
	if (!kind) {
		usage(stderr);
		return 2;
	}

	void *module = NULL;
	const struct tether_harness *found = module_path ? load_harness(module_path, &module) : builtin_harness(kind);
	if (!found) {
		if (module)
			dlclose(module);
		return 1;
	}
	if (fault_store && !(found = tt_fault_harness(found))) {
		if (module)
			dlclose(module);
		return error("cannot start the fault store", "", tether_error_last());
	}
	/* A copy to fill the backend into: as much of the harness as it says
	 * it has (an older one is shorter), the rest zero; the suite checks
	 * its version. */
	struct tether_harness h;
	memset(&h, 0, sizeof h);
	size_t n = found->size >= 2 * sizeof(uint32_t) && found->size <= sizeof h ? found->size : 2 * sizeof(uint32_t);
	memcpy(&h, found, n);
	if (!h.backend) {
		h.backend = tether_backend_find(kind);
		if (!h.backend) {
			if (module)
				dlclose(module);
			return error("kind %s", kind, tether_error_last());
		}
	} else if (!h.backend->kind || strcmp(h.backend->kind, kind) != 0) {
		if (module)
			dlclose(module);
		return error("the harness is for kind %s", h.backend->kind ? h.backend->kind : "(none)", NULL);
	}

	struct tether_conformance_counts counts;
	tether_conformance_run_counts(&h, stdout, &counts);
	if (counts.skipped)
		printf("# %d skipped\n", counts.skipped);
	printf("%d passed, %d failed\n", counts.passed, counts.failed);
	if (module)
		dlclose(module);
	return counts.failed ? 1 : 0;
}
