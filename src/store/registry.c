/* Store implementations by URI scheme: the built-in local store, stores
 * registered at run time, and modules tether-store-<scheme>.so loaded from
 * the module path (core/module.c, as backends are) the first time their
 * scheme is used. Nothing remote is linked into the core, so a command on
 * local files never maps libcurl. */
#include "store/store_impl.h"

#include "core/abi.h"

#include "core/module.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STORES 32

static pthread_mutex_t stores_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct tether_store_ops *registered[MAX_STORES];
static size_t n_registered;

static const struct tether_store_ops *find_locked(const char *scheme)
{
	if (strcmp(scheme, tt_store_local_ops.scheme) == 0)
		return &tt_store_local_ops;
	for (size_t i = 0; i < n_registered; i++)
		if (strcmp(registered[i]->scheme, scheme) == 0)
			return registered[i];
	return NULL;
}

static int scheme_is_valid(const char *s)
{
	if (!s || !isalpha((unsigned char)*s) || strlen(s) > 32)
		return 0;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '+' && *s != '-' && *s != '.')
			return 0;
	return 1;
}

static int register_locked(const struct tether_store_ops *ops)
{
	if (!ops)
		return tether_error_set(TETHER_ERROR, "tether_store_register: no ops");
	const char *name = ops->size >= offsetof(struct tether_store_ops, flags) && scheme_is_valid(ops->scheme)
	                           ? ops->scheme
	                           : "?";
	/* Checked as every plug-in struct is (core/abi.h); version 1's
	 * required members all lie inside its size. */
	char what[96];
	snprintf(what, sizeof what, "store '%s' (struct tether_store_ops)", name);
	int bad = tt_abi_check(what, NULL, ops->version, ops->size, 1, TETHER_STORE_OPS_VERSION,
	                       TT_SIZE_THROUGH(struct tether_store_ops, list), sizeof *ops);
	if (bad)
		return bad;
	if (!scheme_is_valid(ops->scheme))
		return tether_error_set(TETHER_ERROR, "store ops: scheme \"%s\" is not lowercase letters, digits, "
		                        "'+', '-' or '.'", ops->scheme ? ops->scheme : "(null)");
	if (!ops->open || !ops->close || !ops->get || !ops->head || !ops->put || !ops->del || !ops->list)
		return tether_error_set(TETHER_ERROR, "store %s lacks open, close, get, head, put, del or list",
		                        ops->scheme);
	if (find_locked(ops->scheme))
		return tether_error_set(TETHER_EREFUSED, "a store for scheme '%s' is already registered", ops->scheme);
	if (n_registered == MAX_STORES)
		return tether_error_set(TETHER_ERROR, "too many stores registered");
	registered[n_registered++] = ops;
	return 0;
}

int tether_store_register(const struct tether_store_ops *ops)
{
	pthread_mutex_lock(&stores_lock);
	int rc = register_locked(ops);
	pthread_mutex_unlock(&stores_lock);
	return rc;
}

/* The store for scheme from its module; NULL with *absent = 1 when there
 * is no such module, or with the error set when it is there but unusable. */
static const struct tether_store_ops *load_module(const char *scheme, int *absent)
{
	char *file = tt_strdupf("tether-store-%s.so", scheme);
	char *missing = file ? tt_strdupf("module %s not found", file) : NULL;
	*absent = 0;
	if (!missing) {
		free(file);
		tether_error_set(TETHER_EIO, "out of memory");
		return NULL;
	}
	const struct tether_store_ops *const *list = tt_module_symbol(file, "tether_store_module");
	const struct tether_store_ops *found = NULL;
	if (!list)
		*absent = strncmp(tether_error_last(), missing, strlen(missing)) == 0;
	for (size_t i = 0; list && list[i]; i++) {
		if (register_locked(list[i]) != 0) {
			char *why = strdup(tether_error_last());
			tether_error_set(TETHER_ERROR, "module %s: %s", file, why ? why : "");
			free(why);
			found = NULL;
			break;
		}
		if (strcmp(list[i]->scheme, scheme) == 0)
			found = list[i];
	}
	if (list && !found && strncmp(tether_error_last(), "module ", 7) != 0)
		tether_error_set(TETHER_ERROR, "module %s has no store for scheme %s", file, scheme);
	free(missing);
	free(file);
	return found;
}

int tt_store_find_ops(const char *scheme, const struct tether_store_ops **out)
{
	*out = NULL;
	if (!scheme_is_valid(scheme))
		return tether_error_set(TETHER_EUSAGE, "\"%s\" is not a store scheme", scheme ? scheme : "(null)");
	pthread_mutex_lock(&stores_lock);
	tether_error_clear();
	int absent = 0;
	const struct tether_store_ops *ops = find_locked(scheme);
	if (!ops)
		ops = load_module(scheme, &absent);
	pthread_mutex_unlock(&stores_lock);
	if (ops) {
		*out = ops;
		return 0;
	}
	if (!absent)
		return TETHER_ERROR; /* the module is there but unusable: the message says why */
	int rc = tether_error_set(TETHER_EUSAGE, "no store for %s:// in this build (no module tether-store-%s.so)",
	                          scheme, scheme);
	tether_error_set_hint("store modules are looked for on $TETHER_MODULE_PATH and in tether's module directory");
	return rc;
}

const struct tether_store_ops *tether_store_find(const char *scheme)
{
	const struct tether_store_ops *ops = NULL;
	tt_store_find_ops(scheme, &ops);
	return ops;
}
