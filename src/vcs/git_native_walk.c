/* See git_native_walk.h. The commits are walked first, whole (a list of
 * ids), so that a repository the native walk leaves to libgit2 is handed
 * over before any callback has run. */
#include "vcs/git_native_walk.h"
#include "vcs/git_walk.h"
#include "vcs/gitrevwalk.h"

#include <tether/backend.h>

#include <stdlib.h>

struct native_src {
	struct tt_godb *db;
	const unsigned char *ids;
	size_t n;
};

static int native_read(void *ud, const unsigned char id[20], enum tt_gobj_type *type, const unsigned char **data,
                       size_t *len, void **keep)
{
	struct native_src *s = ud;
	unsigned char *bytes;
	int rc = tt_godb_read(s->db, id, type, &bytes, len);

	if (rc == TETHER_ENOTFOUND) /* gitodb's message names the object */
		rc = TETHER_ERROR;
	if (rc < 0)
		return rc;
	*data = bytes;
	*keep = bytes;
	return 0;
}

static void native_release(void *ud, void *keep)
{
	(void)ud;
	free(keep);
}

static int native_commits(void *ud, int (*cb)(void *cbud, const unsigned char id[20], const unsigned char *tree),
                          void *cbud)
{
	const struct native_src *s = ud;
	int rc = 0;

	for (size_t i = 0; i < s->n && rc == 0; i++)
		rc = cb(cbud, s->ids + 40 * i, s->ids + 40 * i + 20);
	return rc;
}

/* The walk's commits into *s: 0 (and *to_libgit2 when it is libgit2's
 * walk), < 0. */
static int prepare(const struct tt_grepo *r, struct tt_godb *db, struct native_src *s, unsigned char **ids,
                   int *to_libgit2)
{
	int rc = tt_grevwalk_all(r, db, ids, &s->n);

	s->db = db;
	s->ids = *ids;
	*to_libgit2 = rc == 1;
	return rc == 1 ? 0 : rc;
}

int tt_native_each_commit(const struct tt_grepo *r, struct tt_godb *db, int (*cb)(void *ud, const char *id),
                          void *ud, int *to_libgit2)
{
	struct native_src s;
	struct tt_walk_src src = {&s, native_read, native_release, native_commits};
	unsigned char *ids = NULL;
	int rc = prepare(r, db, &s, &ids, to_libgit2);

	if (rc == 0 && !*to_libgit2)
		rc = tt_walk_each_commit(&src, cb, ud);
	free(ids);
	return rc;
}

int tt_native_history(const struct tt_grepo *r, struct tt_godb *db, const char *dir, const char *cache_path,
                      const struct tt_walk_wants *wants, size_t *commits, int *to_libgit2)
{
	struct native_src s;
	struct tt_walk_src src = {&s, native_read, native_release, native_commits};
	unsigned char *ids = NULL;
	int rc = prepare(r, db, &s, &ids, to_libgit2);

	*commits = 0;
	if (rc == 0 && !*to_libgit2)
		rc = tt_walk_history(&src, dir, cache_path, wants, commits);
	free(ids);
	return rc;
}
