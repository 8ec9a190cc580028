/* dirsnap with one lie in it, to prove the suite can fail: a suite that
 * passes everything proves nothing. Built as tether-backend-dirsnap.so in
 * a directory of its own, with one of
 *
 *   -DLIE_VERIFY   verify says every state is held, even after unpin
 *   -DLIE_EXPECT   fork ignores `expect`, so a stale plan moves a ref
 *
 * run.sh asserts the suite fails it, on the check that lie breaks. */
#define tether_backend_module dirsnap_honest_module /* keep the honest table out of the way */
#include "dirsnap.c"
#undef tether_backend_module

#if defined(LIE_VERIFY)
static int lying_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                        const json_t *pin_ref, int *ok, char **detail)
{
	(void)ctx;
	(void)locator;
	(void)state;
	(void)pin_ref;
	*ok = 1;
	*detail = NULL;
	return 0;
}
#elif defined(LIE_EXPECT)
static int lying_fork(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                      const json_t *pin_ref, const char *branch, const json_t *expect, json_t **working_ref)
{
	(void)expect;
	return ds_fork(ctx, locator, state, pin_ref, branch, NULL, working_ref);
}
#else
#error "define LIE_VERIFY or LIE_EXPECT"
#endif

static struct tether_backend broken_backend;

/* The honest table with one function swapped, before tether looks. */
__attribute__((constructor)) static void lie(void)
{
	broken_backend = dirsnap_backend;
#if defined(LIE_VERIFY)
	broken_backend.verify = lying_verify;
#else
	broken_backend.fork = lying_fork;
#endif
}

TETHER_API tether_backend_module_t tether_backend_module = {&broken_backend, NULL};
