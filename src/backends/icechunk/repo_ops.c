/* Lookups and mutations of the `repo` model, each checking what Icechunk
 * itself checks (repo_info.rs: add_tag, delete_tag, add_branch,
 * update_branch, delete_branch, set_metadata, mk_latest_updates), so that a
 * change tether makes is one Icechunk would have made. Vectors stay in the
 * order Icechunk's binary searches need: refs and deleted tags by the bytes
 * of their names, snapshots by id. */
#include "backends/icechunk/ic.h"

#include "format/flexbuf.h"

#include <stdlib.h>
#include <string.h>

int ic_str_eq(struct ic_str a, const char *s)
{
	size_t n = strlen(s);
	return a.n == n && (n == 0 || memcmp(a.p, s, n) == 0);
}

int ic_str_cmp(struct ic_str a, struct ic_str b)
{
	uint32_t n = a.n < b.n ? a.n : b.n;
	int c = n ? memcmp(a.p, b.p, n) : 0;
	if (c)
		return c;
	return a.n < b.n ? -1 : a.n > b.n;
}

static struct ic_str as_str(const char *s)
{
	return (struct ic_str){s, (uint32_t)strlen(s)};
}

/* Binary search over elements `stride` bytes apart whose first member is
 * their name (struct ic_ref, or struct ic_str itself), sorted by it: the
 * index, or -(insertion point) - 1. */
static long search_names(const void *base, uint32_t n, size_t stride, struct ic_str name)
{
	long lo = 0, hi = (long)n - 1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		const struct ic_str *at = (const struct ic_str *)((const char *)base + (size_t)mid * stride);
		int c = ic_str_cmp(*at, name);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -lo - 1;
}

static long search_refs(const struct ic_ref *refs, uint32_t n, struct ic_str name)
{
	return search_names(refs, n, sizeof *refs, name);
}

static long search_strs(const struct ic_str *v, uint32_t n, struct ic_str s)
{
	return search_names(v, n, sizeof *v, s);
}

long ic_repo_branch(const struct ic_repo *r, const char *name)
{
	long i = search_refs(r->branches, r->nbranches, as_str(name));
	return i >= 0 ? i : -1;
}

long ic_repo_tag(const struct ic_repo *r, const char *name)
{
	long i = search_refs(r->tags, r->ntags, as_str(name));
	return i >= 0 ? i : -1;
}

long ic_repo_snapshot(const struct ic_repo *r, const struct ic_id *id)
{
	long lo = 0, hi = (long)r->nsnaps - 1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		int c = memcmp(r->snaps[mid].id.b, id->b, IC_ID_BYTES);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

int ic_repo_tag_deleted(const struct ic_repo *r, const char *name)
{
	return search_strs(r->deleted_tags, r->ndeleted, as_str(name)) >= 0;
}

static int in_u16s(const struct ic_u16s *v, uint16_t id)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (v->v[i] == id)
			return 1;
	return 0;
}

int ic_repo_flag_enabled(const struct ic_repo *r, uint16_t id)
{
	/* Icechunk looks in the enabled list first; every flag it has today
	 * defaults to on. */
	if (in_u16s(&r->enabled_flags, id))
		return 1;
	return !in_u16s(&r->disabled_flags, id);
}

unsigned ic_repo_updates_per_file(const struct ic_repo *r)
{
	json_t *config = NULL;
	unsigned keep = IC_UPDATES_PER_FILE;
	if (r->has_config && r->config.n && flex_decode(r->config.p, r->config.n, &config) == 0) {
		json_t *v = json_object_get(config, "num_updates_per_repo_info_file");
		if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 65535)
			keep = (unsigned)json_integer_value(v);
	}
	tether_error_clear(); /* an unreadable config leaves the default, as absent does */
	json_decref(config);
	return keep;
}

static const char *flag_name(uint16_t id)
{
	return id == IC_FLAG_CREATE_TAG ? "create_tag" : id == IC_FLAG_DELETE_TAG ? "delete_tag" : "move_node";
}

static int require_flag(const struct ic_repo *r, uint16_t id, const char *doing)
{
	if (ic_repo_flag_enabled(r, id))
		return 0;
	return tether_error_set(TETHER_EREFUSED,
	                        "cannot %s: the repository's feature flag %s is disabled "
	                        "(repo.set_feature_flag(\"%s\", None) turns it back on)",
	                        doing, flag_name(id), flag_name(id));
}

/* A copy of an array of n elements of `size` bytes with `elem` inserted at
 * `at`, in memory the model owns (the old array may be the payload's), or
 * NULL when out of memory. */
static void *insert_at(struct ic_repo *r, const void *base, uint32_t n, size_t size, uint32_t at, const void *elem)
{
	uint8_t *v = ic_repo_alloc(r, ((size_t)n + 1) * size);
	if (!v)
		return NULL;
	if (at)
		memcpy(v, base, at * size);
	memcpy(v + at * size, elem, size);
	if (n > at)
		memcpy(v + (at + 1) * size, (const uint8_t *)base + at * size, (n - at) * size);
	return v;
}

static int insert_ref(struct ic_repo *r, struct ic_ref **refs, uint32_t *n, uint32_t at, struct ic_ref ref)
{
	struct ic_ref *v = insert_at(r, *refs, *n, sizeof ref, at, &ref);
	if (!v)
		return ic_fail_oom();
	*refs = v;
	(*n)++;
	return 0;
}

static void remove_ref(struct ic_ref *refs, uint32_t *n, uint32_t at)
{
	memmove(refs + at, refs + at + 1, (*n - at - 1) * sizeof *refs);
	(*n)--;
}

static int check_name(const char *name, const char *what)
{
	/* Spec 2 takes any UTF-8; spec 1 forbids '/', and a name tether
	 * writes should work in both. */
	if (!*name || strchr(name, '/'))
		return tether_error_set(TETHER_EUSAGE, "\"%s\" is not a valid Icechunk %s name", name, what);
	return 0;
}

int ic_repo_add_tag(struct ic_repo *r, const char *name, uint32_t snap)
{
	int rc = check_name(name, "tag");
	if (rc || (rc = require_flag(r, IC_FLAG_CREATE_TAG, "create a tag")))
		return rc;
	struct ic_str s = ic_repo_strdup(r, name);
	if (!s.p)
		return ic_fail_oom();
	long at = search_refs(r->tags, r->ntags, s);
	if (at >= 0)
		return tether_error_set(TETHER_EREFUSED, "tag %s already exists", name);
	if (ic_repo_tag_deleted(r, name))
		return tether_error_set(TETHER_EREFUSED,
		                        "tag %s was deleted before, and Icechunk never reuses a tag name", name);
	return insert_ref(r, &r->tags, &r->ntags, (uint32_t)(-at - 1), (struct ic_ref){s, snap});
}

int ic_repo_delete_tag(struct ic_repo *r, const char *name, struct ic_id *previous)
{
	int rc = require_flag(r, IC_FLAG_DELETE_TAG, "delete a tag");
	if (rc)
		return rc;
	long at = search_refs(r->tags, r->ntags, as_str(name));
	if (at < 0)
		return tether_error_set(TETHER_ENOTFOUND, "tag %s does not exist", name);
	*previous = r->snaps[r->tags[at].snap].id;
	remove_ref(r->tags, &r->ntags, (uint32_t)at);
	struct ic_str s = ic_repo_strdup(r, name);
	if (!s.p)
		return ic_fail_oom();
	long pos = search_strs(r->deleted_tags, r->ndeleted, s);
	if (pos >= 0)
		return 0;
	struct ic_str *v = insert_at(r, r->deleted_tags, r->ndeleted, sizeof s, (uint32_t)(-pos - 1), &s);
	if (!v)
		return ic_fail_oom();
	r->deleted_tags = v;
	r->ndeleted++;
	return 0;
}

int ic_repo_add_branch(struct ic_repo *r, const char *name, uint32_t snap)
{
	int rc = check_name(name, "branch");
	if (rc)
		return rc;
	struct ic_str s = ic_repo_strdup(r, name);
	if (!s.p)
		return ic_fail_oom();
	long at = search_refs(r->branches, r->nbranches, s);
	if (at >= 0)
		return tether_error_set(TETHER_EREFUSED, "branch %s already exists", name);
	return insert_ref(r, &r->branches, &r->nbranches, (uint32_t)(-at - 1), (struct ic_ref){s, snap});
}

int ic_repo_set_branch(struct ic_repo *r, const char *name, uint32_t snap, struct ic_id *previous)
{
	long at = search_refs(r->branches, r->nbranches, as_str(name));
	if (at < 0)
		return tether_error_set(TETHER_ENOTFOUND, "branch %s does not exist", name);
	*previous = r->snaps[r->branches[at].snap].id;
	r->branches[at].snap = snap;
	return 0;
}

int ic_repo_delete_branch(struct ic_repo *r, const char *name, struct ic_id *previous)
{
	if (strcmp(name, "main") == 0)
		return tether_error_set(TETHER_EREFUSED, "Icechunk never deletes its main branch");
	long at = search_refs(r->branches, r->nbranches, as_str(name));
	if (at < 0)
		return tether_error_set(TETHER_ENOTFOUND, "branch %s does not exist", name);
	*previous = r->snaps[r->branches[at].snap].id;
	remove_ref(r->branches, &r->nbranches, (uint32_t)at);
	return 0;
}

static int cmp_meta(const void *a, const void *b)
{
	return ic_str_cmp(((const struct ic_meta *)a)->name, ((const struct ic_meta *)b)->name);
}

int ic_repo_set_metadata(struct ic_repo *r, struct ic_meta *items, uint32_t n)
{
	qsort(items, n, sizeof *items, cmp_meta);
	for (uint32_t i = 1; i < n; i++)
		if (ic_str_cmp(items[i - 1].name, items[i].name) == 0)
			return tether_error_set(TETHER_ERROR, "repository metadata names %.*s twice",
			                        (int)items[i].name.n, items[i].name.p);
	r->meta.v = items;
	r->meta.n = n;
	r->meta.present = 1;
	return 0;
}

int ic_repo_log(struct ic_repo *r, const struct ic_update *u, const char *backup, unsigned keep)
{
	if (!r->nupdates)
		return tether_error_set(TETHER_EIO, "the repository's ops log is empty");
	const struct ic_update *head = &r->updates[0];
	if (head->has_backup)
		return tether_error_set(TETHER_EREFUSED, "the repository's ops log is inconsistent (its newest "
		                                         "entry names a backup): not writing");
	if (u->at <= head->at)
		return tether_error_set(TETHER_EREFUSED,
		                        "the repository's newest update is later than this machine's clock "
		                        "(%llu >= %llu µs): Icechunk requires its ops log to move forward",
		                        (unsigned long long)head->at, (unsigned long long)u->at);
	struct ic_str name = ic_repo_strdup(r, backup);
	struct ic_update *v = ic_repo_alloc(r, ((size_t)r->nupdates + 1) * sizeof *v);
	if (!name.p || !v)
		return ic_fail_oom();
	uint32_t n = 0;
	v[n] = *u;
	v[n].has_backup = 0;
	n++;
	for (uint32_t i = 0; i < r->nupdates; i++) {
		struct ic_update e = r->updates[i];
		if (i == 0) {
			e.backup = name;
			e.has_backup = 1;
		}
		/* Past `keep` entries, the first one with a backup is where the
		 * older history continues. */
		if (n >= keep && e.has_backup) {
			r->before = e.backup;
			r->has_before = 1;
			break;
		}
		v[n++] = e;
	}
	r->updates = v;
	r->nupdates = n;
	return 0;
}
