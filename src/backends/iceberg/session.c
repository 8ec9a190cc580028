/* Store sessions: a command's calls about one table share one catalog
 * connection (a Postgres connection costs more than the rest of a
 * fingerprint), opened by the first call that needs it. The engine runs
 * calls concurrently and a libpq connection is not for concurrent use, so
 * a call takes the catalog under the session's lock and gives it back when
 * its table is closed. Objects of one table may carry different secrets:
 * a call whose catalog secrets or configuration differ from those the
 * session's catalog was opened with opens its own. */
#include "backends/iceberg/ib.h"

#include <pthread.h>
#include <stdlib.h>

struct ib_session {
	pthread_mutex_t lock;
	struct ib_catalog *cat;
	json_t *opened_with; /* {"secret", "config", "locator_catalog"} */
};

int ib_open_store(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session)
{
	(void)ctx, (void)locator, (void)identity;
	struct ib_session *s = calloc(1, sizeof *s);
	if (!s)
		return ib_fail_oom();
	pthread_mutex_init(&s->lock, NULL);
	*session = s;
	return 0;
}

void ib_close_store(const struct tether_bctx *ctx, void *session)
{
	(void)ctx;
	struct ib_session *s = session;
	if (!s)
		return;
	ib_catalog_close(s->cat);
	json_decref(s->opened_with);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static json_t *what_opens(const struct tether_bctx *ctx, const struct ib_loc *loc)
{
	return json_pack("{s:O?, s:O?, s:O?, s:s}", "secret", ctx->secrets ? json_object_get(ctx->secrets, "catalog") : NULL,
	                 "config", ctx->config ? json_object_get(ctx->config, "catalog") : NULL, "locator_catalog",
	                 loc->catalog, "name", loc->catalog_name);
}

struct ib_catalog *ib_session_take(struct ib_session *s, const struct tether_bctx *ctx, const struct ib_loc *loc,
                                   int *rc)
{
	*rc = 0;
	json_t *mine = what_opens(ctx, loc);
	if (!mine) {
		*rc = ib_fail_oom();
		return NULL;
	}
	pthread_mutex_lock(&s->lock);
	if (s->cat && json_equal(s->opened_with, mine)) {
		json_decref(mine);
		return s->cat;
	}
	if (!s->cat && (*rc = ib_catalog_open(ctx, loc, &s->cat)) == 0) {
		s->opened_with = mine;
		return s->cat;
	}
	pthread_mutex_unlock(&s->lock);
	json_decref(mine);
	return NULL;
}

void ib_session_give(struct ib_session *s)
{
	pthread_mutex_unlock(&s->lock);
}
