/* Lance's refs: tags (_refs/tags/<name>.json) and branches
 * (_refs/branches/<name, '/' as %2F>.json), JSON documents written the way
 * Lance writes them (camelCase keys, two-space indentation), each created
 * with a put-if-absent so that two writers cannot both create one. */
#include "backends/lance/lance.h"

#include "util/fail.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAGS "_refs/tags/"
#define BRANCHES "_refs/branches/"

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
	       c == '_';
}

/* Lance's check_valid_branch, on ASCII names. */
int lc_check_branch_name(const char *name)
{
	size_t n = strlen(name);
	int ok = n > 0 && strcmp(name, "main") != 0 && name[0] != '/' && name[n - 1] != '/' && !strstr(name, "//") &&
	         !strstr(name, "..") && (n < 5 || strcmp(name + n - 5, ".lock") != 0);
	for (size_t i = 0; ok && i < n; i++)
		ok = name_char(name[i]) || name[i] == '/';
	return ok ? 0 : tether_error_set(TETHER_EUSAGE, "\"%s\" is not a Lance branch name", name);
}

char *lc_branch_ref_key(const char *branch)
{
	size_t n = strlen(branch), k = 0;
	char *enc = malloc(n * 3 + 1);
	if (!enc)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (name_char(branch[i]))
			enc[k++] = branch[i];
		else
			k += (size_t)sprintf(enc + k, "%%%02X", (unsigned char)branch[i]);
	}
	enc[k] = 0;
	char *key = tt_strdupf(BRANCHES "%s.json", enc);
	free(enc);
	return key;
}

static int unhex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A branch name from its key under _refs/branches/ (percent-decoded; some
 * stores turn %2F into real directories, so '/' is kept too). */
static char *branch_of_key(const char *rest)
{
	size_t n = strlen(rest);
	if (n <= 5 || strcmp(rest + n - 5, ".json") != 0)
		return NULL;
	char *out = malloc(n);
	if (!out)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n - 5; i++) {
		int a, b;
		if (rest[i] == '%' && i + 2 < n - 5 && (a = unhex(rest[i + 1])) >= 0 && (b = unhex(rest[i + 2])) >= 0) {
			out[k++] = (char)(a * 16 + b);
			i += 2;
		} else {
			out[k++] = rest[i];
		}
	}
	out[k] = 0;
	return out;
}

static int read_json(struct lc_dataset *ds, const char *key, json_t **doc, int *exists)
{
	*doc = NULL;
	*exists = 0;
	uint8_t *bytes = NULL;
	size_t len = 0;
	int rc = tether_store_get(ds->store, key, &bytes, &len, NULL);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0;
	}
	if (rc)
		return rc;
	json_error_t err;
	*doc = json_loadb((const char *)bytes, len, JSON_REJECT_DUPLICATES, &err);
	free(bytes);
	if (!*doc || !json_is_object(*doc)) {
		json_decref(*doc);
		*doc = NULL;
		return tether_error_set(TETHER_EIO, "%s/%s:%d:%d: not a Lance ref: %s", ds->uri, key, err.line, err.column,
		                        *doc ? "not an object" : err.text);
	}
	*exists = 1;
	return 0;
}

static int version_of(const json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int branch_of(const json_t *v, const char **out)
{
	*out = "main";
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = json_string_value(v);
	return 0;
}

int lc_tag_read(struct lc_dataset *ds, const char *name, char **branch, uint64_t *version, int *exists)
{
	char *key = tt_strdupf(TAGS "%s.json", name);
	json_t *doc = NULL;
	*branch = NULL;
	int rc = key ? read_json(ds, key, &doc, exists) : lc_fail_oom();
	const char *b;
	if (rc == 0 && *exists) {
		if (version_of(json_object_get(doc, "version"), version) || branch_of(json_object_get(doc, "branch"), &b))
			rc = tether_error_set(TETHER_EIO, "%s/%s: not a Lance tag (needs \"version\" and \"branch\")", ds->uri,
			                      key);
		else if (!(*branch = strdup(b)))
			rc = lc_fail_oom();
	}
	json_decref(doc);
	free(key);
	return rc;
}

/* Every key under a prefix. */
static int keys_under(struct lc_dataset *ds, const char *prefix, json_t **out)
{
	tether_store_iter *it = NULL;
	*out = json_array();
	int rc = *out ? tether_store_list(ds->store, prefix, NULL, 0, &it) : lc_fail_oom();
	for (const char *key = NULL; rc == 0;) {
		if ((rc = tether_store_next(it, &key)) || !key)
			break;
		if (json_array_append_new(*out, json_string(key)))
			rc = lc_fail_oom();
	}
	tether_store_iter_free(it);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

/* Every ref under dir ("_refs/tags", "_refs/branches"): add(ds, the key
 * below dir, all) puts each in the object *out. */
static int list_refs(struct lc_dataset *ds, const char *dir, int (*add)(struct lc_dataset *, const char *, json_t *),
                     json_t **out)
{
	json_t *keys = NULL, *all = json_object();
	int rc = all ? keys_under(ds, dir, &keys) : lc_fail_oom();
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k)
		if (rc == 0)
			rc = add(ds, json_string_value(k) + strlen(dir) + 1, all);
	json_decref(keys);
	if (rc) {
		json_decref(all);
		return rc;
	}
	*out = all;
	return 0;
}

static int add_tag(struct lc_dataset *ds, const char *rest, json_t *tags)
{
	size_t n = strlen(rest);
	if (strchr(rest, '/') || n <= 5 || strcmp(rest + n - 5, ".json") != 0)
		return 0;
	char *name = strndup(rest, n - 5), *branch = NULL;
	uint64_t version = 0;
	int exists = 0, rc = name ? lc_tag_read(ds, name, &branch, &version, &exists) : lc_fail_oom();
	if (rc == 0 && exists)
		json_object_set_new(tags, name, json_pack("{s:s, s:I}", "branch", branch, "version", (json_int_t)version));
	free(branch);
	free(name);
	return rc;
}

int lc_tag_list(struct lc_dataset *ds, json_t **out)
{
	return list_refs(ds, "_refs/tags", add_tag, out);
}

/* RFC 3339, UTC, nanoseconds, as chrono writes a DateTime<Utc>. */
static void now_rfc3339(char out[40])
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 40 - n, ".%09ldZ", (long)ts.tv_nsec);
}

static int put_json(struct lc_dataset *ds, const char *key, const json_t *doc, enum tether_put_mode mode)
{
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!text)
		return lc_fail_oom();
	int rc = tether_store_put(ds->store, key, text, strlen(text), mode, NULL, NULL);
	free(text);
	return rc;
}

int lc_tag_create(struct lc_dataset *ds, const char *name, const char *branch, uint64_t version,
                  uint64_t manifest_size)
{
	char when[40];
	now_rfc3339(when);
	json_t *doc = json_object();
	char *key = tt_strdupf(TAGS "%s.json", name);
	int rc = doc && key ? 0 : lc_fail_oom();
	if (rc == 0) {
		json_object_set_new(doc, "branch", strcmp(branch, "main") == 0 ? json_null() : json_string(branch));
		json_object_set_new(doc, "version", json_integer((json_int_t)version));
		json_object_set_new(doc, "createdAt", json_string(when));
		json_object_set_new(doc, "updatedAt", json_string(when));
		json_object_set_new(doc, "manifestSize", json_integer((json_int_t)manifest_size));
		json_object_set_new(doc, "metadata", json_object());
		rc = put_json(ds, key, doc, TETHER_PUT_IF_ABSENT);
	}
	json_decref(doc);
	free(key);
	return rc;
}

int lc_tag_delete(struct lc_dataset *ds, const char *name)
{
	char *key = tt_strdupf(TAGS "%s.json", name);
	int rc = key ? tether_store_delete(ds->store, key) : lc_fail_oom();
	free(key);
	return rc;
}

void lc_branch_free(struct lc_branch *b)
{
	free(b->parent);
	json_decref(b->mapping);
	json_decref(b->doc);
	memset(b, 0, sizeof *b);
}

int lc_branch_read(struct lc_dataset *ds, const char *name, struct lc_branch *out, int *exists)
{
	memset(out, 0, sizeof *out);
	char *key = lc_branch_ref_key(name);
	json_t *doc = NULL;
	int rc = key ? read_json(ds, key, &doc, exists) : lc_fail_oom();
	const char *parent;
	if (rc == 0 && *exists) {
		json_t *mapping = json_object_get(json_object_get(doc, "identifier"), "version_mapping");
		if (version_of(json_object_get(doc, "parentVersion"), &out->parent_version) ||
		    branch_of(json_object_get(doc, "parentBranch"), &parent) || (mapping && !json_is_array(mapping)))
			rc = tether_error_set(TETHER_EIO, "%s/%s: not a Lance branch (needs \"parentVersion\")", ds->uri, key);
		else if (!(out->parent = strcmp(parent, "main") == 0 ? NULL : strdup(parent)) && strcmp(parent, "main") != 0)
			rc = lc_fail_oom();
		out->mapping = mapping ? json_incref(mapping) : json_array();
		json_t *last = json_array_get(out->mapping, json_array_size(out->mapping) - 1);
		out->id = json_string_value(json_array_get(last, 1));
		out->doc = doc;
		doc = NULL;
	}
	json_decref(doc);
	free(key);
	if (rc)
		lc_branch_free(out);
	return rc;
}

static int add_branch(struct lc_dataset *ds, const char *rest, json_t *all)
{
	char *name = branch_of_key(rest);
	struct lc_branch b;
	int exists = 0, rc = name ? lc_branch_read(ds, name, &b, &exists) : 0;
	if (rc == 0 && exists) {
		json_object_set(all, name, b.doc);
		lc_branch_free(&b);
	}
	free(name);
	return rc;
}

int lc_branch_list(struct lc_dataset *ds, json_t **out)
{
	return list_refs(ds, "_refs/branches", add_branch, out);
}

char *lc_uuid4(int hyphens)
{
	uint8_t b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, b, sizeof b) != (ssize_t)sizeof b) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	close(fd);
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	char *out = malloc(37), *p = out;
	if (!out)
		return NULL;
	for (int i = 0; i < 16; i++) {
		if (hyphens && (i == 4 || i == 6 || i == 8 || i == 10))
			*p++ = '-';
		p += sprintf(p, "%02x", b[i]);
	}
	return out;
}
