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

/* The records of one directory: [first, first + count), and where their
 * paths lie in the pool: [pool_off, pool_off + pool_len), pool_off
 * counted from the pool's start. The directory's name is kept in the
 * cache's dirs arena at dir_off. */
struct group {
	uint32_t first;
	uint32_t count;
	uint64_t pool_off;
	uint64_t pool_len;
	size_t dir_off;
	uint32_t dir_len;
};

/* An open-addressing slot: the group's index + 1 (0 = empty) and the high
 * half of the directory's hash, so most probes are decided without
 * touching the group or its path. */
struct slot {
	uint32_t group_plus1;
	uint32_t tag;
};

/* Only the index of the file is held in memory: a directory's records and
 * paths are read (pread) when the directory is looked up, so a cache of a
 * million files costs a few bytes per directory, not 100 per file. The
 * file stays open: the descriptor pins the inode that was checked, which
 * tether never writes in place (a new cache is a new file renamed over).
 * A small file (a one-file object's, a small tree's) is read whole in one
 * call instead, and looked up in memory. */
#define SMALL_FILE ((uint64_t)64 << 10)
struct tt_hashcache {
	int fd;
	unsigned char *mem; /* a small file, read whole: then fd is closed */
	uint64_t size;
	size_t count;
	uint64_t pool_start; /* file offset of the path pool */
	struct group *groups;
	size_t ngroups, groups_cap;
	char *dirs;
	size_t dirs_len, dirs_cap;
	struct slot *slots;
	size_t mask; /* slot count - 1; a power of two */
	struct tt_hashcache_view own; /* for tt_hashcache_dir and tt_hashcache_find */
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
	return c->dirs + g->dir_off;
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

/* Where a path's directory ends: the index of its last '/', or 0. */
static size_t dir_length(const char *path, size_t len)
{
	while (len > 0 && path[len - 1] != '/')
		len--;
	return len > 0 ? len - 1 : 0;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *b = buf;
	while (len > 0) {
		ssize_t n = pread(fd, b, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* len bytes of the file at off, in place for a small file held in
 * memory, else read into buf. NULL when they are not there. */
static const unsigned char *cache_bytes(const struct tt_hashcache *c, unsigned char *buf, size_t len,
                                        uint64_t off)
{
	if (off > c->size || len > c->size - off)
		return NULL;
	if (c->mem)
		return c->mem + off;
	return pread_full(c->fd, buf, len, off) == 0 ? buf : NULL;
}

/* len bytes of the file at off: from memory for a small file. */
static int cache_read(const struct tt_hashcache *c, void *buf, size_t len, uint64_t off)
{
	if (off > c->size || len > c->size - off)
		return -1;
	if (c->mem) {
		memcpy(buf, c->mem + off, len);
		return 0;
	}
	return pread_full(c->fd, buf, len, off);
}

static int reserve(void **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 256;
	while (n < need)
		n *= 2;
	void *p = realloc(*buf, n);
	if (!p)
		return -1;
	*buf = p;
	*cap = n;
	return 0;
}

/* Read one group's records and paths and check them again: each path
 * inside the bytes read, NUL-terminated, and in the group's directory. */
static size_t read_group(const struct tt_hashcache *c, const struct group *g,
                         struct tt_hashcache_view *v)
{
	size_t rec_bytes = (size_t)g->count * TT_HASHCACHE_RECORD_SIZE;
	if (reserve((void **)&v->recs, &v->recs_cap, rec_bytes) != 0 ||
	    reserve((void **)&v->pool, &v->pool_cap, (size_t)g->pool_len) != 0 ||
	    cache_read(c, v->recs, rec_bytes,
	               TT_HASHCACHE_HEADER_SIZE + (uint64_t)g->first * TT_HASHCACHE_RECORD_SIZE) != 0 ||
	    cache_read(c, v->pool, (size_t)g->pool_len, c->pool_start + g->pool_off) != 0)
		return 0;
	const char *dir = group_dir(c, g);
	for (size_t i = 0; i < g->count; i++) {
		const struct tt_hashcache_rec *rec = &v->recs[i];
		uint64_t rel = (uint64_t)rec->path_off - g->pool_off;
		if (rec->path_off < g->pool_off || rec->path_len == 0 || rel + rec->path_len >= g->pool_len)
			return 0;
		const char *path = v->pool + rel;
		if (path[rec->path_len] != '\0' || dir_length(path, rec->path_len) != g->dir_len ||
		    memcmp(path, dir, g->dir_len) != 0)
			return 0;
	}
	v->pool_off = g->pool_off;
	v->count = g->count;
	return g->count;
}

size_t tt_hashcache_read_dir(const struct tt_hashcache *cache, const char *dir, size_t dir_len,
                             struct tt_hashcache_view *v)
{
	v->count = 0;
	if (!cache || cache->ngroups == 0)
		return 0;
	const struct slot *s = &cache->slots[probe(cache, dir, dir_len, path_hash(dir, dir_len))];
	if (s->group_plus1 == 0)
		return 0;
	return read_group(cache, &cache->groups[s->group_plus1 - 1], v);
}

const char *tt_hashcache_view_path(const struct tt_hashcache_view *v, size_t i)
{
	return v->pool + (v->recs[i].path_off - v->pool_off);
}

void tt_hashcache_view_free(struct tt_hashcache_view *v)
{
	free(v->recs);
	free(v->pool);
	memset(v, 0, sizeof *v);
}

size_t tt_hashcache_dir(struct tt_hashcache *cache, const char *dir, size_t dir_len,
                        const struct tt_hashcache_rec **first)
{
	*first = NULL;
	if (!cache)
		return 0;
	size_t n = tt_hashcache_read_dir(cache, dir, dir_len, &cache->own);
	if (n)
		*first = cache->own.recs;
	return n;
}

const char *tt_hashcache_rec_path(const struct tt_hashcache *cache,
                                  const struct tt_hashcache_rec *rec)
{
	return tt_hashcache_view_path(&cache->own, (size_t)(rec - cache->own.recs));
}

const struct tt_hashcache_rec *tt_hashcache_find(struct tt_hashcache *cache,
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
		int c = memcmp(tt_hashcache_rec_path(cache, rec), path, common);
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

/* The loader's state while it streams through the file once. */
struct loader {
	struct tt_hashcache *c;
	struct checksum sum;
	uint32_t *lens;     /* each record's path length */
	char *path;         /* the path being assembled from the pool */
	size_t path_cap, path_have;
	size_t rec;         /* the record whose path comes next */
	uint64_t pool_pos;  /* where in the pool that path starts */
};

static int new_group(struct loader *l, const char *path, size_t dir_len, uint32_t len)
{
	struct tt_hashcache *c = l->c;
	if (c->ngroups == c->groups_cap) {
		size_t ncap = c->groups_cap ? c->groups_cap * 2 : 64;
		struct group *g = realloc(c->groups, ncap * sizeof *g);
		if (!g)
			return -1;
		c->groups = g;
		c->groups_cap = ncap;
	}
	if (reserve((void **)&c->dirs, &c->dirs_cap, c->dirs_len + dir_len + 1) != 0)
		return -1;
	memcpy(c->dirs + c->dirs_len, path, dir_len);
	c->dirs[c->dirs_len + dir_len] = '\0';
	c->groups[c->ngroups++] = (struct group){(uint32_t)l->rec, 1, l->pool_pos, (uint64_t)len + 1,
	                                         c->dirs_len, (uint32_t)dir_len};
	c->dirs_len += dir_len + 1;
	return 0;
}

/* One whole path out of the pool: check it, and add it to its directory's
 * group (the records of a directory are consecutive). */
static int take_path(struct loader *l)
{
	uint32_t len = l->lens[l->rec];
	const char *path = l->path;
	if (path[len] != '\0' || path[0] == '/' || memchr(path, '\0', len) != NULL)
		return -1;
	size_t dir_len = dir_length(path, len);
	struct tt_hashcache *c = l->c;
	struct group *g = c->ngroups ? &c->groups[c->ngroups - 1] : NULL;
	if (g && g->dir_len == dir_len && memcmp(group_dir(c, g), path, dir_len) == 0) {
		g->count++;
		g->pool_len += (uint64_t)len + 1;
	} else if (new_group(l, path, dir_len, len) != 0) {
		return -1;
	}
	l->pool_pos += (uint64_t)len + 1;
	l->rec++;
	l->path_have = 0;
	return 0;
}

static int feed_pool(struct loader *l, const char *p, size_t n)
{
	while (n > 0) {
		if (l->rec >= l->c->count)
			return -1;
		size_t want = (size_t)l->lens[l->rec] + 1 - l->path_have;
		size_t take = want < n ? want : n;
		memcpy(l->path + l->path_have, p, take);
		l->path_have += take;
		p += take;
		n -= take;
		if (take == want && take_path(l) != 0)
			return -1;
	}
	return 0;
}

#define LOAD_CHUNK (TT_HASHCACHE_RECORD_SIZE * 4096u)

/* Stream the file once: check the records' path offsets follow each other
 * (the writer lays them out so), check the checksum, and build the group
 * index. */
static int load_stream(struct loader *l, const struct header *hdr)
{
	struct tt_hashcache *c = l->c;
	size_t chunk = c->size < LOAD_CHUNK ? (size_t)c->size : LOAD_CHUNK;
	unsigned char *buf = c->mem ? NULL : malloc(chunk);
	if (c->mem)
		chunk = (size_t)c->size; /* read in place, in one piece */
	int rc = buf || c->mem ? 0 : -1;
	uint64_t off = TT_HASHCACHE_HEADER_SIZE, expect = 0;
	size_t maxlen = 0;
	for (size_t r = 0; !rc && r < c->count;) {
		size_t per = chunk / TT_HASHCACHE_RECORD_SIZE;
		size_t take = c->count - r < per ? c->count - r : per;
		size_t bytes = take * TT_HASHCACHE_RECORD_SIZE;
		const unsigned char *p = cache_bytes(c, buf, bytes, off);
		if (!p) {
			rc = -1;
			break;
		}
		checksum_update(&l->sum, p, bytes);
		for (size_t i = 0; i < take; i++) {
			struct tt_hashcache_rec rec;
			memcpy(&rec, p + i * TT_HASHCACHE_RECORD_SIZE, sizeof rec);
			if (rec.path_len == 0 || rec.path_off != expect ||
			    expect + rec.path_len + 1 > hdr->pool_size) {
				rc = -1;
				break;
			}
			expect += rec.path_len + 1;
			l->lens[r + i] = rec.path_len;
			if (rec.path_len > maxlen)
				maxlen = rec.path_len;
		}
		r += take;
		off += bytes;
	}
	if (!rc && expect != hdr->pool_size)
		rc = -1;
	if (!rc && c->count && reserve((void **)&l->path, &l->path_cap, maxlen + 1) != 0)
		rc = -1;
	for (uint64_t done = 0; !rc && done < hdr->pool_size;) {
		size_t take = hdr->pool_size - done < chunk ? (size_t)(hdr->pool_size - done) : chunk;
		const unsigned char *p = cache_bytes(c, buf, take, off);
		if (!p) {
			rc = -1;
			break;
		}
		checksum_update(&l->sum, p, take);
		rc = feed_pool(l, (const char *)p, take);
		done += take;
		off += take;
	}
	free(buf);
	if (!rc && (l->rec != c->count || checksum_final(&l->sum) != hdr->checksum))
		rc = -1;
	return rc;
}

/* Open the file and check its header; a small file is read whole into
 * c->mem and closed. Returns 0, or -1 when the file cannot be trusted. */
static int open_checked(struct tt_hashcache *c, const char *file, struct header *hdr)
{
	/* Under .tether/cache: never through a link, never blocking on a FIFO
	 * (the fstat below refuses anything but a regular file). */
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof *hdr)
		goto fail;
	c->size = (uint64_t)st.st_size;
	if (c->size <= SMALL_FILE) {
		c->mem = malloc((size_t)c->size);
		if (!c->mem || pread_full(fd, c->mem, (size_t)c->size, 0) != 0)
			goto fail;
		memcpy(hdr, c->mem, sizeof *hdr);
	} else if (pread_full(fd, hdr, sizeof *hdr, 0) != 0) {
		goto fail;
	}
	static const unsigned char zero[sizeof hdr->zero];
	if (memcmp(hdr->magic, TT_HASHCACHE_MAGIC, 8) != 0 || hdr->version != TT_HASHCACHE_VERSION ||
	    hdr->header_size != TT_HASHCACHE_HEADER_SIZE || memcmp(hdr->zero, zero, sizeof zero) != 0)
		goto fail;
	/* The exact size, computed without overflow. */
	uint64_t body = (uint64_t)st.st_size - sizeof *hdr;
	if (hdr->count > body / TT_HASHCACHE_RECORD_SIZE ||
	    hdr->pool_size != body - hdr->count * TT_HASHCACHE_RECORD_SIZE ||
	    hdr->count > UINT32_MAX - 1 || hdr->pool_size > UINT32_MAX || hdr->count > SIZE_MAX / 4)
		goto fail;
	if (c->mem)
		close(fd);
	else
		c->fd = fd;
	return 0;
fail:
	close(fd);
	return -1;
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

static void clear(struct tt_hashcache *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->mem);
	free(c->slots);
	free(c->groups);
	free(c->dirs);
	tt_hashcache_view_free(&c->own);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}

struct tt_hashcache *tt_hashcache_load(const char *file)
{
	struct tt_hashcache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->fd = -1;
	if (!file)
		return c;
	struct header hdr;
	if (open_checked(c, file, &hdr) != 0) {
		clear(c);
		return c;
	}
	c->count = (size_t)hdr.count;
	c->pool_start = TT_HASHCACHE_HEADER_SIZE + hdr.count * TT_HASHCACHE_RECORD_SIZE;
	struct loader l = {.c = c};
	checksum_init(&l.sum);
	checksum_update(&l.sum, &hdr, HEADER_CHECKED_BYTES);
	l.lens = malloc((c->count ? c->count : 1) * sizeof *l.lens);
	int rc = l.lens ? load_stream(&l, &hdr) : -1;
	free(l.lens);
	free(l.path);
	if (rc != 0 || index_groups(c) != 0)
		clear(c);
	return c;
}

void tt_hashcache_free(struct tt_hashcache *cache)
{
	if (!cache)
		return;
	clear(cache);
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
