/* tether byte stores: where a backend keeps the bytes of a format it
 * writes itself (an Icechunk repository, later a Lance dataset), on the
 * local filesystem or in an object store. SQLite's VFS is the model: one
 * small interface, registered by name, that every backend goes through,
 * so an object store plugs in beneath the backends without changing them.
 *
 * A store is named by a URI: an absolute local path or file://PATH (built
 * in), or SCHEME://BUCKET/PREFIX for anything else. A scheme that is not
 * registered is loaded on first use from the module path as
 * tether-store-<scheme>.so, which exports `tether_store_module` (a
 * NULL-terminated array of store ops), so a command on local files never
 * loads an object store's libraries (libcurl).
 *
 * Keys are '/'-separated paths relative to the store's root ("repo",
 * "refs/branch.main/ref.json"); a key that could leave the root (empty
 * segments, ".", "..", a backslash, a leading or trailing '/') is refused
 * here, once, for every implementation. Every object has a version token
 * (an ETag; on the local filesystem device, inode, modification time and
 * size). A conditional write names the version it read.
 *
 * Errors are the TETHER_E* codes of tether.h, with the message set:
 *   TETHER_ENOTFOUND    the object (or the root) does not exist      exit 1
 *   TETHER_EREFUSED     a precondition failed: put if-absent found an
 *                       object, if-match found another version, copy's
 *                       target exists, remove_root found objects      exit 3
 *   TETHER_EAUTH        the store refused the credentials             exit 1
 *   TETHER_ETRANSIENT   a failure worth retrying (timeout, throttling,
 *                       a connection lost): the operation may or may
 *                       not have taken effect                         exit 1
 *   TETHER_EUSAGE       invalid: a bad key, URI or option             exit 2
 *   TETHER_EIO          any other failure of the store                exit 1
 *
 * Every struct an implementation fills starts with `uint32_t version;
 * uint32_t size;` (TETHER_STORE_OPS_INIT sets both): the engine reads a member only
 * when it lies inside `size`, so an implementation built against an older
 * header keeps working. Members are only ever appended. */
#ifndef TETHER_STORE_H
#define TETHER_STORE_H

#include <tether.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_STORE_OPS_VERSION 2

#define TETHER_STORE_VERSION_MAX 128

/* An object's version token; "" for an object that does not exist. */
struct tether_store_version {
	char token[TETHER_STORE_VERSION_MAX];
};

enum tether_put_mode {
	TETHER_PUT_OVERWRITE, /* whatever is there */
	TETHER_PUT_IF_ABSENT, /* only if nothing is there */
	TETHER_PUT_IF_MATCH,  /* only if the object is still at `expect` */
};

/* get's length for "to the end of the object". */
#define TETHER_STORE_TO_END UINT64_MAX

/* Flags of struct tether_store_ops. */
/* Conditional writes compare and write in one request (object stores).
 * Without it (the local filesystem) they compare and then rename under a
 * lock that orders tether processes, but not other writers. */
#define TETHER_STORE_ATOMIC_CAS (1u << 0)

/* The store keeps versions of an object, named by version ids: a stat
 * gives the id of the version it saw, and an object can be read (stat,
 * get) at an id it once had. The bucket may still have versioning off;
 * its objects then have no id ("" in version_id). */
#define TETHER_STORE_VERSION_IDS (1u << 1)

/* A version id as long as any store tether knows writes (S3: up to 1,024
 * bytes; GCS: a decimal generation; Azure: a timestamp). */
#define TETHER_STORE_VERSION_ID_MAX 1024

/* What the store says of one object (stat, list_stat, list_versions). */
struct tether_store_stat {
	int exists;                           /* 0: absent (or, in list_versions, a delete marker) */
	uint64_t size;                        /* bytes */
	struct tether_store_version version;  /* the version token (ETag) */
	char version_id[TETHER_STORE_VERSION_ID_MAX]; /* "" when the store keeps none for it */
	int is_latest;                        /* list_versions: this version is the current one */
};

/* list's callback: one key; non-zero stops the listing with that error. */
typedef int (*tether_store_key_fn)(void *ud, const char *key);
/* list_stat's and list_versions' callback: one key with what the listing
 * said of it; non-zero stops the listing with that error. */
typedef int (*tether_store_stat_fn)(void *ud, const char *key, const struct tether_store_stat *st);

/* What an implementation provides. `impl` is what its open returned.
 * The engine has checked every key and argument before a call, and the
 * URI it opens is canonical (tether_store_canonical). */
struct tether_store_ops {
	uint32_t version;   /* TETHER_STORE_OPS_INIT */
	uint32_t size;
	const char *scheme; /* "file", "s3", ... (lowercase) */
	unsigned flags;     /* TETHER_STORE_* */

	/* Open the store at uri with its options (the object's secrets: keys,
	 * endpoint, region; NULL: none). Nothing is created: a root that does
	 * not exist yet is fine (make_root makes it). */
	int (*open)(const char *uri, const json_t *options, void **impl);
	void (*close)(void *impl);
	/* Bytes [offset, offset+length) of the object, fewer at its end
	 * (length TETHER_STORE_TO_END: to the end); an offset past the end
	 * gives none. *data is malloc'd (never NULL on success); version may
	 * be NULL. TETHER_ENOTFOUND when absent. */
	int (*get)(void *impl, const char *key, uint64_t offset, uint64_t length, uint8_t **data,
	           size_t *len, struct tether_store_version *version);
	/* *exists = 0 when absent (not an error); version and size may be NULL. */
	int (*head)(void *impl, const char *key, int *exists, struct tether_store_version *version,
	            uint64_t *size);
	/* Write the whole object; parent "directories" need not exist; a write
	 * is never seen half-done. new_version (may be NULL) is what was
	 * written. */
	int (*put)(void *impl, const char *key, const void *data, size_t len, enum tether_put_mode mode,
	           const struct tether_store_version *expect, struct tether_store_version *new_version);
	/* Copy to a key that must not exist yet; with if_match, only while the
	 * source is at that version. */
	int (*copy)(void *impl, const char *from, const char *to,
	            const struct tether_store_version *if_match);
	/* Remove an object; one already gone is not an error. */
	int (*del)(void *impl, const char *key);
	/* One page of keys under prefix ("" = all), in byte order, each after
	 * start_after ("" = from the first), at most max_keys of them (> 0):
	 * emit(ud, key) for each, and *more = 1 when keys remain after the
	 * last one emitted. Staging files of writes in progress are never
	 * keys. */
	int (*list)(void *impl, const char *prefix, const char *start_after, size_t max_keys,
	            tether_store_key_fn emit, void *ud, int *more);
	/* Is there anything at the root: locally the path itself (an empty
	 * directory counts), on an object store any key under the prefix. */
	int (*root_exists)(void *impl, int *exists);
	/* Make the root exist (mkdir -p locally; nothing on an object store). */
	int (*make_root)(void *impl);
	/* Remove the root once it holds no object; TETHER_EREFUSED while any
	 * object is left. */
	int (*remove_root)(void *impl);

	/* Version 2, all optional. */
	/* What the store says of key, at version_id when it is neither NULL
	 * nor "" (TETHER_STORE_VERSION_IDS). st->exists = 0 when absent (not
	 * an error); an id the object never had is TETHER_ENOTFOUND. Without
	 * it the engine uses head (and refuses a version id). */
	int (*stat)(void *impl, const char *key, const char *version_id, struct tether_store_stat *st);
	/* get of one version (version_id NULL or "": the current one); st
	 * (may be NULL) is what was read. Without it the engine uses get (and
	 * refuses a version id). */
	int (*get_version)(void *impl, const char *key, const char *version_id, uint64_t offset,
	                   uint64_t length, uint8_t **data, size_t *len, struct tether_store_stat *st);
	/* list, with each key's size and version token as one request lists
	 * them (an object store's LIST carries both), so a prefix is
	 * described without a request per key. Same paging contract as list.
	 * Without it the engine lists and then stats each key. */
	int (*list_stat)(void *impl, const char *prefix, const char *start_after, size_t max_keys,
	                 tether_store_stat_fn emit, void *ud, int *more);
	/* Every version of key the store keeps, newest first (delete markers
	 * with exists = 0). Only with TETHER_STORE_VERSION_IDS. */
	int (*list_versions)(void *impl, const char *key, tether_store_stat_fn emit, void *ud);
	/* The flags of this open store, where its options change them (an S3
	 * store with conditional_put = "disabled" makes no atomic conditional
	 * writes); NULL: `flags` for every store of the scheme. */
	unsigned (*flags_of)(void *impl);
};

/* { TETHER_STORE_OPS_INIT, .scheme = "s3", ... }, as every plug-in struct
 * begins (docs/BACKENDS.md, "Versions and sizes"). */
#define TETHER_STORE_OPS_INIT TETHER_STRUCT_INIT(struct tether_store_ops, TETHER_STORE_OPS_VERSION)

/* A store module exports this symbol. */
typedef const struct tether_store_ops *const tether_store_module_t[];

/* Register a store for its scheme. Refuses a duplicate scheme, a newer
 * version than this tether knows, or ops without the required members. */
TETHER_API int tether_store_register(const struct tether_store_ops *ops);
/* The store for a scheme, loading tether-store-<scheme>.so on first use;
 * NULL (TETHER_EUSAGE set) when there is none. */
TETHER_API const struct tether_store_ops *tether_store_find(const char *scheme);

/* The canonical form of a store URI as tether records it, malloc'd in
 * *out. A local path (no "scheme://"): made absolute against cwd (NULL:
 * it must be absolute already), "~" expanded, file:// folded, ".", "..",
 * doubled and trailing slashes gone, and, with cwd, the symlinks of the
 * part that exists resolved (tether_path_resolve); the result is a plain
 * absolute path. Any other scheme: the scheme and host lowercased, the
 * path's doubled and trailing slashes gone; credentials (user@ or
 * user:pass@), a query or fragment, "." or ".." segments, backslashes and
 * control characters are refused (TETHER_EUSAGE, the message says why).
 * The scheme's store is not looked up. */
TETHER_API int tether_store_canonical(const char *uri, const char *cwd, char **out);
/* The rule for a URI read from a committed locator (a clone is untrusted
 * input): it must be exactly what tether_store_canonical would record
 * (so no "..", no credentials, no relative path, no file://), and its
 * scheme must be one tether has a store for. TETHER_EREFUSED with a
 * message naming the URI otherwise. */
TETHER_API int tether_store_check_committed(const char *uri);

/* Store options, the JSON object a store's open is handed (docs/BACKENDS.md
 * "Store options"): keys lowercase snake_case, each of one type. The
 * names, NULL-terminated; a backend whose objects' secrets are store
 * options declares them as its secret_keys. */
TETHER_API extern const char *const tether_store_option_names[];
/* The rule for storage_options read from a committed file (tether.toml, a
 * manifest's locator: a clone is untrusted): only region, allow_http,
 * virtual_hosted_style_request and conditional_put, each of its type.
 * `where` names the file (and table) for the message. NULL opts: none, 0.
 * TETHER_EREFUSED naming a key that belongs in .tether/secrets.toml;
 * TETHER_ECONFIG naming an unknown key or a value of the wrong type. */
TETHER_API int tether_store_check_committed_options(const json_t *opts, const char *where);

typedef struct tether_store tether_store;

/* Open the store at uri (canonicalised first). options: see ops.open. */
TETHER_API int tether_store_open(const char *uri, const json_t *options, tether_store **out);
TETHER_API void tether_store_close(tether_store *s);
/* The root, canonical (for messages). */
TETHER_API const char *tether_store_uri(const tether_store *s);
/* The implementation's TETHER_STORE_* flags. */
TETHER_API unsigned tether_store_flags(const tether_store *s);

/* The whole object. */
TETHER_API int tether_store_get(tether_store *s, const char *key, uint8_t **data, size_t *len,
                                struct tether_store_version *version);
/* A byte range (see ops.get). */
TETHER_API int tether_store_get_range(tether_store *s, const char *key, uint64_t offset, uint64_t length,
                                      uint8_t **data, size_t *len, struct tether_store_version *version);
TETHER_API int tether_store_head(tether_store *s, const char *key, int *exists,
                                 struct tether_store_version *version, uint64_t *size);
/* TETHER_PUT_IF_MATCH needs expect (a non-empty token). */
TETHER_API int tether_store_put(tether_store *s, const char *key, const void *data, size_t len,
                                enum tether_put_mode mode, const struct tether_store_version *expect,
                                struct tether_store_version *new_version);
TETHER_API int tether_store_copy(tether_store *s, const char *from, const char *to,
                                 const struct tether_store_version *if_match);
TETHER_API int tether_store_delete(tether_store *s, const char *key);
TETHER_API int tether_store_root_exists(tether_store *s, int *exists);
TETHER_API int tether_store_make_root(tether_store *s);
TETHER_API int tether_store_remove_root(tether_store *s);

/* What the store says of key (version_id NULL or "": now). A store
 * without version ids refuses a version id (TETHER_EUSAGE). */
TETHER_API int tether_store_stat(tether_store *s, const char *key, const char *version_id,
                                 struct tether_store_stat *st);
/* The whole object as it was at version_id (NULL or "": now). */
TETHER_API int tether_store_get_version(tether_store *s, const char *key, const char *version_id,
                                        uint8_t **data, size_t *len, struct tether_store_stat *st);
/* Every version of key, newest first; TETHER_EUSAGE on a store without
 * version ids. */
TETHER_API int tether_store_list_versions(tether_store *s, const char *key, tether_store_stat_fn emit, void *ud);

/* Listing, a page at a time: the keys under prefix ("" = all), in byte
 * order, after start_after (NULL or "": from the first). page_size keys
 * are fetched per request (0: the default, 1000). next sets *key (valid
 * until the next call) or NULL at the end. */
typedef struct tether_store_iter tether_store_iter;
TETHER_API int tether_store_list(tether_store *s, const char *prefix, const char *start_after,
                                 size_t page_size, tether_store_iter **out);
TETHER_API int tether_store_next(tether_store_iter *it, const char **key);
/* next, with what the listing said of the key (*st valid until the next
 * call): one LIST request per page where the store has list_stat, else a
 * stat per key. A listing is read through next or next_stat, not both. */
TETHER_API int tether_store_next_stat(tether_store_iter *it, const char **key,
                                      const struct tether_store_stat **st);
TETHER_API void tether_store_iter_free(tether_store_iter *it);

/* A name ending in '#' and digits: the staging file of a write in progress
 * (Icechunk's local storage names them so, and so does tether's), never
 * listed and never a key. */
TETHER_API int tether_store_is_staging_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif
