/* The local scanner: a parallel directory walk with SHA-256 of every file,
 * reading only files whose stat changed since a cached hash.
 *
 * Hash cache: one binary file per scanned root under the cache directory,
 * keyed by relative path and validated by (size, mtime_ns, ctime_ns, inode).
 * A file whose mtime or ctime lies within two seconds of the moment it was
 * hashed is hashed again next time (it may still have been changing).
 *
 * A file is read through tt_filehash_at (filehash.h): a file written while
 * it is read is read again, and one written during every read refuses the
 * scan (TETHER_EREFUSED, naming it), so no hash is of a state the file
 * never had. Likewise the tree: a directory whose stat moved between the
 * walk opening it and the end of the walk (an entry added, removed or
 * renamed) makes tt_scan_tree walk again, up to TT_FILEHASH_ATTEMPTS walks,
 * and then refuse (TETHER_EREFUSED, naming the root). */
#ifndef TETHER_CORE_SCAN_H
#define TETHER_CORE_SCAN_H

#include <tether.h>

#include <stddef.h>
#include <stdint.h>

enum tt_scan_kind {
	TT_SCAN_FILE = 'f',    /* regular file, or a symlink to one (read through) */
	TT_SCAN_LINK = 'l',    /* symlink to a directory, or dangling: recorded by target */
	/* Listing writers only (never a scan): an object listed elsewhere
	 * whose token is the store's own (an object store's ETag), written
	 * as "k" verbatim, with its size. */
	TT_SCAN_TOKEN = 't',
};

struct tt_scan_entry {
	char *path;            /* relative to the root, '/'-separated, no leading "./" */
	uint64_t size;         /* bytes; 0 for TT_SCAN_LINK */
	unsigned char sha256[32]; /* of the content; of the target string for TT_SCAN_LINK */
	char kind;             /* enum tt_scan_kind */
	char *link_target;     /* TT_SCAN_LINK only, else NULL */
};

struct tt_scan_result {
	struct tt_scan_entry *entries; /* sorted by path, bytewise (strcmp) */
	size_t count;
	uint64_t total_size;
	uint64_t files_hashed;   /* how many files were read (cache misses) */
	uint64_t bytes_hashed;
};

struct tt_scan_opts {
	int threads;              /* <= 0: number of online CPUs */
	int progress;             /* report progress to progress_fn when the scan passes 1 s */
	tether_progress_fn progress_fn; /* NULL: no progress */
	void *progress_ud;
	const char *cache_dir;    /* NULL: no hash cache */
	const char *skip_name;    /* a file name skipped at the root (".tether-owner"), or NULL */
	const char *const *skip_dirs; /* NULL-terminated relative dirs neither listed nor descended into (e.g. ".git"), or NULL */
};

/* Scan a directory tree. Returns 0, or a negative TETHER_E* code with the
 * message set through tether_error_set() (naming the path that failed). */
int tt_scan_tree(const char *root, const struct tt_scan_opts *opts, struct tt_scan_result *out);

/* A walk's listing, summed up: what a directory object's state is made
 * of. The listing (tt_scan_listing's format and bytes) is kept only when
 * asked for; either way it is never built as entries first. */
struct tt_scan_summary {
	size_t count;
	uint64_t total_size;
	char digest[65];         /* SHA-256 hex of the listing */
	char *listing;           /* malloc'd, NUL after the last byte; NULL unless asked for */
	size_t listing_len;
	uint64_t files_hashed;
	uint64_t bytes_hashed;
};

/* The same walk as tt_scan_tree, the digest streamed as the lines are
 * written: memory is the walk's 80 bytes per entry plus the names, not the
 * listing's 100. want_listing: also keep the listing's text (a commit
 * stores it). */
int tt_scan_tree_summary(const char *root, const struct tt_scan_opts *opts, int want_listing,
                         struct tt_scan_summary *out);
void tt_scan_summary_free(struct tt_scan_summary *s);

/* Hash one regular file (symlinks followed), through the same kind of
 * cache: a one-record cache file of its own under opts->cache_dir, keyed
 * by the file's real path, never a tree's. */
int tt_scan_file(const char *path, const struct tt_scan_opts *opts, uint64_t *size,
                 unsigned char sha256[32]);

void tt_scan_result_free(struct tt_scan_result *r);

/* The listing of a scan as JSONL, one line per entry in path order:
 *   {"k":"<sha256 hex>","p":"<path>","s":<size>}
 * and for TT_SCAN_LINK entries k is "symlink:<target>" and s is 0.
 * Keys sorted, no spaces, JSON string escaping as jansson's compact dump
 * does it for every name that is valid UTF-8 (UTF-8 emitted as-is;
 * control bytes as \b \f \n \r \t or \u00XX), and each byte of a name or
 * target that is not part of valid UTF-8 (0x80-0xFF) as \uDCXX, the lone
 * low surrogate U+DC00 + byte (Python's "surrogateescape"): no valid UTF-8
 * name holds a surrogate, so the spelling of an invalid name never equals
 * a valid name's, and it decodes back to the bytes (listing_read.h). The
 * canonical spelling escapes exactly the bytes that do not begin a valid
 * sequence, read from the start. The directory's
 * digest is the SHA-256 hex of exactly these bytes. Returns a malloc'd
 * buffer and its length via *len (a NUL follows the last byte, not counted
 * in *len), or NULL with the error set when out of memory. */
char *tt_scan_listing(const struct tt_scan_result *r, size_t *len);

/* One line of that listing, for writers of listings of entries found
 * elsewhere (listing_api.c): written at o, which has room for
 * tt_scan_line_room bytes; returns the end of the line. For TT_SCAN_TOKEN
 * the target is the token ("k", escaped as a name is) and is_link's room
 * is what it needs. */
size_t tt_scan_line_room(size_t path_len, size_t target_len, int is_link);
char *tt_scan_put_line(char *o, char kind, const unsigned char sha256[32], uint64_t size, const char *path,
                       size_t path_len, const char *target, size_t target_len);

#endif
