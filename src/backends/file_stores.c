/* Idle object stores of the file backend (file_stores.h). */
#include "backends/file_stores.h"

#include <tether/backend.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* As many as the engine's pool for remote objects runs at once (objects.c),
 * so a status keeps every worker's store; more are closed. */
#define MAX_IDLE 32

struct idle {
	char *key; /* root, '\n', the options as canonical JSON */
	tether_store *store;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct idle idle[MAX_IDLE];
static size_t n_idle;
static pthread_once_t at_exit_once = PTHREAD_ONCE_INIT;

static char *key_of(const char *root, const json_t *options)
{
	char *opts = options ? json_dumps(options, JSON_SORT_KEYS | JSON_COMPACT) : strdup("null");
	size_t rl = strlen(root), ol = opts ? strlen(opts) : 0;
	char *key = opts ? malloc(rl + 1 + ol + 1) : NULL;
	if (key) {
		memcpy(key, root, rl);
		key[rl] = '\n';
		memcpy(key + rl + 1, opts, ol + 1);
	}
	free(opts);
	return key;
}

static void close_all(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_idle; i++) {
		tether_store_close(idle[i].store);
		free(idle[i].key);
	}
	n_idle = 0;
	pthread_mutex_unlock(&lock);
}

static void register_at_exit(void)
{
	atexit(close_all); /* a failure only leaves them to the process's end */
}

int fr_store_take(const char *root, const json_t *options, tether_store **out)
{
	*out = NULL;
	char *key = key_of(root, options);
	if (key) {
		pthread_mutex_lock(&lock);
		for (size_t i = n_idle; i-- > 0;) {
			if (strcmp(idle[i].key, key) == 0) {
				*out = idle[i].store;
				free(idle[i].key);
				idle[i] = idle[--n_idle];
				break;
			}
		}
		pthread_mutex_unlock(&lock);
		free(key);
	}
	return *out ? 0 : tether_store_open(root, options, out);
}

void fr_store_give(const char *root, const json_t *options, tether_store *s)
{
	if (!s)
		return;
	char *key = key_of(root, options);
	int kept = 0;
	if (key) {
		pthread_once(&at_exit_once, register_at_exit);
		pthread_mutex_lock(&lock);
		if (n_idle < MAX_IDLE) {
			idle[n_idle++] = (struct idle){key, s};
			kept = 1;
		}
		pthread_mutex_unlock(&lock);
	}
	if (!kept) {
		free(key);
		tether_store_close(s);
	}
}
