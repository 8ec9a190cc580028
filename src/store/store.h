/* Byte stores: the one layer that touches the bytes of a store a backend
 * keeps in its own format (an Icechunk repository, later a Lance dataset),
 * whether on the local filesystem or, later, in an object store. Backends
 * above it never open a file themselves, so an object-store implementation
 * plugs in beneath them without changing them.
 *
 * Keys are '/'-separated paths relative to the store's root ("repo",
 * "refs/branch.main/ref.json"). Every object has a version token: the
 * object store's ETag, or on the local filesystem its device, inode,
 * modification time and size. A conditional write names the version it
 * read; a write whose condition fails is TETHER_EREFUSED, and the caller
 * re-reads and tries again.
 *
 * What "conditional" means depends on the store (tt_store_atomic_cas):
 * object stores compare and write in one request; the local filesystem
 * compares, then renames, under an advisory lock that orders tether
 * processes but not other writers (Icechunk's own local storage does not
 * compare at all). */
#ifndef TETHER_STORE_STORE_H
#define TETHER_STORE_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct tt_store;

#define TT_VERSION_MAX 128

struct tt_version {
	char token[TT_VERSION_MAX]; /* "" for an object that does not exist */
};

enum tt_put_mode {
	TT_PUT_OVERWRITE,  /* whatever is there */
	TT_PUT_IF_ABSENT,  /* only if nothing is there */
	TT_PUT_IF_MATCH,   /* only if the object is still at `expect` */
};

/* Open the store rooted at uri: an absolute local path (or file://...).
 * `options` are the store's settings from secrets (NULL: none). Nothing is
 * created; a root that does not exist yet is fine (create_store makes it).
 * TETHER_EUSAGE for a scheme this build has no store for. */
int tt_store_open(const char *uri, const json_t *options, struct tt_store **out);
void tt_store_close(struct tt_store *s);
/* The root, as given (for messages). */
const char *tt_store_uri(const struct tt_store *s);
/* 1 when conditional writes compare and write atomically. */
int tt_store_atomic_cas(const struct tt_store *s);

/* The whole object. TETHER_ENOTFOUND (message names the key) when absent.
 * *data is malloc'd; version may be NULL. */
int tt_store_get(struct tt_store *s, const char *key, uint8_t **data, size_t *len,
                 struct tt_version *version);
/* Does it exist, at which version and size. *exists = 0 when absent
 * (not an error). version and size may be NULL. */
int tt_store_head(struct tt_store *s, const char *key, int *exists, struct tt_version *version,
                  uint64_t *size);
/* Write the whole object. The parent "directories" need not exist. A write
 * is never seen half-done. new_version (may be NULL) is what was written. */
int tt_store_put(struct tt_store *s, const char *key, const void *data, size_t len,
                 enum tt_put_mode mode, const struct tt_version *expect,
                 struct tt_version *new_version);
/* Copy an object to a key that must not exist yet; with if_match, only
 * while the source is at that version (else TETHER_EREFUSED). */
int tt_store_copy(struct tt_store *s, const char *from, const char *to,
                  const struct tt_version *if_match);
/* Remove an object; one that is already gone is not an error. */
int tt_store_delete(struct tt_store *s, const char *key);
/* Every key under prefix ("" = the whole store), sorted, as a JSON array
 * of strings relative to the root; at most max_keys (0 = all). Staging
 * files of writes in progress are not listed. */
int tt_store_list(struct tt_store *s, const char *prefix, size_t max_keys, json_t **keys);
/* Is there anything at the root at all: locally the path itself (an
 * empty directory counts), on an object store any key under the prefix. */
int tt_store_root_exists(struct tt_store *s, int *exists);
/* Make the root exist (mkdir -p locally; nothing on an object store). */
int tt_store_make_root(struct tt_store *s);
/* Remove the root once it holds no object: locally, the empty directories
 * under it and then the root itself. Refuses (TETHER_EREFUSED) while any
 * object, or anything that is not a directory, is left. */
int tt_store_remove_root(struct tt_store *s);

#endif
