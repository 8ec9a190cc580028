/* dirsnap with a drift rule: a branch file recorded once may not change
 * (check_drift refuses it), to show whose hint a refused commit prints.
 * Built as tether-backend-dirsnap.so in a directory of its own, with
 *
 *   -DFROZEN_HINT   the backend declares a drift_hint: the commit prints it
 *   (nothing)       it declares none: the commit prints tether's generic one
 *
 * run.sh asserts which hint each prints. */
#define tether_backend_module dirsnap_honest_module /* keep the honest table out of the way */
#include "dirsnap.c"
#undef tether_backend_module

static int frozen_check_drift(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                              const json_t *recorded, const json_t *current, int *refused, char **why)
{
	(void)ctx;
	(void)locator;
	(void)policy;
	const char *was = recorded ? sha_of(recorded) : NULL, *now = sha_of(current);
	*refused = was && now && strcmp(was, now) != 0;
	*why = *refused ? strdup("a frozen branch file changed") : NULL;
	return 0;
}

static struct tether_backend frozen_backend;

/* The honest table with the drift rule added, before tether looks. */
__attribute__((constructor)) static void freeze(void)
{
	frozen_backend = dirsnap_backend;
	frozen_backend.check_drift = frozen_check_drift;
#if defined(FROZEN_HINT)
	frozen_backend.drift_hint = "put the branch file back with dirsnap-restore, or add the store again";
#endif
}

TETHER_API tether_backend_module_t tether_backend_module = {&frozen_backend, NULL};
