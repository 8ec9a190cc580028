/* The binary hash cache; the file format is described in hashcache.h. */
#include "core/hashcache.h"

#include <tether/backend.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "util/hash.h"

_Static_assert(sizeof(struct tt_hashcache_rec) == TT_HASHCACHE_RECORD_SIZE,
               "a cache record is 80 bytes on disk, with no padding");

/* An open-addressing slot: the record's index + 1 (0 = empty) and the high
 * half of the path's hash, so most probes are decided without touching the
 * record or its path. */
struct slot {
	uint32_t index_plus1;
	uint32_t tag;
};

struct tt_hashcache {
	unsigned char *data; /* the whole file */
	const struct tt_hashcache_rec *recs;
	const char *pool;
	size_t count;
	struct slot *slots;
	size_t mask; /* slot count - 1; slot count is a power of two */
};

struct header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t count;
	uint64_t pool_size;
	unsigned char checksum[32];
};
_Static_assert(sizeof(struct header) == TT_HASHCACHE_HEADER_SIZE, "the header is 64 bytes");

/* Only the bytes before the checksum field are covered by it. */
#define HEADER_CHECKED_BYTES 32u

/* ---- the clock ---- */

static _Atomic(tt_hashcache_clock_fn) clock_override;

int64_t tt_hashcache_now_ns(void)
{
	tt_hashcache_clock_fn fn = atomic_load_explicit(&clock_override, memory_order_relaxed);
	if (fn)
		return fn();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void tt_hashcache_set_clock(tt_hashcache_clock_fn clock)
{
	atomic_store_explicit(&clock_override, clock, memory_order_relaxed);
}

/* ---- matching ---- */

int tt_hashcache_settled(int64_t mtime_ns, int64_t ctime_ns, int64_t hashed_ns)
{
	if (hashed_ns < INT64_MIN + TT_HASHCACHE_SETTLE_NS)
		return 0;
	int64_t limit = hashed_ns - TT_HASHCACHE_SETTLE_NS;
	return mtime_ns < limit && ctime_ns < limit;
}

int tt_hashcache_matches(const struct tt_hashcache_rec *rec, const struct tt_hashcache_stat *st)
{
	return rec->size == st->size && rec->mtime_ns == st->mtime_ns &&
	       rec->ctime_ns == st->ctime_ns && rec->inode == st->inode &&
	       tt_hashcache_settled(rec->mtime_ns, rec->ctime_ns, rec->hashed_ns);
}

/* ---- naming ---- */

char *tt_hashcache_file(const char *cache_dir, const char *key)
{
	unsigned char digest[32];
	char hex[65];
	tt_sha256(key, strlen(key), digest);
	tt_hex(digest, 8, hex);
	size_t len = strlen(cache_dir) + sizeof "/hashes-.bin" + 16;
	char *file = malloc(len);
	if (file)
		snprintf(file, len, "%s/hashes-%s.bin", cache_dir, hex);
	return file;
}

/* ---- lookup ---- */

/* A fast 64-bit hash of a path, eight bytes at a time. Not part of the
 * file format: the table is rebuilt at every load. */
static uint64_t path_hash(const char *p, size_t n)
{
	const uint64_t k = 0x9e3779b97f4a7c15ULL;
	uint64_t h = (uint64_t)n * k ^ 0x2545f4914f6cdd1dULL;
	uint64_t w;
	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * k;
		h ^= h >> 32;
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = (h ^ w) * k;
		h ^= h >> 32;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

const struct tt_hashcache_rec *tt_hashcache_find(const struct tt_hashcache *cache,
                                                 const char *path, size_t path_len)
{
	if (!cache || cache->count == 0)
		return NULL;
	uint64_t h = path_hash(path, path_len);
	uint32_t tag = (uint32_t)(h >> 32);
	for (size_t i = (size_t)h & cache->mask;; i = (i + 1) & cache->mask) {
		const struct slot *s = &cache->slots[i];
		if (s->index_plus1 == 0)
			return NULL;
		if (s->tag != tag)
			continue;
		const struct tt_hashcache_rec *rec = &cache->recs[s->index_plus1 - 1];
		if (rec->path_len == path_len && memcmp(cache->pool + rec->path_off, path, path_len) == 0)
			return rec;
	}
}

size_t tt_hashcache_count(const struct tt_hashcache *cache)
{
	return cache ? cache->count : 0;
}

/* ---- loading ---- */

static int read_whole(int fd, unsigned char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = read(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read the file and check its framing and checksum. Returns the buffer
 * (and its header through *hdr) or NULL when the file cannot be trusted. */
static unsigned char *read_checked(const char *file, struct header *hdr)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	unsigned char *data = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof *hdr ||
	    (uint64_t)st.st_size > SIZE_MAX)
		goto fail;
	size_t size = (size_t)st.st_size;
	data = malloc(size);
	if (!data || read_whole(fd, data, size) != 0)
		goto fail;
	close(fd);
	fd = -1;

	memcpy(hdr, data, sizeof *hdr);
	if (memcmp(hdr->magic, TT_HASHCACHE_MAGIC, 8) != 0 || hdr->version != TT_HASHCACHE_VERSION ||
	    hdr->header_size != TT_HASHCACHE_HEADER_SIZE)
		goto fail;
	/* The exact size, computed without overflow. */
	uint64_t body = size - sizeof *hdr;
	if (hdr->count > body / TT_HASHCACHE_RECORD_SIZE ||
	    hdr->pool_size != body - hdr->count * TT_HASHCACHE_RECORD_SIZE ||
	    hdr->count > UINT32_MAX - 1)
		goto fail;

	struct sha256_ctx sha;
	unsigned char digest[32];
	sha256_init(&sha);
	sha256_update(&sha, HEADER_CHECKED_BYTES, data);
	sha256_update(&sha, body, data + sizeof *hdr);
	sha256_digest(&sha, sizeof digest, digest);
	if (memcmp(digest, hdr->checksum, sizeof digest) != 0)
		goto fail;
	return data;
fail:
	if (fd >= 0)
		close(fd);
	free(data);
	return NULL;
}

/* Index the records; refuses a path outside the pool or without its NUL
 * (a bug in a writer, since the checksum matched). */
static int build_table(struct tt_hashcache *c)
{
	size_t slots = 16;
	while (slots < 2 * c->count)
		slots *= 2;
	c->slots = calloc(slots, sizeof *c->slots);
	if (!c->slots)
		return -1;
	c->mask = slots - 1;
	uint64_t pool_size = ((const struct header *)c->data)->pool_size;
	for (size_t r = 0; r < c->count; r++) {
		const struct tt_hashcache_rec *rec = &c->recs[r];
		if ((uint64_t)rec->path_off + rec->path_len >= pool_size ||
		    c->pool[rec->path_off + rec->path_len] != '\0')
			return -1;
		uint64_t h = path_hash(c->pool + rec->path_off, rec->path_len);
		size_t i = (size_t)h & c->mask;
		while (c->slots[i].index_plus1 != 0)
			i = (i + 1) & c->mask;
		c->slots[i].index_plus1 = (uint32_t)r + 1;
		c->slots[i].tag = (uint32_t)(h >> 32);
	}
	return 0;
}

struct tt_hashcache *tt_hashcache_load(const char *file)
{
	struct tt_hashcache *c = calloc(1, sizeof *c);
	if (!c || !file)
		return c;
	struct header hdr;
	c->data = read_checked(file, &hdr);
	if (!c->data)
		return c;
	c->count = (size_t)hdr.count;
	c->recs = (const struct tt_hashcache_rec *)(c->data + sizeof hdr);
	c->pool = (const char *)(c->data + sizeof hdr) + c->count * TT_HASHCACHE_RECORD_SIZE;
	if (c->count > 0 && build_table(c) != 0) {
		free(c->slots);
		free(c->data);
		memset(c, 0, sizeof *c);
	}
	return c;
}

void tt_hashcache_free(struct tt_hashcache *cache)
{
	if (!cache)
		return;
	free(cache->slots);
	free(cache->data);
	free(cache);
}

/* ---- writing ---- */

/* Buffered output that checksums what passes through it. */
struct writer {
	int fd;
	unsigned char *buf;
	size_t len, cap;
	struct sha256_ctx sha;
	int failed;
};

static int write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void writer_flush(struct writer *w)
{
	if (w->failed || w->len == 0)
		return;
	sha256_update(&w->sha, w->len, w->buf);
	if (write_all(w->fd, w->buf, w->len) != 0)
		w->failed = errno ? errno : EIO;
	w->len = 0;
}

static void writer_put(struct writer *w, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n > 0 && !w->failed) {
		if (w->len == w->cap)
			writer_flush(w);
		size_t take = w->cap - w->len < n ? w->cap - w->len : n;
		memcpy(w->buf + w->len, b, take);
		w->len += take;
		b += take;
		n -= take;
	}
}

/* Create a fresh temporary file beside the target (same file system, so
 * the rename is atomic). O_EXCL with a name unique to this process and
 * moment; permissions follow the umask like any other file. */
static int create_temp(const char *file, char **tmp_out)
{
	static atomic_uint counter;
	size_t len = strlen(file) + 64;
	char *tmp = malloc(len);
	if (!tmp)
		return -1;
	for (int attempt = 0; attempt < 100; attempt++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(tmp, len, "%s.tmp.%ld.%u.%ld", file, (long)getpid(),
		         atomic_fetch_add(&counter, 1), (long)ts.tv_nsec);
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0) {
			*tmp_out = tmp;
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	int saved = errno;
	free(tmp);
	errno = saved;
	return -1;
}

/* The cache directory may not exist yet; create its last component. */
static void make_parent_dir(const char *file)
{
	const char *slash = strrchr(file, '/');
	if (!slash || slash == file)
		return;
	char *dir = strndup(file, (size_t)(slash - file));
	if (dir) {
		mkdir(dir, 0777);
		free(dir);
	}
}

static void put_records(struct writer *w, size_t n, tt_hashcache_get_fn get, void *ctx)
{
	uint64_t off = 0;
	struct tt_hashcache_item it;
	for (size_t i = 0; i < n && !w->failed; i++) {
		if (!get(ctx, i, &it))
			continue;
		struct tt_hashcache_rec rec;
		memset(&rec, 0, sizeof rec);
		rec.size = it.st.size;
		rec.mtime_ns = it.st.mtime_ns;
		rec.ctime_ns = it.st.ctime_ns;
		rec.inode = it.st.inode;
		rec.hashed_ns = it.hashed_ns;
		rec.path_off = (uint32_t)off;
		rec.path_len = (uint32_t)it.path_len;
		memcpy(rec.sha256, it.sha256, 32);
		writer_put(w, &rec, sizeof rec);
		off += it.path_len + 1;
	}
}

static void put_pool(struct writer *w, size_t n, tt_hashcache_get_fn get, void *ctx)
{
	struct tt_hashcache_item it;
	for (size_t i = 0; i < n && !w->failed; i++) {
		if (get(ctx, i, &it))
			writer_put(w, it.path, it.path_len + 1);
	}
}

int tt_hashcache_write(const char *file, size_t n, tt_hashcache_get_fn get, void *ctx)
{
	/* First pass: the counts the header declares up front. */
	struct header hdr;
	memset(&hdr, 0, sizeof hdr);
	memcpy(hdr.magic, TT_HASHCACHE_MAGIC, 8);
	hdr.version = TT_HASHCACHE_VERSION;
	hdr.header_size = TT_HASHCACHE_HEADER_SIZE;
	struct tt_hashcache_item it;
	for (size_t i = 0; i < n; i++) {
		if (get(ctx, i, &it)) {
			hdr.count++;
			hdr.pool_size += it.path_len + 1;
		}
	}
	if (hdr.pool_size > UINT32_MAX || hdr.count > UINT32_MAX - 1)
		return tether_error_set(TETHER_EIO, "hash cache '%s': too many paths to cache", file);

	char *tmp = NULL;
	int fd = create_temp(file, &tmp);
	if (fd < 0 && errno == ENOENT) {
		make_parent_dir(file);
		fd = create_temp(file, &tmp);
	}
	if (fd < 0)
		return tether_error_set(TETHER_EIO, "cannot create hash cache '%s': %s", file,
		                        strerror(errno));

	struct writer w = {.fd = fd, .cap = 1 << 20};
	w.buf = malloc(w.cap);
	if (!w.buf)
		w.failed = ENOMEM;
	sha256_init(&w.sha);
	sha256_update(&w.sha, HEADER_CHECKED_BYTES, (const uint8_t *)&hdr);
	/* The header goes in last, once the checksum is known; the writer
	 * hashes only what follows it. */
	if (!w.failed && lseek(fd, sizeof hdr, SEEK_SET) < 0)
		w.failed = errno;
	put_records(&w, n, get, ctx);
	put_pool(&w, n, get, ctx);
	writer_flush(&w);
	if (!w.failed) {
		sha256_digest(&w.sha, sizeof hdr.checksum, hdr.checksum);
		if (pwrite(fd, &hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr || fsync(fd) != 0)
			w.failed = errno ? errno : EIO;
	}
	free(w.buf);
	if (close(fd) != 0 && !w.failed)
		w.failed = errno;
	if (!w.failed && rename(tmp, file) != 0)
		w.failed = errno;
	if (w.failed) {
		unlink(tmp);
		free(tmp);
		return tether_error_set(TETHER_EIO, "cannot write hash cache '%s': %s", file,
		                        strerror(w.failed));
	}
	free(tmp);
	return 0;
}
