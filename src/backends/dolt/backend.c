/* The `dolt` backend: Dolt databases on a Dolt SQL server (Forkable).
 * Built as the module tether-backend-dolt.so, the only part of tether that
 * links libmariadb. This file is the description; locator.c, conn.c,
 * state.c, pins.c, forks.c, merge.c and history.c the rest. */
#include "backends/dolt/dolt.h"

#define DT_CAPS                                                                                                        \
	(TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK | TETHER_CAP_ATOMIC_REF |   \
	 TETHER_CAP_DIFF | TETHER_CAP_HISTORY | TETHER_CAP_PROMOTE | TETHER_CAP_MERGE | TETHER_CAP_REMOTE_FINGERPRINT)

/* Nothing from the object's own secrets table: credentials come from the
 * server's [uris] entry only (conn.c says why). */
static const char *const dt_secret_keys[] = {NULL};
/* Where the state was read, not what it holds (state.c). */
static const char *const dt_volatile_keys[] = {"dirty_unchecked", NULL};
static const char *const dt_config_keys[] = {NULL};

static const struct tether_backend dt_backend = {
	TETHER_BACKEND_INIT,
	.kind = "dolt",
	.maturity = "experimental",
	/* What it was tested against, as `tether backends` shows it. */
	.summary = "Dolt databases over the MySQL protocol (DOLT_TAG pins, DOLT_BRANCH forks, DOLT_MERGE); tested "
	           "against dolt sql-server v0.40.4, and the DOLT_TAG, dolt_tags and dolt_branches.dirty it lacks "
	           "against a MariaDB emulation of that SQL surface",
	.caps = DT_CAPS,
	.volatile_keys = dt_volatile_keys,
	.make_locator = dt_make_locator,
	.identity = dt_identity,
	.fingerprint = dt_fingerprint,
	.pin = dt_pin,
	.unpin = dt_unpin,
	.list_pins = dt_list_pins,
	.verify = dt_verify,
	.fork = dt_fork,
	.delete_working_ref = dt_delete_working_ref,
	.open = dt_open,
	.diff = dt_diff,
	.history = dt_history,
	.promote = dt_promote,
	.merge = dt_merge,
	.list_working_refs = dt_list_working_refs,
	.check_state = dt_check_state,
	.secret_keys = dt_secret_keys,
	.add_options = dt_add_options,
	.config_keys = dt_config_keys,
	.open_store = dt_open_store,
	.close_store = dt_close_store,
	.delete_working_ref_if = dt_delete_working_ref_if,
	.descends = dt_descends,
	.move_base = dt_move_base,
};

static const struct tether_backend *const dt_backends[] = {&dt_backend, NULL};

static int dt_init(void)
{
	/* libmariadb's global state, once, before any thread connects. */
	if (mysql_library_init(0, NULL, NULL) != 0)
		return tether_error_set(TETHER_ERROR, "libmariadb could not initialise");
	return 0;
}

static void dt_shutdown(void)
{
	mysql_library_end();
}

TETHER_API const struct tether_module tether_module = {
	TETHER_MODULE_INIT,
	.backends = dt_backends,
	.init = dt_init,
	.shutdown = dt_shutdown,
};
