/* Module lifecycle: init once after loading, shutdown once at the end.
 *
 * The end is an atexit handler libtether registers when the first module
 * with hooks starts: it runs at exit(), or, when libtether itself was loaded
 * with dlopen, when it is unloaded (glibc runs a shared object's atexit
 * handlers then), and in both cases before any library's destructors, so a
 * module's shutdown still finds the libraries it uses alive. Modules are
 * never unloaded, so their code is there to call. */
#include "core/module_hooks.h"

#include "core/abi.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_MODULES 64

static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct started {
	const struct tether_module *m;
	int ok;
	char why[512]; /* when not ok: what init said, to say again */
} started[MAX_MODULES];
static size_t n_started;
static int at_exit_set;

static void run_shutdowns(void)
{
	pthread_mutex_lock(&hooks_lock);
	/* The last started first: a module may use one loaded before it. */
	while (n_started > 0) {
		struct started *s = &started[--n_started];
		void (*shutdown)(void) = s->ok ? TT_STRUCT_GET(struct tether_module, s->m, shutdown) : NULL;
		if (shutdown)
			shutdown();
	}
	pthread_mutex_unlock(&hooks_lock);
}

int tt_module_hooks_start(const struct tether_module *m, const char *path)
{
	pthread_mutex_lock(&hooks_lock);
	for (size_t i = 0; i < n_started; i++)
		if (started[i].m == m) {
			int ok = started[i].ok;
			if (!ok)
				tether_error_set(TETHER_ERROR, "%s", started[i].why);
			pthread_mutex_unlock(&hooks_lock);
			return ok ? 0 : TETHER_ERROR;
		}
	if (n_started == MAX_MODULES) {
		pthread_mutex_unlock(&hooks_lock);
		return tether_error_set(TETHER_ERROR, "module %s: too many modules loaded", path);
	}
	if (!at_exit_set && atexit(run_shutdowns) != 0) {
		pthread_mutex_unlock(&hooks_lock);
		return tether_error_set(TETHER_ERROR, "module %s: cannot arrange its shutdown", path);
	}
	at_exit_set = 1;
	int (*init)(void) = TT_STRUCT_GET(struct tether_module, m, init);
	tether_error_clear();
	int rc = init ? init() : 0;
	struct started *s = &started[n_started++];
	*s = (struct started){m, rc == 0, ""};
	if (rc) {
		tether_error_set(TETHER_ERROR, "module %s: init failed: %s", path,
		                 *tether_error_last() ? tether_error_last() : "(no message)");
		snprintf(s->why, sizeof s->why, "%s", tether_error_last());
	}
	pthread_mutex_unlock(&hooks_lock);
	return rc ? TETHER_ERROR : 0;
}
