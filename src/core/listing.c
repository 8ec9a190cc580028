/* Listings: the per-file contents of a directory state, stored
 * content-addressed so that `diff --content` can compare two commits. */
#include "core/engine.h"

#include "util/fsutil.h"
#include "util/safefs.h"

#include <stdlib.h>
#include <string.h>

static char *listing_relpath(const char *hex)
{
	return tt_strdupf(".tether/listings/%s.jsonl", hex);
}

int tt_listing_save(struct tether_repo *repo, const char *text, size_t len, char hex[65], char **created)
{
	if (created)
		*created = NULL;
	tether_sha256_hex(text, len, hex);
	char *rel = listing_relpath(hex);
	char *path = tt_path_join(repo->root, rel);
	int existed = tt_safe_exists(repo->root, path);
	int rc = existed < 0 ? existed : existed ? 0 : tt_safe_write_atomic(repo->root, path, text, len);
	/* The caller removes what it created if its commit does not land. */
	if (created && !rc && !existed)
		*created = path;
	else
		free(path);
	free(rel);
	return rc;
}

static int check_hash(const char *where, const char *hex, const char *text, size_t len)
{
	char got[65];
	tether_sha256_hex(text, len, got);
	if (strcmp(got, hex) != 0)
		return tether_error_set(TETHER_ECONFIG, "%s: listing is corrupt (its content hashes to %.12s…)", where, got);
	return 0;
}

int tt_listing_load(struct tether_repo *repo, const char *id, const char *hex, char **text, size_t *len)
{
	char *rel = listing_relpath(hex);
	int rc;
	char *where;
	if (!*id) {
		where = tt_path_join(repo->root, rel);
		rc = tt_safe_read(repo->root, where, text, len);
	} else {
		rc = tt_repo_vcs(repo);
		where = rc ? strdup(rel) : tt_repo_vcs_path(repo, rel);
		if (!rc)
			rc = repo->vcs->read_file(repo->vh, id, where, text, len);
	}
	if (!rc) {
		rc = check_hash(where, hex, *text, *len);
		if (rc) {
			free(*text);
			*text = NULL;
		}
	}
	free(rel);
	free(where);
	return rc;
}

int tt_listing_check(struct tether_repo *repo, const char *hex, char **why)
{
	char *text;
	size_t len;
	*why = NULL;
	int rc = tt_listing_load(repo, "", hex, &text, &len);
	if (rc == TETHER_ENOTFOUND || rc == TETHER_ECONFIG) {
		*why = strdup(tether_error_last());
		return 0;
	}
	if (!rc)
		free(text);
	return rc;
}
