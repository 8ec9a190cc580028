/* Hashing one file's content so that the hash is of a state the file
 * really had: never a mix of what it held before and after a write that
 * landed while it was read.
 *
 * A read is trusted only when the open file's fstat (size, mtime, ctime,
 * device, inode) is the same before the first byte and after the last, the
 * bytes read are exactly the size, and the path still names that same
 * file (a stat of the path after the read: a rename over it is caught).
 * A file whose mtime or ctime lies within the hash cache's settle margin of
 * the moment the read began (TT_HASHCACHE_SETTLE_NS) may have been written
 * again within its file system's timestamp granularity, unseen by the
 * stat: it is read a second time, and trusted when both reads agree. A
 * read that is not trusted is repeated, up to TT_FILEHASH_ATTEMPTS reads in
 * all; then the file is refused (TT_FILEHASH_UNSTABLE). */
#ifndef TETHER_CORE_FILEHASH_H
#define TETHER_CORE_FILEHASH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hashcache.h"

/* Reads of one file before it is refused as still changing. */
#define TT_FILEHASH_ATTEMPTS 4
/* The read buffer tt_filehash_at wants (bytes). */
#define TT_FILEHASH_BUFFER_SIZE ((size_t)128 << 10)

/* Positive results besides 0 (negative ones are -errno). */
#define TT_FILEHASH_NOT_REGULAR 1 /* the name no longer holds a regular file */
#define TT_FILEHASH_UNSTABLE 2    /* it changed during every read */

struct tt_filehash {
	uint64_t size;                /* bytes hashed: the file's size */
	struct tt_hashcache_stat st;  /* its stat, the same before and after the read */
	int64_t hashed_ns;            /* tt_hashcache_now_ns() just before the trusted read began */
	unsigned char sha256[32];
	unsigned reads;               /* how many reads it took */
};

/* Hash the file `name` relative to dirfd (AT_FDCWD for a path), following
 * a final symlink when follow is set, with buf (TT_FILEHASH_BUFFER_SIZE
 * bytes) to read into. progress, if given, counts bytes as they are read
 * (every read, repeated ones too). Opened O_NONBLOCK, so a fifo swapped in
 * cannot hang the caller. Returns 0, -errno (-ENOENT when the file is
 * gone), TT_FILEHASH_NOT_REGULAR or TT_FILEHASH_UNSTABLE. */
int tt_filehash_at(int dirfd, const char *name, int follow, unsigned char *buf,
                   atomic_uint_fast64_t *progress, struct tt_filehash *out);

/* Test hook: called in every read of a file larger than one buffer, after
 * the first buffer is hashed, with the name as tt_filehash_at got it, so a
 * test can write into the file mid-read. NULL removes it. The e2e tests
 * reach the same point through TETHER_FAULT=scan:mid-read:stop (see
 * tt_fault_point). */
typedef void (*tt_filehash_hook_fn)(const char *name);
void tt_filehash_set_hook(tt_filehash_hook_fn hook);

#endif
