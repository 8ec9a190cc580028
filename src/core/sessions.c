/* The engine's table of store sessions (sessions.h). A short table searched
 * in order: a command touches a handful of stores, and an attach costs one
 * identity call and a string compare per open store, far below the open it
 * saves. The table is shared by the worker threads, so it has a lock; an
 * open_store runs under it, so two threads that reach one store at once
 * still open one session. */
#include "core/sessions.h"

#include "core/abi.h"
#include "core/repo.h"
#include "format/cjson.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tt_session {
	const struct tether_backend *b;
	char *name;    /* kind "\n" canonical identity */
	void *session; /* NULL: open_store failed; not asked again this command */
};

struct tt_sessions {
	pthread_mutex_t mu;
	struct tt_session *v;
	size_t n, cap;
	int depth; /* commands begun and not ended */
	tether_progress_fn progress_fn;
	void *progress_ud;
};

/* TETHER_TRACE_SESSIONS=FILE appends one line per open_store and
 * close_store ("open KIND IDENTITY"): how the tests prove that one store
 * is opened once per command. A file the caller names, never stderr. */
static void trace(const char *what, const char *name)
{
	const char *path = getenv("TETHER_TRACE_SESSIONS");
	FILE *f = path && *path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	const char *nl = strchr(name, '\n');
	fprintf(f, "%s %.*s %s\n", what, nl ? (int)(nl - name) : (int)strlen(name), name, nl ? nl + 1 : "");
	fclose(f);
}

void tt_command_begin(struct tether_repo *repo, tether_progress_fn progress_fn, void *progress_ud)
{
	if (!repo)
		return;
	if (!repo->sessions) {
		struct tt_sessions *s = calloc(1, sizeof *s);
		if (!s)
			abort();
		pthread_mutex_init(&s->mu, NULL);
		repo->sessions = s;
	}
	if (repo->sessions->depth++ == 0) {
		repo->sessions->progress_fn = progress_fn;
		repo->sessions->progress_ud = progress_ud;
	}
}

void tt_command_end(struct tether_repo *repo)
{
	if (!repo || !repo->sessions || repo->sessions->depth == 0)
		return;
	if (--repo->sessions->depth == 0) {
		tt_sessions_close(repo);
		repo->sessions->progress_fn = NULL;
		repo->sessions->progress_ud = NULL;
	}
}

void tt_sessions_close(struct tether_repo *repo)
{
	struct tt_sessions *s = repo ? repo->sessions : NULL;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	/* Newest first: a session opened later may lean on an earlier one. */
	for (size_t i = s->n; i-- > 0;) {
		struct tt_session *e = &s->v[i];
		if (e->session) {
			struct tether_bctx ctx;
			tt_repo_bctx(repo, e->b->kind, NULL, &ctx);
			TT_BACKEND_GET(e->b, close_store)(&ctx, e->session);
			trace("close", e->name);
		}
		free(e->name);
	}
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
	pthread_mutex_unlock(&s->mu);
}

void tt_sessions_free(struct tether_repo *repo)
{
	if (!repo || !repo->sessions)
		return;
	tt_sessions_close(repo);
	pthread_mutex_destroy(&repo->sessions->mu);
	free(repo->sessions);
	repo->sessions = NULL;
}

void tt_sessions_progress(const struct tether_repo *repo, struct tether_bctx *ctx)
{
	if (repo && repo->sessions) {
		ctx->progress_fn = repo->sessions->progress_fn;
		ctx->progress_ud = repo->sessions->progress_ud;
	}
}

void tt_session_attach(struct tether_repo *repo, const struct tether_backend *b, const json_t *locator,
                       const json_t *identity, struct tether_bctx *ctx)
{
	struct tt_sessions *s = repo ? repo->sessions : NULL;
	ctx->session = NULL;
	if (!s || s->depth == 0 || !b || !TT_BACKEND_GET(b, open_store) || !TT_BACKEND_GET(b, close_store) ||
	    !json_is_object(locator))
		return;
	json_t *own = NULL;
	if (!identity) {
		if (!b->identity || b->identity(ctx, locator, &own) != 0) {
			tether_error_clear();
			return;
		}
		identity = own;
	}
	char *id = tt_cjson(identity);
	size_t klen = strlen(b->kind), ilen = id ? strlen(id) : 0;
	char *name = id ? malloc(klen + 1 + ilen + 1) : NULL;
	if (name) {
		memcpy(name, b->kind, klen);
		name[klen] = '\n';
		memcpy(name + klen + 1, id, ilen + 1);
	}
	free(id);
	if (!name) {
		json_decref(own);
		return;
	}
	pthread_mutex_lock(&s->mu);
	size_t i = 0;
	while (i < s->n && !(s->v[i].b == b && strcmp(s->v[i].name, name) == 0))
		i++;
	if (i == s->n) {
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 8;
			s->v = realloc(s->v, s->cap * sizeof *s->v);
			if (!s->v)
				abort();
		}
		void *session = NULL;
		if (TT_BACKEND_GET(b, open_store)(ctx, locator, identity, &session) != 0 || !session) {
			session = NULL;
			tether_error_clear();
		} else {
			trace("open", name);
		}
		s->v[s->n++] = (struct tt_session){b, name, session};
		name = NULL;
	}
	ctx->session = s->v[i].session;
	pthread_mutex_unlock(&s->mu);
	free(name);
	json_decref(own);
}
