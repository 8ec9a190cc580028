/* Modules of struct tether_backend version 3 keep working.
 *
 * Version 3 is the layout from before every struct carried its version and
 * size: its functions read struct tether_bctx (and tether_fingerprint,
 * tether_verify_item, tether_listing_source) without the two leading
 * members today's have. So such a backend is registered as an adapter: a
 * struct of today's layout whose every function copies the context (and
 * the structs it hands over) into the old layout, calls the old function,
 * and copies the answers back. C has no closures, so each adapter is a slot
 * of its own, with functions that know their slot; V3_SLOTS of them is more
 * than any installation of old modules needs, and one more is refused by
 * name. Versions from 4 on need none of this: members are only appended,
 * and the engine reads a shorter struct through its size (abi.h). */
#include "core/abi_v3.h"

#include "core/abi.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define V3_SLOTS 8

static pthread_mutex_t v3_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct tt_v3_backend *v3_old[V3_SLOTS];
static struct tether_backend v3_new[V3_SLOTS];

static void to_v3(const struct tether_bctx *c, struct tt_v3_bctx *o)
{
	*o = (struct tt_v3_bctx){
		.dataset_root = c->dataset_root,
		.dataset_id = c->dataset_id,
		.cache_dir = c->cache_dir,
		.config = c->config,
		.defaults = c->defaults,
		.secrets = c->secrets,
		.key = c->key,
		.threads = c->threads,
		.progress = c->progress,
		.cancel = c->cancel,
		.state_only = c->state_only,
	};
}

#define V3_ARGS(...) __VA_ARGS__

/* The functions that take nothing but the context in another layout:
 * X(slot, member, (parameters after ctx), (arguments after ctx)). */
#define V3_PLAIN(X, n)                                                                                        \
	X(n, make_locator, (, const char *u, const json_t *o, const char *w, json_t **l), (, u, o, w, l))         \
	X(n, make_policy, (, const json_t *o, json_t **p), (, o, p))                                              \
	X(n, effective_capabilities, (, const json_t *l, const json_t *p, unsigned *c), (, l, p, c))            \
	X(n, identity, (, const json_t *l, json_t **i), (, l, i))                                                 \
	X(n, check_drift,                                                                                         \
	  (, const json_t *l, const json_t *p, const json_t *r, const json_t *c, int *x, char **w),               \
	  (, l, p, r, c, x, w))                                                                                   \
	X(n, pin, (, const json_t *l, const json_t *s, const char *id, json_t **r, int *c), (, l, s, id, r, c))  \
	X(n, unpin, (, const json_t *l, const json_t *r), (, l, r))                                               \
	X(n, list_pins, (, const json_t *l, json_t **r), (, l, r))                                                \
	X(n, verify, (, const json_t *l, const json_t *s, const json_t *r, int *ok, char **d),                    \
	  (, l, s, r, ok, d))                                                                                     \
	X(n, fork,                                                                                                \
	  (, const json_t *l, const json_t *s, const json_t *r, const char *b, const json_t *e, json_t **w),      \
	  (, l, s, r, b, e, w))                                                                                   \
	X(n, delete_working_ref, (, const json_t *l, const json_t *w), (, l, w))                                  \
	X(n, open,                                                                                                \
	  (, const json_t *l, const json_t *s, const json_t *r, const json_t *w, int ro, json_t **h),             \
	  (, l, s, r, w, ro, h))                                                                                  \
	X(n, diff,                                                                                                \
	  (, const json_t *l, const json_t *a, const json_t *b, const char *la, size_t na, const char *lb,        \
	   size_t nb, size_t max, json_t **d),                                                                    \
	  (, l, a, b, la, na, lb, nb, max, d))                                                                    \
	X(n, history, (, const json_t *l, int max, json_t **e), (, l, max, e))                                    \
	X(n, promote, (, const json_t *l, const json_t *w, const json_t *e, json_t **r), (, l, w, e, r))          \
	X(n, merge, (, const json_t *l, const json_t *w, const char *m, json_t **r), (, l, w, m, r))              \
	X(n, create_store, (, const json_t *l), (, l))                                                            \
	X(n, delete_store, (, const json_t *l), (, l))                                                            \
	X(n, list_working_refs, (, const json_t *l, json_t **r), (, l, r))

/* The ones that also hand over a struct whose layout changed. */
#define V3_CONVERTED(X, n)                                                                                    \
	X(n, fingerprint, (, const json_t *l, const json_t *p, struct tether_fingerprint *f), (, l, p, f))       \
	X(n, verify_many, (, struct tether_verify_item *items, size_t count), (, items, count))                  \
	X(n, diff_streams,                                                                                        \
	  (, const json_t *l, const json_t *a, const json_t *b, const struct tether_listing_source *sa,            \
	   const struct tether_listing_source *sb, size_t max, json_t **d),                                       \
	  (, l, a, b, sa, sb, max, d))

#define V3_ALL(X, n) V3_PLAIN(X, n) V3_CONVERTED(X, n)

/* The call of one old function, given its slot. */
#define V3_FORWARD(n, m, params, args)                                                                        \
	static int forward_##m(int slot, const struct tether_bctx *ctx_ V3_ARGS params)                         \
	{                                                                                                         \
		struct tt_v3_bctx old_ctx_;                                                                           \
		to_v3(ctx_, &old_ctx_);                                                                               \
		return v3_old[slot]->m(&old_ctx_ V3_ARGS args);                                                       \
	}
V3_PLAIN(V3_FORWARD, 0)

static int forward_fingerprint(int slot, const struct tether_bctx *c, const json_t *l, const json_t *p,
                               struct tether_fingerprint *f)
{
	struct tt_v3_bctx o;
	to_v3(c, &o);
	struct tt_v3_fingerprint old = {f->state, f->listing, f->listing_len};
	int rc = v3_old[slot]->fingerprint(&o, l, p, &old);
	f->state = old.state;
	f->listing = old.listing;
	f->listing_len = old.listing_len;
	return rc;
}

static int forward_verify_many(int slot, const struct tether_bctx *c, struct tether_verify_item *items,
                               size_t count)
{
	struct tt_v3_bctx o;
	to_v3(c, &o);
	struct tt_v3_verify_item *old = calloc(count ? count : 1, sizeof *old);
	if (!old)
		return tether_error_set(TETHER_ERROR, "out of memory");
	for (size_t i = 0; i < count; i++)
		old[i] = (struct tt_v3_verify_item){items[i].locator, items[i].state, items[i].pin_ref, items[i].ok,
		                                    items[i].detail};
	int rc = v3_old[slot]->verify_many(&o, old, count);
	for (size_t i = 0; i < count; i++) {
		items[i].ok = old[i].ok;
		items[i].detail = old[i].detail;
	}
	free(old);
	return rc;
}

static int forward_diff_streams(int slot, const struct tether_bctx *c, const json_t *l, const json_t *a,
                                const json_t *b, const struct tether_listing_source *sa,
                                const struct tether_listing_source *sb, size_t max, json_t **d)
{
	struct tt_v3_bctx o;
	to_v3(c, &o);
	struct tt_v3_listing_source oa = {sa ? sa->read : NULL, sa ? sa->ud : NULL};
	struct tt_v3_listing_source ob = {sb ? sb->read : NULL, sb ? sb->ud : NULL};
	return v3_old[slot]->diff_streams(&o, l, a, b, sa ? &oa : NULL, sb ? &ob : NULL, max, d);
}

/* Slot n's functions, and a template of today's layout holding them. */
#define V3_TRAMPOLINE(n, m, params, args)                                                                     \
	static int m##_##n(const struct tether_bctx *ctx_ V3_ARGS params) { return forward_##m(n, ctx_ V3_ARGS args); }
#define V3_MEMBER(n, m, params, args) .m = m##_##n,
#define V3_SLOT(n) V3_ALL(V3_TRAMPOLINE, n)
#define V3_TEMPLATE(n) {V3_ALL(V3_MEMBER, n)}

V3_SLOT(0)
V3_SLOT(1)
V3_SLOT(2)
V3_SLOT(3)
V3_SLOT(4)
V3_SLOT(5)
V3_SLOT(6)
V3_SLOT(7)

static const struct tether_backend v3_templates[V3_SLOTS] = {
	V3_TEMPLATE(0), V3_TEMPLATE(1), V3_TEMPLATE(2), V3_TEMPLATE(3),
	V3_TEMPLATE(4), V3_TEMPLATE(5), V3_TEMPLATE(6), V3_TEMPLATE(7),
};

/* A function the old backend leaves NULL stays NULL in its adapter. */
#define V3_KEEP_ABSENT(n, m, params, args)                                                                    \
	if (!old->m)                                                                                              \
		b->m = NULL;

const struct tether_backend *tt_abi_v3_adapt(const void *old_struct, const char *origin)
{
	const struct tt_v3_backend *old = old_struct;
	pthread_mutex_lock(&v3_lock);
	size_t slot = 0;
	while (slot < V3_SLOTS && v3_old[slot] && v3_old[slot] != old)
		slot++;
	if (slot == V3_SLOTS) {
		pthread_mutex_unlock(&v3_lock);
		tether_error_set(TETHER_ERROR, "%s%s%sbackend '%s' is version 3, and this tether adapts at most %d "
		                 "backends of version 3: rebuild it against this tether's headers",
		                 origin ? "module " : "", origin ? origin : "", origin ? ": " : "",
		                 old->kind ? old->kind : "?", V3_SLOTS);
		return NULL;
	}
	struct tether_backend *b = &v3_new[slot];
	if (!v3_old[slot]) {
		*b = v3_templates[slot];
		b->version = TETHER_BACKEND_VERSION;
		b->size = sizeof *b;
		b->kind = old->kind;
		b->maturity = old->maturity;
		b->summary = old->summary;
		b->caps = old->caps;
		b->volatile_keys = old->volatile_keys;
		b->policy_options = old->policy_options;
		b->check_state = old->check_state; /* takes no context: the same function */
		b->secret_keys = old->secret_keys;
		V3_ALL(V3_KEEP_ABSENT, 0)
		v3_old[slot] = old;
	}
	pthread_mutex_unlock(&v3_lock);
	return b;
}
