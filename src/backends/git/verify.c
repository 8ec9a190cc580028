/* verify and verify_many: is a recorded state still held? A pinned state
 * is held when its tag is there and names the recorded commit; an
 * unpinned one when the commit is still in the object database.
 *
 * verify_many answers for many states of one repository, as verify
 * --all-history asks: the repository is opened once and its tether tags
 * listed in one pass, then each state is a lookup in that list. A tag
 * listed at another commit, or as a symbolic reference, is looked up and
 * peeled as verify does, so every answer is verify's. */
#include "backends/git/gitbe.h"

#include <stdlib.h>
#include <string.h>

static char *tag_missing(const struct gb_obj *o, const char *tag)
{
	return gb_strdupf("tag %s is missing from git repository %s", tag, o->path);
}

static int verify_tag(const struct gb_obj *o, const char *tag, const git_oid *id, char **detail)
{
	char *refname = NULL;
	char want[GB_HEX_SIZE], have[GB_HEX_SIZE];
	git_oid at;
	int rc = gb_tag_refname(o, tag, &refname);

	if (rc == 0 && (rc = gb_tag_target(o->repo, refname, &at)) == GIT_ENOTFOUND) {
		*detail = tag_missing(o, tag);
		rc = 0;
	} else if (rc == 0 && !git_oid_equal(&at, id)) {
		*detail = gb_strdupf("tag %s in git repository %s moved: it names %s, the recorded state is %s",
		                     tag, o->path, gb_hex(&at, have), gb_hex(id, want));
	}
	free(refname);
	return rc;
}

static int verify_commit(const struct gb_obj *o, git_odb *odb, const git_oid *id, char **detail)
{
	char hex[GB_HEX_SIZE];

	if (!git_odb_exists(odb, id))
		*detail = gb_strdupf("commit %s is gone from git repository %s", gb_hex(id, hex), o->path);
	return 0;
}

static int open_odb(const struct gb_obj *o, git_odb **odb)
{
	int rc = git_repository_odb(odb, o->repo);

	return rc < 0 ? tt_git_fail(rc, "git repository %s: cannot open its object database", o->path) : 0;
}

int gb_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              int *ok, char **detail)
{
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	struct gb_obj o;
	git_odb *odb = NULL;
	git_oid id;
	int rc = gb_parse_sha(state, "state", &id);

	*ok = 0;
	*detail = NULL;
	if (rc < 0)
		return rc;
	rc = gb_open_cached(ctx, locator, &o);
	if (rc == TETHER_ENOTFOUND) {
		*detail = gb_strdupf("%s", tether_error_last());
		return 0;
	}
	if (rc < 0)
		return rc;
	if (tag)
		rc = verify_tag(&o, tag, &id, detail);
	else if ((rc = open_odb(&o, &odb)) == 0)
		rc = verify_commit(&o, odb, &id, detail);
	git_odb_free(odb);
	*ok = rc == 0 && !*detail;
	gb_close(&o);
	return rc;
}

/* ------------------------------------------------------------------ */
/* verify_many                                                         */
/* ------------------------------------------------------------------ */

/* The repository's tether tags, sorted by name. */
struct listed_tag {
	char *name;    /* without "refs/tags/" */
	git_oid target;
	int direct;    /* 0: symbolic, so only a lookup knows where it leads */
};

struct tag_list {
	struct listed_tag *v;
	size_t n, cap;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct listed_tag *)a)->name, ((const struct listed_tag *)b)->name);
}

static int tag_list_add(struct tag_list *l, const git_reference *ref)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct listed_tag *grown = realloc(l->v, cap * sizeof *grown);
		if (!grown)
			return gb_fail_oom();
		l->v = grown;
		l->cap = cap;
	}
	struct listed_tag *t = &l->v[l->n];
	const git_oid *target = git_reference_target(ref);
	if (!(t->name = strdup(git_reference_name(ref) + strlen("refs/tags/"))))
		return gb_fail_oom();
	t->direct = target != NULL;
	if (target)
		git_oid_cpy(&t->target, target);
	l->n++;
	return 0;
}

static int list_tags(const struct gb_obj *o, struct tag_list *l)
{
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	int added = 0;
	int rc = git_reference_iterator_glob_new(&it, o->repo, "refs/tags/" GB_TAG_PREFIX "*");

	while (rc == 0 && (rc = git_reference_next(&ref, it)) == 0) {
		added = tag_list_add(l, ref);
		git_reference_free(ref);
		if (added < 0)
			break;
	}
	git_reference_iterator_free(it);
	if (added < 0)
		return added;
	if (rc != GIT_ITEROVER)
		return tt_git_fail(rc, "git repository %s: cannot list its tags", o->path);
	qsort(l->v, l->n, sizeof *l->v, by_name);
	return 0;
}

static void tag_list_free(struct tag_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
}

static const struct listed_tag *find_tag(const struct tag_list *l, const char *name)
{
	struct listed_tag key = {.name = (char *)name};
	return bsearch(&key, l->v, l->n, sizeof *l->v, by_name);
}

/* One item, against the open repository and its listed tags. */
static int verify_listed(const struct gb_obj *o, git_odb *odb, const struct tag_list *tags,
                         struct tether_verify_item *item)
{
	const char *tag = json_string_value(json_object_get(item->pin_ref, "tag"));
	char *refname = NULL;
	git_oid id;
	int rc = gb_parse_sha(item->state, "state", &id);

	if (rc == 0 && !tag)
		return verify_commit(o, odb, &id, &item->detail);
	if (rc == 0)
		rc = gb_tag_refname(o, tag, &refname); /* refuses what verify refuses */
	free(refname);
	if (rc < 0)
		return rc;
	const struct listed_tag *t = find_tag(tags, tag);
	if (!t) {
		item->detail = tag_missing(o, tag);
		return 0;
	}
	if (t->direct && git_oid_equal(&t->target, &id))
		return 0;
	return verify_tag(o, tag, &id, &item->detail);
}

/* Item i's repository is the open one: its locator's checks, short of
 * opening it again. 1 when it names another path (verify answers it). */
static int same_repository(const struct gb_obj *open, const struct tether_verify_item *item)
{
	struct gb_obj o;
	int rc = gb_check_locator(item->locator, &o);

	if (rc < 0)
		return rc;
	return strcmp(o.path, open->path) != 0;
}

static void answer(const struct tether_bctx *ctx, const struct gb_obj *o, git_odb *odb,
                   const struct tag_list *tags, struct tether_verify_item *item)
{
	int rc = same_repository(o, item);

	item->ok = 0;
	item->detail = NULL;
	tether_error_clear();
	if (rc == 1) {
		rc = gb_verify(ctx, item->locator, item->state, item->pin_ref, &item->ok, &item->detail);
	} else if (rc == 0) {
		rc = verify_listed(o, odb, tags, item);
		item->ok = rc == 0 && !item->detail;
	}
	if (rc < 0) {
		free(item->detail);
		item->ok = 0;
		item->detail = gb_strdupf("%s", tether_error_last());
	}
}

int gb_verify_many(const struct tether_bctx *ctx, struct tether_verify_item *items, size_t n)
{
	struct tag_list tags = {0};
	struct gb_obj o;
	git_odb *odb = NULL;
	int rc = n ? gb_open_cached(ctx, items[0].locator, &o) : 0;

	if (rc < 0 || n == 0)
		return rc;
	if ((rc = list_tags(&o, &tags)) == 0 && (rc = open_odb(&o, &odb)) == 0)
		for (size_t i = 0; i < n; i++)
			answer(ctx, &o, odb, &tags, &items[i]);
	git_odb_free(odb);
	tag_list_free(&tags);
	gb_close(&o);
	return rc;
}
