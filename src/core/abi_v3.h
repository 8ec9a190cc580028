/* The layouts of tether/backend.h at struct tether_backend version 3 (its
 * `int abi` member), under names of their own, for the adapter that keeps
 * modules of that version working (abi_v3.c). A copy of today's layout at
 * that time, member for member; the header itself is kept whole in
 * tests/abi/v3/include/tether/backend.h, which the test module is built
 * against. Never changes. */
#ifndef TETHER_CORE_ABI_V3_H
#define TETHER_CORE_ABI_V3_H

#include <tether/backend.h>

struct tt_v3_bctx {
	const char *dataset_root;
	const char *dataset_id;
	const char *cache_dir;
	const json_t *config;
	const json_t *defaults;
	const json_t *secrets;
	const char *key;
	int threads;
	int progress;
	volatile int *cancel;
	int state_only;
};

struct tt_v3_fingerprint {
	json_t *state;
	char *listing;
	size_t listing_len;
};

struct tt_v3_verify_item {
	const json_t *locator;
	const json_t *state;
	const json_t *pin_ref;
	int ok;
	char *detail;
};

struct tt_v3_listing_source {
	int (*read)(void *ud, char *buf, size_t cap, size_t *got);
	void *ud;
};

typedef const struct tt_v3_bctx v3ctx;

struct tt_v3_backend {
	int abi; /* 3 */
	const char *kind;
	const char *maturity;
	const char *summary;
	unsigned caps;
	const char *const *volatile_keys;
	int (*make_locator)(v3ctx *, const char *uri, const json_t *options, const char *cwd, json_t **locator);
	int (*make_policy)(v3ctx *, const json_t *options, json_t **policy);
	int (*effective_capabilities)(v3ctx *, const json_t *locator, const json_t *policy, unsigned *caps);
	int (*identity)(v3ctx *, const json_t *locator, json_t **identity);
	int (*fingerprint)(v3ctx *, const json_t *locator, const json_t *policy, struct tt_v3_fingerprint *out);
	int (*check_drift)(v3ctx *, const json_t *locator, const json_t *policy, const json_t *recorded,
	                   const json_t *current, int *refused, char **why);
	int (*pin)(v3ctx *, const json_t *locator, const json_t *state, const char *pin_id, json_t **pin_ref,
	           int *created);
	int (*unpin)(v3ctx *, const json_t *locator, const json_t *pin_ref);
	int (*list_pins)(v3ctx *, const json_t *locator, json_t **pin_refs);
	int (*verify)(v3ctx *, const json_t *locator, const json_t *state, const json_t *pin_ref, int *ok,
	              char **detail);
	int (*fork)(v3ctx *, const json_t *locator, const json_t *state, const json_t *pin_ref, const char *branch,
	            const json_t *expect, json_t **working_ref);
	int (*delete_working_ref)(v3ctx *, const json_t *locator, const json_t *working_ref);
	int (*open)(v3ctx *, const json_t *locator, const json_t *state, const json_t *pin_ref,
	            const json_t *working_ref, int read_only, json_t **handle);
	int (*diff)(v3ctx *, const json_t *locator, const json_t *a, const json_t *b, const char *listing_a,
	            size_t len_a, const char *listing_b, size_t len_b, size_t max_entries, json_t **diff);
	int (*history)(v3ctx *, const json_t *locator, int max_count, json_t **entries);
	int (*promote)(v3ctx *, const json_t *locator, const json_t *working_ref, const json_t *expect,
	               json_t **result);
	int (*merge)(v3ctx *, const json_t *locator, const json_t *working_ref, const char *message,
	             json_t **result);
	int (*create_store)(v3ctx *, const json_t *locator);
	int (*delete_store)(v3ctx *, const json_t *locator);
	int (*list_working_refs)(v3ctx *, const json_t *locator, json_t **refs);
	int (*verify_many)(v3ctx *, struct tt_v3_verify_item *items, size_t n);
	const struct tether_policy_option *policy_options;
	int (*check_state)(const json_t *state, const char **key);
	const char *const *secret_keys;
	int (*diff_streams)(v3ctx *, const json_t *locator, const json_t *a, const json_t *b,
	                    const struct tt_v3_listing_source *listing_a,
	                    const struct tt_v3_listing_source *listing_b, size_t max_entries, json_t **diff);
};

#endif
