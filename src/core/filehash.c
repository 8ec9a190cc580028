/* One file's SHA-256, trusted only when the file held still while it was
 * read (the rule is in filehash.h). */
#include "core/filehash.h"

#include "core/cancel.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/journal.h"
#include "util/sha256_fast.h"

static _Atomic(tt_filehash_hook_fn) mid_read_hook;

void tt_filehash_set_hook(tt_filehash_hook_fn hook)
{
	atomic_store_explicit(&mid_read_hook, hook, memory_order_relaxed);
}

/* Once per read, between the first buffer and the second: where a test
 * writes into the file. */
static void mid_read(const char *name)
{
	tt_filehash_hook_fn hook = atomic_load_explicit(&mid_read_hook, memory_order_relaxed);
	if (hook)
		hook(name);
	tt_fault_point("scan", "mid-read");
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Everything a write, truncation or replacement of the file moves. */
static int same_stat(const struct stat *a, const struct stat *b)
{
	return same_file(a, b) && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int64_t ns_of(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The results of one read of the file, besides -errno and
 * TT_FILEHASH_NOT_REGULAR. */
#define READ_HELD 0    /* the file held still */
#define READ_MOVED 100 /* it changed (or was replaced) while read */
_Static_assert(READ_MOVED != TT_FILEHASH_NOT_REGULAR && READ_MOVED != TT_FILEHASH_UNSTABLE,
               "a read's outcome is not a result of tt_filehash_at");

/* Read the open file to its end into the hash (libcrypto's for a large
 * file: sha256_fast.h). Returns 0 or -errno. */
static int hash_fd(int fd, const char *name, uint64_t size, unsigned char *buf,
                   atomic_uint_fast64_t *progress, unsigned char sha256[32], uint64_t *total)
{
	struct tt_sha256_stream ctx;
	tt_sha256_begin(&ctx, size);
	*total = 0;
	int first = 1;
	for (;;) {
		ssize_t n = read(fd, buf, TT_FILEHASH_BUFFER_SIZE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			tt_sha256_end(&ctx, NULL);
			return -err;
		}
		if (n == 0)
			break;
		/* A stop asked (tether_cancel) ends even one huge file's read. */
		if (tt_cancelled()) {
			tt_sha256_end(&ctx, NULL);
			return -ECANCELED;
		}
		tt_sha256_update(&ctx, buf, (size_t)n);
		*total += (uint64_t)n;
		if (progress)
			atomic_fetch_add_explicit(progress, (uint64_t)n, memory_order_relaxed);
		if (first && (size_t)n == TT_FILEHASH_BUFFER_SIZE)
			mid_read(name);
		first = 0;
	}
	/* libcrypto failing mid-stream (it does not, short of a broken
	 * install) leaves no digest to trust: an I/O error of this file. */
	if (tt_sha256_end(&ctx, sha256) != 0)
		return -EIO;
	return 0;
}

/* One read: open, fstat, hash, fstat again, and stat the path. Returns
 * READ_HELD, READ_MOVED, -errno or TT_FILEHASH_NOT_REGULAR. */
static int read_once(int dirfd, const char *name, int follow, unsigned char *buf,
                     atomic_uint_fast64_t *progress, struct tt_filehash *out, struct stat *st_out)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW);
	int fd = openat(dirfd, name, flags);
	if (fd < 0)
		return -errno;
	struct stat before, after;
	if (fstat(fd, &before) != 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	if (!S_ISREG(before.st_mode)) {
		close(fd);
		return TT_FILEHASH_NOT_REGULAR;
	}
	/* Stamped before the first byte is read: a write that lands while we
	 * read then carries a later mtime than the stamp minus the margin. */
	out->hashed_ns = tt_hashcache_now_ns();
	if ((size_t)before.st_size > TT_FILEHASH_BUFFER_SIZE)
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	uint64_t total = 0;
	int rc = hash_fd(fd, name, (uint64_t)before.st_size, buf, progress, out->sha256, &total);
	if (rc == 0 && fstat(fd, &after) != 0)
		rc = -errno;
	close(fd);
	if (rc < 0)
		return rc;
	/* The path, not the descriptor: a file renamed over this name while
	 * we read leaves the descriptor's stat untouched. */
	struct stat now;
	if (fstatat(dirfd, name, &now, follow ? 0 : AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	out->size = total;
	out->st.size = (uint64_t)before.st_size;
	out->st.mtime_ns = ns_of(before.st_mtim);
	out->st.ctime_ns = ns_of(before.st_ctim);
	out->st.inode = (uint64_t)before.st_ino;
	*st_out = before;
	if (!same_stat(&before, &after) || total != (uint64_t)before.st_size || !same_stat(&before, &now))
		return READ_MOVED;
	return READ_HELD;
}

int tt_filehash_at(int dirfd, const char *name, int follow, unsigned char *buf,
                   atomic_uint_fast64_t *progress, struct tt_filehash *out)
{
	/* An unconfirmed read of a file written just before it: trusted once
	 * a second read of the same, unchanged file gives the same hash. */
	int have_unconfirmed = 0;
	struct stat unconfirmed_st = {0};
	unsigned char unconfirmed_sha[32];
	for (unsigned attempt = 1; attempt <= TT_FILEHASH_ATTEMPTS; attempt++) {
		struct stat st;
		int rc = read_once(dirfd, name, follow, buf, progress, out, &st);
		if (rc < 0 || rc == TT_FILEHASH_NOT_REGULAR)
			return rc;
		out->reads = attempt;
		if (rc == READ_MOVED) {
			have_unconfirmed = 0;
			continue;
		}
		if (tt_hashcache_settled(out->st.mtime_ns, out->st.ctime_ns, out->hashed_ns))
			return 0;
		if (have_unconfirmed && same_stat(&unconfirmed_st, &st) &&
		    memcmp(unconfirmed_sha, out->sha256, 32) == 0)
			return 0;
		have_unconfirmed = 1;
		unconfirmed_st = st;
		memcpy(unconfirmed_sha, out->sha256, 32);
	}
	return TT_FILEHASH_UNSTABLE;
}
