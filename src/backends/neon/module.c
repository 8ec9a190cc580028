/* tether-backend-neon.so: the backend's table. */
#include "backends/neon/neon.h"

/* The LSN moves without user writes; the timeline is where it was read. */
static const char *const neon_volatile[] = {"lsn", "timeline", NULL};

static const char *const neon_config_keys[] = {NULL};

static const struct tether_backend neon_backend = {
	TETHER_BACKEND_INIT,
	.kind = NEON_KIND,
	.maturity = "experimental",
	.summary = "Neon Postgres branches over the Neon API v2 (tested against a fake of the Neon API backed by real "
	           "Postgres clusters, not a live Neon project)",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |
	        TETHER_CAP_NEEDS_QUIESCENCE | TETHER_CAP_RETENTION_BOUND | TETHER_CAP_BRANCH_IS_STORAGE |
	        TETHER_CAP_REMOTE_FINGERPRINT,
	.volatile_keys = neon_volatile,
	.make_locator = neon_make_locator,
	.identity = neon_identity,
	.fingerprint = neon_fingerprint,
	.pin = neon_pin,
	.unpin = neon_unpin,
	.list_pins = neon_list_pins,
	.verify = neon_verify,
	.fork = neon_fork,
	.delete_working_ref = neon_delete_working_ref,
	.list_working_refs = neon_list_working_refs,
	.delete_working_ref_if = neon_delete_working_ref_if,
	.open = neon_open,
	.check_state = neon_check_state,
	.secret_keys = neon_secret_keys,
	.add_options = neon_add_options,
	.config_keys = neon_config_keys,
	.open_store = neon_session_open,
	.close_store = neon_session_close,
	.check_quiescence = neon_check_quiescence,
	.verify_deep = neon_verify_deep,
};

static const struct tether_backend *const neon_backends[] = {&neon_backend, NULL};

TETHER_API const struct tether_module tether_module = {
	TETHER_MODULE_INIT,
	.backends = neon_backends,
};
