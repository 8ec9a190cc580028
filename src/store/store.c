/* The byte-store interface: key checks, then the implementation the URI
 * names. Keys come from backends, but parts of them (a tag's name in an
 * Icechunk 1.x ref path) come from manifests a clone brought, so a key that
 * could leave the root is refused here, once, for every implementation. */
#include "store/store_impl.h"

#include <tether/backend.h>

#include <stdlib.h>
#include <string.h>

int tt_store_is_staging_name(const char *name)
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
			return 0; /* "a//b", "a/" */
		if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (memchr(seg, '\\', n))
			return 0;
		if (!end)
			return !tt_store_is_staging_name(seg);
		seg = end + 1;
	}
	return 1;
}

static int bad_key(const struct tt_store *s, const char *key)
{
	return tether_error_set(TETHER_EUSAGE, "%s: \"%s\" is not a valid key in a store", s->uri,
	                        key ? key : "(null)");
}

int tt_store_open(const char *uri, const json_t *options, struct tt_store **out)
{
	(void)options;
	*out = NULL;
	const char *path = uri;
	if (uri && strncmp(uri, "file://", 7) == 0)
		path = uri + 7;
	if (!path || path[0] != '/') {
		const char *colon = uri ? strstr(uri, "://") : NULL;
		if (colon)
			return tether_error_set(TETHER_EUSAGE, "%s: %.*s:// stores are not supported by this build",
			                        uri, (int)(colon - uri), uri);
		return tether_error_set(TETHER_EUSAGE, "%s: a store root must be an absolute path",
		                        uri ? uri : "(null)");
	}
	struct tt_store *s = calloc(1, sizeof *s);
	if (!s || !(s->uri = strdup(uri))) {
		free(s);
		return tether_error_set(TETHER_EIO, "out of memory");
	}
	int rc = tt_store_local_open(path, s);
	if (rc) {
		free(s->uri);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void tt_store_close(struct tt_store *s)
{
	if (!s)
		return;
	s->ops->close(s);
	free(s->uri);
	free(s);
}

const char *tt_store_uri(const struct tt_store *s)
{
	return s->uri;
}

int tt_store_atomic_cas(const struct tt_store *s)
{
	return s->ops->atomic_cas;
}

int tt_store_get(struct tt_store *s, const char *key, uint8_t **data, size_t *len,
                 struct tt_version *version)
{
	*data = NULL;
	*len = 0;
	if (!key_ok(key, 0))
		return bad_key(s, key);
	return s->ops->get(s, key, data, len, version);
}

int tt_store_head(struct tt_store *s, const char *key, int *exists, struct tt_version *version,
                  uint64_t *size)
{
	*exists = 0;
	if (!key_ok(key, 0))
		return bad_key(s, key);
	return s->ops->head(s, key, exists, version, size);
}

int tt_store_put(struct tt_store *s, const char *key, const void *data, size_t len,
                 enum tt_put_mode mode, const struct tt_version *expect,
                 struct tt_version *new_version)
{
	if (!key_ok(key, 0))
		return bad_key(s, key);
	if (mode == TT_PUT_IF_MATCH && (!expect || !expect->token[0]))
		return tether_error_set(TETHER_ERROR, "%s/%s: a conditional write needs the version it read",
		                        s->uri, key);
	return s->ops->put(s, key, data, len, mode, expect, new_version);
}

int tt_store_copy(struct tt_store *s, const char *from, const char *to,
                  const struct tt_version *if_match)
{
	if (!key_ok(from, 0))
		return bad_key(s, from);
	if (!key_ok(to, 0))
		return bad_key(s, to);
	return s->ops->copy(s, from, to, if_match);
}

int tt_store_delete(struct tt_store *s, const char *key)
{
	if (!key_ok(key, 0))
		return bad_key(s, key);
	return s->ops->del(s, key);
}

int tt_store_list(struct tt_store *s, const char *prefix, size_t max_keys, json_t **keys)
{
	*keys = NULL;
	if (!key_ok(prefix ? prefix : "", 1))
		return bad_key(s, prefix);
	json_t *out = json_array();
	if (!out)
		return tether_error_set(TETHER_EIO, "out of memory");
	int rc = s->ops->list(s, prefix ? prefix : "", max_keys, out);
	if (rc) {
		json_decref(out);
		return rc;
	}
	*keys = out;
	return 0;
}

int tt_store_root_exists(struct tt_store *s, int *exists)
{
	*exists = 0;
	return s->ops->root_exists(s, exists);
}

int tt_store_make_root(struct tt_store *s)
{
	return s->ops->make_root(s);
}

int tt_store_remove_root(struct tt_store *s)
{
	return s->ops->remove_root(s);
}
