/* A read-only view of a repository's `repo` file, parsed once and reused
 * while the file's version is unchanged: history walks (verify
 * --all-history, gc) ask one repository about many states in a row, and a
 * stat is much cheaper than reading, decompressing and parsing a file that
 * grows with every snapshot. The view lives in the command's store session
 * (open_store), shared by every key and worker thread on the repository;
 * a write always reads the file afresh (update.c), never through it.
 *
 * Views are counted: the session holds its current one, and each open
 * repository handle the one it last asked for, so a view another thread
 * replaces (the file changed) stays whole until the handle that reads it
 * lets go. Without a session (a call outside a command) a handle's view is
 * its own, read once per version and freed with the handle. */
#include "backends/icechunk/ic.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct ic_view {
	int refs;                /* under the session's lock when shared */
	struct ic_session *session; /* NULL: the handle's own */
	char *uri;
	struct tether_store_version version;
	struct ic_repo repo;
};

struct ic_session {
	pthread_mutex_t mu;
	struct ic_view *current;
};

int ic_open_store(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **out)
{
	(void)ctx;
	(void)locator;
	(void)identity;
	struct ic_session *s = calloc(1, sizeof *s);
	if (!s)
		return ic_fail_oom();
	pthread_mutex_init(&s->mu, NULL);
	*out = s;
	return 0;
}

static void view_free(struct ic_view *v)
{
	free(v->uri);
	ic_repo_free(&v->repo);
	free(v);
}

static void view_release(struct ic_view *v)
{
	if (!v)
		return;
	int left;
	if (v->session) {
		pthread_mutex_lock(&v->session->mu);
		left = --v->refs;
		pthread_mutex_unlock(&v->session->mu);
	} else {
		left = --v->refs;
	}
	if (left == 0)
		view_free(v);
}

void ic_close_store(const struct tether_bctx *ctx, void *session)
{
	(void)ctx;
	struct ic_session *s = session;
	if (!s)
		return;
	view_release(s->current);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void ic_repo_view_release(struct ic_repository *repo)
{
	view_release(repo->view);
	repo->view = NULL;
}

static int matches(const struct ic_view *v, const char *uri, const struct tether_store_version *now)
{
	return v && strcmp(v->uri, uri) == 0 && strcmp(v->version.token, now->token) == 0;
}

/* The session's view when it is of this version, counted for the caller. */
static struct ic_view *shared_view(struct ic_session *s, const char *uri, const struct tether_store_version *now)
{
	struct ic_view *v = NULL;
	pthread_mutex_lock(&s->mu);
	if (matches(s->current, uri, now)) {
		v = s->current;
		v->refs++;
	}
	pthread_mutex_unlock(&s->mu);
	return v;
}

/* Make `fresh` the session's view (one count for the session, one for the
 * caller), letting go of the one it replaces. */
static void share_view(struct ic_session *s, struct ic_view *fresh)
{
	pthread_mutex_lock(&s->mu);
	struct ic_view *old = s->current;
	fresh->refs = 2;
	fresh->session = s;
	s->current = fresh;
	pthread_mutex_unlock(&s->mu);
	view_release(old);
}

int ic_repo_view(struct ic_repository *repo, const struct ic_repo **out)
{
	*out = NULL;
	struct tether_store_version now;
	int exists = 0;
	int rc = tether_store_head(repo->store, "repo", &exists, &now, NULL);
	if (rc)
		return rc;
	struct ic_session *s = repo->session;
	struct ic_view *v = NULL;
	if (exists && matches(repo->view, repo->uri, &now)) {
		*out = &repo->view->repo;
		return 0;
	}
	if (exists && s)
		v = shared_view(s, repo->uri, &now);
	if (!v) {
		/* Read it (a missing file is the read's error to report), and
		 * keep it under the version the read itself saw. */
		if (!(v = calloc(1, sizeof *v)) || !(v->uri = strdup(repo->uri))) {
			free(v);
			return ic_fail_oom();
		}
		if ((rc = ic_repo_read(repo->store, &v->repo, &v->version))) {
			free(v->uri);
			free(v);
			return rc;
		}
		v->refs = 1;
		if (s)
			share_view(s, v);
	}
	ic_repo_view_release(repo);
	repo->view = v;
	*out = &v->repo;
	return 0;
}
