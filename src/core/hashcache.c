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

#include "util/hash.h"

_Static_assert(sizeof(struct tt_hashcache_rec) == TT_HASHCACHE_RECORD_SIZE,
               "a cache record is 80 bytes on disk, with no padding");

struct header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t count;
	uint64_t pool_size;
	uint64_t checksum;
	unsigned char zero[24];
};
_Static_assert(sizeof(struct header) == TT_HASHCACHE_HEADER_SIZE, "the header is 64 bytes");

/* The header bytes before the checksum field are covered by it. */
#define HEADER_CHECKED_BYTES 32u

/* The records of one directory: [first, first + count). The directory's
 * name is the first dir_len bytes of the first record's path. */
struct group {
	uint32_t first;
	uint32_t count;
	uint32_t dir_len;
};

/* An open-addressing slot: the group's index + 1 (0 = empty) and the high
 * half of the directory's hash, so most probes are decided without
 * touching the group or its path. */
struct slot {
	uint32_t group_plus1;
	uint32_t tag;
};

struct tt_hashcache {
	unsigned char *data; /* the whole file */
	const struct tt_hashcache_rec *recs;
	const char *pool;
	size_t count;
	struct group *groups;
	size_t ngroups;
	struct slot *slots;
	size_t mask; /* slot count - 1; a power of two */
};

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

/* ---- the checksum (specified in hashcache.h) ---- */

#define MIX_K 0x9e3779b97f4a7c15ULL

struct checksum {
	uint64_t lane[4];
	unsigned char pending[32];
	size_t npending;
	uint64_t total;
};

static inline uint64_t mix_step(uint64_t lane, uint64_t word)
{
	lane = (lane ^ word) * MIX_K;
	return lane ^ (lane >> 29);
}

static void checksum_init(struct checksum *c)
{
	memset(c, 0, sizeof *c);
	for (int i = 0; i < 4; i++)
		c->lane[i] = MIX_K * (uint64_t)(i + 1);
}

/* Whole 32-byte blocks: one word per lane, the lanes independent so the
 * CPU runs them side by side. */
static void checksum_blocks(struct checksum *c, const unsigned char *p, size_t nblocks)
{
	uint64_t a = c->lane[0], b = c->lane[1], d = c->lane[2], e = c->lane[3];
	for (size_t i = 0; i < nblocks; i++, p += 32) {
		uint64_t w[4];
		memcpy(w, p, 32);
		a = mix_step(a, w[0]);
		b = mix_step(b, w[1]);
		d = mix_step(d, w[2]);
		e = mix_step(e, w[3]);
	}
	c->lane[0] = a;
	c->lane[1] = b;
	c->lane[2] = d;
	c->lane[3] = e;
}

static void checksum_update(struct checksum *c, const void *data, size_t n)
{
	const unsigned char *p = data;
	c->total += n;
	if (c->npending) {
		size_t take = 32 - c->npending < n ? 32 - c->npending : n;
		memcpy(c->pending + c->npending, p, take);
		c->npending += take;
		p += take;
		n -= take;
		if (c->npending < 32)
			return;
		checksum_blocks(c, c->pending, 1);
		c->npending = 0;
	}
	checksum_blocks(c, p, n / 32);
	p += n / 32 * 32;
	n %= 32;
	memcpy(c->pending, p, n);
	c->npending = n;
}

static uint64_t checksum_final(struct checksum *c)
{
	for (size_t i = 0; i * 8 < c->npending; i++) {
		uint64_t w = 0;
		size_t take = c->npending - i * 8 < 8 ? c->npending - i * 8 : 8;
		memcpy(&w, c->pending + i * 8, take);
		c->lane[i] = mix_step(c->lane[i], w);
	}
	uint64_t h = mix_step(0, c->total);
	for (int i = 0; i < 4; i++)
		h = mix_step(h, c->lane[i]);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* ---- lookup ---- */

/* A fast 64-bit hash of a directory path, eight bytes at a time. Not part
 * of the file format: the table is rebuilt at every load. */
static uint64_t path_hash(const char *p, size_t n)
{
	uint64_t h = mix_step(0x2545f4914f6cdd1dULL, n);
	uint64_t w;
	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = mix_step(h, w);
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = mix_step(h, w);
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static const char *group_dir(const struct tt_hashcache *c, const struct group *g)
{
	return c->pool + c->recs[g->first].path_off;
}

/* The index of the slot holding dir's group, or of the empty slot where
 * it would go. */
static size_t probe(const struct tt_hashcache *c, const char *dir, size_t dir_len, uint64_t h)
{
	uint32_t tag = (uint32_t)(h >> 32);
	for (size_t i = (size_t)h & c->mask;; i = (i + 1) & c->mask) {
		const struct slot *s = &c->slots[i];
		if (s->group_plus1 == 0)
			return i;
		if (s->tag != tag)
			continue;
		const struct group *g = &c->groups[s->group_plus1 - 1];
		if (g->dir_len == dir_len && memcmp(group_dir(c, g), dir, dir_len) == 0)
			return i;
	}
}

size_t tt_hashcache_dir(const struct tt_hashcache *cache, const char *dir, size_t dir_len,
                        const struct tt_hashcache_rec **first)
{
	*first = NULL;
	if (!cache || cache->ngroups == 0)
		return 0;
	const struct slot *s = &cache->slots[probe(cache, dir, dir_len, path_hash(dir, dir_len))];
	if (s->group_plus1 == 0)
		return 0;
	const struct group *g = &cache->groups[s->group_plus1 - 1];
	*first = &cache->recs[g->first];
	return g->count;
}

const char *tt_hashcache_rec_path(const struct tt_hashcache *cache,
                                  const struct tt_hashcache_rec *rec)
{
	return cache->pool + rec->path_off;
}

/* Where a path's directory ends: the index of its last '/', or 0. */
static size_t dir_length(const char *path, size_t len)
{
	while (len > 0 && path[len - 1] != '/')
		len--;
	return len > 0 ? len - 1 : 0;
}

const struct tt_hashcache_rec *tt_hashcache_find(const struct tt_hashcache *cache,
                                                 const char *path, size_t path_len)
{
	const struct tt_hashcache_rec *recs;
	size_t n = tt_hashcache_dir(cache, path, dir_length(path, path_len), &recs);
	/* Binary search by full path: within a group it sorts as the name. */
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tt_hashcache_rec *rec = &recs[mid];
		size_t common = rec->path_len < path_len ? rec->path_len : path_len;
		int c = memcmp(cache->pool + rec->path_off, path, common);
		if (c == 0)
			c = (rec->path_len > path_len) - (rec->path_len < path_len);
		if (c == 0)
			return rec;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
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
	/* Under .tether/cache: never through a link, never blocking on a FIFO
	 * (the fstat below refuses anything but a regular file). */
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
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
	static const unsigned char zero[sizeof hdr->zero];
	if (memcmp(hdr->magic, TT_HASHCACHE_MAGIC, 8) != 0 || hdr->version != TT_HASHCACHE_VERSION ||
	    hdr->header_size != TT_HASHCACHE_HEADER_SIZE || memcmp(hdr->zero, zero, sizeof zero) != 0)
		goto fail;
	/* The exact size, computed without overflow. */
	uint64_t body = size - sizeof *hdr;
	if (hdr->count > body / TT_HASHCACHE_RECORD_SIZE ||
	    hdr->pool_size != body - hdr->count * TT_HASHCACHE_RECORD_SIZE ||
	    hdr->count > UINT32_MAX - 1 || hdr->pool_size > UINT32_MAX)
		goto fail;
	struct checksum sum;
	checksum_init(&sum);
	checksum_update(&sum, data, HEADER_CHECKED_BYTES);
	checksum_update(&sum, data + sizeof *hdr, body);
	if (checksum_final(&sum) != hdr->checksum)
		goto fail;
	return data;
fail:
	if (fd >= 0)
		close(fd);
	free(data);
	return NULL;
}

static int valid_path(const struct tt_hashcache *c, const struct tt_hashcache_rec *rec,
                      uint64_t pool_size)
{
	return rec->path_len > 0 && (uint64_t)rec->path_off + rec->path_len < pool_size &&
	       c->pool[rec->path_off + rec->path_len] == '\0' && c->pool[rec->path_off] != '/';
}

/* Split the records into runs of one directory each. */
static int find_groups(struct tt_hashcache *c, uint64_t pool_size)
{
	size_t cap = 0;
	const char *prev_dir = NULL;
	size_t prev_len = 0;
	for (size_t r = 0; r < c->count; r++) {
		const struct tt_hashcache_rec *rec = &c->recs[r];
		if (!valid_path(c, rec, pool_size))
			return -1;
		const char *path = c->pool + rec->path_off;
		size_t dir_len = dir_length(path, rec->path_len);
		if (prev_dir && dir_len == prev_len && memcmp(path, prev_dir, dir_len) == 0) {
			c->groups[c->ngroups - 1].count++;
			continue;
		}
		if (c->ngroups == cap) {
			cap = cap ? cap * 2 : 64;
			struct group *g = realloc(c->groups, cap * sizeof *g);
			if (!g)
				return -1;
			c->groups = g;
		}
		c->groups[c->ngroups++] = (struct group){(uint32_t)r, 1, (uint32_t)dir_len};
		prev_dir = path;
		prev_len = dir_len;
	}
	return 0;
}

/* Index the groups; a directory with two groups is a broken file. */
static int index_groups(struct tt_hashcache *c)
{
	size_t slots = 16;
	while (slots < 2 * c->ngroups)
		slots *= 2;
	c->slots = calloc(slots, sizeof *c->slots);
	if (!c->slots)
		return -1;
	c->mask = slots - 1;
	for (size_t g = 0; g < c->ngroups; g++) {
		const char *dir = group_dir(c, &c->groups[g]);
		uint64_t h = path_hash(dir, c->groups[g].dir_len);
		struct slot *s = &c->slots[probe(c, dir, c->groups[g].dir_len, h)];
		if (s->group_plus1 != 0)
			return -1;
		s->group_plus1 = (uint32_t)g + 1;
		s->tag = (uint32_t)(h >> 32);
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
	if (find_groups(c, hdr.pool_size) != 0 || index_groups(c) != 0) {
		free(c->slots);
		free(c->groups);
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
	free(cache->groups);
	free(cache->data);
	free(cache);
}

/* ---- writing ---- */

/* Buffered output that checksums what passes through it. */
struct writer {
	int fd;
	unsigned char *buf;
	size_t len, cap;
	struct checksum sum;
	int err; /* errno of the first failure */
};

static int write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void writer_flush(struct writer *w)
{
	if (w->err || w->len == 0)
		return;
	checksum_update(&w->sum, w->buf, w->len);
	w->err = write_all(w->fd, w->buf, w->len);
	w->len = 0;
}

static void writer_put(struct writer *w, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n > 0 && !w->err) {
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
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
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
	for (size_t i = 0; i < n && !w->err; i++) {
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
	for (size_t i = 0; i < n && !w->err; i++) {
		if (get(ctx, i, &it))
			writer_put(w, it.path, it.path_len + 1);
	}
}

/* The header, counted in a first pass over the items. */
static void count_items(struct header *hdr, size_t n, tt_hashcache_get_fn get, void *ctx)
{
	memset(hdr, 0, sizeof *hdr);
	memcpy(hdr->magic, TT_HASHCACHE_MAGIC, 8);
	hdr->version = TT_HASHCACHE_VERSION;
	hdr->header_size = TT_HASHCACHE_HEADER_SIZE;
	struct tt_hashcache_item it;
	for (size_t i = 0; i < n; i++) {
		if (get(ctx, i, &it)) {
			hdr->count++;
			hdr->pool_size += it.path_len + 1;
		}
	}
}

/* Records and pool, then the header once the checksum is known. No
 * fsync: the cache only saves work, and a file that a crash left torn or
 * empty fails its size or checksum check at the next load and is ignored
 * (everything is hashed again), so durability would buy nothing but a
 * disk flush on every status that refreshes a cache. Returns 0 or an
 * errno. */
static int write_body(int fd, struct header *hdr, size_t n, tt_hashcache_get_fn get, void *ctx)
{
	struct writer w = {.fd = fd, .cap = (size_t)1 << 20};
	w.buf = malloc(w.cap);
	if (!w.buf)
		return ENOMEM;
	checksum_init(&w.sum);
	checksum_update(&w.sum, hdr, HEADER_CHECKED_BYTES);
	if (lseek(fd, sizeof *hdr, SEEK_SET) < 0)
		w.err = errno;
	put_records(&w, n, get, ctx);
	put_pool(&w, n, get, ctx);
	writer_flush(&w);
	free(w.buf);
	if (w.err)
		return w.err;
	hdr->checksum = checksum_final(&w.sum);
	ssize_t done = pwrite(fd, hdr, sizeof *hdr, 0);
	if (done != (ssize_t)sizeof *hdr)
		return done < 0 ? errno : EIO;
	return 0;
}

int tt_hashcache_write(const char *file, size_t n, tt_hashcache_get_fn get, void *ctx)
{
	struct header hdr;
	count_items(&hdr, n, get, ctx);
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
	int err = write_body(fd, &hdr, n, get, ctx);
	if (close(fd) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, file) != 0)
		err = errno;
	if (err)
		unlink(tmp);
	free(tmp);
	if (err)
		return tether_error_set(TETHER_EIO, "cannot write hash cache '%s': %s", file,
		                        strerror(err));
	return 0;
}
