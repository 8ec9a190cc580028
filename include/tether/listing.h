/* tether listings for backends: the canonical per-file listing, the local
 * scanner that makes it, and the hash cache that keeps the scanner from
 * reading unchanged files, as modules call them.
 *
 * A directory's state is {type, count, size, digest}, where digest is the
 * SHA-256 hex of its listing: one JSON line per file in bytewise path
 * order, {"k":"<sha256 hex>","p":"<path>","s":<size>} (a symlink to a
 * directory, or a dangling one: "k":"symlink:<target>", "s":0), keys
 * sorted, no spaces, names escaped as jansson's compact dump does (a byte
 * that is not part of valid UTF-8 as \uDCXX). A backend whose data is a
 * set of files somewhere else (an object-store prefix, say) builds its
 * listing with the writer below from the entries it enumerates, so that
 * the same files give the same listing, digest and state as the file
 * backend's scan of them, byte for byte, and `tether diff` compares them.
 *
 * Option structs carry version and size (fill them with the *_INIT macro);
 * members are only ever appended. Functions return 0 or a negative
 * TETHER_E* code with the message set (tether_error_last()). */
#ifndef TETHER_LISTING_H
#define TETHER_LISTING_H

#include <tether.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_SCAN_OPTS_VERSION 1
struct tether_scan_opts {
	uint32_t version;             /* TETHER_SCAN_OPTS_INIT */
	uint32_t size;
	int threads;                  /* <= 0: the number of online CPUs */
	const char *cache_dir;        /* the hash cache's directory (a bctx's cache_dir); NULL: none */
	const char *skip_name;        /* a file name left out at the root, or NULL */
	const char *const *skip_dirs; /* relative directories neither listed nor entered, NULL-terminated; or NULL */
};
#define TETHER_SCAN_OPTS_INIT TETHER_STRUCT_INIT(struct tether_scan_opts, TETHER_SCAN_OPTS_VERSION)

/* A listing, summed up: what a directory state is made of. */
struct tether_listing_summary {
	size_t count;        /* files listed */
	uint64_t total_size; /* their bytes */
	char digest[65];     /* SHA-256 hex of the listing */
	char *listing;       /* malloc'd, NUL after the last byte; NULL unless asked for */
	size_t listing_len;
};
TETHER_API void tether_listing_summary_free(struct tether_listing_summary *s);

/* Scan the local tree at root (the file backend's scanner: parallel,
 * through the hash cache, a tree that moves while it is read is walked
 * again and then refused). want_listing: keep the listing's text too. */
TETHER_API int tether_scan_tree(const char *root, const struct tether_scan_opts *opts, int want_listing,
                                struct tether_listing_summary *out);
/* The SHA-256 and size of one local file (symlinks followed), through a
 * one-record cache of its own under opts->cache_dir. */
TETHER_API int tether_scan_file(const char *path, const struct tether_scan_opts *opts, uint64_t *size,
                                unsigned char sha256[32]);

/* ---- the listing writer ---- */

/* One file of a listing. */
struct tether_listing_entry {
	const char *path;          /* relative, '/'-separated, no leading "./"; any bytes but NUL */
	size_t path_len;
	uint64_t size;             /* ignored for a link */
	unsigned char sha256[32];  /* of the content; ignored for a link */
	const char *link_target;   /* a symlink recorded by its target (NUL-terminated), or NULL for a file */
};

struct tether_listing_writer;
/* keep_text: finish hands back the listing's text; otherwise only its
 * digest is kept (memory stays small however many files). NULL only when
 * out of memory. */
TETHER_API struct tether_listing_writer *tether_listing_writer_new(int keep_text);
/* Append one entry. Entries come in strictly increasing bytewise order of
 * path (memcmp, a shorter prefix first), as the listing requires: one out
 * of order, or a duplicate, is TETHER_EUSAGE naming the path. */
TETHER_API int tether_listing_writer_add(struct tether_listing_writer *w, const struct tether_listing_entry *e);
/* Append one object whose content the store names by its own token (an
 * object store's ETag) rather than a SHA-256 tether computed: the line's
 * "k" is the token verbatim (escaped as names are), "s" the size. Same
 * order rule as tether_listing_writer_add. Two listings of one store
 * compare entry by entry (`tether diff --content`); a token is never
 * equal to a local file's hash, so such a listing is not the one a scan
 * of the same bytes would give. */
TETHER_API int tether_listing_writer_add_token(struct tether_listing_writer *w, const char *path, size_t path_len,
                                               uint64_t size, const char *token);
/* The summary of everything added (out->listing when keep_text). The
 * writer must still be freed. */
TETHER_API int tether_listing_writer_finish(struct tether_listing_writer *w, struct tether_listing_summary *out);
TETHER_API void tether_listing_writer_free(struct tether_listing_writer *w);

/* A name as a report shows it: itself when valid UTF-8, else each byte
 * that is not part of valid UTF-8 written \xHH, and then *bytes_hex set to
 * the hex of all its bytes (NULL for a valid name). Both malloc'd; NULL
 * when out of memory. */
TETHER_API char *tether_listing_display_name(const char *name, size_t len, char **bytes_hex);

/* ---- the hash cache ---- */

/* What says a file's bytes are unchanged: all four equal and the hash
 * taken once mtime and ctime were two seconds old. A local file: its
 * stat. Another store: its size, last-modified time (as both mtime_ns and
 * ctime_ns), and a number that changes with the object (its version or a
 * hash of its ETag) as inode. */
struct tether_file_stamp {
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
	uint64_t inode;
};

/* One cache per key (a backend's store root, say) under cache_dir: the
 * scanner's own format and rules. A handle is one thread's. */
struct tether_hashcache;
/* NULL only when out of memory; a missing or corrupt cache file is an
 * empty cache. */
TETHER_API struct tether_hashcache *tether_hashcache_open(const char *cache_dir, const char *key);
/* 1 with sha256 filled when the cache holds path with this stamp (the
 * record is then kept by the next save), else 0. */
TETHER_API int tether_hashcache_lookup(struct tether_hashcache *c, const char *path, size_t path_len,
                                       const struct tether_file_stamp *st, unsigned char sha256[32]);
/* The clock hashes are stamped with (CLOCK_REALTIME, nanoseconds): take
 * it just before reading the bytes. */
TETHER_API int64_t tether_hashcache_now_ns(void);
/* Remember path's hash, taken at hashed_ns, for the next save. */
TETHER_API int tether_hashcache_record(struct tether_hashcache *c, const char *path, size_t path_len,
                                       const struct tether_file_stamp *st, int64_t hashed_ns,
                                       const unsigned char sha256[32]);
/* Replace the cache file, atomically, by the records looked up (and found)
 * or recorded since open. */
TETHER_API int tether_hashcache_save(struct tether_hashcache *c);
TETHER_API void tether_hashcache_close(struct tether_hashcache *c);

#ifdef __cplusplus
}
#endif

#endif
