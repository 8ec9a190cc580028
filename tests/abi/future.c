/* A backend module from a tether newer than this one: its struct
 * tether_backend claims the version after TETHER_BACKEND_VERSION (and the
 * size such a struct would have, one member longer). tether must refuse it
 * at load, naming both versions and the module's file. */
#include <tether/backend.h>

static int fu_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                           json_t **locator)
{
	(void)ctx, (void)options, (void)cwd;
	*locator = json_pack("{s:s}", "path", uri);
	return 0;
}

static int fu_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	*identity = json_deep_copy(locator);
	return 0;
}

static int fu_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                          struct tether_fingerprint *out)
{
	(void)ctx, (void)locator, (void)policy;
	out->state = json_pack("{}");
	return 0;
}

/* The layout a newer header would have: today's, and one member more. */
static const struct {
	struct tether_backend today;
	int (*tomorrow)(void);
} future = {
	.today = {
		.version = TETHER_BACKEND_VERSION + 1,
		.size = sizeof future,
		.kind = "future",
		.maturity = "experimental",
		.summary = "test: built against a newer tether",
		.caps = TETHER_CAP_FINGERPRINT,
		.make_locator = fu_make_locator,
		.identity = fu_identity,
		.fingerprint = fu_fingerprint,
	},
};

TETHER_API tether_backend_module_t tether_backend_module = {&future.today, NULL};
