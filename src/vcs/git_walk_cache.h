/* The history walk's cache: what history_files read from the object
 * database, kept between runs in one file.
 *
 * Everything in it is keyed by an object id, and what an id names never
 * changes, so the cache needs no invalidation: a commit's tree at the
 * walked directory, and the raw trees and blobs under that directory. A
 * walk that finds what it needs here reads nothing from git; one that does
 * not reads git and adds what it read. The answers are the ones git gives,
 * byte for byte.
 *
 * The file holds one directory's entries (a file made for another is
 * ignored) and ends in the SHA-256 of everything before it: a torn or
 * damaged file is ignored too, and replaced at the next save. The caller
 * keeps it where a clone cannot put one (the repository's shared
 * directory, beside the journal), since gc acts on what the walk reads.
 * Internal to the VCS modules. */
#ifndef TETHER_VCS_GIT_WALK_CACHE_H
#define TETHER_VCS_GIT_WALK_CACHE_H

#include "vcs/gitodb.h"

#include <stddef.h>

struct walk_cache;

/* The cache at `path` for directory `dir`: empty when the file is missing,
 * damaged or made for another directory. NULL only when out of memory. */
struct walk_cache *wc_load(const char *path, const char *dir);
void wc_free(struct walk_cache *c);

/* A commit's tree at the directory: 1 and *tree (zero when the commit has
 * no such directory) when known, else 0. */
int wc_commit_dir(const struct walk_cache *c, const unsigned char commit[20], unsigned char tree[20]);
void wc_put_commit_dir(struct walk_cache *c, const unsigned char commit[20], const unsigned char tree[20]);

/* A raw object (a tree or blob under the directory): its bytes and type
 * when known, else NULL. The bytes live as long as the cache. */
const unsigned char *wc_object(const struct walk_cache *c, const unsigned char id[20], enum tt_gobj_type *type,
                               size_t *size);
/* Keep a raw tree or blob (a copy; very large ones are not kept). */
void wc_put_object(struct walk_cache *c, const unsigned char id[20], enum tt_gobj_type type,
                   const unsigned char *data, size_t size);

/* Write the cache back, atomically, when anything was added since it was
 * loaded. A cache that cannot be written is not an error: the next walk
 * reads git again. */
void wc_save(struct walk_cache *c);

#endif
