/* The backend registry: built-ins, backends registered at run time, and
 * modules named tether-backend-<kind>.so found on the module path. */
#include "core/registry.h"

#include "core/abi.h"
#include "core/add_options.h"
#include "core/module.h"
#include "core/module_hooks.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REGISTERED 64

static const struct tether_backend *const builtins[] = {
	&tt_backend_file,
	&tt_backend_memory,
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct tether_backend *registered[MAX_REGISTERED];
static size_t n_registered;

static const struct tether_backend *find_loaded(const char *kind)
{
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
		if (strcmp(builtins[i]->kind, kind) == 0)
			return builtins[i];
	for (size_t i = 0; i < n_registered; i++)
		if (strcmp(registered[i]->kind, kind) == 0)
			return registered[i];
	return NULL;
}

/* The backend's struct as the engine reads it: a version 3 one through its
 * adapter, a newer one than the engine knows refused (abi.h). */
static const struct tether_backend *readable(const struct tether_backend *b, const char *origin)
{
	if (!b) {
		tether_error_set(TETHER_ERROR, "%s%sa NULL backend", origin ? origin : "", origin ? ": " : "");
		return NULL;
	}
	/* version sits where version 3's `int abi` did: 3 there is the old layout. */
	if (b->version == 3)
		return tt_abi_v3_adapt(b, origin);
	char what[128];
	/* kind is where it has been in every version from 4 on. */
	snprintf(what, sizeof what, "backend '%.64s' (struct tether_backend)",
	         b->version > 3 && b->kind ? b->kind : "?");
	if (tt_abi_check(what, origin, b->version, b->size, 3, TETHER_BACKEND_VERSION, TT_BACKEND_V4_SIZE,
	                 sizeof *b))
		return NULL;
	return b;
}

static int register_locked(const struct tether_backend *b, const char *origin)
{
	if (!(b = readable(b, origin)))
		return TETHER_ERROR;
	if (!b->kind || !b->identity || !b->fingerprint || !b->make_locator)
		return tether_error_set(TETHER_ERROR,
		                        "backend %s lacks kind, make_locator, identity or fingerprint",
		                        b->kind ? b->kind : "?");
	if ((b->caps & TETHER_CAP_PIN) && (!TT_BACKEND_GET(b, pin) || !TT_BACKEND_GET(b, unpin) ||
	                                   !TT_BACKEND_GET(b, list_pins) || !TT_BACKEND_GET(b, verify)))
		return tether_error_set(TETHER_ERROR, "backend %s declares PIN without pin/unpin/list_pins/verify",
		                        b->kind);
	if ((b->caps & TETHER_CAP_FORK) && (!TT_BACKEND_GET(b, fork) || !TT_BACKEND_GET(b, delete_working_ref) ||
	                                    !TT_BACKEND_GET(b, open)))
		return tether_error_set(TETHER_ERROR, "backend %s declares FORK without fork/delete_working_ref/open",
		                        b->kind);
	if ((b->caps & TETHER_CAP_DIFF) && !TT_BACKEND_GET(b, diff))
		return tether_error_set(TETHER_ERROR, "backend %s declares DIFF without diff", b->kind);
	if ((b->caps & TETHER_CAP_PROMOTE) && !TT_BACKEND_GET(b, promote))
		return tether_error_set(TETHER_ERROR, "backend %s declares PROMOTE without promote", b->kind);
	if ((b->caps & TETHER_CAP_MERGE) && !TT_BACKEND_GET(b, merge))
		return tether_error_set(TETHER_ERROR, "backend %s declares MERGE without merge", b->kind);
	if ((b->caps & TETHER_CAP_HISTORY) && !TT_BACKEND_GET(b, history))
		return tether_error_set(TETHER_ERROR, "backend %s declares HISTORY without history", b->kind);
	int bad = tt_add_options_check(b);
	if (bad)
		return bad;
	if (find_loaded(b->kind))
		return tether_error_set(TETHER_EREFUSED, "a backend of kind '%s' is already registered", b->kind);
	if (n_registered == MAX_REGISTERED)
		return tether_error_set(TETHER_ERROR, "too many backends registered");
	registered[n_registered++] = b;
	return 0;
}

int tether_backend_register(const struct tether_backend *b)
{
	pthread_mutex_lock(&registry_lock);
	int rc = register_locked(b, NULL);
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

static int kind_is_safe(const char *kind)
{
	if (!*kind || strlen(kind) > 64)
		return 0;
	for (const char *p = kind; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-' && *p != '_')
			return 0;
	return 1;
}

/* The backends a loaded module offers: its struct tether_module's, or the
 * older bare array's. Runs the module's init, once, and keeps its
 * shutdown for the end (module_hooks.c). NULL with the error set when the
 * module is not one tether can use. */
static const struct tether_backend *const *module_backends(void *h, const char *path)
{
	const struct tether_module *m = tt_module_find(h, "tether_module");
	if (!m) {
		const struct tether_backend *const *list = tt_module_find(h, "tether_backend_module");
		if (!list)
			tether_error_set(TETHER_ERROR, "module %s exports neither tether_module nor tether_backend_module",
			                 path);
		return list;
	}
	if (tt_abi_check("struct tether_module", path, m->version, m->size, 1, TETHER_MODULE_VERSION,
	                 TT_MODULE_V1_SIZE, sizeof *m))
		return NULL;
	if (!m->backends) {
		tether_error_set(TETHER_ERROR, "module %s: its tether_module has no backends", path);
		return NULL;
	}
	if (tt_module_hooks_start(m, path) != 0)
		return NULL;
	return m->backends;
}

static const struct tether_backend *load_module(const char *kind, int *missing)
{
	char *file = tt_strdupf("tether-backend-%s.so", kind), *path = NULL;
	void *h = tt_module_open(file, &path, missing);
	free(file);
	const struct tether_backend *const *list = h ? module_backends(h, path) : NULL;
	const struct tether_backend *found = NULL;
	for (size_t i = 0; list && list[i]; i++) {
		const struct tether_backend *b = readable(list[i], path);
		if (!b || (register_locked(b, path) != 0 && !find_loaded(b->kind))) {
			found = NULL;
			break;
		}
		if (strcmp(b->kind, kind) == 0)
			found = find_loaded(kind);
	}
	free(path);
	return found;
}

const struct tether_backend *tether_backend_find(const char *kind)
{
	return tt_backend_find(kind, NULL);
}

const struct tether_backend *tt_backend_find(const char *kind, int *unknown)
{
	pthread_mutex_lock(&registry_lock);
	const struct tether_backend *b = find_loaded(kind);
	int missing = 1;
	if (!b && kind_is_safe(kind))
		b = load_module(kind, &missing);
	pthread_mutex_unlock(&registry_lock);
	/* A module that is there but cannot be used says why (a version newer
	 * than this tether's, say); only a kind no module offers is unknown. */
	if (unknown)
		*unknown = !b && (missing || !*tether_error_last());
	if (!b && (missing || !*tether_error_last())) {
		tether_error_set(TETHER_EUSAGE, "unknown kind '%s'", kind);
		tether_error_set_hint("`tether backends` lists the kinds this build knows");
	}
	return b;
}

const char *tether_tier_name(unsigned caps)
{
	if (caps & TETHER_CAP_FORK)
		return "forkable";
	if (caps & TETHER_CAP_PIN)
		return "pinnable";
	if (caps & TETHER_CAP_ADDRESSABLE)
		return "addressable";
	if (caps & TETHER_CAP_FINGERPRINT)
		return "observed";
	return "none";
}

static const struct {
	unsigned bit;
	const char *name;
} flag_names[] = {
	{TETHER_CAP_CHEAP_FINGERPRINT, "CHEAP_FINGERPRINT"},
	{TETHER_CAP_RETENTION_BOUND, "RETENTION_BOUND"},
	{TETHER_CAP_NEEDS_QUIESCENCE, "NEEDS_QUIESCENCE"},
	{TETHER_CAP_ATOMIC_REF, "ATOMIC_REF"},
	{TETHER_CAP_CONDITIONAL_REF, "CONDITIONAL_REF"},
	{TETHER_CAP_DIFF, "DIFF"},
	{TETHER_CAP_HISTORY, "HISTORY"},
	{TETHER_CAP_PROMOTE, "PROMOTE"},
	{TETHER_CAP_MERGE, "MERGE"},
	{TETHER_CAP_CREATE, "CREATE"},
	{TETHER_CAP_BRANCH_IS_STORAGE, "BRANCH_IS_STORAGE"},
	{TETHER_CAP_REMOTE_FINGERPRINT, "REMOTE_FINGERPRINT"},
};

json_t *tether_cap_names(unsigned caps)
{
	json_t *a = json_array();
	for (size_t i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++)
		if (caps & flag_names[i].bit)
			json_array_append_new(a, json_string(flag_names[i].name));
	return a;
}

static json_t *describe(const struct tether_backend *b)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:o}", "kind", b->kind, "maturity",
	                 b->maturity ? b->maturity : "experimental", "tier", tether_tier_name(b->caps),
	                 "flags", tether_cap_names(b->caps), "summary", b->summary ? b->summary : "",
	                 "add_options", tt_add_options_json(b));
}

/* "tether-backend-<kind>.so" on the module path: load it, so the listing
 * shows every kind this installation has, not only the ones used so far. */
static void load_listed_module(void *ud, const char *name)
{
	(void)ud;
	char *kind = strndup(name + strlen("tether-backend-"), strlen(name) - strlen("tether-backend-") - 3);
	pthread_mutex_lock(&registry_lock);
	if (kind_is_safe(kind) && !find_loaded(kind) && !load_module(kind, NULL))
		tether_error_clear(); /* a module that does not load is left out */
	pthread_mutex_unlock(&registry_lock);
	free(kind);
}

static int by_kind(const void *x, const void *y)
{
	return strcmp((*(const struct tether_backend *const *)x)->kind, (*(const struct tether_backend *const *)y)->kind);
}

void tt_backends_load_modules(void)
{
	tt_module_each("tether-backend-", load_listed_module, NULL);
}

const struct tether_backend **tt_backends_loaded(size_t *n)
{
	pthread_mutex_lock(&registry_lock);
	size_t nb = sizeof builtins / sizeof builtins[0];
	const struct tether_backend **list = malloc((nb + n_registered + 1) * sizeof *list);
	if (list) {
		memcpy(list, builtins, nb * sizeof *list);
		/* Modules in the order of their kinds, not of the directory
		 * listing that found them: the same machine always prints the
		 * same list. */
		memcpy(list + nb, registered, n_registered * sizeof *list);
		qsort(list + nb, n_registered, sizeof *list, by_kind);
		*n = nb + n_registered;
		list[*n] = NULL;
	} else {
		*n = 0;
	}
	pthread_mutex_unlock(&registry_lock);
	return list;
}

const struct tether_backend *tt_backend_find_loaded(const char *kind)
{
	pthread_mutex_lock(&registry_lock);
	const struct tether_backend *b = find_loaded(kind);
	pthread_mutex_unlock(&registry_lock);
	return b;
}

json_t *tether_backends(void)
{
	tt_backends_load_modules();
	json_t *a = json_array();
	size_t n;
	const struct tether_backend **list = tt_backends_loaded(&n);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, describe(list[i]));
	free(list);
	return a;
}

json_t *tether_add_options(const char *kind)
{
	const struct tether_backend *b = tether_backend_find(kind);
	return b ? tt_add_options_json(b) : NULL;
}

int tt_object_caps(const struct tether_backend *b, const struct tether_bctx *ctx,
                   const json_t *locator, const json_t *policy, unsigned *caps)
{
	*caps = b->caps;
	int (*effective)(const struct tether_bctx *, const json_t *, const json_t *, unsigned *) =
		TT_BACKEND_GET(b, effective_capabilities);
	if (effective) {
		int rc = effective(ctx, locator, policy, caps);
		if (rc)
			return rc;
	}
	const char *pin = json_string_value(json_object_get(policy, "pin"));
	if (pin && strcmp(pin, "record") == 0)
		*caps &= ~TETHER_CAP_PIN;
	return 0;
}
