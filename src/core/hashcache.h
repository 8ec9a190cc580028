/* The scanner's hash cache: for every regular file of one scanned root, the
 * SHA-256 of its content and the stat fields it had when it was read, so a
 * later scan reads only the files whose stat changed.
 *
 * One file per cache key under the cache directory:
 *   hashes-<first 16 hex of sha256(key)>.bin
 * where the key is the root's real path for a tree scan, and "file:" plus
 * the file's real path for tt_scan_file (so a one-file cache never
 * replaces a tree's).
 *
 * File format, version 1. All integers are in host byte order (the cache
 * never leaves the machine; a file from a foreign byte order fails the
 * version check and is ignored).
 *
 *   offset  size  header (64 bytes)
 *        0     8  magic "TTHCACHE"
 *        8     4  u32 version = 1
 *       12     4  u32 header size = 64
 *       16     8  u64 record count N
 *       24     8  u64 path pool size P (bytes)
 *       32     8  u64 checksum of header bytes [0, 32) followed by every
 *                 byte after the header (see below)
 *       40    24  zero (anything else: not a valid file)
 *
 *   then N records of 80 bytes:
 *        0     8  u64 size
 *        8     8  i64 mtime_ns   (st_mtim, nanoseconds since the epoch)
 *       16     8  i64 ctime_ns   (st_ctim)
 *       24     8  u64 inode
 *       32     8  i64 hashed_ns  (CLOCK_REALTIME just before the read began)
 *       40     4  u32 path offset in the pool
 *       44     4  u32 path length (without its NUL)
 *       48    32  SHA-256 of the content
 *
 *   then the path pool: P bytes of relative paths ('/'-separated, no
 *   leading '/'), each followed by a NUL.
 *
 * Only files whose hash will be trusted next time are recorded (see the
 * matching rule below); symlinks to regular files are recorded under the
 * link's path with the stat of the target.
 *
 * Records are grouped by directory: the records of the files directly
 * inside one directory are consecutive and sorted by name (strcmp); the
 * groups come in any order (the scanner writes them depth first). A
 * lookup then finds a directory's group once and merges it with the
 * directory's sorted entries, reading records in file order.
 *
 * The checksum guards against truncation and corruption, not against an
 * adversary (who could as well edit the data), and costs next to nothing
 * beside the read: the covered bytes are taken as 8-byte words (host
 * order, a last partial word zero-padded), word k going to lane k % 4 by
 * lane = (lane ^ w) * K, lane ^= lane >> 29; then the byte count and the
 * four lanes are folded into 0 by the same step, followed by a final
 * avalanche. Each step is a bijection of the lane, so a change confined to
 * one word always changes the result. K = 0x9e3779b97f4a7c15, lane i
 * starts at K * (i + 1); hashcache.c is the reference.
 *
 * The file size must be exactly 64 + 80 N + P, the checksum must match,
 * the paths must lie in the pool in record order, one after the other
 * (record i's path offset is the sum of the lengths + 1 of the paths
 * before it, and they fill the pool exactly), each must end with its NUL,
 * hold no other NUL and not start with '/', and no directory may have two
 * groups; a file failing any of these is treated as empty, never
 * trusted.
 *
 * A record matches a file only when size, mtime, ctime and inode are all
 * equal AND mtime and ctime are more than two seconds older than hashed_ns:
 * a file written within two seconds of being read may still have been
 * changing (coarse file-system clocks, writers mid-way), so it is read
 * again next time.
 *
 * Loading streams through the file once (checksum, checks, and an
 * open-addressing table of directory groups) and keeps only that index
 * and the open descriptor: a directory's records are read (pread) when it
 * is looked up, into the caller's view, and checked again (each path
 * inside what was read, NUL-terminated, in that directory). So memory
 * grows with the directories, not the files. A file of at most 64 KiB (a
 * one-file object's, a small tree's) is read whole in one call and looked
 * up in memory, as cheap to open as before. A loaded cache is immutable,
 * so views need no lock from any number of threads. Writing goes to a
 * temporary file in the same directory, renamed over the old one: readers
 * see the old file or the new one, never a mix, and when two processes
 * write the same cache the last rename wins. It is not fsync'ed: after a
 * crash the renamed file may be empty, short or partly zero, and then its
 * size, magic or checksum check fails and it is ignored, so a torn cache
 * costs a rehash, never a wrong hash. The scanner rewrites a cache only
 * when its records would change (a file hashed that can be trusted next
 * time, or a record gone), never for a file it must hash again anyway. */
#ifndef TETHER_CORE_HASHCACHE_H
#define TETHER_CORE_HASHCACHE_H

#include <stddef.h>
#include <stdint.h>

#define TT_HASHCACHE_MAGIC "TTHCACHE"
#define TT_HASHCACHE_VERSION 1u
#define TT_HASHCACHE_HEADER_SIZE 64u
#define TT_HASHCACHE_RECORD_SIZE 80u
/* How much older than the hash time mtime and ctime must be. */
#define TT_HASHCACHE_SETTLE_NS 2000000000LL

/* A record as it lies in the file (80 bytes, no padding). */
struct tt_hashcache_rec {
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
	uint64_t inode;
	int64_t hashed_ns;
	uint32_t path_off;
	uint32_t path_len;
	unsigned char sha256[32];
};

/* The stat fields a record is validated by. */
struct tt_hashcache_stat {
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
	uint64_t inode;
};

/* One file for tt_hashcache_write. */
struct tt_hashcache_item {
	const char *path;
	size_t path_len;
	struct tt_hashcache_stat st;
	int64_t hashed_ns;
	unsigned char sha256[32];
};

struct tt_hashcache;

/* The cache file for a key: malloc'd "<cache_dir>/hashes-<16 hex>.bin", or
 * NULL when out of memory. */
char *tt_hashcache_file(const char *cache_dir, const char *key);

/* Load a cache file. A missing, unreadable, truncated or corrupt file
 * gives an empty cache. NULL only when out of memory; every function below
 * accepts NULL as an empty cache. */
struct tt_hashcache *tt_hashcache_load(const char *file);
void tt_hashcache_free(struct tt_hashcache *cache);
size_t tt_hashcache_count(const struct tt_hashcache *cache);

/* One directory's records, read from the file into buffers of the
 * caller's (one per thread: the cache itself is never written after its
 * load). recs[0..count) sorted by name; a record's path is
 * tt_hashcache_view_path(view, i). Zero-initialise; free with
 * tt_hashcache_view_free. */
struct tt_hashcache_view {
	struct tt_hashcache_rec *recs;
	size_t recs_cap;
	char *pool;
	size_t pool_cap;
	uint64_t pool_off;
	size_t count;
};

/* Read the records of the files directly inside directory dir (relative,
 * "" for the root) into v; returns their count (0 when none, or when the
 * records read fail their checks: never trusted). Thread-safe for
 * distinct views. */
size_t tt_hashcache_read_dir(const struct tt_hashcache *cache, const char *dir, size_t dir_len,
                             struct tt_hashcache_view *v);
const char *tt_hashcache_view_path(const struct tt_hashcache_view *v, size_t i);
void tt_hashcache_view_free(struct tt_hashcache_view *v);

/* The same through a view the cache keeps: sets *first and returns the
 * count; the records stay valid until the next call of these three on the
 * same cache. Not thread-safe. */
size_t tt_hashcache_dir(struct tt_hashcache *cache, const char *dir, size_t dir_len,
                        const struct tt_hashcache_rec **first);
/* A record's relative path (NUL-terminated), for a record of the last
 * tt_hashcache_dir or tt_hashcache_find. */
const char *tt_hashcache_rec_path(const struct tt_hashcache *cache,
                                  const struct tt_hashcache_rec *rec);
/* The record for one relative path, or NULL. */
const struct tt_hashcache_rec *tt_hashcache_find(struct tt_hashcache *cache,
                                                 const char *path, size_t path_len);

/* Were mtime and ctime settled (more than two seconds old) when the file
 * was hashed? A hash taken earlier is never reused. */
int tt_hashcache_settled(int64_t mtime_ns, int64_t ctime_ns, int64_t hashed_ns);

/* Does the record still describe a file with this stat? (All four fields
 * equal, and the hash was taken once the file had settled.) */
int tt_hashcache_matches(const struct tt_hashcache_rec *rec, const struct tt_hashcache_stat *st);

/* Write a new cache file atomically. get(ctx, i, item) fills item i of n
 * and returns 1, or returns 0 to leave item i out; it is called several
 * times per item and must answer the same each time. Items come grouped by
 * directory and sorted by name within a group, as the format requires.
 * Returns 0, or a negative TETHER_E* code with the error set (the old file
 * is then left in place). */
typedef int (*tt_hashcache_get_fn)(void *ctx, size_t i, struct tt_hashcache_item *item);
int tt_hashcache_write(const char *file, size_t n, tt_hashcache_get_fn get, void *ctx);

/* The clock hashes are stamped with: CLOCK_REALTIME in nanoseconds, the
 * clock file systems stamp mtime and ctime with. Tests replace it to make
 * a hash look taken later than it was; NULL restores the real clock. */
typedef int64_t (*tt_hashcache_clock_fn)(void);
int64_t tt_hashcache_now_ns(void);
void tt_hashcache_set_clock(tt_hashcache_clock_fn clock);

#endif
