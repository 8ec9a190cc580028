/* The backend registry: built-ins, backends registered at run time, and
 * modules named tether-backend-<kind>.so found on the module path. */
#include "core/registry.h"

#include "core/add_options.h"
#include "core/module.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <pthread.h>
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

static int register_locked(const struct tether_backend *b)
{
	if (!b || b->abi != TETHER_BACKEND_ABI)
		return tether_error_set(TETHER_ERROR, "backend %s was built for ABI %d, tether has %d",
		                        b && b->kind ? b->kind : "?", b ? b->abi : 0, TETHER_BACKEND_ABI);
	if (!b->kind || !b->identity || !b->fingerprint || !b->make_locator)
		return tether_error_set(TETHER_ERROR,
		                        "backend %s lacks kind, make_locator, identity or fingerprint",
		                        b->kind ? b->kind : "?");
	if ((b->caps & TETHER_CAP_PIN) && (!b->pin || !b->unpin || !b->list_pins || !b->verify))
		return tether_error_set(TETHER_ERROR, "backend %s declares PIN without pin/unpin/list_pins/verify",
		                        b->kind);
	if ((b->caps & TETHER_CAP_FORK) && (!b->fork || !b->delete_working_ref || !b->open))
		return tether_error_set(TETHER_ERROR, "backend %s declares FORK without fork/delete_working_ref/open",
		                        b->kind);
	if ((b->caps & TETHER_CAP_DIFF) && !b->diff)
		return tether_error_set(TETHER_ERROR, "backend %s declares DIFF without diff", b->kind);
	if ((b->caps & TETHER_CAP_PROMOTE) && !b->promote)
		return tether_error_set(TETHER_ERROR, "backend %s declares PROMOTE without promote", b->kind);
	if ((b->caps & TETHER_CAP_MERGE) && !b->merge)
		return tether_error_set(TETHER_ERROR, "backend %s declares MERGE without merge", b->kind);
	if ((b->caps & TETHER_CAP_HISTORY) && !b->history)
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
	int rc = register_locked(b);
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

static const struct tether_backend *load_module(const char *kind)
{
	char *file = tt_strdupf("tether-backend-%s.so", kind);
	const struct tether_backend *const *list = tt_module_symbol(file, "tether_backend_module");
	free(file);
	if (!list)
		return NULL;
	const struct tether_backend *found = NULL;
	for (size_t i = 0; list[i]; i++) {
		if (register_locked(list[i]) != 0 && !find_loaded(list[i]->kind))
			return NULL;
		if (strcmp(list[i]->kind, kind) == 0)
			found = list[i];
	}
	return found;
}

const struct tether_backend *tether_backend_find(const char *kind)
{
	pthread_mutex_lock(&registry_lock);
	const struct tether_backend *b = find_loaded(kind);
	if (!b && kind_is_safe(kind))
		b = load_module(kind);
	pthread_mutex_unlock(&registry_lock);
	if (!b) {
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
	if (kind_is_safe(kind) && !find_loaded(kind) && !load_module(kind))
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
	if (b->effective_capabilities) {
		int rc = b->effective_capabilities(ctx, locator, policy, caps);
		if (rc)
			return rc;
	}
	const char *pin = json_string_value(json_object_get(policy, "pin"));
	if (pin && strcmp(pin, "record") == 0)
		*caps &= ~TETHER_CAP_PIN;
	return 0;
}
