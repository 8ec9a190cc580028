/* verify and verify_many: is a recorded state still held? A pinned state
 * is held when its tag is there and names the recorded commit; an
 * unpinned one when the commit is still in the object database.
 *
 * verify_many answers for many states of one repository, as verify
 * --all-history asks: the repository is opened once and its tether tags
 * listed in one pass, then each state is a lookup in that list. A tag
 * listed at another commit, or as a symbolic reference, is looked up and
 * peeled as verify does, so every answer is verify's.
 *
 * Shared by both modules (gitbe_read.h): the reader's hooks do the reads,
 * and GB_FORWARD from any of them is returned as is, for the front to hand
 * the whole call to libgit2. */
#include "backends/git/gitbe_read.h"

#include <stdlib.h>
#include <string.h>

static char *tag_missing(const struct gb_obj *o, const char *tag)
{
	return gb_strdupf("tag %s is missing from git repository %s", tag, o->path);
}

static int verify_tag(const struct gb_obj *o, const char *tag, const unsigned char *peeled,
                      const unsigned char id[GB_OID_SIZE], char **detail)
{
	char *refname = NULL;
	char want[GB_HEX_SIZE], have[GB_HEX_SIZE];
	unsigned char at[GB_OID_SIZE];
	int rc = gb_tag_refname(o, tag, &refname);

	if (rc == 0 && (rc = gb_rd_tag_target(o, refname, peeled, at)) == GB_NOTFOUND) {
		*detail = tag_missing(o, tag);
		rc = 0;
	} else if (rc == 0 && memcmp(at, id, GB_OID_SIZE) != 0) {
		*detail = gb_strdupf("tag %s in git repository %s moved: it names %s, the recorded state is %s",
		                     tag, o->path, gb_hex20(at, have), gb_hex20(id, want));
	}
	free(refname);
	return rc;
}

static int verify_commit(const struct gb_obj *o, const unsigned char id[GB_OID_SIZE], char **detail)
{
	char hex[GB_HEX_SIZE];
	int has = 0;
	int rc = gb_rd_has_object(o, id, &has);

	if (rc == 0 && !has)
		*detail = gb_strdupf("commit %s is gone from git repository %s", gb_hex20(id, hex), o->path);
	return rc;
}

int gb_verify_do(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                 const json_t *pin_ref, int *ok, char **detail)
{
	const char *tag = json_string_value(json_object_get(pin_ref, "tag"));
	struct gb_obj o;
	unsigned char id[GB_OID_SIZE];
	int rc = gb_parse_sha20(state, "state", id);

	*ok = 0;
	*detail = NULL;
	if (rc < 0)
		return rc;
	rc = gb_rd_open(ctx, locator, &o, 1);
	if (rc == TETHER_ENOTFOUND) {
		*detail = gb_strdupf("%s", tether_error_last());
		return 0;
	}
	if (rc != 0)
		return rc;
	if (tag)
		rc = verify_tag(&o, tag, NULL, id, detail);
	else
		rc = verify_commit(&o, id, detail);
	if (rc != 0) {
		free(*detail);
		*detail = NULL;
	}
	*ok = rc == 0 && !*detail;
	gb_close(&o);
	return rc;
}

/* ------------------------------------------------------------------ */
/* verify_many                                                         */
/* ------------------------------------------------------------------ */

/* The repository's tether tags, sorted by name. */
struct listed_tag {
	char *name; /* without "refs/tags/" */
	unsigned char target[GB_OID_SIZE], peeled[GB_OID_SIZE];
	int direct;     /* 0: symbolic, so only a lookup knows where it leads */
	int has_peeled; /* packed-refs says what it peels to */
};

struct tag_list {
	struct listed_tag *v;
	size_t n, cap;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct listed_tag *)a)->name, ((const struct listed_tag *)b)->name);
}

static int tag_list_add(void *ud, const char *name, const unsigned char *target, const unsigned char *peeled)
{
	struct tag_list *l = ud;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct listed_tag *grown = realloc(l->v, cap * sizeof *grown);
		if (!grown)
			return gb_fail_oom();
		l->v = grown;
		l->cap = cap;
	}
	struct listed_tag *t = &l->v[l->n];
	memset(t, 0, sizeof *t);
	if (!(t->name = strdup(name)))
		return gb_fail_oom();
	t->direct = target != NULL;
	if (target)
		memcpy(t->target, target, GB_OID_SIZE);
	t->has_peeled = peeled != NULL;
	if (peeled)
		memcpy(t->peeled, peeled, GB_OID_SIZE);
	l->n++;
	return 0;
}

static void tag_list_free(struct tag_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
}

static int list_tags(const struct gb_obj *o, struct tag_list *l)
{
	int rc = gb_rd_each_tag(o, tag_list_add, l);

	if (rc == 0)
		qsort(l->v, l->n, sizeof *l->v, by_name);
	return rc;
}

static const struct listed_tag *find_tag(const struct tag_list *l, const char *name)
{
	struct listed_tag key = {.name = (char *)name};
	return l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, by_name) : NULL;
}

/* One item, against the open repository and its listed tags. */
static int verify_listed(const struct gb_obj *o, const struct tag_list *tags, struct tether_verify_item *item)
{
	const char *tag = json_string_value(json_object_get(item->pin_ref, "tag"));
	char *refname = NULL;
	unsigned char id[GB_OID_SIZE];
	int rc = gb_parse_sha20(item->state, "state", id);

	if (rc == 0 && !tag)
		return verify_commit(o, id, &item->detail);
	if (rc == 0)
		rc = gb_tag_refname(o, tag, &refname); /* refuses what verify refuses */
	free(refname);
	if (rc != 0)
		return rc;
	const struct listed_tag *t = find_tag(tags, tag);
	/* Not listed: absent, or a symbolic ref leading nowhere (which a
	 * listing may leave out); the lookup tells them apart as verify does. */
	if (!t)
		return verify_tag(o, tag, NULL, id, &item->detail);
	if (t->direct && memcmp(t->target, id, GB_OID_SIZE) == 0)
		return 0;
	return verify_tag(o, tag, t->direct && t->has_peeled ? t->peeled : NULL, id, &item->detail);
}

/* Item i's repository is the open one: its locator's checks, short of
 * opening it again. 1 when it names another path (verify answers it). */
static int same_repository(const struct gb_obj *open, const struct tether_verify_item *item, int *other)
{
	struct gb_obj o;
	int rc = gb_check_locator(item->locator, &o);

	if (rc == 0)
		*other = strcmp(o.path, open->path) != 0;
	return rc;
}

/* One item's answer; GB_FORWARD when the reader cannot give it. */
static int answer(const struct tether_bctx *ctx, const struct gb_obj *o, const struct tag_list *tags,
                  struct tether_verify_item *item)
{
	int other = 0;
	int rc = same_repository(o, item, &other);

	item->ok = 0;
	item->detail = NULL;
	tether_error_clear();
	if (rc == 0 && other) {
		rc = gb_verify_do(ctx, item->locator, item->state, item->pin_ref, &item->ok, &item->detail);
	} else if (rc == 0) {
		rc = verify_listed(o, tags, item);
		item->ok = rc == 0 && !item->detail;
	}
	if (rc == GB_FORWARD) {
		free(item->detail);
		item->detail = NULL;
		item->ok = 0;
		return rc;
	}
	if (rc < 0) {
		free(item->detail);
		item->ok = 0;
		item->detail = gb_strdupf("%s", tether_error_last());
	}
	return 0;
}

int gb_verify_many_do(const struct tether_bctx *ctx, struct tether_verify_item *items, size_t n)
{
	struct tag_list tags = {0};
	struct gb_obj o;
	int rc = n ? gb_rd_open(ctx, items[0].locator, &o, 1) : 0;

	if (rc != 0 || n == 0)
		return rc;
	if ((rc = list_tags(&o, &tags)) == 0)
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = answer(ctx, &o, &tags, &items[i]);
	if (rc == GB_FORWARD)
		for (size_t i = 0; i < n; i++) {
			free(items[i].detail);
			items[i].detail = NULL;
			items[i].ok = 0;
		}
	tag_list_free(&tags);
	gb_close(&o);
	return rc;
}

/* ------------------------------------------------------------------ */
/* list_pins                                                           */
/* ------------------------------------------------------------------ */

struct pin_listing {
	const struct gb_obj *o;
	json_t *refs;
};

/* A symbolic tag is left out: a listing names what a tag holds directly
 * (verify peels; a listing only names). */
static int add_pin(void *ud, const char *name, const unsigned char *target, const unsigned char *peeled)
{
	struct pin_listing *l = ud;
	json_t *pin = target ? gb_make_pin_ref(l->o, name, target) : NULL;

	(void)peeled;
	if (target && (!pin || json_array_append_new(l->refs, pin) < 0))
		return gb_fail_oom();
	return 0;
}

int gb_list_pins_do(const struct tether_bctx *ctx, const json_t *locator, json_t **pin_refs)
{
	struct gb_obj o;
	int rc = gb_rd_open(ctx, locator, &o, 0);

	if (rc != 0)
		return rc;
	struct pin_listing l = {&o, json_array()};
	rc = l.refs ? gb_rd_each_tag(&o, add_pin, &l) : gb_fail_oom();
	gb_close(&o);
	if (rc != 0) {
		json_decref(l.refs);
		return rc;
	}
	*pin_refs = l.refs;
	return 0;
}
