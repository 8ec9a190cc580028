/* tether-backend-git.so: the `git` backend's front, which never links
 * libgit2.
 *
 * Commands that read history -- log, gc, verify, status's manifest checks
 * -- load the backend of every object a manifest names, and libgit2 as
 * Debian builds it (with mbedTLS) parses the whole CA bundle when it
 * initialises and pulls some fifteen libraries through the dynamic
 * loader: most of what those commands cost. So this front answers the
 * read calls itself on the native git reader (read_native.c): the
 * backend's description, check_state and secret_keys (data), identity,
 * list_pins, verify and verify_many, with the code both modules share
 * (gitbe_read.h). Every other call, and any of those the native reader
 * cannot answer exactly (GB_FORWARD), goes to the backend on libgit2,
 * tether-gitbe-libgit2.so, loaded from this module's own directory on
 * first need, once per process. That name does not start with
 * "tether-backend-", so module discovery never lists it as a kind. */
#define _GNU_SOURCE
#include "backends/git/gitbe_read.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define FULL_MODULE "tether-gitbe-libgit2.so"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct tether_backend *loaded;
static char why[PATH_MAX + 256];

extern const struct tether_backend tt_backend_git_front;

static void load(void)
{
	Dl_info info;
	char path[PATH_MAX];
	if (!dladdr((const void *)&tt_backend_git_front, &info) || !info.dli_fname) {
		snprintf(why, sizeof why, "cannot tell where tether-backend-git.so was loaded from");
		return;
	}
	const char *slash = strrchr(info.dli_fname, '/');
	int dirlen = slash ? (int)(slash - info.dli_fname) : 1;
	snprintf(path, sizeof path, "%.*s/" FULL_MODULE, dirlen, slash ? info.dli_fname : ".");
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const struct tether_backend *const *b = h ? dlsym(h, "tether_gitbe_libgit2") : NULL;
	if (!b || !*b || (*b)->version != TETHER_BACKEND_VERSION || (*b)->size != sizeof **b) {
		snprintf(why, sizeof why, "cannot load %s: %s", path, h ? "no usable tether_gitbe_libgit2" : dlerror());
		return;
	}
	loaded = *b;
}

/* The backend on libgit2; NULL with the error set when it cannot load. */
static const struct tether_backend *full(void)
{
	pthread_once(&once, load);
	if (!loaded)
		tether_error_set(TETHER_ERROR, "%s", why);
	return loaded;
}

#define FULL_OR_FAIL(f)                                                                             \
	const struct tether_backend *f = full();                                                    \
	if (!f)                                                                                     \
	return TETHER_ERROR

/* ------------------------------------------------------------------ */
/* Answered here, else forwarded                                       */
/* ------------------------------------------------------------------ */

static int fr_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	int rc = gb_identity_do(ctx, locator, identity);
	if (rc != GB_FORWARD)
		return rc;
	FULL_OR_FAIL(f);
	return f->identity(ctx, locator, identity);
}

static int fr_list_pins(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	int rc = gb_list_pins_do(ctx, locator, pin_refs);
	if (rc != GB_FORWARD)
		return rc;
	FULL_OR_FAIL(f);
	return f->list_pins(ctx, locator, pin_refs);
}

static int fr_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                     const json_t *pin_ref, int *ok, char **detail)
{
	int rc = gb_verify_do(ctx, locator, state, pin_ref, ok, detail);
	if (rc != GB_FORWARD)
		return rc;
	FULL_OR_FAIL(f);
	return f->verify(ctx, locator, state, pin_ref, ok, detail);
}

static int fr_verify_many(const struct tether_bctx *ctx, struct tether_verify_item *items, size_t n)
{
	int rc = gb_verify_many_do(ctx, items, n);
	if (rc != GB_FORWARD)
		return rc;
	FULL_OR_FAIL(f);
	return f->verify_many(ctx, items, n);
}

/* ------------------------------------------------------------------ */
/* Always libgit2's                                                    */
/* ------------------------------------------------------------------ */

#define FORWARD(name, params, args)                                                                 \
	static int fw_##name params                                                                 \
	{                                                                                           \
		FULL_OR_FAIL(f);                                                                    \
		return f->name args;                                                                \
	}

typedef const struct tether_bctx bctx;

FORWARD(make_locator, (bctx *c, const char *uri, const json_t *opt, const char *cwd, json_t **loc),
        (c, uri, opt, cwd, loc))
FORWARD(fingerprint, (bctx *c, const json_t *loc, const json_t *pol, struct tether_fingerprint *out),
        (c, loc, pol, out))
FORWARD(pin, (bctx *c, const json_t *loc, const json_t *st, const char *id, json_t **ref, int *created),
        (c, loc, st, id, ref, created))
FORWARD(unpin, (bctx *c, const json_t *loc, const json_t *ref), (c, loc, ref))
FORWARD(fork, (bctx *c, const json_t *loc, const json_t *st, const json_t *ref, const char *branch,
               const json_t *expect, json_t **wref),
        (c, loc, st, ref, branch, expect, wref))
FORWARD(delete_working_ref, (bctx *c, const json_t *loc, const json_t *wref), (c, loc, wref))
FORWARD(open, (bctx *c, const json_t *loc, const json_t *st, const json_t *ref, const json_t *wref, int ro,
               json_t **handle),
        (c, loc, st, ref, wref, ro, handle))
FORWARD(diff, (bctx *c, const json_t *loc, const json_t *a, const json_t *b, const char *la, size_t lena,
               const char *lb, size_t lenb, size_t max, json_t **diff),
        (c, loc, a, b, la, lena, lb, lenb, max, diff))
FORWARD(history, (bctx *c, const json_t *loc, int max, json_t **entries), (c, loc, max, entries))
FORWARD(promote, (bctx *c, const json_t *loc, const json_t *wref, const json_t *expect, json_t **result),
        (c, loc, wref, expect, result))
FORWARD(merge, (bctx *c, const json_t *loc, const json_t *wref, const char *msg, json_t **result),
        (c, loc, wref, msg, result))
FORWARD(move_base, (bctx *c, const json_t *loc, const json_t *st, const json_t *expect, json_t **result),
        (c, loc, st, expect, result))
FORWARD(create_store, (bctx *c, const json_t *loc), (c, loc))
FORWARD(delete_store, (bctx *c, const json_t *loc), (c, loc))
FORWARD(list_working_refs, (bctx *c, const json_t *loc, json_t **refs), (c, loc, refs))
/* verify --deep parses commits and trees, which is libgit2's work. */
FORWARD(verify_deep, (bctx *c, const json_t *loc, const json_t *st, const json_t *ref, int *ok, char **detail),
        (c, loc, st, ref, ok, detail))
FORWARD(descends, (bctx *c, const json_t *loc, const json_t *a, const json_t *d, int *answer), (c, loc, a, d, answer))
FORWARD(delete_working_ref_if, (bctx *c, const json_t *loc, const json_t *wref, const json_t *expect),
        (c, loc, wref, expect))

/* The same description as the libgit2 module's tt_backend_git. */
const struct tether_backend tt_backend_git_front = {
	TETHER_BACKEND_INIT,
	.kind = "git",
	.maturity = "stable",
	.summary = GB_SUMMARY,
	.caps = GB_CAPS,
	.volatile_keys = gb_volatile_keys,
	.make_locator = fw_make_locator,
	.identity = fr_identity,
	.fingerprint = fw_fingerprint,
	.pin = fw_pin,
	.unpin = fw_unpin,
	.list_pins = fr_list_pins,
	.verify = fr_verify,
	.fork = fw_fork,
	.delete_working_ref = fw_delete_working_ref,
	.open = fw_open,
	.diff = fw_diff,
	.history = fw_history,
	.promote = fw_promote,
	.merge = fw_merge,
	.create_store = fw_create_store,
	.delete_store = fw_delete_store,
	.list_working_refs = fw_list_working_refs,
	.verify_many = fr_verify_many,
	.check_state = gb_check_state,
	.secret_keys = gb_secret_keys,
	.add_options = gb_add_options,
	.open_store = gb_open_store,
	.close_store = gb_close_store,
	.verify_deep = fw_verify_deep,
	.descends = fw_descends,
	.delete_working_ref_if = fw_delete_working_ref_if,
	.move_base = fw_move_base,
};

TETHER_API tether_backend_module_t tether_backend_module = {&tt_backend_git_front, NULL};
