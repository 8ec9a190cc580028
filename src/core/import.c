/* tether import SOURCE --query SQL: a registry's rows planned into adds,
 * updates and (--sync) removals of manifests. The mapping is the query's:
 * rows come with tether's canonical columns, `key`, `kind`, `uri`, and any
 * option `tether add` takes for the kind (`write`, `pin`, the kind's
 * declared options such as `file` or `branch`), each row built into a
 * locator and policy by add's own code (add.c, tt_add_build). Every row is
 * checked before anything is written; one bad row refuses the import,
 * naming its row number and column. Nothing is recorded or pinned: the
 * manifests say what to track, and `tether commit` records their states.
 *
 * The plan (op "import") holds each action's whole manifest and, as its
 * preconditions, the digest of every manifest it touches as it was when
 * planned, so --from-plan writes exactly the plan or, when a manifest moved
 * since, nothing. */
#include "core/abi.h"
#include "core/add.h"
#include "core/engine.h"
#include "core/export.h"
#include "core/lock.h"
#include "core/plan.h"
#include "core/sessions.h"

#include "core/registry.h"
#include "util/fsutil.h"
#include "util/safefs.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tt_database_url_check(const char *url);
const char *tt_database_password(struct tether_repo *repo, const char *url);

static int is_pg(const char *source)
{
	return strncmp(source, "postgresql://", 13) == 0 || strncmp(source, "postgres://", 11) == 0;
}

/* Rows that failed, each a line; the error names the first and counts. */
struct refusals {
	json_t *lines;
};

static void refuse(struct refusals *r, size_t row, const char *column, const char *fmt, const char *detail)
{
	char *what = tt_strdupf(fmt, detail ? detail : "");
	json_array_append_new(r->lines, json_sprintf("row %zu, column %s: %s", row, column, what));
	free(what);
}

static int refused(const struct refusals *r)
{
	size_t n = json_array_size(r->lines);
	if (!n)
		return 0;
	if (n == 1)
		return tether_error_set(TETHER_EUSAGE, "import refused, nothing written: %s",
		                        json_string_value(json_array_get(r->lines, 0)));
	return tether_error_set(TETHER_EUSAGE, "import refused, nothing written: %s (and %zu more rows: %s)",
	                        json_string_value(json_array_get(r->lines, 0)), n - 1,
	                        json_string_value(json_array_get(r->lines, 1)));
}

static int column_index(const json_t *columns, const char *name)
{
	size_t i;
	json_t *c;
	json_array_foreach(columns, i, c) if (strcmp(json_string_value(c), name) == 0) return (int)i;
	return -1;
}

/* The manifest a row makes: {kind, locator, policy}. NULL when the row is
 * refused (its reason added to r). */
static json_t *row_manifest(struct tether_repo *repo, const json_t *columns, const json_t *row, size_t n,
                            const char *key, struct refusals *r)
{
	int kc = column_index(columns, "kind"), uc = column_index(columns, "uri");
	const char *kind = json_string_value(json_array_get(row, (size_t)kc));
	if (!kind || !*kind) {
		refuse(r, n, "kind", "empty%s", NULL);
		return NULL;
	}
	const struct tether_backend *b = tt_backend_find(kind, NULL);
	if (!b) {
		refuse(r, n, "kind", "unknown kind '%s' (`tether backends` lists the kinds)", kind);
		return NULL;
	}
	json_t *options = json_object();
	size_t i;
	json_t *c;
	json_array_foreach(columns, i, c) {
		const char *name = json_string_value(c);
		json_t *v = json_array_get(row, i);
		if ((int)i == kc || (int)i == uc || strcmp(name, "key") == 0 || json_is_null(v))
			continue;
		json_object_set(options, name, v);
	}
	struct tether_bctx ctx;
	tt_repo_bctx(repo, b->kind, key, &ctx);
	json_t *locator = NULL, *policy = NULL;
	const char *uri = uc >= 0 ? json_string_value(json_array_get(row, (size_t)uc)) : NULL;
	tether_error_clear();
	int rc = tt_add_build(b, &ctx, uri, options, repo->root, 0, &locator, &policy);
	json_decref(options);
	if (rc) {
		/* add's messages name the option as --NAME: the column */
		const char *msg = tether_error_last();
		char column[64] = "uri";
		if (strncmp(msg, "--", 2) == 0)
			snprintf(column, sizeof column, "%.*s", (int)strcspn(msg + 2, " ="), msg + 2);
		refuse(r, n, column, "%s", msg);
		return NULL;
	}
	return json_pack("{s:s, s:o, s:o}", "kind", b->kind, "locator", locator, "policy", policy);
}

static json_t *manifest_digest(const struct tt_manifest *m)
{
	return m ? json_string(m->digest) : json_null();
}

/* The new manifest of an existing object: its kind, locator and policy
 * replaced. What it recorded (state, pin, listing) stays when kind and
 * locator do, since it is still a state of that system; otherwise it goes,
 * and the next commit records the new system's. */
static json_t *updated_doc(const struct tt_manifest *old, const json_t *fresh)
{
	int same_system = json_equal(json_object_get(old->doc, "kind"), json_object_get(fresh, "kind")) &&
	                  json_equal(json_object_get(old->doc, "locator"), json_object_get(fresh, "locator"));
	json_t *doc = same_system ? json_deep_copy(old->doc) : json_deep_copy(fresh);
	json_object_set(doc, "policy", json_object_get(fresh, "policy"));
	json_object_del(doc, "layout");
	return doc;
}

static int plan_rows(struct tether_repo *repo, const struct tether_import_opts *opts, const struct tt_sql_rows *rows,
                     json_t *plan)
{
	struct refusals r = { json_array() };
	json_t *columns = rows->columns;
	static const char *const needed[] = { "key", "kind" };
	for (size_t k = 0; k < 2; k++)
		if (column_index(columns, needed[k]) < 0) {
			json_decref(r.lines);
			return tether_error_set(TETHER_EUSAGE, "import refused, nothing written: the query returns no "
			                        "'%s' column (columns: key, kind, uri, and options such as write, pin)",
			                        needed[k]);
		}
	size_t i, j;
	json_t *c, *d;
	json_array_foreach(columns, i, c) json_array_foreach(columns, j, d) if (j > i && json_equal(c, d)) {
		json_decref(r.lines);
		return tether_error_set(TETHER_EUSAGE, "import refused, nothing written: the query returns column '%s' "
		                        "twice", json_string_value(c));
	}
	int kc = column_index(columns, "key");
	json_t *wanted = json_object(); /* {key: {"row", "doc"}} */
	json_t *row;
	json_array_foreach(rows->rows, i, row) {
		size_t n = i + 1;
		const char *key = json_string_value(json_array_get(row, (size_t)kc));
		if (!key || !*key) {
			refuse(&r, n, "key", "empty%s", NULL);
			continue;
		}
		if (tt_key_check(key) != 0) {
			refuse(&r, n, "key", "%s", tether_error_last());
			continue;
		}
		json_t *seen = json_object_get(wanted, key);
		if (seen) {
			char *why = tt_strdupf("'%s' repeats row %lld", key,
			                       (long long)json_integer_value(json_object_get(seen, "row")));
			refuse(&r, n, "key", "%s", why);
			free(why);
			continue;
		}
		json_t *doc = row_manifest(repo, columns, row, n, key, &r);
		if (doc)
			json_object_set_new(wanted, key, json_pack("{s:I, s:o}", "row", (json_int_t)n, "doc", doc));
	}
	int rc = refused(&r);
	json_decref(r.lines);
	struct tt_manifest_set work = { 0 };
	if (!rc)
		rc = tt_manifests_load_working(repo->root, &work);
	json_t *pre = json_array(), *actions = json_array();
	const char *key;
	json_t *w;
	json_object_foreach(wanted, key, w) {
		if (rc)
			break;
		const struct tt_manifest *old = tt_manifest_set_find(&work, key);
		json_t *doc = json_object_get(w, "doc");
		const char *action = "add";
		json_t *newdoc = NULL;
		if (old) {
			newdoc = updated_doc(old, doc);
			json_t *olddoc = json_deep_copy(old->doc);
			json_object_del(olddoc, "layout");
			int same = json_equal(olddoc, newdoc);
			json_decref(olddoc);
			if (same) {
				json_decref(newdoc);
				continue;
			}
			action = "update";
		} else {
			newdoc = json_incref(doc);
		}
		json_array_append_new(pre, json_pack("{s:s, s:o}", "key", key, "manifest", manifest_digest(old)));
		json_array_append_new(actions, json_pack("{s:s, s:s, s:o, s:O}", "action", action, "key", key, "manifest",
		                                         newdoc, "row", json_object_get(w, "row")));
	}
	for (size_t k = 0; !rc && opts->sync && k < work.n; k++) {
		if (json_object_get(wanted, work.v[k].key))
			continue;
		json_array_append_new(pre, json_pack("{s:s, s:o}", "key", work.v[k].key, "manifest",
		                                     manifest_digest(&work.v[k])));
		json_array_append_new(actions, json_pack("{s:s, s:s}", "action", "remove", "key", work.v[k].key));
	}
	tt_manifest_set_free(&work);
	json_decref(wanted);
	json_object_set_new(tt_plan_preconditions(plan), "objects", pre);
	json_object_set_new(plan, "actions", actions);
	return rc;
}

static int import_plan_command(tether_repo *repo, const struct tether_import_opts *opts, json_t **out)
{
	*out = NULL;
	if (!opts->source || !*opts->source)
		return tether_error_set(TETHER_EUSAGE, "import needs a SOURCE (postgresql://... or a SQLite file)");
	if (!opts->query || !*opts->query)
		return tether_error_set(TETHER_EUSAGE, "import needs --query SQL");
	int rc = is_pg(opts->source) ? tt_database_url_check(opts->source) : 0;
	if (!rc && !is_pg(opts->source) && strstr(opts->source, "://"))
		rc = tether_error_set(TETHER_EUSAGE, "'%s': import reads postgresql:// URLs and SQLite files", opts->source);
	if (!rc)
		rc = tt_repo_check_secrets(repo);
	if (!rc && opts->plan_out)
		rc = tt_plan_check_opts(opts->plan_out, NULL);
	const struct tt_sql_module *m = rc ? NULL : tt_sql_module(is_pg(opts->source));
	if (!rc && !m)
		rc = TETHER_ECONFIG;
	struct tt_sql_rows rows = { 0 };
	if (!rc) {
		char cwd[4096];
		char *source = is_pg(opts->source) ? strdup(opts->source)
		                                   : tt_path_resolve(opts->source, getcwd(cwd, sizeof cwd) ? cwd : "/");
		rc = m->query(source, is_pg(source) ? tt_database_password(repo, source) : NULL, opts->query, &rows);
		if (rc && strncmp(tether_error_last(), "row ", 4) == 0)
			tether_error_set(rc, "import refused, nothing written: %s", tether_error_last());
		free(source);
	}
	json_t *plan = NULL;
	if (!rc) {
		plan = tt_plan_new(repo, "import");
		json_object_set_new(plan, "source", json_string(opts->source));
		json_object_set_new(plan, "query", json_string(opts->query));
		json_object_set_new(plan, "sync", json_boolean(opts->sync));
		rc = plan_rows(repo, opts, &rows, plan);
	}
	if (!rc && opts->plan_out)
		rc = tt_plan_save(plan, opts->plan_out);
	json_decref(rows.columns);
	json_decref(rows.rows);
	if (rc)
		json_decref(plan);
	else
		*out = plan;
	return rc;
}

int tether_import_plan(tether_repo *repo, const struct tether_import_opts *opts, json_t **plan)
{
	TT_COMMAND_RUN(tether_import_opts, TETHER_IMPORT_OPTS_VERSION, import_plan_command, repo, opts, plan);
}

/* ---- applying a plan ------------------------------------------------------ */

/* Every action well formed, its manifest one tether would write. */
static int check_action(const json_t *a, size_t i, const char *file)
{
	const char *action = json_string_value(json_object_get(a, "action"));
	const char *key = json_string_value(json_object_get(a, "key"));
	const char *where = file ? file : "the plan";
	if (!action || (strcmp(action, "add") && strcmp(action, "update") && strcmp(action, "remove")))
		return tether_error_set(TETHER_EUSAGE, "malformed plan %s: actions[%zu].action must be add, update or remove",
		                        where, i);
	if (!key || tt_key_check(key) != 0)
		return tether_error_set(TETHER_EUSAGE, "malformed plan %s: actions[%zu].key: %s", where, i,
		                        key ? tether_error_last() : "missing");
	if (strcmp(action, "remove") == 0)
		return 0;
	json_t *doc = json_object_get(a, "manifest");
	if (!json_is_object(doc))
		return tether_error_set(TETHER_EUSAGE, "malformed plan %s: actions[%zu].manifest must be a table", where,
		                        i);
	struct tt_manifest m = { .key = (char *)key, .doc = doc };
	char *text = tt_manifest_text(&m);
	struct tt_manifest parsed;
	char *name = tt_strdupf("%s: actions[%zu].manifest", where, i);
	int rc = text ? tt_manifest_parse(key, text, strlen(text), name, &parsed) : TETHER_EUSAGE;
	if (!rc)
		tt_manifest_free(&parsed);
	else
		rc = tether_error_set(TETHER_EUSAGE, "malformed plan: %s", tether_error_last());
	free(name);
	free(text);
	return rc;
}

static int apply_locked(struct tether_repo *repo, const json_t *plan, const char *file, json_t **report)
{
	const json_t *actions = tt_plan_actions(plan);
	const json_t *pre = json_object_get(tt_plan_preconditions(plan), "objects");
	size_t i;
	json_t *a;
	int rc = json_is_array(pre) ? 0 : tether_error_set(TETHER_EUSAGE, "malformed plan: preconditions.objects");
	json_array_foreach(actions, i, a) if (!rc) rc = check_action(a, i, file);
	struct tt_manifest_set work = { 0 };
	if (!rc)
		rc = tt_manifests_load_working(repo->root, &work);
	/* every manifest the plan touches is as it was planned */
	json_array_foreach(pre, i, a) {
		if (rc)
			break;
		const char *key = json_string_value(json_object_get(a, "key"));
		const struct tt_manifest *now = key ? tt_manifest_set_find(&work, key) : NULL;
		const char *planned = json_string_value(json_object_get(a, "manifest"));
		if (!key)
			rc = tether_error_set(TETHER_EUSAGE, "malformed plan: preconditions.objects[%zu].key", i);
		else if ((now == NULL) != (planned == NULL) || (now && strcmp(now->digest, planned) != 0))
			rc = tether_error_set(TETHER_EREFUSED, "stale plan: %s %s since the plan was made; nothing written",
			                      key, now ? (planned ? "changed" : "was added") : "was removed");
	}
	json_t *added = json_array(), *updated = json_array(), *removed = json_array();
	json_array_foreach(actions, i, a) {
		if (rc)
			break;
		const char *action = json_string_value(json_object_get(a, "action"));
		const char *key = json_string_value(json_object_get(a, "key"));
		if (strcmp(action, "remove") == 0) {
			char *rel = tt_manifest_relpath(key);
			char *path = tt_path_join(repo->root, rel);
			rc = tt_safe_remove(repo->root, path);
			free(rel);
			free(path);
			json_array_append_new(removed, json_string(key));
			continue;
		}
		struct tt_manifest m = { .key = strdup(key), .doc = json_deep_copy(json_object_get(a, "manifest")) };
		rc = tt_manifest_save(repo->root, repo->layout, &m);
		tt_manifest_free(&m);
		json_array_append_new(strcmp(action, "add") == 0 ? added : updated, json_string(key));
	}
	tt_manifest_set_free(&work);
	if (!rc)
		*report = json_pack("{s:o, s:o, s:o}", "added", added, "updated", updated, "removed", removed);
	else {
		json_decref(added);
		json_decref(updated);
		json_decref(removed);
	}
	return rc;
}

static int import_apply(tether_repo *repo, const json_t *plan, const char *file, json_t **report)
{
	struct tt_lock checkout = { -1 }, shared = { -1 };
	*report = NULL;
	int rc = tt_plan_command_lock(repo, "import", NULL, plan, file, NULL, &checkout, &shared);
	if (!rc)
		rc = apply_locked(repo, plan, file, report);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

int tether_import_apply(tether_repo *repo, const json_t *plan, const char *plan_file, json_t **report)
{
	tt_command_begin(repo, NULL, NULL);
	int rc = import_apply(repo, plan, plan_file, report);
	tt_command_end(repo);
	return rc;
}
