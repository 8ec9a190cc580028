/* tether-store-memtest.so: a store module for the tests, built the way a
 * remote store (S3, GCS, Azure) is: a shared object on the module path
 * exporting tether_store_module, loaded the first time a memtest:// URI is
 * opened. It keeps objects in memory, shared by every store of the
 * process, compares and writes atomically (as object stores do), and
 * leaves copy, root_exists, make_root and remove_root to the engine's
 * fallbacks, so those are tested too. It names versions by id, as a
 * versioned bucket does, but keeps only the latest: an older id is not
 * found, as in a bucket whose old versions expired. */
#include <tether/backend.h>
#include <tether/store.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct object {
	char *name; /* root "/" key */
	uint8_t *data;
	size_t len;
	unsigned long version;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct object *objects;
static size_t n_objects;
static unsigned long next_version;

struct memtest {
	char *root;
};

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

static char *name_of(const struct memtest *m, const char *key)
{
	size_t n = strlen(m->root) + strlen(key) + 2;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s/%s", m->root, key);
	return s;
}

static struct object *find(const char *name)
{
	for (size_t i = 0; i < n_objects; i++)
		if (strcmp(objects[i].name, name) == 0)
			return &objects[i];
	return NULL;
}

static void version_text(const struct object *o, struct tether_store_version *v)
{
	if (v)
		snprintf(v->token, sizeof v->token, "\"v%lu\"", o ? o->version : 0ul);
}

static void stat_of(const struct object *o, struct tether_store_stat *st)
{
	memset(st, 0, sizeof *st);
	st->exists = 1;
	st->size = o->len;
	st->is_latest = 1;
	version_text(o, &st->version);
	snprintf(st->version_id, sizeof st->version_id, "id-%lu", o->version);
}

/* The object at name, and at version_id when one is named: the latest is
 * the only one kept. */
static struct object *find_version(const char *name, const char *version_id, int *unknown_id)
{
	struct object *o = find(name);
	*unknown_id = 0;
	if (o && version_id) {
		struct tether_store_stat st;
		stat_of(o, &st);
		if (strcmp(st.version_id, version_id) != 0) {
			*unknown_id = 1;
			o = NULL;
		}
	}
	return o;
}

static int mt_open(const char *uri, const json_t *options, void **impl)
{
	/* A real store would read its endpoint and keys from options; this one
	 * proves they arrive. */
	if (options && json_is_true(json_object_get(options, "refuse")))
		return tether_error_set(TETHER_EAUTH, "%s: the store refused the credentials", uri);
	/* The engine's tests read which options reached the store: with
	 * profile "show-options" it refuses, naming them all. */
	const char *profile = json_string_value(json_object_get(options, "profile"));
	if (profile && strcmp(profile, "show-options") == 0) {
		char *text = json_dumps(options, JSON_SORT_KEYS | JSON_COMPACT);
		int rc = tether_error_set(TETHER_EAUTH, "%s: refused, options %s", uri, text ? text : "?");
		free(text);
		return rc;
	}
	struct memtest *m = calloc(1, sizeof *m);
	if (!m || !(m->root = strdup(uri))) {
		free(m);
		return oom();
	}
	*impl = m;
	return 0;
}

static void mt_close(void *impl)
{
	struct memtest *m = impl;
	free(m->root);
	free(m);
}

static int mt_get(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data, size_t *len,
                  struct tether_store_version *version)
{
	char *name = name_of(impl, key);
	if (!name)
		return oom();
	pthread_mutex_lock(&lock);
	struct object *o = find(name);
	int rc = 0;
	if (!o) {
		rc = tether_error_set(TETHER_ENOTFOUND, "%s does not exist", name);
	} else {
		uint64_t from = offset < o->len ? offset : o->len, avail = o->len - from;
		size_t n = (size_t)(length < avail ? length : avail);
		if (!(*data = malloc(n ? n : 1)))
			rc = oom();
		else {
			memcpy(*data, o->data + from, n);
			*len = n;
			version_text(o, version);
		}
	}
	pthread_mutex_unlock(&lock);
	free(name);
	return rc;
}

static int mt_head(void *impl, const char *key, int *exists, struct tether_store_version *version, uint64_t *size)
{
	char *name = name_of(impl, key);
	if (!name)
		return oom();
	pthread_mutex_lock(&lock);
	struct object *o = find(name);
	*exists = o != NULL;
	if (o) {
		version_text(o, version);
		if (size)
			*size = o->len;
	}
	pthread_mutex_unlock(&lock);
	free(name);
	return 0;
}

static int mt_put(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
                  const struct tether_store_version *expect, struct tether_store_version *new_version)
{
	char *name = name_of(impl, key);
	uint8_t *copy = malloc(len ? len : 1);
	if (!name || !copy) {
		free(name);
		free(copy);
		return oom();
	}
	memcpy(copy, data, len);
	pthread_mutex_lock(&lock);
	struct object *o = find(name);
	struct tether_store_version now;
	version_text(o, &now);
	int rc = 0;
	if (mode == TETHER_PUT_IF_ABSENT && o)
		rc = tether_error_set(TETHER_EREFUSED, "%s already exists", name);
	else if (mode == TETHER_PUT_IF_MATCH && (!o || strcmp(now.token, expect->token) != 0))
		rc = tether_error_set(TETHER_EREFUSED, "%s changed since it was read", name);
	else if (!o) {
		struct object *grown = realloc(objects, (n_objects + 1) * sizeof *grown);
		if (!grown)
			rc = oom();
		else {
			objects = grown;
			o = &objects[n_objects++];
			o->name = name;
			o->data = NULL;
			name = NULL;
		}
	}
	if (rc == 0) {
		free(o->data);
		o->data = copy;
		o->len = len;
		o->version = ++next_version;
		copy = NULL;
		version_text(o, new_version);
	}
	pthread_mutex_unlock(&lock);
	free(copy);
	free(name);
	return rc;
}

static int mt_del(void *impl, const char *key)
{
	char *name = name_of(impl, key);
	if (!name)
		return oom();
	pthread_mutex_lock(&lock);
	struct object *o = find(name);
	if (o) {
		free(o->name);
		free(o->data);
		*o = objects[--n_objects];
	}
	pthread_mutex_unlock(&lock);
	free(name);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* As an object store lists: every name with the prefix, in byte order,
 * from start_after, a page at a time. */
static int mt_list(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                   tether_store_key_fn emit, void *ud, int *more)
{
	const struct memtest *m = impl;
	size_t rl = strlen(m->root) + 1;
	char *under = *prefix ? name_of(impl, prefix) : strdup(m->root);
	if (!under)
		return oom();
	size_t ul = strlen(under);
	pthread_mutex_lock(&lock);
	char **keys = calloc(n_objects + 1, sizeof *keys);
	size_t n = 0;
	for (size_t i = 0; keys && i < n_objects; i++)
		if (strncmp(objects[i].name, under, ul) == 0 && objects[i].name[ul] == '/')
			keys[n++] = strdup(objects[i].name + rl);
	pthread_mutex_unlock(&lock);
	free(under);
	if (!keys)
		return oom();
	qsort(keys, n, sizeof *keys, by_name);
	int rc = 0;
	size_t i = 0, emitted = 0;
	while (i < n && keys[i] && strcmp(keys[i], start_after) <= 0)
		i++;
	for (; rc == 0 && i < n && emitted < max_keys; i++, emitted++)
		rc = keys[i] ? emit(ud, keys[i]) : oom();
	*more = rc == 0 && i < n;
	for (i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return rc;
}

static int mt_stat(void *impl, const char *key, const char *version_id, struct tether_store_stat *st)
{
	char *name = name_of(impl, key);
	if (!name)
		return oom();
	pthread_mutex_lock(&lock);
	int unknown = 0;
	struct object *o = find_version(name, version_id, &unknown);
	int rc = 0;
	if (o)
		stat_of(o, st);
	else if (unknown)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no version %s", name, version_id);
	pthread_mutex_unlock(&lock);
	free(name);
	return rc;
}

static int mt_get_version(void *impl, const char *key, const char *version_id, uint64_t offset, uint64_t length,
                          uint8_t **data, size_t *len, struct tether_store_stat *st)
{
	struct tether_store_stat at;
	int rc = mt_stat(impl, key, version_id, &at);
	if (rc == 0 && !at.exists)
		return tether_error_set(TETHER_ENOTFOUND, "%s does not exist", key);
	struct tether_store_version v;
	if (rc == 0)
		rc = mt_get(impl, key, offset, length, data, len, &v);
	/* The object was replaced between the two calls. */
	if (rc == 0 && strcmp(v.token, at.version.token) != 0) {
		free(*data);
		*data = NULL;
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no version %s any more", key, at.version_id);
	}
	if (rc == 0 && st)
		*st = at;
	return rc;
}

struct stat_emit {
	void *impl;
	tether_store_stat_fn emit;
	void *ud;
};

static int emit_with_stat(void *ud, const char *key)
{
	struct stat_emit *e = ud;
	struct tether_store_stat st;
	int rc = mt_stat(e->impl, key, NULL, &st);
	return rc ? rc : e->emit(e->ud, key, &st);
}

static int mt_list_stat(void *impl, const char *prefix, const char *start_after, size_t max_keys,
                        tether_store_stat_fn emit, void *ud, int *more)
{
	struct stat_emit e = {impl, emit, ud};
	return mt_list(impl, prefix, start_after, max_keys, emit_with_stat, &e, more);
}

static int mt_list_versions(void *impl, const char *key, tether_store_stat_fn emit, void *ud)
{
	struct tether_store_stat st;
	int rc = mt_stat(impl, key, NULL, &st);
	return rc || !st.exists ? rc : emit(ud, key, &st);
}

static const struct tether_store_ops memtest_ops = {
	TETHER_STORE_OPS_INIT,
	.scheme = "memtest",
	.flags = TETHER_STORE_ATOMIC_CAS | TETHER_STORE_VERSION_IDS,
	.open = mt_open,
	.close = mt_close,
	.get = mt_get,
	.head = mt_head,
	.put = mt_put,
	.del = mt_del,
	.list = mt_list,
	.stat = mt_stat,
	.get_version = mt_get_version,
	.list_stat = mt_list_stat,
	.list_versions = mt_list_versions,
};

TETHER_API tether_store_module_t tether_store_module = {&memtest_ops, NULL};
