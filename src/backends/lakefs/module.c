/* tether-backend-lakefs.so: the backend's table. */
#include "backends/lakefs/lakefs.h"

static const char *const lfs_volatile[] = {"dirty", NULL};

static const char *const lfs_config_keys[] = {NULL};

static const struct tether_backend lfs_backend = {
	TETHER_BACKEND_INIT,
	.kind = LFS_KIND,
	.maturity = "experimental",
	.summary = "lakeFS repositories over the REST API (tested against a fake of the API whose every answer "
	           "lakefs-sdk's models parse, not a lakeFS server)",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |
	        TETHER_CAP_ATOMIC_REF | TETHER_CAP_DIFF | TETHER_CAP_HISTORY | TETHER_CAP_PROMOTE | TETHER_CAP_MERGE |
	        TETHER_CAP_REMOTE_FINGERPRINT,
	.volatile_keys = lfs_volatile,
	.make_locator = lfs_make_locator,
	.identity = lfs_identity,
	.fingerprint = lfs_fingerprint,
	.pin = lfs_pin,
	.unpin = lfs_unpin,
	.list_pins = lfs_list_pins,
	.verify = lfs_verify,
	.fork = lfs_fork,
	.delete_working_ref = lfs_delete_working_ref,
	.open = lfs_open,
	.diff = lfs_diff,
	.history = lfs_history,
	.promote = lfs_promote,
	.merge = lfs_merge,
	.list_working_refs = lfs_list_working_refs,
	.check_state = lfs_check_state,
	.secret_keys = lfs_secret_keys,
	.add_options = lfs_add_options,
	.config_keys = lfs_config_keys,
	.open_store = lfs_session_open,
	.close_store = lfs_session_close,
	.verify_deep = lfs_verify_deep,
	.descends = lfs_descends,
	.delete_working_ref_if = lfs_delete_working_ref_if,
	.move_base = lfs_move_base,
};

static const struct tether_backend *const lfs_backends[] = {&lfs_backend, NULL};

TETHER_API const struct tether_module tether_module = {
	TETHER_MODULE_INIT,
	.backends = lfs_backends,
};
