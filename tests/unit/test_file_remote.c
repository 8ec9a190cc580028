/* The file backend on an object store, through the public API, in one
 * process: the store is the memtest module (tests/store-module/memtest.c),
 * whose objects live in this process's memory, loaded from
 * TETHER_MODULE_PATH as any remote store module is. The dataset is a real
 * git repository. Covered: single objects and prefixes at add, status,
 * commit, diff --content, verify and open (versioned and not); immutable
 * drift; a store that refuses (unreachable) beside objects that answer;
 * committed storage_options; bad locators and policies. The same flows
 * run against real S3 servers in tests/e2e/test_file_remote.py. */
#include "check.h"
#include "shell.h"

#include <tether.h>
#include <tether/backend.h>
#include <tether/store.h>

#include <stdlib.h>
#include <string.h>

static char *root;

static void store_put(const char *key, const char *text)
{
	tether_store *s = NULL;
	CHECK(tether_store_open("memtest://bucket", NULL, &s) == 0);
	if (s)
		CHECK(tether_store_put(s, key, text, strlen(text), TETHER_PUT_OVERWRITE, NULL, NULL) == 0);
	tether_store_close(s);
}

static void store_delete(const char *key)
{
	tether_store *s = NULL;
	CHECK(tether_store_open("memtest://bucket", NULL, &s) == 0);
	if (s)
		CHECK(tether_store_delete(s, key) == 0);
	tether_store_close(s);
}

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
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static const char *status_of(const json_t *report, const char *key)
{
	return str(object(report, key), "status");
}

static tether_repo *reopen(tether_repo *repo)
{
	tether_repo_free(repo);
	tether_repo *r = NULL;
	CHECK(tether_repo_find(root, &r) == 0);
	return r;
}

static int add(tether_repo *repo, const char *key, const char *uri, const char *mode)
{
	json_t *options = mode ? json_pack("{s:s}", "file", mode) : NULL;
	struct tether_add_opts o = {TETHER_ADD_OPTS_INIT, .key = key, .kind = "file", .uri = uri, .cwd = root,
	                            .options = options};
	json_t *report = NULL;
	int rc = tether_add(repo, &o, &report);
	json_decref(report);
	json_decref(options);
	return rc;
}

static json_t *status(tether_repo *repo, int *rc)
{
	struct tether_status_opts o = {TETHER_STATUS_OPTS_INIT, .snapshot = 1};
	json_t *report = NULL;
	*rc = tether_status(repo, &o, &report);
	return report;
}

static char *commit(tether_repo *repo, const char *message, int *rc)
{
	struct tether_commit_opts o = {TETHER_COMMIT_OPTS_INIT, .message = message};
	json_t *report = NULL;
	*rc = tether_commit(repo, &o, &report);
	char *id = report && json_string_value(json_object_get(report, "commit"))
	                   ? strdup(json_string_value(json_object_get(report, "commit")))
	                   : NULL;
	json_decref(report);
	return id;
}

static void test_add_and_states(tether_repo *repo)
{
	store_put("raw/plate1/a.csv", "a,1\n");
	store_put("raw/plate1/b.csv", "b,22\n");
	store_put("raw/plate10/c.csv", "not under plate1/\n");
	store_put("ref/genome.fa", ">chr1\nACGT\n");
	CHECK(add(repo, "plates", "memtest://Bucket/raw/plate1/", NULL) == 0);
	CHECK(add(repo, "genome", "memtest://bucket/ref//genome.fa", NULL) == 0);
	CHECK(add(repo, "whole", "memtest://bucket", "mutable") == 0);
	int rc;
	json_t *st = status(repo, &rc);
	CHECK(rc == 0);
	json_t *cur = json_object_get(object(st, "plates"), "current");
	CHECK_STR(str(cur, "type"), "prefix");
	CHECK(json_integer_value(json_object_get(cur, "count")) == 2);
	CHECK(json_integer_value(json_object_get(cur, "size")) == 9);
	CHECK(strlen(str(cur, "digest")) == 64);
	cur = json_object_get(object(st, "genome"), "current");
	CHECK_STR(str(cur, "type"), "object");
	CHECK(json_integer_value(json_object_get(cur, "size")) == 11);
	CHECK(str(cur, "etag")[0] == '"'); /* the store's token, as it gives it */
	CHECK(*str(cur, "version_id"));    /* memtest keeps version ids */
	CHECK_STR(str(object(st, "genome"), "tier"), "observed");
	CHECK(json_integer_value(json_object_get(json_object_get(object(st, "whole"), "current"), "count")) == 4);
	json_decref(st);
	/* The locators as recorded: a prefix with its one '/', an object with none. */
	char *text = out("cat '%s/.tether/objects/plates.toml' '%s/.tether/objects/genome.toml' "
	                 "'%s/.tether/objects/whole.toml'", root, root, root);
	CHECK(strstr(text, "\"memtest://bucket/raw/plate1/\"") != NULL);
	CHECK(strstr(text, "\"memtest://bucket/ref/genome.fa\"") != NULL);
	CHECK(strstr(text, "\"memtest://bucket/\"") != NULL);
	free(text);
}

static void test_bad_adds(tether_repo *repo)
{
	/* No object there; a prefix named without its '/' says so. */
	CHECK(add(repo, "nothing", "memtest://bucket/ref/none.fa", NULL) == TETHER_ENOTFOUND);
	CHECK(strstr(tether_error_last(), "no object at memtest://bucket/ref/none.fa") != NULL);
	CHECK(add(repo, "noslash", "memtest://bucket/raw/plate1", NULL) == TETHER_ENOTFOUND);
	CHECK(tether_error_hint() && strstr(tether_error_hint(), "memtest://bucket/raw/plate1/") != NULL);
	/* versioned is for single remote objects only. */
	CHECK(add(repo, "vprefix", "memtest://bucket/raw/plate1/", "versioned") == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "is a prefix") != NULL);
	put(root, "local.txt", "x\n");
	CHECK(add(repo, "vlocal", "local.txt", "versioned") == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "a local path") != NULL);
	/* A URI tether would not record, or a scheme it has no store for. */
	CHECK(add(repo, "dots", "memtest://bucket/raw/../x", NULL) == TETHER_EUSAGE);
	CHECK(add(repo, "noscheme", "nosuch://bucket/x", NULL) == TETHER_EUSAGE);
	CHECK(add(repo, "nobucket", "memtest:///x", NULL) == TETHER_EUSAGE);
	json_t *region = json_pack("{s:s}", "region", "eu-west-1");
	struct tether_add_opts o = {TETHER_ADD_OPTS_INIT, .key = "lregion", .kind = "file", .uri = "local.txt",
	                            .cwd = root, .options = region};
	json_t *report = NULL;
	CHECK(tether_add(repo, &o, &report) == TETHER_EUSAGE && !report);
	json_decref(region);
	region = json_pack("{s:s}", "region", "");
	o.uri = "memtest://bucket/ref/genome.fa";
	o.options = region;
	CHECK(tether_add(repo, &o, &report) == TETHER_EUSAGE && !report);
	json_decref(region);
	sh("rm -f '%s/local.txt'", root);
	/* Nothing was written for any of them. */
	char *left = out("ls '%s/.tether/objects'", root);
	CHECK_STR(left, "genome.toml\nplates.toml\nwhole.toml");
	free(left);
}

static json_t *content_diff(tether_repo *repo, const char *from, const char *to, const char *key)
{
	struct tether_diff_opts o = {TETHER_DIFF_OPTS_INIT, .from = from, .to = to, .content = 1};
	json_t *report = NULL;
	CHECK(tether_diff(repo, &o, &report) == 0);
	json_t *c = json_incref(json_object_get(object(report, key), "content"));
	json_decref(report);
	return c;
}

static int has_entry(const json_t *content, const char *path, const char *change)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(content, "entries"), i, e)
		if (strcmp(str(e, "path"), path) == 0 && strcmp(str(e, "change"), change) == 0)
			return 1;
	return 0;
}

static void test_commit_modify_diff(tether_repo *repo)
{
	int rc;
	char *c1 = commit(repo, "first", &rc);
	CHECK(rc == 0 && c1);
	/* The prefix's listing is stored, its tokens the ETags. */
	char *listing = out("cat '%s'/.tether/listings/*.jsonl | grep -c '\"p\":\"a.csv\"'", root);
	CHECK(atoi(listing) >= 1);
	free(listing);
	json_t *st = status(repo, &rc);
	CHECK(rc == 0 && json_is_true(json_object_get(st, "clean")));
	json_decref(st);

	/* The prefix changes: one object modified, one removed, one added.
	 * It is immutable (the default): drift, refused by commit. */
	store_put("raw/plate1/a.csv", "a,1000\n");
	store_delete("raw/plate1/b.csv");
	store_put("raw/plate1/sub/c.csv", "c\n");
	st = status(repo, &rc);
	CHECK(rc == 0);
	CHECK_STR(status_of(st, "plates"), "drifted");
	CHECK(strstr(str(object(st, "plates"), "detail"), "immutable data changed") != NULL);
	CHECK(strstr(str(object(st, "plates"), "detail"), "2 → 2 objects") != NULL);
	CHECK_STR(status_of(st, "whole"), "modified");
	CHECK_STR(status_of(st, "genome"), "clean");
	json_decref(st);
	char *refused = commit(repo, "drifted", &rc);
	CHECK(rc == TETHER_EREFUSED && !refused);
	CHECK(strstr(tether_error_last(), "plates") != NULL);

	/* Re-added mutable, it commits, and diff --content between the two
	 * commits names each key. */
	sh("rm '%s/.tether/objects/plates.toml'", root);
	CHECK(add(repo, "plates", "memtest://bucket/raw/plate1/", "mutable") == 0);
	char *c2 = commit(repo, "second", &rc);
	CHECK(rc == 0 && c2);
	json_t *content = content_diff(repo, c1, c2, "plates");
	CHECK(has_entry(content, "a.csv", "modified"));
	CHECK(has_entry(content, "b.csv", "removed"));
	CHECK(has_entry(content, "sub/c.csv", "added"));
	CHECK(json_integer_value(json_object_get(json_object_get(content, "totals"), "added")) == 1);
	json_decref(content);
	content = content_diff(repo, c1, c2, "whole");
	CHECK(has_entry(content, "raw/plate1/sub/c.csv", "added"));
	CHECK(!has_entry(content, "raw/plate10/c.csv", "modified"));
	json_decref(content);

	/* A single object: its ETag, version and size, in the summary. */
	store_put("ref/genome.fa", ">chr1\nACGTACGT\n");
	st = status(repo, &rc);
	CHECK_STR(status_of(st, "genome"), "drifted");
	const char *detail = str(object(st, "genome"), "detail");
	CHECK(strstr(detail, "etag \"v") != NULL && strstr(detail, "version id-") != NULL &&
	      strstr(detail, "size 11 → 15") != NULL);
	json_decref(st);
	free(c1);
	free(c2);
}

static void test_versioned_open(tether_repo *repo)
{
	store_put("models/m.bin", "weights-1");
	CHECK(add(repo, "model", "memtest://bucket/models/m.bin", "versioned") == 0);
	sh("rm '%s/.tether/objects/genome.toml'", root); /* drifted above; not this test's */
	int rc;
	json_t *st = status(repo, &rc);
	CHECK_STR(str(object(st, "model"), "tier"), "addressable");
	json_t *rec = json_deep_copy(json_object_get(object(st, "model"), "current"));
	json_decref(st);
	char *c3 = commit(repo, "model", &rc);
	CHECK(rc == 0 && c3);
	/* A new version is a change recorded, not drift. */
	store_put("models/m.bin", "weights-2");
	st = status(repo, &rc);
	CHECK_STR(status_of(st, "model"), "modified");
	json_decref(st);
	/* Committed, and diffed: one entry, the summary says what changed. */
	char *c4 = commit(repo, "model 2", &rc);
	CHECK(rc == 0 && c4);
	json_t *content = content_diff(repo, c3, c4, "model");
	CHECK(has_entry(content, "m.bin", "modified"));
	const char *summary = str(content, "summary");
	CHECK(strstr(summary, "etag \"v") != NULL && strstr(summary, "version id-") != NULL);
	json_decref(content);
	free(c4);
	store_put("models/m.bin", "weights-3");
	/* open -r gives the recorded version id. */
	struct tether_open_opts o = {TETHER_OPEN_OPTS_INIT, .key = "model", .rev = c3, .ignore_env = 1};
	json_t *h = NULL;
	CHECK(tether_open(repo, &o, &h) == 0);
	CHECK_STR(str(h, "uri"), "memtest://bucket/models/m.bin");
	CHECK_STR(str(h, "version_id"), str(rec, "version_id"));
	CHECK(json_is_true(json_object_get(h, "read_only")));
	json_decref(h);
	/* verify: memtest keeps only the latest version, so the recorded one
	 * is gone, as in a bucket whose old versions expired. */
	struct tether_verify_opts vo = {TETHER_VERIFY_OPTS_INIT};
	json_t *vr = NULL;
	rc = tether_verify(repo, &vo, &vr);
	char *text = json_dumps(vr, JSON_COMPACT);
	CHECK(text && strstr(text, "is gone") != NULL);
	free(text);
	json_decref(vr);
	/* The history walk asks too (an observed object's past states it does
	 * not: they were never recoverable). */
	struct tether_verify_opts all = {TETHER_VERIFY_OPTS_INIT, .all_history = 1};
	vr = NULL;
	rc = tether_verify(repo, &all, &vr);
	text = json_dumps(vr, JSON_COMPACT);
	CHECK(text && strstr(text, "is gone (deleted, or expired") != NULL);
	CHECK(text && strstr(text, "observed only: past states are not recoverable") != NULL);
	free(text);
	json_decref(vr);
	/* A recorded state with no version id (hand-edited here, as a bucket
	 * without versioning would record it): open refuses. */
	sh("cd '%s' && sed -i '/version_id/d' .tether/objects/model.toml", root);
	h = NULL;
	struct tether_open_opts now = {TETHER_OPEN_OPTS_INIT, .key = "model", .ignore_env = 1};
	CHECK(tether_open(repo, &now, &h) == TETHER_EREFUSED && !h);
	CHECK(strstr(tether_error_last(), "no version id") != NULL);
	sh("cd '%s' && git checkout -q -- .tether/objects/model.toml", root);
	json_decref(rec);
	free(c3);
}

static tether_repo *test_unreachable(tether_repo *repo)
{
	/* memtest refuses to open with profile "show-options": the store
	 * cannot be read (as a wrong key or a dead endpoint). */
	put(root, ".tether/secrets.toml", "[objects.\"plates\"]\nprofile = \"show-options\"\n");
	repo = reopen(repo);
	int rc;
	json_t *st = status(repo, &rc);
	CHECK(rc == TETHER_EAUTH);
	CHECK(strstr(tether_error_last(), "1 object could not be checked") != NULL);
	CHECK_STR(status_of(st, "plates"), "unreachable");
	CHECK(strstr(str(object(st, "plates"), "detail"), "plates: memtest://bucket: refused") != NULL);
	CHECK(json_is_null(json_object_get(object(st, "plates"), "current")) ||
	      !json_object_get(object(st, "plates"), "current"));
	CHECK_STR(status_of(st, "whole"), "modified"); /* the others are all there */
	CHECK_STR(status_of(st, "model"), "modified");
	CHECK(json_integer_value(json_object_get(st, "errors")) == 1);
	json_decref(st);
	char *head = out("git -C '%s' rev-parse HEAD", root);
	char *none = commit(repo, "cannot read", &rc);
	CHECK(rc == TETHER_EAUTH && !none);
	CHECK(strstr(tether_error_last(), "plates") != NULL);
	char *after = out("git -C '%s' rev-parse HEAD", root);
	CHECK_STR(after, head);
	free(head);
	free(after);
	sh("rm '%s/.tether/secrets.toml'", root);
	return reopen(repo);
}

/* tether.toml as init wrote it, and a [backends.file] table. */
static void file_config(const char *toml, const char *table)
{
	char *text = malloc(strlen(toml) + strlen(table) + 2);
	if (!text)
		exit(2);
	sprintf(text, "%s\n%s", toml, table);
	put(root, "tether.toml", text);
	free(text);
}

static tether_repo *test_committed_options(tether_repo *repo)
{
	char *toml = out("cat '%s/tether.toml'", root);
	/* An endpoint committed would send this checkout's keys elsewhere. */
	file_config(toml, "[backends.file]\nstorage_options = { endpoint_url = \"http://evil\" }\n");
	repo = reopen(repo);
	int rc;
	json_t *st = status(repo, &rc);
	CHECK(rc == TETHER_EREFUSED);
	CHECK(strstr(str(object(st, "whole"), "detail"), "storage_options.endpoint_url must not be committed") != NULL);
	json_decref(st);
	file_config(toml, "[backends.file]\nstorage_options = { colour = \"blue\" }\n");
	repo = reopen(repo);
	st = status(repo, &rc);
	CHECK(rc == TETHER_ECONFIG);
	CHECK(strstr(str(object(st, "whole"), "detail"), "unknown store option 'colour'") != NULL);
	json_decref(st);
	/* What may be committed reaches the store, under the secrets. */
	file_config(toml, "[backends.file]\nstorage_options = { region = \"eu-west-1\" }\n");
	put(root, ".tether/secrets.toml", "[objects.\"whole\"]\nprofile = \"show-options\"\n");
	repo = reopen(repo);
	st = status(repo, &rc);
	CHECK(strstr(str(object(st, "whole"), "detail"), "{\"profile\":\"show-options\",\"region\":\"eu-west-1\"}") !=
	      NULL);
	json_decref(st);
	sh("rm '%s/.tether/secrets.toml'", root);
	put(root, "tether.toml", toml);
	free(toml);
	return reopen(repo);
}

static void test_hostile_locator(tether_repo *repo)
{
	/* A clone's manifest naming a URI tether would not record. */
	char *saved = out("cat '%s/.tether/objects/whole.toml'", root);
	sh("cd '%s' && sed -i 's|memtest://bucket/|memtest://bucket/raw/../|' .tether/objects/whole.toml", root);
	int rc;
	json_t *st = status(repo, &rc);
	CHECK(rc == TETHER_EREFUSED);
	CHECK_STR(status_of(st, "whole"), "error");
	CHECK(strstr(str(object(st, "whole"), "detail"), "whole: file locator: ") != NULL);
	CHECK_STR(status_of(st, "model"), "modified");
	json_decref(st);
	put(root, ".tether/objects/whole.toml", saved);
	/* Or carrying store options that must not be committed. */
	sh("cd '%s' && sed -i 's|^uri = .*|&\\nstorage_options = { endpoint_url = \"http://evil\" }|' "
	   ".tether/objects/whole.toml", root);
	st = status(repo, &rc);
	CHECK(rc == TETHER_EREFUSED);
	CHECK(strstr(str(object(st, "whole"), "detail"),
	             ".tether/objects/whole.toml [locator]: storage_options.endpoint_url must not be committed") != NULL);
	json_decref(st);
	put(root, ".tether/objects/whole.toml", saved);
	free(saved);
	/* A recorded object state of the wrong shape is a malformed manifest,
	 * named by file, line and key, never compared as drift. */
	saved = out("cat '%s/.tether/objects/model.toml'", root);
	sh("cd '%s' && sed -i 's|^etag = .*|etag = 3|' .tether/objects/model.toml", root);
	st = status(repo, &rc);
	CHECK(rc == TETHER_ECONFIG && !st);
	CHECK(strstr(tether_error_last(), "model.toml:") != NULL);
	CHECK(strstr(tether_error_last(), "etag must be a non-empty string of printable ASCII") != NULL);
	json_decref(st);
	put(root, ".tether/objects/model.toml", saved);
	free(saved);
}

int main(void)
{
	char tmpl[] = "/tmp/tether-file-remote-XXXXXX";
	const char *tmp = mkdtemp(tmpl);
	CHECK(tmp != NULL);
	if (!tmp)
		CHECK_DONE();
	root = git_repo_at(tmp, "ds");
	tether_repo *repo = NULL;
	CHECK(tether_repo_init(root, &repo) == 0);
	if (!repo) {
		fprintf(stderr, "init: %s\n", tether_error_last());
		CHECK_DONE();
	}
	test_add_and_states(repo);
	test_bad_adds(repo);
	test_commit_modify_diff(repo);
	test_versioned_open(repo);
	repo = test_unreachable(repo);
	repo = test_committed_options(repo);
	test_hostile_locator(repo);
	tether_repo_free(repo);
	sh("rm -rf '%s'", tmp);
	free(root);
	CHECK_DONE();
}
