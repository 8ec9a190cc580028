/* A checkpoint's protocol and metaData, kept in the checkout's cache
 * (.tether/cache/delta/, never committed), so that a status of a table whose
 * early commits log cleanup removed reads the checkpoint once, not on every
 * fingerprint: a checkpoint of a million files is hundreds of MiB of
 * Parquet. An entry is named by the table's URI, the checkpoint's key and
 * its version token (an ETag; locally device, inode, mtime and size), so a
 * checkpoint rewritten under the same name is read again. What is cached
 * passes the protocol gate again when used. */
#include "backends/delta/delta.h"

#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

#define DL_CACHE_MAX ((size_t)16 << 20)

/* The cache file of a checkpoint, or NULL (no cache, or the store cannot
 * say the checkpoint's version). */
static char *entry_path(struct dl_log *log, const struct dl_checkpoint *cp)
{
	if (!log->cache_dir)
		return NULL;
	struct tether_store_version version;
	int exists = 0;
	if (tether_store_head(log->store, cp->key, &exists, &version, NULL) != 0 || !exists || !*version.token) {
		tether_error_clear();
		return NULL;
	}
	char *name = tt_strdupf("%s\n%s\n%u\n%s", log->uri, cp->key, (unsigned)cp->parts, version.token);
	char hex[65];
	tether_sha256_hex(name, strlen(name), hex);
	free(name);
	return tt_strdupf("%s/delta/%s.json", log->cache_dir, hex);
}

int dl_cache_get(struct dl_log *log, const struct dl_checkpoint *cp, json_t **protocol, json_t **metadata,
                 char **path)
{
	*protocol = *metadata = NULL;
	*path = entry_path(log, cp);
	char *text = *path ? tt_read_small(*path, DL_CACHE_MAX) : NULL;
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	json_t *p = json_object_get(doc, "protocol"), *m = json_object_get(doc, "metaData");
	int hit = json_is_object(p) && json_is_object(m);
	if (hit) {
		*protocol = json_incref(p);
		*metadata = json_incref(m);
	}
	json_decref(doc);
	return hit;
}

void dl_cache_put(const char *path, const json_t *protocol, const json_t *metadata)
{
	if (!path || !protocol || !metadata)
		return;
	json_t *doc = json_pack("{s:O, s:O}", "protocol", protocol, "metaData", metadata);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	/* A cache: a write that fails leaves the next fingerprint to read the
	 * checkpoint again. */
	if (text && tt_write_cache_file(path, text, strlen(text)) != 0)
		tether_error_clear();
	free(text);
	json_decref(doc);
}
