#include "core/manifest.h"
#include "core/abi.h"
#include "core/add_options.h"
#include "core/layout.h"
#include "core/validate.h"

#include <tether/backend.h>

#include "format/toml.h"
#include "util/fsutil.h"
#include "util/safefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *tt_manifest_relpath(const char *key)
{
	return tt_strdupf(".tether/objects/%s.toml", key);
}

/* A manifest being validated: its name for messages, and where each of
 * its keys was written, so that every refusal names its line and column. */
struct mcheck {
	const char *name;
	const struct tt_toml_where *where;
};

/* "NAME:LINE:COL: message" at `key` of `table`, or "NAME: message" when
 * the reader did not make that key. */
__attribute__((format(printf, 4, 5)))
static int refuse(const struct mcheck *c, const json_t *table, const char *key, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char at[1024];
	tt_toml_where_name(c->where, table, key, c->name, at, sizeof at);
	return tether_error_set(TETHER_ECONFIG, "%s: %s", at, msg);
}

static int expect_table(const struct mcheck *c, const json_t *doc, const char *field, int required)
{
	json_t *v = json_object_get(doc, field);
	if (!v && !required)
		return 0;
	if (!json_is_object(v))
		return refuse(c, doc, field, "'%s' must be a table", field);
	return 0;
}

static int expect_string(const struct mcheck *c, const json_t *doc, const char *field, int required)
{
	json_t *v = json_object_get(doc, field);
	if (!v && !required)
		return 0;
	if (!json_is_string(v))
		return refuse(c, doc, field, "'%s' must be a string", field);
	return 0;
}

static const char *const WRITE_CHOICES[] = {"fork", "track", "none", NULL};
static const char *const PIN_CHOICES[] = {"native", "record", NULL};

/* "a, b or c" */
static void join_choices(const char *const *choices, char *out, size_t n)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; choices[i] && o < n; i++) {
		const char *sep = i == 0 ? "" : choices[i + 1] ? ", " : " or ";
		int w = snprintf(out + o, n - o, "%s\"%s\"", sep, choices[i]);
		if (w < 0)
			break;
		o += (size_t)w;
	}
}

/* The values a policy key may take, or NULL when the key is not one. */
static const char *const *policy_choices(const struct tether_backend *b, const char *key)
{
	if (strcmp(key, "write") == 0)
		return WRITE_CHOICES;
	if (strcmp(key, "pin") == 0)
		return PIN_CHOICES;
	for (const struct tether_policy_option *o = b ? TT_BACKEND_GET(b, policy_options) : NULL; o && o->key; o++)
		if (strcmp(o->key, key) == 0)
			return o->choices;
	/* An add option that lands in the policy, with its values. */
	struct tether_add_option a;
	if (tt_add_option_find(b, key, &a) && a.field == TETHER_ADD_POLICY && a.choices)
		return a.choices;
	return NULL;
}

/* Does b declare any policy key, by policy_options or add_options? */
static int declares_policy(const struct tether_backend *b)
{
	if (TT_BACKEND_GET(b, policy_options))
		return 1;
	struct tether_add_option a;
	for (size_t i = 0; tt_add_option_at(b, i, &a); i++)
		if (a.field == TETHER_ADD_POLICY)
			return 1;
	return 0;
}

/* "write, pin, file": every key a [policy] of this kind may hold. */
static void policy_keys(const struct tether_backend *b, char *out, size_t n)
{
	size_t o = (size_t)snprintf(out, n, "write, pin");
	for (const struct tether_policy_option *p = b ? TT_BACKEND_GET(b, policy_options) : NULL; p && p->key && o < n; p++)
		o += (size_t)snprintf(out + o, n - o, ", %s", p->key);
	struct tether_add_option a;
	for (size_t i = 0; !(b && TT_BACKEND_GET(b, policy_options)) && tt_add_option_at(b, i, &a) && o < n; i++)
		if (a.field == TETHER_ADD_POLICY && a.choices)
			o += (size_t)snprintf(out + o, n - o, ", %s", a.name);
}

/* [policy]: write and pin are the engine's, the rest the backend's as it
 * declares them. A backend this build does not have (b NULL) is reported
 * when the object is used; only the engine's keys are checked then. */
static int check_policy(const struct mcheck *c, const json_t *doc, const struct tether_backend *b)
{
	json_t *policy = json_object_get(doc, "policy");
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	int undeclared = !b || (!declares_policy(b) && TT_BACKEND_GET(b, make_policy));
	const char *k;
	json_t *v;
	json_object_foreach(policy, k, v) {
		const char *const *choices = policy_choices(b, k);
		char allowed[256];
		if (!choices) {
			if (undeclared)
				continue;
			policy_keys(b, allowed, sizeof allowed);
			return refuse(c, policy, k, "unknown policy key '%s' for kind %s (allowed: %s)", k, kind,
			              allowed);
		}
		size_t i = 0;
		while (json_is_string(v) && choices[i] && strcmp(choices[i], json_string_value(v)) != 0)
			i++;
		if (!json_is_string(v) || !choices[i]) {
			join_choices(choices, allowed, sizeof allowed);
			return refuse(c, policy, k, "policy.%s must be %s%s", k, choices[0] && choices[1] ? "one of " : "",
			              allowed);
		}
	}
	return 0;
}

/* [state] as the backend records it: a wrongly typed state is a malformed
 * manifest, not a change of the data. */
static int check_state(const struct mcheck *c, const json_t *doc, const struct tether_backend *b)
{
	json_t *state = json_object_get(doc, "state");
	if (!state || !b || !TT_BACKEND_GET(b, check_state))
		return 0;
	const char *key = NULL;
	tether_error_clear();
	int rc = TT_BACKEND_GET(b, check_state)(state, &key);
	if (!rc)
		return 0;
	char msg[512];
	snprintf(msg, sizeof msg, "%s", tether_error_last());
	size_t line, col;
	if (key && tt_toml_where_key(c->where, state, key, &line, &col))
		return refuse(c, state, key, "recorded state of kind %s: %s", b->kind, msg);
	return refuse(c, doc, "state", "recorded state of kind %s: %s", b->kind, msg);
}

static int validate(const json_t *doc, const struct mcheck *c)
{
	static const char *const known[] = {"layout", "kind", "pin", "recoverable", "listing", "locator",
	                                    "policy", "state", "pin_ref", NULL};
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)doc, k, v) {
		size_t i = 0;
		while (known[i] && strcmp(known[i], k) != 0)
			i++;
		if (!known[i])
			return refuse(c, doc, k, "unknown key '%s'", k);
	}
	int rc = expect_string(c, doc, "kind", 1);
	if (!rc)
		rc = expect_table(c, doc, "locator", 1);
	if (!rc)
		rc = expect_table(c, doc, "policy", 0);
	if (!rc)
		rc = expect_table(c, doc, "state", 0);
	if (!rc)
		rc = expect_table(c, doc, "pin_ref", 0);
	if (!rc)
		rc = expect_string(c, doc, "pin", 0);
	if (!rc)
		rc = expect_string(c, doc, "listing", 0);
	json_t *rec = json_object_get(doc, "recoverable");
	if (!rc && rec && !json_is_boolean(rec))
		rc = refuse(c, doc, "recoverable", "'recoverable' must be true or false");
	const char *listing = json_string_value(json_object_get(doc, "listing"));
	if (!rc && listing) {
		size_t n = strlen(listing);
		int ok = n == 64;
		for (size_t i = 0; ok && i < n; i++)
			ok = (listing[i] >= '0' && listing[i] <= '9') || (listing[i] >= 'a' && listing[i] <= 'f');
		if (!ok)
			rc = refuse(c, doc, "listing", "'listing' must be a sha256 hex digest");
	}
	if (rc)
		return rc;
	/* The kind's own rules. A kind this build does not have is refused
	 * where the object is used ("unknown kind"), with its hint. */
	const struct tether_backend *b = tether_backend_find(json_string_value(json_object_get(doc, "kind")));
	if (!b)
		tether_error_clear();
	rc = check_policy(c, doc, b);
	return rc ? rc : check_state(c, doc, b);
}

/* The checks a parsed manifest must pass, in order; c->where may be NULL
 * (messages then name the file without a line and column). */
static int check_doc(const json_t *doc, const struct mcheck *c, int *layout)
{
	/* The layout first: a newer manifest may hold keys this tether does
	 * not know, and "newer layout" is the refusal that says what to do. */
	int rc = tt_layout_of_manifest(doc, c->name, layout);
	if (!rc)
		rc = tt_strings_check(doc, c->name);
	if (!rc)
		rc = validate(doc, c);
	const char *pin = json_string_value(json_object_get(doc, "pin"));
	if (!rc && pin)
		rc = tt_pin_id_check(pin, c->name);
	return rc;
}

/* Parse and check. The reader's record of where each key was written
 * (a note per key, kept in a table) is wanted only for a refusal, so the
 * text is parsed without it first, and again with it only when a check
 * refuses: the same text gives the same document and the same refusal,
 * now with its line and column. */
static int parse_checked(const char *text, size_t len, const char *name, json_t **doc, int *layout)
{
	char err[512];
	json_t *d = tt_toml_parse_at(text, len, name, err, sizeof err, NULL);
	if (!d)
		return tether_error_set(TETHER_ECONFIG, "%s", err);
	struct mcheck c = {name, NULL};
	int rc = check_doc(d, &c, layout);
	if (rc) {
		json_decref(d);
		struct tt_toml_where *where = NULL;
		d = tt_toml_parse_at(text, len, name, err, sizeof err, &where);
		if (!d) /* only when memory ran out this time */
			return tether_error_set(TETHER_ECONFIG, "%s", err);
		tether_error_clear();
		c.where = where;
		rc = check_doc(d, &c, layout);
		tt_toml_where_free(where);
		json_decref(d);
		return rc;
	}
	*doc = d;
	return 0;
}

static int manifest_parse(const char *key, const char *text, size_t len, const char *name, int want_digest,
                          struct tt_manifest *out)
{
	/* Every reader comes here (the working copy, a revision, the history
	 * walks): the key, a path from a tree, is checked here once for all. */
	if (tt_key_check(key) != 0)
		return tether_error_set(TETHER_ECONFIG, "%s: not a valid object key ('%s')", name, key);
	json_t *doc = NULL;
	int layout = 0;
	int rc = parse_checked(text, len, name, &doc, &layout);
	if (rc)
		return rc;
	out->key = strdup(key);
	out->doc = doc;
	out->layout = layout;
	if (want_digest)
		tether_sha256_hex(text, len, out->digest);
	else
		out->digest[0] = '\0';
	return 0;
}

int tt_manifest_parse(const char *key, const char *text, size_t len, const char *name,
                      struct tt_manifest *out)
{
	return manifest_parse(key, text, len, name, 1, out);
}

int tt_manifest_parse_nodigest(const char *key, const char *text, size_t len, const char *name,
                               struct tt_manifest *out)
{
	return manifest_parse(key, text, len, name, 0, out);
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

void tt_manifest_set_layout(struct tt_manifest *m, int layout)
{
	if (layout > 0)
		json_object_set_new(m->doc, "layout", json_integer(layout));
	else
		json_object_del(m->doc, "layout");
	m->layout = layout;
}

int tt_manifest_save(const char *root, int layout, struct tt_manifest *m)
{
	tt_manifest_set_layout(m, layout);
	char *text = tt_manifest_text(m);
	if (!text)
		return TETHER_ERROR;
	char *rel = tt_manifest_relpath(m->key);
	char *path = tt_path_join(root, rel);
	int rc = tt_safe_write_atomic(root, path, text, strlen(text));
	if (!rc)
		tether_sha256_hex(text, strlen(text), m->digest);
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
