/* gitbe_read.h's reader on libgit2, for tether-gitbe-libgit2.so: the
 * shared verify, list_pins and place checks run on these. None returns
 * GB_FORWARD: this is where forwarded calls end. */
#include "backends/git/gitbe.h"

#include <stdlib.h>
#include <string.h>

int gb_rd_open(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o, int cached)
{
	return cached ? gb_open_cached(ctx, locator, o) : gb_open(ctx, locator, o);
}

int gb_rd_tag_target(const struct gb_obj *o, const char *refname, const unsigned char *peeled,
                     unsigned char out[GB_OID_SIZE])
{
	git_oid at;
	int rc = gb_tag_target(o->repo, refname, &at);

	(void)peeled; /* libgit2 reads packed-refs' peel itself */
	if (rc == GIT_ENOTFOUND)
		return GB_NOTFOUND;
	if (rc == 0)
		memcpy(out, at.id, GB_OID_SIZE);
	return rc;
}

int gb_rd_has_object(const struct gb_obj *o, const unsigned char id[GB_OID_SIZE], int *has)
{
	git_odb *odb = NULL;
	git_oid oid;
	int rc = git_repository_odb(&odb, o->repo);

	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot open its object database", o->path);
	git_oid_fromraw(&oid, id);
	*has = git_odb_exists(odb, &oid);
	git_odb_free(odb);
	return 0;
}

/* The iterator hands each reference with its target already read, and
 * tether's pins are lightweight tags whose target is the commit, so
 * listing 1000 pins reads 1000 small files, not 2000 files and 1000
 * objects. */
int gb_rd_each_tag(const struct gb_obj *o, gb_tag_cb cb, void *ud)
{
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	int stop = 0;
	int rc = git_reference_iterator_glob_new(&it, o->repo, "refs/tags/" GB_TAG_PREFIX "*");

	while (rc == 0 && (rc = git_reference_next(&ref, it)) == 0) {
		const git_oid *target = git_reference_target(ref);
		const git_oid *peel = git_reference_target_peel(ref);
		stop = cb(ud, git_reference_name(ref) + strlen("refs/tags/"), target ? target->id : NULL,
		          target && peel ? peel->id : NULL);
		git_reference_free(ref);
		if (stop)
			break;
	}
	git_reference_iterator_free(it);
	if (stop)
		return stop;
	if (rc != GIT_ITEROVER)
		return tt_git_fail(rc, "git repository %s: cannot list its tags", o->path);
	return 0;
}

int gb_rd_remote_name_valid(const char *name, int *valid)
{
	*valid = 0;
	if (git_remote_name_is_valid(valid, name) < 0)
		*valid = 0;
	return 0;
}

int gb_rd_refname_valid(const char *refname, int *valid)
{
	*valid = 0;
	if (git_reference_name_is_valid(valid, refname) < 0)
		*valid = 0;
	return 0;
}
