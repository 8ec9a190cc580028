/* Every name, key, path and id a plan file hands the engine, checked before
 * anything reads it: a plan is a file anyone may have edited, and what it
 * names (a listing hash that becomes a path, a branch to create, a key)
 * must be exactly what tether itself would have written. A field that is
 * not is a malformed plan (TETHER_EUSAGE), named with the file and the
 * field's place: "malformed plan p.json: actions[2].listing: ...". */
#include "core/plan.h"

#include "core/manifest.h"
#include "core/registry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fields {
	const char *file; /* the plan file, or NULL */
	const char *dataset8;
};

static int bad(const struct fields *f, const char *field, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return tether_error_set(TETHER_EUSAGE, "malformed plan%s%s: %s: %s", f->file ? " " : "", f->file ? f->file : "",
	                        field, why);
}

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return strlen(s) == n;
}

/* A string value for messages: quoted, cut short, control bytes as '?'. */
static void shown(const json_t *v, char out[72])
{
	const char *s = json_string_value(v);
	if (!s) {
		snprintf(out, 72, "%s", json_is_null(v) ? "null" : "a non-string");
		return;
	}
	size_t n = 0;
	out[n++] = '"';
	for (; *s && n < 66; s++)
		out[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	if (*s)
		n += (size_t)snprintf(out + n, 72 - n, "...");
	snprintf(out + n, 72 - n, "\"");
}

static int check_key(const struct fields *f, const char *field, const json_t *v)
{
	char s[72];
	shown(v, s);
	if (!json_is_string(v) || tt_key_check(json_string_value(v)) != 0) {
		tether_error_clear();
		return bad(f, field, "%s is not an object key", s);
	}
	return 0;
}

/* <dataset8>.<hash16>, of this dataset. null when `nullable`. */
static int check_pin(const struct fields *f, const char *field, const json_t *v, int nullable)
{
	if (nullable && (!v || json_is_null(v)))
		return 0;
	const char *p = json_string_value(v);
	char s[72];
	shown(v, s);
	if (!p || strlen(p) != 25 || p[8] != '.' || !is_hex(p + 9, 16) || strncmp(p, f->dataset8, 8) != 0)
		return bad(f, field, "%s is not a pin id of this dataset (%.8s.<16 hex digits>)", s, f->dataset8);
	return 0;
}

static int check_listing(const struct fields *f, const char *field, const json_t *v)
{
	const char *h = json_string_value(v);
	char s[72];
	shown(v, s);
	if (!h || !is_hex(h, 64))
		return bad(f, field, "%s is not a listing hash (64 lowercase hex digits)", s);
	return 0;
}

static int check_kind(const struct fields *f, const char *field, const json_t *v)
{
	char s[72];
	shown(v, s);
	if (!json_is_string(v) || !tether_backend_find(json_string_value(v)))
		return bad(f, field, "%s is not a kind this tether knows", s);
	return 0;
}

static int check_commit_id(const struct fields *f, const char *field, const json_t *v, int nullable)
{
	if (nullable && (!v || json_is_null(v)))
		return 0;
	char s[72];
	shown(v, s);
	if (!json_is_string(v) || !is_hex(json_string_value(v), 40))
		return bad(f, field, "%s is not a commit id (40 hex digits)%s", s, nullable ? " or null" : "");
	return 0;
}

/* A branch name as git's check-ref-format takes it (the part after
 * refs/heads/): what `new` may create or check out. */
static int valid_branch(const char *b)
{
	size_t n = strlen(b);
	if (n == 0 || n > 255 || b[0] == '-' || b[0] == '/' || b[n - 1] == '/' || b[n - 1] == '.' ||
	    (n >= 5 && strcmp(b + n - 5, ".lock") == 0) || strcmp(b, "@") == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];
		if (c < 0x20 || c == 0x7f || strchr(" ~^:?*[\\", c))
			return 0;
		if ((c == '.' && (i == 0 || b[i - 1] == '/' || b[i + 1] == '.')) || (c == '/' && b[i + 1] == '/') ||
		    (c == '@' && b[i + 1] == '{'))
			return 0;
		if (c == '/' && b[i + 1] == '.')
			return 0;
	}
	return 1;
}

static int check_branch(const struct fields *f, const char *field, const json_t *v, int nullable)
{
	if (nullable && (!v || json_is_null(v)))
		return 0;
	char s[72];
	shown(v, s);
	if (!json_is_string(v) || !valid_branch(json_string_value(v)))
		return bad(f, field, "%s is not a valid branch name", s);
	return 0;
}

/* preconditions.objects: [{key, ...}] (commit, new). */
static int check_objects(const struct fields *f, const json_t *objects)
{
	if (!json_is_array(objects))
		return bad(f, "preconditions.objects", "must be an array");
	size_t i;
	json_t *o;
	char field[64];
	json_array_foreach(objects, i, o) {
		snprintf(field, sizeof field, "preconditions.objects[%zu].key", i);
		int rc = json_is_object(o) ? check_key(f, field, json_object_get(o, "key"))
		                           : bad(f, field, "the entry is not an object");
		if (!rc && json_object_get(o, "pin")) {
			snprintf(field, sizeof field, "preconditions.objects[%zu].pin", i);
			rc = check_pin(f, field, json_object_get(o, "pin"), 1);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* Per-object actions: {key, action, pin?} (commit, new). */
static int check_object_actions(const struct fields *f, const json_t *actions, int with_branch)
{
	size_t i;
	json_t *a;
	char field[64];
	json_array_foreach(actions, i, a) {
		snprintf(field, sizeof field, "actions[%zu].key", i);
		int rc = check_key(f, field, json_object_get(a, "key"));
		if (!rc && json_object_get(a, "pin")) {
			snprintf(field, sizeof field, "actions[%zu].pin", i);
			rc = check_pin(f, field, json_object_get(a, "pin"), 1);
		}
		if (!rc && with_branch && json_object_get(a, "branch")) {
			snprintf(field, sizeof field, "actions[%zu].branch", i);
			rc = check_branch(f, field, json_object_get(a, "branch"), 1);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int check_commit_plan(const struct fields *f, const json_t *plan)
{
	const json_t *pre = tt_plan_preconditions(plan);
	int rc = check_commit_id(f, "preconditions.head", json_object_get(pre, "head"), 1);
	if (!rc)
		rc = check_objects(f, json_object_get(pre, "objects"));
	if (!rc)
		rc = check_object_actions(f, tt_plan_actions(plan), 0);
	const json_t *message = json_object_get(plan, "message");
	if (!rc && message && !json_is_string(message))
		rc = bad(f, "message", "must be a string");
	return rc;
}

static int check_new_plan(const struct fields *f, const json_t *plan)
{
	const json_t *pre = tt_plan_preconditions(plan), *sw = json_object_get(plan, "switch");
	int rc = check_commit_id(f, "preconditions.commit", json_object_get(pre, "commit"), 0);
	const json_t *ref = json_object_get(pre, "ref");
	const char *r = json_string_value(ref);
	if (!rc && ref && !json_is_null(ref) && !(r && strcmp(r, "HEAD") == 0)) {
		char s[72];
		shown(ref, s);
		if (!r || strncmp(r, "refs/heads/", 11) != 0 || !valid_branch(r + 11))
			rc = bad(f, "preconditions.ref", "%s is not \"HEAD\", refs/heads/<branch> or null", s);
	}
	if (!rc && sw && !json_is_object(sw))
		rc = bad(f, "switch", "must be an object");
	if (!rc)
		rc = check_branch(f, "switch.create", json_object_get(sw, "create"), 1);
	const json_t *to = json_object_get(sw, "to");
	if (!rc && to && !json_is_null(to) && check_commit_id(f, "switch.to", to, 0) != 0) {
		tether_error_clear();
		char s[72];
		shown(to, s);
		const char *t = json_string_value(to);
		if (!t || (strncmp(t, "refs/heads/", 11) == 0 ? !valid_branch(t + 11) : !valid_branch(t)))
			rc = bad(f, "switch.to", "%s is not a commit id or a branch", s);
	}
	const json_t *bookmark = json_object_get(plan, "bookmark");
	if (!rc && bookmark && !json_is_null(bookmark) && !json_is_string(bookmark))
		rc = bad(f, "bookmark", "must be a string or null");
	if (!rc)
		rc = check_objects(f, json_object_get(pre, "objects"));
	if (!rc)
		rc = check_object_actions(f, tt_plan_actions(plan), 1);
	return rc;
}

static int check_gc_plan(const struct fields *f, const json_t *plan)
{
	size_t i;
	json_t *a;
	char field[64];
	json_array_foreach(tt_plan_actions(plan), i, a) {
		const char *action = json_string_value(json_object_get(a, "action"));
		int rc;
		if (strcmp(action, "release") == 0) {
			snprintf(field, sizeof field, "actions[%zu].kind", i);
			rc = check_kind(f, field, json_object_get(a, "kind"));
			snprintf(field, sizeof field, "actions[%zu].pin", i);
			if (!rc)
				rc = check_pin(f, field, json_object_get(a, "pin"), 0);
		} else if (strcmp(action, "remove-listing") == 0) {
			snprintf(field, sizeof field, "actions[%zu].listing", i);
			rc = check_listing(f, field, json_object_get(a, "listing"));
		} else {
			snprintf(field, sizeof field, "actions[%zu].action", i);
			char s[72];
			shown(json_object_get(a, "action"), s);
			rc = bad(f, field, "%s is not a gc action (release, remove-listing)", s);
		}
		if (rc)
			return rc;
	}
	const json_t *unref = json_object_get(tt_plan_preconditions(plan), "unreferenced");
	json_t *v;
	json_array_foreach(json_object_get(unref, "pins"), i, v) {
		snprintf(field, sizeof field, "preconditions.unreferenced.pins[%zu]", i);
		int rc = check_pin(f, field, v, 0);
		if (rc)
			return rc;
	}
	json_array_foreach(json_object_get(unref, "listings"), i, v) {
		snprintf(field, sizeof field, "preconditions.unreferenced.listings[%zu]", i);
		int rc = check_listing(f, field, v);
		if (rc)
			return rc;
	}
	return 0;
}

/* promote, merge: per object a key, the working branch, and the two heads
 * as states; merge's message. */
static int check_land_plan(const struct fields *f, const json_t *plan)
{
	int rc = check_objects(f, json_object_get(tt_plan_preconditions(plan), "objects"));
	if (!rc)
		rc = check_object_actions(f, tt_plan_actions(plan), 1);
	size_t i;
	json_t *a;
	char field[64];
	json_array_foreach(tt_plan_actions(plan), i, a) {
		static const char *const heads[] = {"expect", "head"};
		for (size_t h = 0; !rc && h < 2; h++) {
			const json_t *v = json_object_get(a, heads[h]);
			snprintf(field, sizeof field, "actions[%zu].%s", i, heads[h]);
			if (v && !json_is_object(v))
				rc = bad(f, field, "must be a state (an object)");
		}
	}
	const json_t *message = json_object_get(plan, "message");
	if (!rc && message && !json_is_null(message) && !json_is_string(message))
		rc = bad(f, "message", "must be a string or null");
	return rc;
}

/* "keys": the keys a restore or drop was asked for. */
static int check_key_list(const struct fields *f, const json_t *keys, int required)
{
	if (!keys && !required)
		return 0;
	if (!json_is_array(keys))
		return bad(f, "keys", "must be an array of object keys");
	size_t i;
	json_t *k;
	char field[64];
	json_array_foreach(keys, i, k) {
		snprintf(field, sizeof field, "keys[%zu]", i);
		int rc = check_key(f, field, k);
		if (rc)
			return rc;
	}
	return 0;
}

static int check_restore_plan(const struct fields *f, const json_t *plan)
{
	const json_t *pre = tt_plan_preconditions(plan);
	int rc = check_commit_id(f, "preconditions.commit", json_object_get(pre, "commit"), 0);
	const json_t *rev = json_object_get(plan, "rev");
	if (!rc && rev && !json_is_string(rev))
		rc = bad(f, "rev", "must be a string");
	if (!rc)
		rc = check_key_list(f, json_object_get(plan, "keys"), 0);
	if (!rc)
		rc = check_objects(f, json_object_get(pre, "objects"));
	if (!rc)
		rc = check_object_actions(f, tt_plan_actions(plan), 1);
	return rc;
}

static int check_drop_plan(const struct fields *f, const json_t *plan)
{
	int rc = check_key_list(f, json_object_get(plan, "keys"), 1);
	if (!rc && !json_array_size(json_object_get(plan, "keys")))
		rc = bad(f, "keys", "names no object");
	if (!rc)
		rc = check_objects(f, json_object_get(tt_plan_preconditions(plan), "objects"));
	if (!rc)
		rc = check_object_actions(f, tt_plan_actions(plan), 1);
	static const char *const flags[] = {"force", "delete_store", NULL};
	for (size_t i = 0; !rc && flags[i]; i++) {
		const json_t *v = json_object_get(plan, flags[i]);
		if (v && !json_is_boolean(v))
			rc = bad(f, flags[i], "must be true or false");
	}
	return rc;
}

static int check_abandon_plan(const struct fields *f, const json_t *plan)
{
	const json_t *pre = tt_plan_preconditions(plan);
	int rc = check_commit_id(f, "preconditions.commit", json_object_get(pre, "commit"), 0);
	if (!rc)
		rc = check_commit_id(f, "preconditions.head", json_object_get(pre, "head"), 0);
	if (!rc && !json_is_array(json_object_get(pre, "refs")))
		rc = bad(f, "preconditions.refs", "must be an array");
	if (!rc && !json_is_boolean(json_object_get(plan, "force")))
		rc = bad(f, "force", "must be true or false");
	/* The one action restates the commit: run_abandon acts on
	 * preconditions.commit, so an action naming another (or no) commit is
	 * a plan that says two things, and refused rather than half-believed. */
	const json_t *actions = tt_plan_actions(plan);
	const json_t *a = json_array_get(actions, 0);
	if (!rc && (json_array_size(actions) != 1 || !json_is_object(a)))
		rc = bad(f, "actions", "must hold one action, the abandon");
	const char *action = json_string_value(json_object_get(a, "action"));
	if (!rc && (!action || strcmp(action, "abandon") != 0))
		rc = bad(f, "actions[0].action", "must be \"abandon\"");
	if (!rc && !json_equal(json_object_get(a, "commit"), json_object_get(pre, "commit")))
		rc = bad(f, "actions[0].commit", "must be the commit preconditions.commit names");
	return rc;
}

/* A journal entry's id: <19 digits>-<pid>. */
static int check_entry_id(const struct fields *f, const char *field, const json_t *v, int nullable)
{
	if (nullable && (!v || json_is_null(v)))
		return 0;
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	int ok = n > 20 && n < 40 && s[19] == '-';
	for (size_t i = 0; ok && i < n; i++)
		ok = i == 19 || (s[i] >= '0' && s[i] <= '9');
	char shownv[72];
	shown(v, shownv);
	return ok ? 0 : bad(f, field, "%s is not a journal entry id", shownv);
}

static int check_undo_plan(const struct fields *f, const json_t *plan)
{
	const json_t *pre = tt_plan_preconditions(plan);
	int rc = check_entry_id(f, "preconditions.entry", json_object_get(pre, "entry"), 0);
	if (!rc)
		rc = check_entry_id(f, "preconditions.resume", json_object_get(pre, "resume"), 1);
	return rc;
}

int tt_plan_check_fields(const struct tether_repo *repo, const json_t *plan, const char *op, const char *file)
{
	struct fields f = {.file = file, .dataset8 = repo->id};
	if (strcmp(op, "commit") == 0)
		return check_commit_plan(&f, plan);
	if (strcmp(op, "new") == 0)
		return check_new_plan(&f, plan);
	if (strcmp(op, "gc") == 0)
		return check_gc_plan(&f, plan);
	if (strcmp(op, "promote") == 0 || strcmp(op, "merge") == 0)
		return check_land_plan(&f, plan);
	if (strcmp(op, "restore") == 0)
		return check_restore_plan(&f, plan);
	if (strcmp(op, "drop") == 0)
		return check_drop_plan(&f, plan);
	if (strcmp(op, "abandon") == 0)
		return check_abandon_plan(&f, plan);
	if (strcmp(op, "undo") == 0)
		return check_undo_plan(&f, plan);
	if (strcmp(op, "pull") == 0) {
		int rc = check_objects(&f, json_object_get(tt_plan_preconditions(plan), "objects"));
		return rc ? rc : check_object_actions(&f, tt_plan_actions(plan), 0);
	}
	return 0;
}
