/* tether-store-s3.so: the S3 store, loaded on the first s3:// URI
 * (include/tether/store.h). */
#include "store/s3/s3.h"

static unsigned s3_flags_of(void *impl)
{
	const struct s3 *s = impl;
	return TETHER_STORE_VERSION_IDS | (s->conditional_put ? TETHER_STORE_ATOMIC_CAS : 0);
}

static const struct tether_store_ops s3_ops = {
	TETHER_STORE_OPS_INIT,
	.scheme = "s3",
	/* With conditional_put = "disabled" a store has no atomic CAS:
	 * flags_of says so per store. */
	.flags = TETHER_STORE_ATOMIC_CAS | TETHER_STORE_VERSION_IDS,
	.open = s3_open,
	.close = s3_close,
	.get = s3_get,
	.head = s3_head,
	.put = s3_put,
	.copy = s3_copy,
	.del = s3_del,
	.list = s3_list,
	.root_exists = s3_root_exists,
	.make_root = s3_make_root,
	.remove_root = s3_remove_root,
	.stat = s3_stat,
	.get_version = s3_get_version,
	.list_stat = s3_list_stat,
	.list_versions = s3_list_versions,
	.flags_of = s3_flags_of,
};

TETHER_API tether_store_module_t tether_store_module = {&s3_ops, NULL};
