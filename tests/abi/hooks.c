/* A module in the struct tether_module form, with init and shutdown hooks,
 * and one small backend: kind "hooks", a file observed by its size. Each
 * hook appends a line to $TETHER_ABI_HOOKS_LOG, so run.sh can count them;
 * with $TETHER_ABI_HOOKS_FAIL set, init fails and the module is refused.
 *
 *   cc -std=c17 -shared -fPIC hooks.c $(pkg-config --cflags tether) \
 *      -o tether-backend-hooks.so
 */
#define _DEFAULT_SOURCE
#include <tether/backend.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static void note(const char *what)
{
	const char *log = getenv("TETHER_ABI_HOOKS_LOG");
	FILE *f = log && *log ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "%s\n", what);
		fclose(f);
	}
}

static int started;

static int hooks_init(void)
{
	note("init");
	if (getenv("TETHER_ABI_HOOKS_FAIL"))
		return tether_error_set(TETHER_ERROR, "hooks: told to fail by TETHER_ABI_HOOKS_FAIL");
	started = 1;
	return 0;
}

static void hooks_shutdown(void)
{
	note(started ? "shutdown" : "shutdown without init");
}

static int hk_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                           json_t **locator)
{
	(void)ctx;
	(void)options;
	char *path = tether_path_resolve(uri, cwd);
	if (!path)
		return tether_error_set(TETHER_EUSAGE, "hooks: cannot resolve %s", uri);
	*locator = json_pack("{s:s}", "path", path);
	free(path);
	return 0;
}

static int hk_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	*identity = json_deep_copy(locator);
	return 0;
}

static int hk_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                          struct tether_fingerprint *out)
{
	(void)ctx;
	(void)policy;
	/* Called only after init: the hook ran first. */
	if (!started)
		return tether_error_set(TETHER_ERROR, "hooks: fingerprint before init");
	const char *path = json_string_value(json_object_get(locator, "path"));
	struct stat st;
	if (!path || stat(path, &st) != 0)
		return tether_error_set(TETHER_ENOTFOUND, "hooks: cannot stat %s", path ? path : "(no path)");
	out->state = json_pack("{s:I}", "bytes", (json_int_t)st.st_size);
	return 0;
}

static const struct tether_backend hooks_backend = {
	TETHER_BACKEND_INIT,
	.kind = "hooks",
	.maturity = "experimental",
	.summary = "test: a module with init and shutdown hooks",
	.caps = TETHER_CAP_FINGERPRINT,
	.make_locator = hk_make_locator,
	.identity = hk_identity,
	.fingerprint = hk_fingerprint,
};

static const struct tether_backend *const hooks_backends[] = {&hooks_backend, NULL};

TETHER_API const struct tether_module tether_module = {
	TETHER_MODULE_INIT,
	.backends = hooks_backends,
	.init = hooks_init,
	.shutdown = hooks_shutdown,
};
