/* The git backend's store session (open_store / close_store), compiled
 * into both modules through the shared read side.
 *
 * libgit2's git_repository may not be used by two threads at once, and the
 * engine runs the calls about one repository on several worker threads
 * with the same session. So the session is a pool: a call takes an open,
 * already-checked repository out of it (or opens one when it is empty)
 * and gives it back when done (gb_close). Calls in a row share one
 * repository; concurrent calls each hold their own, and the pool never
 * holds more than the most calls that ran at once.
 *
 * open_store allocates the pool and nothing more: the front opens sessions
 * without loading libgit2, and the native reader needs none. The libgit2
 * module puts the first repository in and, with it, the function that
 * frees repositories, so close_store (run by the front) frees them without
 * linking libgit2. */
#include "backends/git/gitbe_read.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct gb_pooled {
	struct git_repository *repo;
	char *path; /* the locator's path it was opened and checked for */
	struct gb_pooled *next;
};

struct gb_session {
	pthread_mutex_t mu;
	struct gb_pooled *free;
	void (*free_repo)(struct git_repository *);
};

int gb_open_store(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **out)
{
	(void)ctx;
	(void)locator;
	(void)identity;
	struct gb_session *s = calloc(1, sizeof *s);
	if (!s)
		return gb_fail_oom();
	pthread_mutex_init(&s->mu, NULL);
	*out = s;
	return 0;
}

void gb_close_store(const struct tether_bctx *ctx, void *session)
{
	(void)ctx;
	struct gb_session *s = session;
	if (!s)
		return;
	for (struct gb_pooled *p = s->free, *next; p; p = next) {
		next = p->next;
		if (s->free_repo)
			s->free_repo(p->repo);
		free(p->path);
		free(p);
	}
	pthread_mutex_destroy(&s->mu);
	free(s);
}

struct git_repository *gb_session_take(struct gb_session *s, const char *path)
{
	struct git_repository *repo = NULL;
	pthread_mutex_lock(&s->mu);
	for (struct gb_pooled **pp = &s->free; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->path, path) == 0) {
			struct gb_pooled *p = *pp;
			*pp = p->next;
			repo = p->repo;
			free(p->path);
			free(p);
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return repo;
}

int gb_session_give(struct gb_session *s, const char *path, struct git_repository *repo,
                    void (*free_repo)(struct git_repository *))
{
	struct gb_pooled *p = calloc(1, sizeof *p);
	char *copy = p ? strdup(path) : NULL;
	if (!copy) {
		free(p);
		return -1; /* the caller frees the repository itself */
	}
	p->repo = repo;
	p->path = copy;
	pthread_mutex_lock(&s->mu);
	s->free_repo = free_repo;
	p->next = s->free;
	s->free = p;
	pthread_mutex_unlock(&s->mu);
	return 0;
}
