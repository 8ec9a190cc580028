/* The history walks (git_history.c) on libgit2: objects from the
 * repository's object database (raw, hash-verified by libgit2), commits
 * from a git_revwalk with libgit2's default order. tether-vcs-libgit2 and
 * tether-vcs-jj walk this way; tether-vcs-git walks natively
 * (git_native_walk.c) and comes here only for what its reader leaves to
 * libgit2. */
#include "util/git_error.h"
#include "vcs/git_store.h"
#include "vcs/git_walk.h"

#include <tether/backend.h>

#include <git2.h>

struct lg2_src {
	git_repository *repo;
	git_odb *odb;
	const char *const *tips;
	size_t ntips;
};

/* tips NULL: every ref (branches, tags, remotes, everything under refs/)
 * and HEAD; else exactly those commits. */
static int start_walk(const struct lg2_src *s, git_revwalk **out)
{
	git_revwalk *walk;
	int rc = git_revwalk_new(&walk, s->repo);

	if (rc < 0)
		return tt_git_fail(rc, "cannot walk the history");
	if (!s->tips) {
		rc = git_revwalk_push_glob(walk, "refs/*");
		/* An unborn HEAD adds nothing (and libgit2 reports it as an error). */
		if (rc == 0 && git_repository_head_unborn(s->repo) != 1)
			rc = git_revwalk_push_head(walk);
		if (rc < 0) {
			git_revwalk_free(walk);
			return tt_git_fail(rc, "cannot walk the history from every ref");
		}
	}
	for (size_t i = 0; s->tips && i < s->ntips; i++) {
		git_oid oid;
		rc = git_oid_fromstr(&oid, s->tips[i]);
		if (rc == 0)
			rc = git_revwalk_push(walk, &oid);
		if (rc < 0) {
			git_revwalk_free(walk);
			return tt_git_fail(rc, "cannot walk the history from %s", s->tips[i]);
		}
	}
	*out = walk;
	return 0;
}

static int lg2_commits(void *ud, int (*cb)(void *cbud, const unsigned char id[20], const unsigned char *tree),
                       void *cbud)
{
	git_revwalk *walk = NULL;
	git_oid oid;
	int rc = start_walk(ud, &walk), stop = 0;

	if (rc < 0)
		return rc;
	while (!stop && (rc = git_revwalk_next(&oid, walk)) == 0)
		stop = cb(cbud, oid.id, NULL);
	git_revwalk_free(walk);
	if (stop)
		return stop;
	return rc == GIT_ITEROVER ? 0 : tt_git_fail(rc, "cannot walk the history");
}

static int lg2_read(void *ud, const unsigned char id[20], enum tt_gobj_type *type, const unsigned char **data,
                    size_t *len, void **keep)
{
	struct lg2_src *s = ud;
	git_odb_object *obj;
	git_oid oid;
	char hex[GIT_OID_HEXSZ + 1];
	int rc;

	git_oid_fromraw(&oid, id);
	if ((rc = git_odb_read(&obj, s->odb, &oid)) < 0)
		return tt_git_fail(rc, "cannot read object %s", git_oid_tostr(hex, sizeof hex, &oid));
	/* libgit2's object type numbers are git's, as gitodb.h's are. */
	*type = (enum tt_gobj_type)git_odb_object_type(obj);
	*data = git_odb_object_data(obj);
	*len = git_odb_object_size(obj);
	*keep = obj;
	return 0;
}

static void lg2_release(void *ud, void *keep)
{
	(void)ud;
	git_odb_object_free(keep);
}

int tt_git_store_walk_from(struct tether_vcs *v, const char *const *tips, size_t ntips,
                           int (*cb)(void *ud, const char *id), void *ud)
{
	struct lg2_src s = {tt_git_store_repository(v), NULL, tips, ntips};
	struct tt_walk_src src = {&s, lg2_read, lg2_release, lg2_commits};

	return tt_walk_each_commit(&src, cb, ud);
}

int tt_git_store_history(struct tether_vcs *v, const char *const *tips, size_t ntips, const char *dir,
                         const char *cache_path, const struct tt_walk_wants *wants, size_t *commits)
{
	struct lg2_src s = {tt_git_store_repository(v), NULL, tips, ntips};
	struct tt_walk_src src = {&s, lg2_read, lg2_release, lg2_commits};
	int rc = git_repository_odb(&s.odb, s.repo);

	*commits = 0;
	if (rc < 0)
		return tt_git_fail(rc, "cannot open the object database");
	rc = tt_walk_history(&src, dir, cache_path, wants, commits);
	git_odb_free(s.odb);
	return rc;
}
