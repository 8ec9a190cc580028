/* Changes to the dataset's committed files other than the manifests, which
 * the next commit records: tether.toml, .tether/.gitignore and the
 * listings under .tether/listings/ (gc removes unreferenced ones from the
 * working tree; the removal is recorded by the next commit). status shows
 * them and commit reports them, so neither says "unchanged" about a
 * commit that changes something.
 *
 * HEAD's side ({dataset-relative path: sha256 hex}) is cached under
 * .tether/cache/ by commit id, as HEAD's manifests are (headview.c), so
 * status loads the VCS only once per HEAD. Listings are compared by name:
 * they are content-addressed, and verify checks their bytes. */
#include "core/engine.h"

#include "util/jsonsort.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "vcs/probe.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static const char *const single_files[] = {"tether.toml", ".tether/.gitignore"};
#define N_SINGLE (sizeof single_files / sizeof single_files[0])
#define LISTINGS ".tether/listings"

static json_t *sha_of(const char *data, size_t len)
{
	unsigned char d[32];
	char hex[65];
	tt_sha256(data, len, d);
	tt_hex(d, sizeof d, hex);
	return json_string(hex);
}

static int on_head_listing(void *ud, const char *path, const char *data, size_t len)
{
	char *rel = tt_strdupf(LISTINGS "/%s", path);
	json_object_set_new(ud, rel, sha_of(data, len));
	free(rel);
	return 0;
}

static int head_files_read(struct tether_repo *repo, const char *id, json_t *files)
{
	for (size_t i = 0; i < N_SINGLE; i++) {
		char *vpath = tt_repo_vcs_path(repo, single_files[i]), *data = NULL;
		size_t len = 0;
		int rc = repo->vcs->read_file(repo->vh, id, vpath, &data, &len);
		free(vpath);
		if (rc == TETHER_ENOTFOUND) {
			tether_error_clear();
			continue;
		}
		if (rc)
			return rc;
		json_object_set_new(files, single_files[i], sha_of(data, len));
		free(data);
	}
	char *dir = tt_repo_vcs_path(repo, LISTINGS);
	int rc = repo->vcs->read_tree(repo->vh, id, dir, on_head_listing, files);
	free(dir);
	return rc;
}

static char *cache_path(const struct tether_repo *repo)
{
	return tt_path_join(repo->cache_dir, "head-files.json");
}

static void cache_save(const struct tether_repo *repo, const char *id, json_t *files)
{
	json_t *doc = json_pack("{s:s, s:O}", "commit", id, "files", files);
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	char *path = cache_path(repo);
	/* Only a cache: failing to write it costs the next status some time. */
	if (text && tt_write_file_atomic(path, text, strlen(text)) != 0)
		tether_error_clear();
	free(path);
	free(text);
	json_decref(doc);
}

static json_t *cached(const struct tether_repo *repo, const char *id)
{
	char *path = cache_path(repo);
	json_t *doc = json_load_file(path, 0, NULL);
	free(path);
	const char *commit = json_string_value(json_object_get(doc, "commit"));
	json_t *files = json_object_get(doc, "files");
	json_t *out = commit && strcmp(commit, id) == 0 && json_is_object(files) ? json_incref(files) : NULL;
	json_decref(doc);
	return out;
}

void tt_head_files_save(struct tether_repo *repo, const char *id)
{
	json_t *files = json_object();
	if (head_files_read(repo, id, files) == 0)
		cache_save(repo, id, files);
	else
		tether_error_clear(); /* only the cache is lost */
	json_decref(files);
}

/* HEAD's files, from the cache when it is for HEAD's commit; NULL when
 * there is no commit yet. */
static int head_files(struct tether_repo *repo, json_t **files)
{
	*files = NULL;
	char id[41];
	int rc = tt_vcs_probe_head(repo->root, id);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0; /* no commit yet: *files stays NULL */
	}
	if (rc == 0 && (*files = cached(repo, id)))
		return 0;
	tether_error_clear();
	rc = tt_repo_resolve(repo, "HEAD", id);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0;
	}
	json_t *got = json_object();
	if (!rc)
		rc = head_files_read(repo, id, got);
	if (rc) {
		json_decref(got);
		return rc;
	}
	cache_save(repo, id, got);
	*files = got;
	return 0;
}

static void add_change(json_t *changes, const char *path, const char *change)
{
	json_array_append_new(changes, json_pack("{s:s, s:s}", "path", path, "change", change));
}

static int by_path(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "path")),
	              json_string_value(json_object_get(*(json_t *const *)b, "path")));
}

static void sort_changes(json_t *changes)
{
	tt_json_array_sort(changes, by_path);
}

int tt_pending_files(struct tether_repo *repo, json_t **changes)
{
	*changes = NULL;
	json_t *head;
	int rc = head_files(repo, &head);
	if (rc)
		return rc;
	json_t *out = json_array();
	if (!head) {
		/* No commit yet: the first one records the whole dataset. */
		*changes = out;
		return 0;
	}
	for (size_t i = 0; i < N_SINGLE; i++) {
		char *path = tt_path_join(repo->root, single_files[i]), *data = NULL;
		size_t len = 0;
		const char *was = json_string_value(json_object_get(head, single_files[i]));
		if (tt_read_file(path, &data, &len) == 0) {
			json_t *now = sha_of(data, len);
			if (!was)
				add_change(out, single_files[i], "added");
			else if (strcmp(was, json_string_value(now)) != 0)
				add_change(out, single_files[i], "changed");
			json_decref(now);
			free(data);
		} else {
			tether_error_clear();
			if (was)
				add_change(out, single_files[i], "removed");
		}
		free(path);
	}
	json_t *working = json_object();
	char *dir = tt_path_join(repo->root, LISTINGS);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *rel = tt_strdupf(LISTINGS "/%s", e->d_name);
		json_object_set_new(working, rel, json_true());
		if (!json_object_get(head, rel))
			add_change(out, rel, "added");
		free(rel);
	}
	if (d)
		closedir(d);
	free(dir);
	const char *rel;
	json_t *v;
	json_object_foreach(head, rel, v)
		if (strncmp(rel, LISTINGS "/", sizeof LISTINGS) == 0 && !json_object_get(working, rel))
			add_change(out, rel, "removed");
	json_decref(working);
	json_decref(head);
	sort_changes(out);
	*changes = out;
	return 0;
}
