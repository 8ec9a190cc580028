/* tether upgrade: move a dataset's files to the newest layout this tether
 * writes (core/layout.h). Layout 0 -> 1 gives tether.toml's [dataset] and
 * every manifest a `layout = 1`, and changes nothing else.
 *
 * The working copy: each manifest of an older layout is rewritten
 * atomically, then tether.toml last, since its layout is the dataset's:
 * a kill part-way leaves some manifests at 1 and tether.toml at 0, which
 * reads as it is (each file by its own layout) and which a re-run finishes.
 * With --all-history the current branch's commits are rewritten by the
 * VCS (rewrite_files), each file by the same function as the working
 * copy's, so a clean checkout is still clean afterwards; the branch moves
 * from the head the dry run reviewed, or not at all. */
#include "core/abi.h"
#include "core/engine.h"
#include "core/journal.h"
#include "core/layout.h"
#include "core/lock.h"
#include "core/sessions.h"
#include "format/toml.h"
#include "util/fsutil.h"
#include "util/plural.h"
#include "util/safefs.h"

#include <stdlib.h>
#include <string.h>

/* A manifest's text in the current layout, or *out NULL when it is
 * already there. The rest is the canonical text tether writes. */
static int migrate_manifest(const char *key, const char *text, size_t len, const char *name, char **out)
{
	*out = NULL;
	struct tt_manifest m;
	int rc = tt_manifest_parse(key, text, len, name, &m);
	if (rc)
		return rc;
	if (m.layout < TT_LAYOUT_CURRENT) {
		tt_manifest_set_layout(&m, TT_LAYOUT_CURRENT);
		if (!(*out = tt_manifest_text(&m)))
			rc = TETHER_ERROR;
	}
	tt_manifest_free(&m);
	return rc;
}

/* Where a `layout` line goes: after the [dataset] header, so that the rest
 * of the file (its comments included) stays as its author wrote it. NULL
 * when there is no such header line. */
static char *insert_layout_line(const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *s = p;
		while (s < eol && (*s == ' ' || *s == '\t'))
			s++;
		const char *h = "[dataset]";
		if ((size_t)(eol - s) >= strlen(h) && strncmp(s, h, strlen(h)) == 0) {
			const char *rest = s + strlen(h);
			while (rest < eol && (*rest == ' ' || *rest == '\t' || *rest == '\r'))
				rest++;
			if (rest == eol || *rest == '#') {
				const char *crlf = nl && nl > p && nl[-1] == '\r' ? "\r\n" : "\n";
				size_t head = nl ? (size_t)(nl + 1 - text) : len;
				return tt_strdupf("%.*s%slayout = %d%s%.*s", (int)head, text, nl ? "" : crlf,
				                  TT_LAYOUT_CURRENT, crlf, (int)(len - head), text + head);
			}
		}
		p = eol + 1;
	}
	return NULL;
}

/* tether.toml's text in the current layout, or *out NULL when it is there.
 * The line is inserted when that reads back as exactly the old config
 * plus the layout; otherwise (a dotted or inline [dataset], an explicit
 * `layout = 0`) the file is written canonically, its comments lost. */
static int migrate_config(const char *text, size_t len, const char *name, char **out)
{
	*out = NULL;
	char err[512];
	json_t *cfg = tt_toml_parse(text, len, name, err, sizeof err);
	if (!cfg)
		return tether_error_set(TETHER_ECONFIG, "%s", err);
	int layout = 0;
	int rc = tt_layout_of_config(cfg, name, &layout);
	if (rc || layout >= TT_LAYOUT_CURRENT) {
		json_decref(cfg);
		return rc;
	}
	json_t *want = json_deep_copy(cfg);
	json_t *dataset = json_object_get(want, "dataset");
	if (!json_is_object(dataset)) {
		json_decref(cfg);
		json_decref(want);
		return tether_error_set(TETHER_ECONFIG, "%s: no [dataset] table", name);
	}
	json_object_set_new(dataset, "layout", json_integer(TT_LAYOUT_CURRENT));
	char *edited = json_object_get(json_object_get(cfg, "dataset"), "layout") ? NULL : insert_layout_line(text, len);
	json_t *back = edited ? tt_toml_parse(edited, strlen(edited), name, err, sizeof err) : NULL;
	if (back && json_equal(back, want)) {
		*out = edited;
	} else {
		free(edited);
		*out = tt_toml_write(want, err, sizeof err);
		if (!*out)
			rc = tether_error_set(TETHER_ERROR, "%s: %s", name, err);
	}
	json_decref(back);
	json_decref(want);
	json_decref(cfg);
	return rc;
}

/* The files a rewrite hands over (paths relative to the dataset root). */
static const char *const DATASET_FILES[] = {"tether.toml", ".tether/objects"};

/* rewrite_files' callback: the history's files by the same functions. */
static int migrate_history_file(void *ud, const char *path, const char *data, size_t len, char **out,
                                size_t *outlen)
{
	(void)ud;
	*out = NULL;
	char *name = tt_strdupf("%s (in history)", path);
	int rc = 0;
	static const char prefix[] = ".tether/objects/";
	size_t pl = strlen(path);
	if (strcmp(path, "tether.toml") == 0) {
		rc = migrate_config(data, len, name, out);
	} else if (strncmp(path, prefix, sizeof prefix - 1) == 0 && pl > sizeof prefix - 1 + 5 &&
	           strcmp(path + pl - 5, ".toml") == 0) {
		char *key = tt_strdupf("%.*s", (int)(pl - (sizeof prefix - 1) - 5), path + sizeof prefix - 1);
		rc = migrate_manifest(key, data, len, name, out);
		free(key);
	}
	if (*out)
		*outlen = strlen(*out);
	free(name);
	return rc;
}

/* The working copy's files of an older layout: [{"path", "from", "to"}]. */
static json_t *working_changes(const struct tether_repo *repo, const struct tt_manifest_set *set)
{
	json_t *files = json_array();
	for (size_t i = 0; i < set->n; i++) {
		if (set->v[i].layout >= TT_LAYOUT_CURRENT)
			continue;
		char *rel = tt_manifest_relpath(set->v[i].key);
		json_array_append_new(files, json_pack("{s:s, s:i, s:i}", "path", rel, "from", set->v[i].layout, "to",
		                                       TT_LAYOUT_CURRENT));
		free(rel);
	}
	if (repo->layout < TT_LAYOUT_CURRENT)
		json_array_append_new(files, json_pack("{s:s, s:i, s:i}", "path", "tether.toml", "from", repo->layout,
		                                       "to", TT_LAYOUT_CURRENT));
	return files;
}

/* The history rewrite's review: a dry run of the VCS's rewrite. */
static int review_history(struct tether_repo *repo, json_t **history)
{
	int rc = tt_repo_vcs(repo);
	if (rc)
		return rc;
	int (*rewrite)(struct tether_vcs *, const char *, const char *const *, size_t, tether_vcs_rewrite_cb, void *,
	               const char *, json_t **) = TT_VCS_GET(repo->vcs, rewrite_files);
	if (!rewrite) {
		tether_error_set(TETHER_EREFUSED,
		                 "upgrade --all-history: tether cannot rewrite the history of a %s repository",
		                 repo->vcs->name);
		tether_error_set_hint("it keeps its own record of every commit, which a rewrite behind its back "
		                      "would contradict; upgrade the working copy (without --all-history) and commit it: "
		                      "older commits stay readable as they are");
		return TETHER_EREFUSED;
	}
	return rewrite(repo->vh, repo->rel, DATASET_FILES, 2, migrate_history_file, repo, NULL, history);
}

/* Refusals of the reviewed rewrite, before anything is written. */
static int check_history(const json_t *history, const struct tether_upgrade_opts *opts)
{
	const json_t *remote = json_object_get(history, "remote");
	size_t n = json_array_size(json_object_get(history, "commits"));
	const char *branch = json_string_value(json_object_get(history, "branch"));
	if (json_array_size(remote) && !opts->force) {
		const json_t *first = json_array_get(remote, 0);
		tether_error_set(TETHER_EREFUSED,
		                 "upgrade --all-history: %zu of the %zu %s to rewrite %s reached by remote-tracking refs "
		                 "(%.12s by %s): they are published",
		                 json_array_size(remote), n, tt_plural((long long)n, "commit", "commits"),
		                 json_array_size(remote) == 1 ? "is" : "are",
		                 json_string_value(json_object_get(first, "id")),
		                 json_string_value(json_object_get(first, "ref")));
		tether_error_set_hint("everyone who has them must then rebase onto the rewritten ones; pass --force "
		                      "to rewrite them anyway");
		return TETHER_EREFUSED;
	}
	if (n && !opts->yes && !opts->dry_run) {
		tether_error_set(TETHER_EREFUSED, "upgrade --all-history rewrites %zu %s of %s: pass --yes to confirm", n,
		                 tt_plural((long long)n, "commit", "commits"), branch ? branch : "the branch");
		tether_error_set_hint("nothing was written; `tether upgrade --all-history --dry-run` lists them");
		return TETHER_EREFUSED;
	}
	return 0;
}

/* Write the working copy's files: manifests first, tether.toml last. */
static int upgrade_working(struct tether_repo *repo, struct tt_manifest_set *set)
{
	int rc = 0;
	int written = 0;
	for (size_t i = 0; !rc && i < set->n; i++) {
		if (set->v[i].layout >= TT_LAYOUT_CURRENT)
			continue;
		rc = tt_manifest_save(repo->root, TT_LAYOUT_CURRENT, &set->v[i]);
		if (!rc && written++ == 0)
			tt_fault_point("upgrade", "manifest-written");
	}
	if (rc || repo->layout >= TT_LAYOUT_CURRENT)
		return rc;
	tt_fault_point("upgrade", "config");
	char *path = tt_path_join(repo->root, "tether.toml");
	char *data = NULL, *text = NULL;
	size_t len;
	rc = tt_safe_read(repo->root, path, &data, &len);
	if (!rc)
		rc = migrate_config(data, len, path, &text);
	if (!rc && text)
		rc = tt_safe_write_atomic(repo->root, path, text, strlen(text));
	if (!rc) {
		repo->layout = TT_LAYOUT_CURRENT;
		json_object_set_new(json_object_get(repo->config, "dataset"), "layout", json_integer(TT_LAYOUT_CURRENT));
	}
	free(text);
	free(data);
	free(path);
	return rc;
}

static int upgrade_command(struct tether_repo *repo, const struct tether_upgrade_opts *opts, json_t **report)
{
	*report = NULL;
	struct tt_lock checkout = {-1}, shared = {-1};
	int rc = tt_repo_check_secrets(repo);
	/* The review and the writes under one hold of the locks, so that
	 * what was reviewed is what is written. */
	if (!rc && !opts->dry_run)
		rc = tt_repo_lock(repo, &checkout, &shared);
	struct tt_manifest_set set = {0};
	if (!rc)
		rc = tt_manifests_load_working(repo->root, &set);
	json_t *history = NULL;
	if (!rc && opts->all_history)
		rc = review_history(repo, &history);
	int from = repo->layout;
	json_t *files = rc ? NULL : working_changes(repo, &set);
	if (!rc)
		*report = json_pack("{s:i, s:i, s:b, s:O, s:O?}", "from", from, "to", TT_LAYOUT_CURRENT, "dry_run",
		                    opts->dry_run, "files", files, "history", history);
	if (!rc && history)
		rc = check_history(history, opts);
	size_t nhist = json_array_size(json_object_get(history, "commits"));
	if (!rc && !opts->dry_run && (json_array_size(files) || nhist)) {
		struct tt_journal journal = {0};
		char *message = tt_strdupf("layout %d -> %d: %zu file%s%s", from, TT_LAYOUT_CURRENT, json_array_size(files),
		                           tt_plural((long long)json_array_size(files), "", "s"),
		                           nhist ? ", and the history" : "");
		json_t *pins = json_array();
		rc = tt_journal_begin(repo, "upgrade", message, pins, &journal);
		json_decref(pins);
		free(message);
		if (!rc)
			rc = upgrade_working(repo, &set);
		json_t *done = NULL;
		if (!rc && nhist) {
			tt_fault_point("upgrade", "history");
			rc = TT_VCS_GET(repo->vcs, rewrite_files)(repo->vh, repo->rel, DATASET_FILES, 2, migrate_history_file,
			                                          repo, json_string_value(json_object_get(history, "head")),
			                                          &done);
			if (!rc)
				json_object_set(*report, "history", done);
		}
		if (journal.entry) {
			int jrc = tt_journal_end(&journal, rc ? "ABORTED" : "COMPLETE",
			                         json_string_value(json_object_get(done, "head")));
			rc = rc ? rc : jrc;
		}
		json_decref(done);
		tt_journal_free(&journal);
		if (rc) { /* a failed write: the error says what happened, not a review */
			json_decref(*report);
			*report = NULL;
		}
	}
	json_decref(files);
	json_decref(history);
	tt_manifest_set_free(&set);
	tt_repo_unlock(repo, &checkout, &shared);
	return rc;
}

int tether_upgrade(tether_repo *repo, const struct tether_upgrade_opts *caller_opts, json_t **report)
{
	TT_COMMAND_RUN(tether_upgrade_opts, TETHER_UPGRADE_OPTS_VERSION, upgrade_command, repo, caller_opts, report);
}
