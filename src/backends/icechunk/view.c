/* A read-only view of a repository's `repo` file, parsed once and reused
 * while the file's version is unchanged: history walks (verify
 * --all-history, gc) ask one repository about many states in a row, and a
 * stat is much cheaper than reading, decompressing and parsing a file that
 * grows with every snapshot. The cache is per thread (backend calls run
 * concurrently on pool threads) and holds a few repositories; a write
 * always reads the file afresh (update.c), never through it. */
#include "backends/icechunk/ic.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_SLOTS 4

struct view_cache {
	char *uri[VIEW_SLOTS];
	struct tether_store_version version[VIEW_SLOTS];
	struct ic_repo repo[VIEW_SLOTS];
	unsigned next;
};

static pthread_key_t view_key;
static pthread_once_t view_once = PTHREAD_ONCE_INIT;

static void view_cache_free(void *p)
{
	struct view_cache *c = p;
	for (unsigned i = 0; c && i < VIEW_SLOTS; i++) {
		free(c->uri[i]);
		ic_repo_free(&c->repo[i]);
	}
	free(c);
}

static void view_init(void)
{
	pthread_key_create(&view_key, view_cache_free);
}

/* The main thread's cache goes when the module is unloaded. */
__attribute__((destructor)) static void view_unload(void)
{
	pthread_once(&view_once, view_init);
	view_cache_free(pthread_getspecific(view_key));
	pthread_setspecific(view_key, NULL);
}

static struct view_cache *thread_cache(void)
{
	pthread_once(&view_once, view_init);
	struct view_cache *c = pthread_getspecific(view_key);
	if (!c && (c = calloc(1, sizeof *c)) && pthread_setspecific(view_key, c) != 0) {
		free(c);
		c = NULL;
	}
	return c;
}

int ic_repo_view(struct ic_repository *repo, const struct ic_repo **out)
{
	*out = NULL;
	struct view_cache *c = thread_cache();
	if (!c)
		return ic_fail_oom();
	struct tether_store_version now;
	int exists = 0;
	int rc = tether_store_head(repo->store, "repo", &exists, &now, NULL);
	if (rc)
		return rc;
	for (unsigned i = 0; exists && i < VIEW_SLOTS; i++) {
		if (c->uri[i] && strcmp(c->uri[i], repo->uri) == 0 && strcmp(c->version[i].token, now.token) == 0) {
			*out = &c->repo[i];
			return 0;
		}
	}
	/* Read it (a missing file is the read's error to report), and keep
	 * it under the version the read itself saw. */
	struct ic_repo fresh;
	struct tether_store_version read_version;
	if ((rc = ic_repo_read(repo->store, &fresh, &read_version)))
		return rc;
	unsigned slot = VIEW_SLOTS;
	for (unsigned i = 0; i < VIEW_SLOTS; i++)
		if (c->uri[i] && strcmp(c->uri[i], repo->uri) == 0)
			slot = i; /* a stale view of this repository: replaced */
	if (slot == VIEW_SLOTS)
		slot = c->next++ % VIEW_SLOTS;
	char *uri = strdup(repo->uri);
	if (!uri) {
		ic_repo_free(&fresh);
		return ic_fail_oom();
	}
	free(c->uri[slot]);
	ic_repo_free(&c->repo[slot]);
	c->uri[slot] = uri;
	c->version[slot] = read_version;
	c->repo[slot] = fresh;
	*out = &c->repo[slot];
	return 0;
}
