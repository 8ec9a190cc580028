/* The engine's side of verify --deep, commit's quiescence check (and
 * --force), and status with [verify] on_status, driven through the public
 * API on the memory backend, whose knobs (backends/memory.h) damage a
 * pinned snapshot, make a system busy and delete a pin, so each path is
 * taken for real. The dataset is a real git repository (the VCS module is
 * found through TETHER_MODULE_PATH). */
#include "check.h"
#include "shell.h"

#include "backends/memory.h"

#include <tether.h>
#include <tether/backend.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const struct tether_backend tt_backend_memory;

static json_t *object(const json_t *report, const char *key)
{
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(report, "objects"), i, o)
		if (strcmp(json_string_value(json_object_get(o, "key")), key) == 0)
			return o;
	return NULL;
}

static const char *str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static tether_repo *reopen(tether_repo *repo, const char *root)
{
	tether_repo_free(repo);
	tether_repo *r = NULL;
	CHECK(tether_repo_find(root, &r) == 0);
	return r;
}

static int commit(tether_repo *repo, const char *message, int force, json_t **report)
{
	struct tether_commit_opts o = {TETHER_COMMIT_OPTS_INIT, .message = message, .force = force};
	*report = NULL;
	return tether_commit(repo, &o, report);
}

static json_t *verify(tether_repo *repo, int deep, int all_history, int *rc)
{
	struct tether_verify_opts o = {TETHER_VERIFY_OPTS_INIT, .deep = deep, .all_history = all_history};
	json_t *report = NULL;
	*rc = tether_verify(repo, &o, &report);
	return report;
}

static json_t *status(tether_repo *repo)
{
	struct tether_status_opts o = {TETHER_STATUS_OPTS_INIT, .snapshot = 1};
	json_t *report = NULL;
	CHECK(tether_status(repo, &o, &report) == 0);
	return report;
}

static void test_quiescence(tether_repo *repo, const char *root)
{
	char *head = out("git -C '%s' rev-parse HEAD", root);
	CHECK(tt_memory_write("sysa", "main", "x", json_integer(2), NULL) == 0);
	CHECK(tt_memory_set_busy("sysa", "2 sessions writing to main") == 0);
	json_t *report;
	CHECK(commit(repo, "while busy", 0, &report) == TETHER_EREFUSED);
	CHECK(report == NULL);
	CHECK(strstr(tether_error_last(), "mem/a: writers are active (2 sessions writing to main)") != NULL);
	CHECK(tether_error_hint() && strstr(tether_error_hint(), "tether commit --force") != NULL);
	/* Refused before anything was written: no commit, no pin. */
	char *after = out("git -C '%s' rev-parse HEAD", root);
	CHECK_STR(after, head);
	free(after);
	json_t *pins = NULL;
	json_t *loc = json_pack("{s:s, s:s}", "system", "sysa", "branch", "main");
	CHECK(tt_backend_memory.list_pins(NULL, loc, &pins) == 0 && json_array_size(pins) == 1);
	json_decref(pins);
	/* A dry run is refused the same way: the plan would not be one state. */
	struct tether_commit_opts dry = {TETHER_COMMIT_OPTS_INIT, .message = "m", .dry_run = 1};
	CHECK(tether_commit(repo, &dry, &report) == TETHER_EREFUSED);

	/* --force skips the check, and says so. */
	CHECK(commit(repo, "forced", 1, &report) == 0);
	CHECK(str(report, "commit") != NULL);
	const char *warning = json_string_value(json_array_get(json_object_get(report, "warnings"), 0));
	CHECK(warning && strstr(warning, "mem/a: --force: not checked for active writers") != NULL);
	json_decref(report);
	CHECK(tt_backend_memory.list_pins(NULL, loc, &pins) == 0 && json_array_size(pins) == 2);
	json_decref(pins);

	/* Quiescent again: the plain commit goes through (nothing changed). */
	CHECK(tt_memory_set_busy("sysa", NULL) == 0);
	CHECK(tt_memory_write("sysa", "main", "x", json_integer(3), NULL) == 0);
	CHECK(commit(repo, "quiet", 0, &report) == 0);
	CHECK(str(report, "commit") != NULL);
	CHECK(json_array_size(json_object_get(report, "warnings")) == 0);
	json_decref(report);
	json_decref(loc);
	free(head);
}

static void test_deep(tether_repo *repo)
{
	int rc;
	json_t *r = verify(repo, 1, 0, &rc);
	CHECK(rc == 0 && json_is_true(json_object_get(r, "ok")) && json_is_true(json_object_get(r, "deep")));
	CHECK_STR(str(object(r, "mem/a"), "deep"), "ok");
	CHECK(json_array_size(json_object_get(r, "deep_failed")) == 0);
	json_decref(r);

	/* Damage the snapshot the pin names: its tag is still in place. */
	json_t *st = status(repo);
	const char *snap = str(json_object_get(object(st, "mem/a"), "recorded"), "snapshot_id");
	CHECK(snap && tt_memory_damage("sysa", snap) == 0);
	json_decref(st);
	CHECK(tt_memory_damage("sysa", "snap-none") == TETHER_ENOTFOUND);

	r = verify(repo, 0, 0, &rc);
	CHECK(rc == 0 && json_is_true(json_object_get(r, "ok")));
	CHECK(json_object_get(r, "deep") == NULL && json_object_get(object(r, "mem/a"), "deep") == NULL);
	json_decref(r);
	r = verify(repo, 1, 0, &rc);
	CHECK(rc == 0 && json_is_false(json_object_get(r, "ok")));
	const json_t *o = object(r, "mem/a");
	CHECK_STR(str(o, "deep"), "failed");
	CHECK(json_is_false(json_object_get(o, "ok")));
	CHECK(str(o, "detail") && strstr(str(o, "detail"), "deep check: snapshot ") != NULL &&
	      strstr(str(o, "detail"), "damaged") != NULL);
	CHECK(json_array_size(json_object_get(r, "deep_failed")) == 1);
	const json_t *df = json_array_get(json_object_get(r, "deep_failed"), 0);
	CHECK_STR(str(df, "key"), "mem/a");
	CHECK(str(df, "pin") && str(o, "pin") && strcmp(str(df, "pin"), str(o, "pin")) == 0);
	json_decref(r);

	/* Over history: the damaged state fails, the earlier ones hold. */
	r = verify(repo, 1, 1, &rc);
	CHECK(rc == 0 && json_is_false(json_object_get(r, "ok")));
	size_t failed = 0, held = 0, i;
	json_t *x;
	json_array_foreach(json_object_get(r, "objects"), i, x) {
		failed += json_is_false(json_object_get(x, "ok")) && strcmp(str(x, "deep"), "failed") == 0;
		held += json_is_true(json_object_get(x, "ok")) && strcmp(str(x, "deep"), "ok") == 0;
	}
	CHECK(failed == 1 && held == 2);
	CHECK(json_array_size(json_object_get(r, "deep_failed")) == 1);
	json_decref(r);
	r = verify(repo, 0, 1, &rc);
	CHECK(rc == 0 && json_is_true(json_object_get(r, "ok")));
	json_decref(r);
}

static tether_repo *test_on_status(tether_repo *repo, const char *root)
{
	json_t *st = status(repo);
	const char *pin = str(object(st, "mem/a"), "pin");
	CHECK(pin != NULL);
	char *tag = pin ? strdup(pin) : NULL;
	json_decref(st);
	/* Delete HEAD's pin behind tether's back. */
	json_t *loc = json_pack("{s:s, s:s}", "system", "sysa", "branch", "main");
	char tagname[128];
	snprintf(tagname, sizeof tagname, "tether.%s", tag ? tag : "");
	json_t *ref = json_pack("{s:s, s:s}", "tag", tagname, "pin", tag ? tag : "");
	CHECK(tt_backend_memory.unpin(NULL, loc, ref) == 0);
	json_decref(ref);
	json_decref(loc);

	/* on_status = false (the default): status does not look. */
	st = status(repo);
	CHECK_STR(str(object(st, "mem/a"), "status"), "clean");
	CHECK(json_object_get(st, "pins") == NULL);
	CHECK(json_is_true(json_object_get(st, "clean")));
	json_decref(st);

	sh("sed -i 's/^on_status = false/on_status = true/' '%s/tether.toml'", root);
	repo = reopen(repo, root);
	st = status(repo);
	const json_t *o = object(st, "mem/a");
	CHECK_STR(str(o, "status"), "unpinned");
	CHECK(str(o, "detail") && strstr(str(o, "detail"), "tag tether.") && strstr(str(o, "detail"), "missing"));
	CHECK(json_is_false(json_object_get(st, "clean")));
	const json_t *pins = json_object_get(st, "pins");
	CHECK(json_integer_value(json_object_get(pins, "checked")) == 1);
	CHECK(json_array_size(json_object_get(pins, "missing")) == 1);
	CHECK_STR(str(json_array_get(json_object_get(pins, "missing"), 0), "pin"), tag);
	json_decref(st);
	/* --no-snapshot contacts no system: no pin is checked. */
	struct tether_status_opts quiet = {TETHER_STATUS_OPTS_INIT, .snapshot = 0};
	CHECK(tether_status(repo, &quiet, &st) == 0);
	CHECK(json_object_get(st, "pins") == NULL);
	json_decref(st);
	free(tag);
	return repo;
}

int main(void)
{
	char tmpl[] = "/tmp/tether-engine-flags-XXXXXX";
	const char *tmp = mkdtemp(tmpl);
	CHECK(tmp != NULL);
	if (!tmp)
		CHECK_DONE();
	char *root = git_repo_at(tmp, "ds");
	tether_repo *repo = NULL;
	int init_rc = tether_repo_init(root, &repo);
	CHECK(init_rc == 0);
	if (init_rc) {
		fprintf(stderr, "init: %s\n", tether_error_last());
		CHECK_DONE();
	}
	CHECK(tt_memory_create("sysa") == 0);
	CHECK(tt_memory_write("sysa", "main", "x", json_integer(1), NULL) == 0);
	json_t *report = NULL;
	struct tether_add_opts add = {TETHER_ADD_OPTS_INIT, .key = "mem/a", .kind = "memory", .uri = "memory://sysa",
	                              .cwd = root};
	CHECK(tether_add(repo, &add, &report) == 0);
	json_decref(report);
	CHECK(commit(repo, "first", 0, &report) == 0);
	CHECK(str(report, "commit") != NULL);
	json_decref(report);

	test_quiescence(repo, root);
	test_deep(repo);
	repo = test_on_status(repo, root);

	tether_repo_free(repo);
	sh("rm -rf '%s'", tmp);
	free(root);
	tt_memory_reset();
	CHECK_DONE();
}
