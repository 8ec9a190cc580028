/* Plans: building, checking and saving them. The op-specific parts (what a
 * commit's, a new's or a gc's plan holds) live with each command; this file
 * holds what they share: the header, the staleness checks and their
 * one-line messages, and the file. */
#include "core/plan.h"
#include "core/validate.h"

#include "format/cjson.h"
#include "util/fsutil.h"
#include "util/plural.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void now_iso(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *tt_plan_new(const struct tether_repo *repo, const char *op)
{
	char created[32];
	now_iso(created);
	return json_pack("{s:i, s:s, s:s, s:s, s:{}, s:[]}", "tether_plan", TT_PLAN_VERSION, "op", op, "dataset",
	                 repo->id, "created", created, "preconditions", "actions");
}

/* --plan FILE goes into a directory that exists: checked before any work,
 * and never created (a typo in the directory is the user's to see). */
static int check_plan_dir(const char *plan_out)
{
	const char *slash = strrchr(plan_out, '/');
	char *dir = !slash ? strdup(".") : slash == plan_out ? strdup("/") : strndup(plan_out, (size_t)(slash - plan_out));
	if (!dir)
		abort();
	struct stat st;
	int rc = 0;
	if (!*plan_out || (slash && !slash[1]))
		rc = tether_error_set(TETHER_EUSAGE, "--plan '%s': not a file name", plan_out);
	else if (stat(dir, &st) != 0)
		rc = tether_error_set(TETHER_EUSAGE, "--plan %s: the directory %s does not exist", plan_out, dir);
	else if (!S_ISDIR(st.st_mode))
		rc = tether_error_set(TETHER_EUSAGE, "--plan %s: %s is not a directory", plan_out, dir);
	free(dir);
	return rc;
}

int tt_plan_command_lock(struct tether_repo *repo, const char *op, const char *plan_out, const json_t *from_plan,
                         const char *from_plan_file, const char *args_error, struct tt_lock *checkout,
                         struct tt_lock *shared)
{
	int rc = tt_plan_check_opts(plan_out, from_plan);
	if (!rc && from_plan && args_error)
		rc = tether_error_set(TETHER_EUSAGE, "%s", args_error);
	if (!rc && from_plan)
		rc = tt_plan_check_header(repo, from_plan, op, from_plan_file);
	if (!rc)
		rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_repo_vcs(repo);
	if (!rc)
		rc = tt_repo_lock(repo, checkout, shared);
	return rc;
}

int tt_plan_check_opts(const char *plan_out, const json_t *from_plan)
{
	if (plan_out && from_plan)
		return tether_error_set(TETHER_EUSAGE, "--plan and --from-plan cannot be combined");
	if (plan_out)
		return check_plan_dir(plan_out);
	return 0;
}

static int malformed_in(const char *file, const char *what)
{
	return tether_error_set(TETHER_EUSAGE, "malformed plan%s%s: %s", file ? " " : "", file ? file : "", what);
}

static int malformed(const char *what)
{
	return malformed_in(NULL, what);
}

int tt_plan_check_header(const struct tether_repo *repo, const json_t *plan, const char *op, const char *file)
{
	if (!json_is_object(plan))
		return malformed_in(file, "not a JSON object");
	json_t *version = json_object_get(plan, "tether_plan");
	if (!version)
		return malformed_in(file, "no \"tether_plan\" version: not a tether plan");
	if (!json_is_integer(version))
		return tether_error_set(TETHER_EREFUSED, "unsupported plan version (not a number)");
	if (json_integer_value(version) != TT_PLAN_VERSION)
		return tether_error_set(TETHER_EREFUSED, "unsupported plan version %" JSON_INTEGER_FORMAT
		                        " (this tether reads version %d)", json_integer_value(version), TT_PLAN_VERSION);
	const char *plan_op = json_string_value(json_object_get(plan, "op"));
	const char *dataset = json_string_value(json_object_get(plan, "dataset"));
	if (!plan_op || !dataset)
		return malformed_in(file, "\"op\" and \"dataset\" must be strings");
	if (strcmp(plan_op, op) != 0)
		return tether_error_set(TETHER_EREFUSED, "plan is for `%s`, not `%s`", plan_op, op);
	if (strcmp(dataset, repo->id) != 0)
		return tether_error_set(TETHER_EREFUSED, "plan is for dataset %s; this dataset is %s", dataset, repo->id);
	if (!json_is_object(json_object_get(plan, "preconditions")))
		return malformed_in(file, "\"preconditions\" must be an object");
	json_t *actions = json_object_get(plan, "actions");
	if (!json_is_array(actions))
		return malformed_in(file, "\"actions\" must be an array");
	size_t i;
	json_t *a;
	json_array_foreach(actions, i, a)
		if (!json_is_string(json_object_get(a, "action")))
			return malformed_in(file, "every action needs an \"action\" string");
	return tt_plan_check_fields(repo, plan, op, file);
}

json_t *tt_plan_preconditions(const json_t *plan)
{
	return json_object_get(plan, "preconditions");
}

json_t *tt_plan_actions(const json_t *plan)
{
	return json_object_get(plan, "actions");
}

void tt_plan_digest(const json_t *value, char hex[65])
{
	json_t *null = json_null();
	if (tt_cjson_sha256(value ? value : null, hex) != 0)
		strcpy(hex, "?");
	json_decref(null);
}

/* "0123456789ab" of a commit id, or "(no commit)". */
static const char *short_id(const char *id, char out[13])
{
	if (!id || !*id)
		return "(no commit)";
	snprintf(out, 13, "%s", id);
	return out;
}

int tt_plan_check_ref(const char *what, const char *planned, const char *now)
{
	if (strcmp(planned ? planned : "", now ? now : "") == 0)
		return 0;
	char a[13], b[13];
	return tether_error_set(TETHER_EREFUSED, "stale plan: %s moved from %s to %s", what, short_id(planned, a),
	                        short_id(now, b));
}

/* The entry of `key` in a {key, ...} array, or NULL. */
static json_t *find_keyed(const json_t *list, const char *key)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e) {
		const char *k = json_string_value(json_object_get(e, "key"));
		if (k && strcmp(k, key) == 0)
			return e;
	}
	return NULL;
}

static int check_one_object(const char *key, const json_t *planned, const json_t *fresh)
{
	const char *pm = json_string_value(json_object_get(planned, "manifest"));
	const char *fm = json_string_value(json_object_get(fresh, "manifest"));
	if (fm && (!pm || strcmp(pm, fm) != 0))
		return tether_error_set(TETHER_EREFUSED, "stale plan: %s's manifest changed since the plan "
		                        "(manifest %.8s… → %.8s…)", key, pm ? pm : "none", fm);
	char was[65], now[65];
	tt_plan_digest(json_object_get(planned, "state"), was);
	tt_plan_digest(json_object_get(fresh, "state"), now);
	if (strcmp(was, now) != 0)
		return tether_error_set(TETHER_EREFUSED, "stale plan: %s changed since the plan (digest %.8s… → %.8s…)",
		                        key, was, now);
	return 0;
}

int tt_plan_check_objects(const json_t *planned, const json_t *fresh)
{
	if (!json_is_array(planned))
		return malformed("the preconditions name no \"objects\" array");
	size_t i;
	json_t *e;
	json_array_foreach(fresh, i, e) {
		const char *key = json_string_value(json_object_get(e, "key"));
		json_t *p = find_keyed(planned, key);
		if (!p)
			return tether_error_set(TETHER_EREFUSED, "stale plan: %s was added since the plan", key);
		int rc = check_one_object(key, p, e);
		if (rc)
			return rc;
	}
	json_array_foreach(planned, i, e) {
		const char *key = json_string_value(json_object_get(e, "key"));
		if (!key)
			return malformed("an object precondition has no \"key\"");
		if (tt_key_check(key) != 0)
			return malformed("an object precondition names an invalid object key");
		if (!find_keyed(fresh, key))
			return tether_error_set(TETHER_EREFUSED, "stale plan: %s was removed since the plan", key);
	}
	return 0;
}

/* "pin ab12cd34.0123456789abcdef", "fork tether.ws.ab12cd34.main", "skip". */
static char *describe_action(const json_t *a)
{
	const char *action = json_string_value(json_object_get(a, "action"));
	const char *what = json_string_value(json_object_get(a, "pin"));
	if (!what)
		what = json_string_value(json_object_get(a, "branch"));
	return tt_strdupf("%s%s%s", action ? action : "?", what ? " " : "", what ? what : "");
}

/* The first field, in name order, where two actions that read the same in
 * describe_action differ (a fork's "expect": the head it is conditional
 * on), or NULL. */
static const char *differing_field(const json_t *a, const json_t *b)
{
	static const char *const described[] = {"key", "action", "pin", "branch", NULL};
	const char *first = NULL, *k;
	json_t *v;
	for (int pass = 0; pass < 2; pass++) {
		json_object_foreach((json_t *)(pass ? b : a), k, v) {
			size_t i = 0;
			while (described[i] && strcmp(described[i], k) != 0)
				i++;
			if (!described[i] && !json_equal(json_object_get(a, k), json_object_get(b, k)) &&
			    (!first || strcmp(k, first) < 0))
				first = k;
		}
	}
	return first;
}

/* " with expect = {...}": field `k` of action `a`, or "". */
static char *describe_field(const json_t *a, const char *k)
{
	if (!k)
		return strdup("");
	json_t *v = json_object_get(a, k);
	char *text = v ? tt_cjson(v) : NULL;
	if (text && strlen(text) > 80)
		strcpy(text + 77, "...");
	char *out = tt_strdupf(" with %s = %s", k, !v ? "(none)" : text ? text : "?");
	free(text);
	return out;
}

int tt_plan_check_actions(const char *op, const json_t *planned, const json_t *fresh)
{
	size_t i;
	json_t *e;
	json_array_foreach(fresh, i, e) {
		const char *key = json_string_value(json_object_get(e, "key"));
		json_t *p = find_keyed(planned, key);
		if (!p)
			return tether_error_set(TETHER_EREFUSED, "stale plan: it has no action for %s", key);
		if (json_equal(p, e))
			continue;
		char *was = describe_action(p), *now = describe_action(e);
		/* The same action on another condition: name the condition. */
		int same = strcmp(was, now) == 0;
		const char *field = same ? differing_field(p, e) : NULL;
		char *was_if = describe_field(p, field), *now_if = describe_field(e, field);
		int rc = tether_error_set(TETHER_EREFUSED, "stale plan: %s: the plan says `%s`%s; `%s` would now do `%s`%s",
		                          key, was, was_if, op, now, now_if);
		free(was);
		free(now);
		free(was_if);
		free(now_if);
		return rc;
	}
	if (json_array_size(planned) != json_array_size(fresh))
		return tether_error_set(TETHER_EREFUSED, "stale plan: it has %zu %s; `%s` would now take %zu",
		                        json_array_size(planned), tt_plural((long long)json_array_size(planned), "action",
		                        "actions"), op, json_array_size(fresh));
	return 0;
}

int tt_plan_save(const json_t *plan, const char *path)
{
	char *text = json_dumps(plan, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!text)
		return tether_error_set(TETHER_ERROR, "cannot encode the plan");
	size_t len = strlen(text);
	char *line = tt_strdupf("%s\n", text);
	free(text);
	int rc = tt_write_file_atomic(path, line, len + 1);
	free(line);
	if (rc)
		rc = tether_error_set(rc, "cannot save the plan: %s", tether_error_last());
	return rc;
}

void tt_plan_report(json_t *report, const json_t *plan, int dry_run, const char *plan_out)
{
	json_object_set_new(report, "dry_run", json_boolean(dry_run));
	if (!dry_run)
		return;
	json_object_set(report, "plan", (json_t *)plan);
	json_object_set_new(report, "plan_file", plan_out ? json_string(plan_out) : json_null());
}

int tether_plan_load(const char *path, json_t **plan)
{
	json_error_t err;
	*plan = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!*plan) {
		if (err.line >= 1)
			return tether_error_set(TETHER_EUSAGE, "plan %s:%d:%d: %s", path, err.line, err.column, err.text);
		return tether_error_set(TETHER_EUSAGE, "plan %s: %s", path, err.text);
	}
	if (!json_is_object(*plan)) {
		json_decref(*plan);
		*plan = NULL;
		return tether_error_set(TETHER_EUSAGE, "plan %s:1:1: not a tether plan (a JSON object)", path);
	}
	return 0;
}
