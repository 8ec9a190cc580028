#include "core/manifest.h"
#include "core/validate.h"

#include <tether/backend.h>

#include "format/toml.h"
#include "util/fsutil.h"
#include "util/safefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *tt_manifest_relpath(const char *key)
{
	return tt_strdupf(".tether/objects/%s.toml", key);
}

static int expect_table(const json_t *doc, const char *field, int required, const char *name)
{
	json_t *v = json_object_get(doc, field);
	if (!v && !required)
		return 0;
	if (!json_is_object(v))
		return tether_error_set(TETHER_ECONFIG, "%s: '%s' must be a table", name, field);
	return 0;
}

static int expect_string(const json_t *doc, const char *field, int required, const char *name)
{
	json_t *v = json_object_get(doc, field);
	if (!v && !required)
		return 0;
	if (!json_is_string(v))
		return tether_error_set(TETHER_ECONFIG, "%s: '%s' must be a string", name, field);
	return 0;
}

static int validate(const json_t *doc, const char *name)
{
	static const char *const known[] = {"kind", "pin", "recoverable", "listing", "locator",
	                                    "policy", "state", "pin_ref", NULL};
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)doc, k, v) {
		size_t i = 0;
		while (known[i] && strcmp(known[i], k) != 0)
			i++;
		if (!known[i])
			return tether_error_set(TETHER_ECONFIG, "%s: unknown key '%s'", name, k);
	}
	int rc = expect_string(doc, "kind", 1, name);
	if (!rc)
		rc = expect_table(doc, "locator", 1, name);
	if (!rc)
		rc = expect_table(doc, "policy", 0, name);
	if (!rc)
		rc = expect_table(doc, "state", 0, name);
	if (!rc)
		rc = expect_table(doc, "pin_ref", 0, name);
	if (!rc)
		rc = expect_string(doc, "pin", 0, name);
	if (!rc)
		rc = expect_string(doc, "listing", 0, name);
	json_t *rec = json_object_get(doc, "recoverable");
	if (!rc && rec && !json_is_boolean(rec))
		rc = tether_error_set(TETHER_ECONFIG, "%s: 'recoverable' must be true or false", name);
	const char *listing = json_string_value(json_object_get(doc, "listing"));
	if (!rc && listing) {
		size_t n = strlen(listing);
		int ok = n == 64;
		for (size_t i = 0; ok && i < n; i++)
			ok = (listing[i] >= '0' && listing[i] <= '9') || (listing[i] >= 'a' && listing[i] <= 'f');
		if (!ok)
			rc = tether_error_set(TETHER_ECONFIG, "%s: 'listing' must be a sha256 hex digest", name);
	}
	return rc;
}

int tt_manifest_parse(const char *key, const char *text, size_t len, const char *name,
                      struct tt_manifest *out)
{
	/* Every reader comes here (the working copy, a revision, the history
	 * walks): the key, a path from a tree, is checked here once for all. */
	if (tt_key_check(key) != 0)
		return tether_error_set(TETHER_ECONFIG, "%s: not a valid object key ('%s')", name, key);
	char err[512];
	json_t *doc = tt_toml_parse(text, len, name, err, sizeof err);
	if (!doc)
		return tether_error_set(TETHER_ECONFIG, "%s", err);
	int rc = tt_strings_check(doc, name);
	if (!rc)
		rc = validate(doc, name);
	const char *pin = json_string_value(json_object_get(doc, "pin"));
	if (!rc && pin)
		rc = tt_pin_id_check(pin, name);
	if (rc) {
		json_decref(doc);
		return rc;
	}
	out->key = strdup(key);
	out->doc = doc;
	tether_sha256_hex(text, len, out->digest);
	return 0;
}

char *tt_manifest_text(const struct tt_manifest *m)
{
	char err[256];
	char *text = tt_toml_write(m->doc, err, sizeof err);
	if (!text)
		tether_error_set(TETHER_ERROR, "manifest %s: %s", m->key, err);
	return text;
}

int tt_manifest_load_working(const char *root, const char *key, struct tt_manifest *out)
{
	char *rel = tt_manifest_relpath(key);
	char *path = tt_path_join(root, rel);
	free(rel);
	char *data;
	size_t len;
	int rc = tt_safe_read(root, path, &data, &len);
	if (rc == TETHER_ENOTFOUND)
		rc = tether_error_set(TETHER_ENOTFOUND, "no object '%s' in this dataset", key);
	if (!rc) {
		rc = tt_manifest_parse(key, data, len, path, out);
		free(data);
	}
	free(path);
	return rc;
}

int tt_manifest_save(const char *root, const struct tt_manifest *m)
{
	char *text = tt_manifest_text(m);
	if (!text)
		return TETHER_ERROR;
	char *rel = tt_manifest_relpath(m->key);
	char *path = tt_path_join(root, rel);
	int rc = tt_safe_write_atomic(root, path, text, strlen(text));
	if (!rc)
		tether_sha256_hex(text, strlen(text), ((struct tt_manifest *)m)->digest);
	free(rel);
	free(path);
	free(text);
	return rc;
}

void tt_manifest_free(struct tt_manifest *m)
{
	free(m->key);
	json_decref(m->doc);
	m->key = NULL;
	m->doc = NULL;
}

void tt_manifest_set_free(struct tt_manifest_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		tt_manifest_free(&s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

void tt_manifest_set_push(struct tt_manifest_set *s, struct tt_manifest *m)
{
	if ((s->n & (s->n - 1)) == 0) {
		size_t cap = s->n ? s->n * 2 : 8;
		struct tt_manifest *bigger = realloc(s->v, cap * sizeof *bigger);
		if (!bigger)
			abort();
		s->v = bigger;
	}
	s->v[s->n++] = *m;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct tt_manifest *)a)->key, ((const struct tt_manifest *)b)->key);
}

void tt_manifest_set_sort(struct tt_manifest_set *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof s->v[0], by_key);
}

struct tt_manifest *tt_manifest_set_find(const struct tt_manifest_set *s, const char *key)
{
	struct tt_manifest probe = {.key = (char *)key};
	return s->n ? bsearch(&probe, s->v, s->n, sizeof s->v[0], by_key) : NULL;
}

/* Walk objects/ recursively from a verified descriptor: every X.toml under
 * it is the manifest of key X. A subdirectory is opened with O_NOFOLLOW, so
 * a committed link (objects/a -> .) is refused instead of walked forever.
 * Takes ownership of fd. */
static int load_dir(int fd, const char *dir, const char *prefix, int depth, struct tt_manifest_set *out)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return tether_error_set(TETHER_EIO, "%s: %s", dir, strerror(e));
	}
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *path = tt_path_join(dir, e->d_name);
		struct stat st;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			free(path);
			continue;
		}
		char *rel = *prefix ? tt_strdupf("%s/%s", prefix, e->d_name) : strdup(e->d_name);
		size_t rl = strlen(rel);
		if (S_ISDIR(st.st_mode)) {
			int sub;
			rc = depth >= TT_KEY_MAX ? tether_error_set(TETHER_ECONFIG, "%s: nested too deep", path)
			                      : tt_safe_openat_dir(fd, e->d_name, path, &sub);
			if (!rc)
				rc = load_dir(sub, path, rel, depth + 1, out);
		} else if (rl > 5 && strcmp(rel + rl - 5, ".toml") == 0) {
			rel[rl - 5] = '\0';
			struct tt_manifest m;
			rc = tt_key_check(rel);
			if (rc)
				rc = tether_error_set(TETHER_ECONFIG, "%s: the file name is not a valid object key", path);
			char *data = NULL;
			size_t len;
			if (!rc)
				rc = tt_safe_readat(fd, e->d_name, path, &data, &len);
			if (!rc)
				rc = tt_manifest_parse(rel, data, len, path, &m);
			free(data);
			if (!rc)
				tt_manifest_set_push(out, &m);
		} else if (S_ISLNK(st.st_mode)) {
			int sub; /* refused with the one message for a link */
			rc = tt_safe_openat_dir(fd, e->d_name, path, &sub);
			if (!rc)
				close(sub);
		}
		free(rel);
		free(path);
	}
	closedir(d);
	return rc;
}

int tt_manifests_load_working(const char *root, struct tt_manifest_set *out)
{
	memset(out, 0, sizeof *out);
	char *dir = tt_path_join(root, ".tether/objects");
	int fd;
	int rc = tt_safe_open_dir(root, dir, 0, &fd);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		rc = 0;
	} else if (!rc) {
		rc = load_dir(fd, dir, "", 0, out);
	}
	free(dir);
	if (rc)
		tt_manifest_set_free(out);
	else
		tt_manifest_set_sort(out);
	return rc;
}

const char *tt_manifest_kind(const struct tt_manifest *m)
{
	return json_string_value(json_object_get(m->doc, "kind"));
}

json_t *tt_manifest_locator(const struct tt_manifest *m)
{
	return json_object_get(m->doc, "locator");
}

json_t *tt_manifest_policy(const struct tt_manifest *m)
{
	return json_object_get(m->doc, "policy");
}

json_t *tt_manifest_state(const struct tt_manifest *m)
{
	return json_object_get(m->doc, "state");
}

const char *tt_manifest_pin(const struct tt_manifest *m)
{
	return json_string_value(json_object_get(m->doc, "pin"));
}

const char *tt_manifest_listing(const struct tt_manifest *m)
{
	return json_string_value(json_object_get(m->doc, "listing"));
}
