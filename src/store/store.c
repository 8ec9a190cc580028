/* The byte-store front (include/tether/store.h): open by URI, check every
 * key and argument once, then call the implementation the scheme names.
 * Keys come from backends, but parts of them (a tag's name in an Icechunk
 * 1.x ref path) come from manifests a clone brought, so a key that could
 * leave the root is refused here, for every implementation. */
#include "store/store_impl.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_PAGE 1000

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

int tether_store_is_staging_name(const char *name)
{
	const char *hash = strrchr(name, '#');
	if (!hash || !hash[1])
		return 0;
	for (const char *p = hash + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

static int key_ok(const char *key, int allow_empty)
{
	if (!key || (!*key && !allow_empty) || key[0] == '/' || (*key && key[strlen(key) - 1] == '/'))
		return 0;
	for (const char *seg = key; *seg;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);
		if (n == 0)
			return 0; /* "a//b" */
		if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (memchr(seg, '\\', n))
			return 0;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)seg[i] < 0x20)
				return 0;
		if (!end)
			return !tether_store_is_staging_name(seg);
		seg = end + 1;
	}
	return 1;
}

static int bad_key(const struct tether_store *s, const char *key)
{
	return tether_error_set(TETHER_EUSAGE, "%s: \"%s\" is not a valid key in a store", s->uri,
	                        key ? key : "(null)");
}

int tether_store_open(const char *uri, const json_t *options, tether_store **out)
{
	*out = NULL;
	char *canon = NULL, *scheme = NULL;
	int rc = tether_store_canonical(uri, NULL, &canon);
	if (rc)
		return rc;
	const struct tether_store_ops *ops = NULL;
	scheme = tt_store_scheme_of(canon);
	rc = scheme ? tt_store_find_ops(scheme, &ops) : oom();
	free(scheme);
	struct tether_store *s = rc ? NULL : calloc(1, sizeof *s);
	if (!rc && !s)
		rc = oom();
	if (!rc) {
		s->ops = ops;
		s->uri = canon;
		canon = NULL;
		rc = ops->open(s->uri, options, &s->impl);
	}
	if (rc) {
		if (s)
			free(s->uri);
		free(s);
		free(canon);
		return rc;
	}
	*out = s;
	return 0;
}

void tether_store_close(tether_store *s)
{
	if (!s)
		return;
	s->ops->close(s->impl);
	free(s->uri);
	free(s);
}

const char *tether_store_uri(const tether_store *s)
{
	return s->uri;
}

unsigned tether_store_flags(const tether_store *s)
{
	return TT_STORE_HAS(s->ops, flags_of) ? s->ops->flags_of(s->impl) : s->ops->flags;
}

int tether_store_get_range(tether_store *s, const char *key, uint64_t offset, uint64_t length, uint8_t **data,
                           size_t *len, struct tether_store_version *version)
{
	*data = NULL;
	*len = 0;
	if (!key_ok(key, 0))
		return bad_key(s, key);
	int rc = s->ops->get(s->impl, key, offset, length, data, len, version);
	if (rc) {
		free(*data);
		*data = NULL;
		*len = 0;
	}
	return rc;
}

int tether_store_get(tether_store *s, const char *key, uint8_t **data, size_t *len,
                     struct tether_store_version *version)
{
	return tether_store_get_range(s, key, 0, TETHER_STORE_TO_END, data, len, version);
}

int tether_store_head(tether_store *s, const char *key, int *exists, struct tether_store_version *version,
                      uint64_t *size)
{
	*exists = 0;
	if (!key_ok(key, 0))
		return bad_key(s, key);
	return s->ops->head(s->impl, key, exists, version, size);
}

int tether_store_put(tether_store *s, const char *key, const void *data, size_t len, enum tether_put_mode mode,
                     const struct tether_store_version *expect, struct tether_store_version *new_version)
{
	if (!key_ok(key, 0))
		return bad_key(s, key);
	if (mode != TETHER_PUT_OVERWRITE && mode != TETHER_PUT_IF_ABSENT && mode != TETHER_PUT_IF_MATCH)
		return tether_error_set(TETHER_EUSAGE, "%s/%s: put mode %d is none of tether's", s->uri, key, (int)mode);
	if (mode == TETHER_PUT_IF_MATCH && (!expect || !expect->token[0]))
		return tether_error_set(TETHER_EUSAGE, "%s/%s: a conditional write needs the version it read", s->uri,
		                        key);
	return s->ops->put(s->impl, key, data, len, mode, expect, new_version);
}

/* copy for an implementation without one: read, then create. The
 * condition is checked on what was read, so it holds for the bytes copied. */
static int copy_by_get_put(tether_store *s, const char *from, const char *to,
                           const struct tether_store_version *if_match)
{
	uint8_t *data = NULL;
	size_t len = 0;
	struct tether_store_version v;
	int rc = s->ops->get(s->impl, from, 0, TETHER_STORE_TO_END, &data, &len, &v);
	if (rc == 0 && if_match && strcmp(v.token, if_match->token) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "%s/%s changed since it was read", s->uri, from);
	if (rc == 0)
		rc = s->ops->put(s->impl, to, data, len, TETHER_PUT_IF_ABSENT, NULL, NULL);
	free(data);
	return rc;
}

int tether_store_copy(tether_store *s, const char *from, const char *to,
                      const struct tether_store_version *if_match)
{
	if (!key_ok(from, 0))
		return bad_key(s, from);
	if (!key_ok(to, 0))
		return bad_key(s, to);
	if (TT_STORE_HAS(s->ops, copy))
		return s->ops->copy(s->impl, from, to, if_match);
	return copy_by_get_put(s, from, to, if_match);
}

int tether_store_delete(tether_store *s, const char *key)
{
	if (!key_ok(key, 0))
		return bad_key(s, key);
	return s->ops->del(s->impl, key);
}

static int count_key(void *ud, const char *key)
{
	(void)key;
	++*(size_t *)ud;
	return 0;
}

int tether_store_root_exists(tether_store *s, int *exists)
{
	*exists = 0;
	if (TT_STORE_HAS(s->ops, root_exists))
		return s->ops->root_exists(s->impl, exists);
	size_t n = 0;
	int more = 0;
	int rc = s->ops->list(s->impl, "", "", 1, count_key, &n, &more);
	*exists = rc == 0 && n > 0;
	return rc;
}

int tether_store_make_root(tether_store *s)
{
	return TT_STORE_HAS(s->ops, make_root) ? s->ops->make_root(s->impl) : 0;
}

int tether_store_remove_root(tether_store *s)
{
	if (TT_STORE_HAS(s->ops, remove_root))
		return s->ops->remove_root(s->impl);
	int exists = 0;
	int rc = tether_store_root_exists(s, &exists);
	if (rc == 0 && exists)
		rc = tether_error_set(TETHER_EREFUSED, "%s still holds objects: not removed", s->uri);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Versions and stat                                                   */
/* ------------------------------------------------------------------ */

static int has_version_id(const char *version_id)
{
	return version_id && *version_id;
}

static int no_version_ids(const tether_store *s, const char *key)
{
	return tether_error_set(TETHER_EUSAGE, "%s/%s: this store keeps no versions of an object, so none can be "
	                        "named", s->uri, key);
}

/* A version id is the store's own text, but it ends up in URIs and
 * manifests: printable ASCII without spaces, and not too long. */
static int version_id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n >= TETHER_STORE_VERSION_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)id[i] <= 0x20 || (unsigned char)id[i] >= 0x7f)
			return 0;
	return 1;
}

static int check_version_arg(const tether_store *s, const char *key, const char *version_id)
{
	if (!has_version_id(version_id))
		return 0;
	if (!(tether_store_flags(s) & TETHER_STORE_VERSION_IDS))
		return no_version_ids(s, key);
	if (!version_id_ok(version_id))
		return tether_error_set(TETHER_EUSAGE, "%s/%s: \"%.64s\" is not a version id", s->uri, key, version_id);
	return 0;
}

/* What an implementation said of a version id, checked before the engine
 * records it. */
static int check_stat_out(const tether_store *s, const char *key, const struct tether_store_stat *st)
{
	if (memchr(st->version_id, '\0', sizeof st->version_id) == NULL || !version_id_ok(st->version_id) ||
	    memchr(st->version.token, '\0', sizeof st->version.token) == NULL)
		return tether_error_set(TETHER_EIO, "%s/%s: the store gave a malformed version", s->uri, key);
	return 0;
}

static int stat_locked(tether_store *s, const char *key, const char *version_id, struct tether_store_stat *st)
{
	memset(st, 0, sizeof *st);
	int rc;
	if (TT_STORE_HAS(s->ops, stat)) {
		rc = s->ops->stat(s->impl, key, has_version_id(version_id) ? version_id : NULL, st);
		if (rc == 0 && st->exists)
			rc = check_stat_out(s, key, st);
	} else {
		rc = s->ops->head(s->impl, key, &st->exists, &st->version, &st->size);
	}
	if (rc == 0 && !st->exists)
		memset(st, 0, sizeof *st);
	return rc;
}

int tether_store_stat(tether_store *s, const char *key, const char *version_id, struct tether_store_stat *st)
{
	memset(st, 0, sizeof *st);
	if (!key_ok(key, 0))
		return bad_key(s, key);
	int rc = check_version_arg(s, key, version_id);
	return rc ? rc : stat_locked(s, key, version_id, st);
}

int tether_store_get_version(tether_store *s, const char *key, const char *version_id, uint8_t **data,
                             size_t *len, struct tether_store_stat *st)
{
	*data = NULL;
	*len = 0;
	if (st)
		memset(st, 0, sizeof *st);
	if (!key_ok(key, 0))
		return bad_key(s, key);
	int rc = check_version_arg(s, key, version_id);
	if (rc)
		return rc;
	struct tether_store_stat got;
	memset(&got, 0, sizeof got);
	if (TT_STORE_HAS(s->ops, get_version)) {
		rc = s->ops->get_version(s->impl, key, has_version_id(version_id) ? version_id : NULL, 0,
		                         TETHER_STORE_TO_END, data, len, &got);
		if (rc == 0) {
			got.exists = 1;
			rc = check_stat_out(s, key, &got);
		}
	} else if (has_version_id(version_id)) {
		rc = no_version_ids(s, key);
	} else {
		rc = s->ops->get(s->impl, key, 0, TETHER_STORE_TO_END, data, len, &got.version);
		got.exists = rc == 0;
		got.size = *len;
	}
	if (rc) {
		free(*data);
		*data = NULL;
		*len = 0;
		return rc;
	}
	if (st)
		*st = got;
	return 0;
}

struct versions_ud {
	tether_store *s;
	const char *key;
	tether_store_stat_fn emit;
	void *ud;
};

static int checked_version(void *ud, const char *key, const struct tether_store_stat *st)
{
	struct versions_ud *v = ud;
	if (strcmp(key, v->key) != 0)
		return tether_error_set(TETHER_EIO, "%s/%s: the store listed a version of another key, \"%s\"",
		                        v->s->uri, v->key, key);
	int rc = check_stat_out(v->s, key, st);
	return rc ? rc : v->emit(v->ud, key, st);
}

int tether_store_list_versions(tether_store *s, const char *key, tether_store_stat_fn emit, void *ud)
{
	if (!key_ok(key, 0))
		return bad_key(s, key);
	if (!(tether_store_flags(s) & TETHER_STORE_VERSION_IDS) || !TT_STORE_HAS(s->ops, list_versions))
		return no_version_ids(s, key);
	struct versions_ud v = {s, key, emit, ud};
	return s->ops->list_versions(s->impl, key, checked_version, &v);
}

/* ------------------------------------------------------------------ */
/* Paged listing                                                       */
/* ------------------------------------------------------------------ */

struct tether_store_iter {
	tether_store *s;
	char *prefix;
	char *after;   /* the last key listed (the next page starts after it) */
	size_t page;   /* keys per request */
	char **keys;   /* the current page */
	struct tether_store_stat *stats; /* with_stat: what was said of each key */
	int with_stat; /* read through tether_store_next_stat */
	size_t n, next;
	int more;      /* the store has keys after this page */
	int started;
};

static int add_key(void *ud, const char *key)
{
	struct tether_store_iter *it = ud;
	if (it->n == it->page)
		return tether_error_set(TETHER_EIO, "%s: the store listed more keys than asked for", it->s->uri);
	/* Each key must follow the last: a store that lists out of order or
	 * twice would make a paged walk skip or repeat keys. */
	const char *last = it->n ? it->keys[it->n - 1] : it->after;
	if (strcmp(key, last) <= 0 || !key_ok(key, 0))
		return tether_error_set(TETHER_EIO, "%s: the store listed \"%s\" out of order or invalid", it->s->uri,
		                        key);
	size_t pl = strlen(it->prefix);
	if (pl && (strncmp(key, it->prefix, pl) != 0 || key[pl] != '/'))
		return tether_error_set(TETHER_EIO, "%s: the store listed \"%s\", which is not under %s/", it->s->uri,
		                        key, it->prefix);
	if (!(it->keys[it->n] = strdup(key)))
		return oom();
	it->n++;
	return 0;
}

/* list_stat's callback: the key as add_key takes it, then what was said
 * of it. A listed object exists: the listing said so. */
static int add_key_stat(void *ud, const char *key, const struct tether_store_stat *st)
{
	struct tether_store_iter *it = ud;
	int rc = add_key(ud, key);
	if (rc)
		return rc;
	if ((rc = check_stat_out(it->s, key, st)))
		return rc;
	it->stats[it->n - 1] = *st;
	it->stats[it->n - 1].exists = 1;
	return 0;
}

/* A page listed without stats: a stat per key. A key gone since it was
 * listed is left out, as a listing taken a moment later would. */
static int stat_page(struct tether_store_iter *it)
{
	size_t kept = 0;
	for (size_t i = 0; i < it->n; i++) {
		int rc = stat_locked(it->s, it->keys[i], NULL, &it->stats[kept]);
		if (rc)
			return rc;
		if (!it->stats[kept].exists) {
			free(it->keys[i]);
			continue;
		}
		it->keys[kept++] = it->keys[i];
	}
	it->n = kept;
	return 0;
}

static void drop_page(struct tether_store_iter *it)
{
	for (size_t i = 0; i < it->n; i++)
		free(it->keys[i]);
	it->n = it->next = 0;
}

static int fetch_page(struct tether_store_iter *it)
{
	drop_page(it);
	it->more = 0;
	int rc;
	if (it->with_stat && TT_STORE_HAS(it->s->ops, list_stat)) {
		rc = it->s->ops->list_stat(it->s->impl, it->prefix, it->after, it->page, add_key_stat, it, &it->more);
	} else {
		rc = it->s->ops->list(it->s->impl, it->prefix, it->after, it->page, add_key, it, &it->more);
	}
	/* The next page starts after the last key this one listed, even when
	 * keys of this one vanish before their stat. */
	if (rc == 0 && it->n) {
		char *after = strdup(it->keys[it->n - 1]);
		if (!after)
			rc = oom();
		else {
			free(it->after);
			it->after = after;
		}
	}
	if (rc == 0 && it->with_stat && !TT_STORE_HAS(it->s->ops, list_stat))
		rc = stat_page(it);
	if (rc)
		drop_page(it);
	it->started = 1;
	return rc;
}

int tether_store_list(tether_store *s, const char *prefix, const char *start_after, size_t page_size,
                      tether_store_iter **out)
{
	*out = NULL;
	if (!key_ok(prefix ? prefix : "", 1))
		return bad_key(s, prefix);
	if (start_after && *start_after && !key_ok(start_after, 0))
		return bad_key(s, start_after);
	struct tether_store_iter *it = calloc(1, sizeof *it);
	if (!it)
		return oom();
	it->s = s;
	it->page = page_size ? page_size : DEFAULT_PAGE;
	it->prefix = strdup(prefix ? prefix : "");
	it->after = strdup(start_after ? start_after : "");
	it->keys = calloc(it->page, sizeof *it->keys);
	if (!it->prefix || !it->after || !it->keys) {
		tether_store_iter_free(it);
		return oom();
	}
	*out = it;
	return 0;
}

/* The next key of the listing, fetching pages as needed; *index is its
 * place in the page. */
static int next_key(tether_store_iter *it, const char **key, size_t *index)
{
	*key = NULL;
	/* A page whose every key vanished before its stat is not the end
	 * while the store has more. */
	while (it->next == it->n) {
		if (it->started && !it->more)
			return 0;
		int rc = fetch_page(it);
		if (rc)
			return rc;
		if (it->n == 0 && !it->more)
			return 0;
	}
	*index = it->next;
	*key = it->keys[it->next++];
	return 0;
}

static int reading_mode(tether_store_iter *it, int with_stat)
{
	if (it->started && it->with_stat != with_stat)
		return tether_error_set(TETHER_ERROR, "%s: a listing is read through tether_store_next or "
		                        "tether_store_next_stat, not both", it->s->uri);
	if (with_stat && !it->stats && !(it->stats = calloc(it->page, sizeof *it->stats)))
		return oom();
	it->with_stat = with_stat;
	return 0;
}

int tether_store_next(tether_store_iter *it, const char **key)
{
	*key = NULL;
	size_t i;
	int rc = reading_mode(it, 0);
	return rc ? rc : next_key(it, key, &i);
}

int tether_store_next_stat(tether_store_iter *it, const char **key, const struct tether_store_stat **st)
{
	*key = NULL;
	*st = NULL;
	size_t i = 0;
	int rc = reading_mode(it, 1);
	if (!rc)
		rc = next_key(it, key, &i);
	if (!rc && *key)
		*st = &it->stats[i];
	return rc;
}

void tether_store_iter_free(tether_store_iter *it)
{
	if (!it)
		return;
	drop_page(it);
	free(it->keys);
	free(it->stats);
	free(it->prefix);
	free(it->after);
	free(it);
}
