/* Packfiles: see gitpack.h. Format: git's Documentation/gitformat-pack.txt
 * (idx v2: magic, version, 256-entry fan-out, sorted ids, CRCs, 31-bit
 * offsets with the high bit pointing into a 64-bit table; pack: "PACK",
 * version 2 or 3, entries of a type-and-size header then zlib data). */
#include "vcs/gitpack.h"
#include "vcs/gitcache.h"

#include <tether/backend.h>

#include <libdeflate.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int map_file(const char *path, const unsigned char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *m;

	if (fd < 0)
		return tether_error_set(TETHER_EIO, "cannot open %s", path);
	if (fstat(fd, &st) < 0 || st.st_size <= 0) {
		close(fd);
		return tether_error_set(TETHER_ERROR, "%s is empty or unreadable", path);
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return tether_error_set(TETHER_EIO, "cannot map %s", path);
	*out = m;
	*len = (size_t)st.st_size;
	return 0;
}

static int damaged(const struct tt_gpack *p, const char *what)
{
	return tether_error_set(TETHER_ERROR, "damaged git pack %s: %s", p->path, what);
}

int tt_gpack_open(const char *idx_path, struct tt_gpack *p)
{
	size_t n = strlen(idx_path);
	int rc;

	memset(p, 0, sizeof *p);
	if (n < 4 || strcmp(idx_path + n - 4, ".idx") != 0)
		return tether_error_set(TETHER_ERROR, "%s is not a pack index", idx_path);
	if (!(p->path = malloc(n + 2)))
		return tether_error_set(TETHER_ERROR, "out of memory");
	memcpy(p->path, idx_path, n - 4);
	memcpy(p->path + n - 4, ".pack", 6);
	if ((rc = map_file(idx_path, &p->idx, &p->idx_len)) < 0)
		goto fail;
	if ((rc = map_file(p->path, &p->pack, &p->pack_len)) < 0)
		goto fail;
	rc = damaged(p, "bad index header");
	if (p->idx_len < 8 + 1024 + 40 || memcmp(p->idx, "\377tOc", 4) != 0 || be32(p->idx + 4) != 2)
		goto fail;
	p->count = be32(p->idx + 8 + 255 * 4);
	/* ids, CRCs, offsets and the two trailing checksums must fit */
	if ((p->idx_len - 8 - 1024 - 40) / 28 < p->count)
		goto fail;
	for (int i = 1; i < 256; i++)
		if (be32(p->idx + 8 + i * 4) < be32(p->idx + 8 + (i - 1) * 4))
			goto fail;
	p->ids = p->idx + 8 + 1024;
	p->off32 = p->ids + (size_t)p->count * 24;
	p->off64 = p->off32 + (size_t)p->count * 4;
	p->n_off64 = (size_t)(p->idx + p->idx_len - 40 - p->off64) / 8;
	rc = damaged(p, "bad pack header");
	if (p->pack_len < 32 || memcmp(p->pack, "PACK", 4) != 0 ||
	    (be32(p->pack + 4) != 2 && be32(p->pack + 4) != 3) || be32(p->pack + 8) != p->count)
		goto fail;
	return 0;
fail:
	tt_gpack_close(p);
	return rc;
}

void tt_gpack_close(struct tt_gpack *p)
{
	if (p->idx)
		munmap((void *)p->idx, p->idx_len);
	if (p->pack)
		munmap((void *)p->pack, p->pack_len);
	free(p->path);
	memset(p, 0, sizeof *p);
}

uint32_t tt_gpack_lower_bound(const struct tt_gpack *p, const unsigned char key[20])
{
	uint32_t lo = key[0] ? be32(p->idx + 8 + (key[0] - 1) * 4) : 0;
	uint32_t hi = be32(p->idx + 8 + key[0] * 4);

	if (hi > p->count)
		hi = p->count;
	if (lo > hi)
		lo = hi;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (memcmp(p->ids + (size_t)mid * 20, key, 20) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long tt_gpack_find(const struct tt_gpack *p, const unsigned char id[20])
{
	uint32_t pos = tt_gpack_lower_bound(p, id);
	return pos < p->count && memcmp(p->ids + (size_t)pos * 20, id, 20) == 0 ? (long)pos : -1;
}

static int offset_of(const struct tt_gpack *p, uint32_t pos, uint64_t *off)
{
	uint32_t o = be32(p->off32 + (size_t)pos * 4);

	if (o & 0x80000000u) {
		size_t i = o & 0x7fffffffu;
		if (i >= p->n_off64)
			return damaged(p, "bad large offset");
		const unsigned char *q = p->off64 + i * 8;
		*off = (uint64_t)be32(q) << 32 | be32(q + 4);
	} else {
		*off = o;
	}
	if (*off < 12 || *off >= p->pack_len - 20)
		return damaged(p, "object offset out of range");
	return 0;
}

/* Pack entries are whole zlib streams whose inflated size the entry
 * header gives: libdeflate inflates such a buffer in one call, with the
 * same checks as zlib (the stream's header and its adler32), in half of
 * zlib's instructions for the small objects a history walk reads (trees,
 * commits, manifests of a few hundred bytes), and its decompressor keeps
 * no state between calls. */
struct tt_ginflater {
	pthread_mutex_t mu;
	struct libdeflate_decompressor *d; /* made on first use */
};

struct tt_ginflater *tt_ginflater_new(void)
{
	struct tt_ginflater *f = calloc(1, sizeof *f);
	if (f)
		pthread_mutex_init(&f->mu, NULL);
	return f;
}

void tt_ginflater_free(struct tt_ginflater *f)
{
	if (!f)
		return;
	if (f->d)
		libdeflate_free_decompressor(f->d);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* inflate_whole's returns besides libdeflate's own. */
#define NO_STREAM (-100)

/* Inflate one whole zlib stream from in[0..avail) into out[0..cap):
 * libdeflate's result (or NO_STREAM), *got the bytes made. On the kept
 * decompressor when it is free, else on one of its own. */
static int inflate_whole(struct tt_ginflater *f, const unsigned char *in, size_t avail, unsigned char *out,
                         size_t cap, size_t *got)
{
	struct libdeflate_decompressor *d;
	int kept = f && pthread_mutex_trylock(&f->mu) == 0;

	if (kept) {
		if (!f->d)
			f->d = libdeflate_alloc_decompressor();
		d = f->d;
	} else {
		d = libdeflate_alloc_decompressor();
	}
	if (!d) {
		if (kept)
			pthread_mutex_unlock(&f->mu);
		return NO_STREAM;
	}
	size_t used = 0;
	*got = 0;
	int rc = (int)libdeflate_zlib_decompress_ex(d, in, avail, out, cap, &used, got);
	if (kept)
		pthread_mutex_unlock(&f->mu);
	else
		libdeflate_free_decompressor(d);
	return rc;
}

/* Inflate exactly `size` bytes of zlib data starting at pack offset `at`. */
static int inflate_at(struct tt_godb *db, const struct tt_gpack *p, uint64_t at, size_t size, unsigned char **out)
{
	size_t avail = p->pack_len - 20 - (size_t)at;
	/* deflate expands at most 1032:1: a header declaring more than the rest
	 * of the pack can inflate to is damage, refused before allocating it */
	if (size / TT_ZLIB_MAX_RATIO > avail)
		return damaged(p, "object declares a size larger than its data can hold");
	unsigned char *buf = malloc(size + 1);
	size_t got = 0;
	int zrc;

	if (!buf)
		return tether_error_set(TETHER_ERROR, "out of memory");
	/* one spare byte: more output than declared is damage */
	zrc = inflate_whole(db ? tt_godb_inflater(db) : NULL, p->pack + at, avail, buf, size + 1, &got);
	if (zrc == NO_STREAM) {
		free(buf);
		return tether_error_set(TETHER_ERROR, "out of memory");
	}
	if (zrc != LIBDEFLATE_SUCCESS || got != size) {
		free(buf);
		return damaged(p, "object data does not inflate to its size");
	}
	buf[size] = '\0';
	*out = buf;
	return 0;
}

/* One delta of a chain: its pack and where its zlib data starts. */
struct chain_link {
	const struct tt_gpack *p;
	uint64_t entry_at, data_at; /* the entry, and its delta's zlib data */
	size_t size;
};

/* Parse the entry header at `off`: its type, declared size, and where what
 * follows the header starts. */
static int entry_header(const struct tt_gpack *p, uint64_t off, int *type, size_t *size, const unsigned char **after)
{
	const unsigned char *q = p->pack + off, *end = p->pack + p->pack_len - 20;
	unsigned c = *q++;
	uint64_t s = c & 15;
	int shift = 4;

	while (c & 0x80) {
		if (q >= end || shift > 57)
			return damaged(p, "bad object header");
		c = *q++;
		s |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	}
	if (s > (uint64_t)SIZE_MAX / 2)
		return damaged(p, "object too large");
	*type = (c = p->pack[off]) >> 4 & 7;
	*size = (size_t)s;
	*after = q;
	return 0;
}

/* Read the entry at `off`, resolving its chain of deltas. The chain is
 * walked down to its base first, iteratively (a hostile pack's chain can be
 * as deep as TT_GPACK_MAX_DEPTH allows, within a pack or through REF deltas
 * across packs, and a recursion that deep overflows the stack), then the
 * deltas are applied from the base up. */
static int read_at(struct tt_godb *db, const struct tt_gpack *p, uint64_t off, enum tt_gobj_type *type,
                   unsigned char **data, size_t *len)
{
	struct chain_link *chain = NULL;
	size_t n = 0, cap = 0;
	unsigned char *base = NULL;
	size_t base_len = 0;
	int rc;

	for (;;) {
		const unsigned char *q = NULL, *end = p->pack + p->pack_len - 20;
		int t = 0;
		size_t size = 0;
		/* an entry resolved by an earlier read ends the chain here */
		if (tt_gcache_get(tt_godb_cache(db), p, off, type, &base, &base_len)) {
			rc = 0;
			break;
		}
		if ((rc = entry_header(p, off, &t, &size, &q)) < 0)
			goto out;
		if (t >= 1 && t <= 4) {
			*type = (enum tt_gobj_type)t;
			base_len = size;
			rc = inflate_at(db, p, (uint64_t)(q - p->pack), size, &base);
			/* the bottom of a chain: the base the next read of its chain needs */
			if (rc == 0 && n)
				tt_gcache_put(tt_godb_cache(db), p, off, *type, base, base_len);
			break;
		}
		if (t != 6 && t != 7) {
			rc = damaged(p, "unknown object type");
			goto out;
		}
		if (n >= TT_GPACK_MAX_DEPTH) {
			rc = damaged(p, "delta chain too deep");
			goto out;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			struct chain_link *grown = realloc(chain, cap * sizeof *grown);
			if (!grown) {
				rc = tether_error_set(TETHER_ERROR, "out of memory");
				goto out;
			}
			chain = grown;
		}
		if (t == 6) {
			uint64_t back;
			unsigned c;
			/* the message is made only for a bad offset: this runs for
			 * every delta entry read */
			if (q >= end)
				goto bad_offset;
			c = *q++;
			back = c & 0x7f;
			while (c & 0x80) {
				if (q >= end || back > (UINT64_MAX >> 8))
					goto bad_offset;
				c = *q++;
				back = ((back + 1) << 7) | (c & 0x7f);
			}
			if (back == 0 || back > off - 12) {
				rc = damaged(p, "delta base out of range");
				goto out;
			}
			chain[n++] = (struct chain_link){ p, off, (uint64_t)(q - p->pack), size };
			off -= back;
			continue;
		}
		if (end - q < 20) {
			rc = damaged(p, "bad delta base id");
			goto out;
		}
		const unsigned char *base_id = q;
		chain[n++] = (struct chain_link){ p, off, (uint64_t)(q + 20 - p->pack), size };
		const struct tt_gpack *bp = p;
		long pos = tt_gpack_find(p, base_id);
		if (pos < 0) {
			uint32_t upos;
			if ((rc = tt_godb_locate(db, base_id, &bp, &upos)) < 0)
				goto out;
			if (rc == 1) {
				/* a loose base ends the chain */
				rc = tt_godb_read_loose(db, base_id, type, &base, &base_len);
				break;
			}
			pos = upos;
		}
		p = bp;
		if ((rc = offset_of(p, (uint32_t)pos, &off)) < 0)
			goto out;
	}
	while (rc == 0 && n > 0) {
		const struct chain_link *l = &chain[--n];
		unsigned char *delta = NULL, *next = NULL;
		size_t next_len = 0;
		rc = inflate_at(db, l->p, l->data_at, l->size, &delta);
		if (rc == 0)
			rc = tt_gdelta_apply(base, base_len, delta, l->size, &next, &next_len);
		free(delta);
		free(base);
		base = next;
		base_len = next_len;
		if (rc == 0)
			tt_gcache_put(tt_godb_cache(db), l->p, l->entry_at, *type, base, base_len);
	}
	goto out;
bad_offset:
	rc = damaged(p, "bad delta offset");
out:
	free(chain);
	if (rc < 0) {
		free(base);
		return rc;
	}
	*data = base;
	*len = base_len;
	return 0;
}

int tt_gpack_read(struct tt_godb *db, const struct tt_gpack *p, uint32_t pos, enum tt_gobj_type *type,
                  unsigned char **data, size_t *len)
{
	uint64_t off = 0;
	int rc = offset_of(p, pos, &off);
	return rc < 0 ? rc : read_at(db, p, off, type, data, len);
}

static int delta_size(const unsigned char **q, const unsigned char *end, size_t *out)
{
	uint64_t v = 0;
	int shift = 0;
	unsigned c;

	do {
		if (*q >= end || shift > 57)
			return -1;
		c = *(*q)++;
		v |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	} while (c & 0x80);
	if (v > (uint64_t)SIZE_MAX / 2)
		return -1;
	*out = (size_t)v;
	return 0;
}

int tt_gdelta_apply(const unsigned char *base, size_t base_len, const unsigned char *delta,
                    size_t delta_len, unsigned char **out, size_t *out_len)
{
	const unsigned char *q = delta, *end = delta + delta_len;
	size_t src, dst, at = 0;
	unsigned char *buf;

	if (delta_size(&q, end, &src) < 0 || delta_size(&q, end, &dst) < 0 || src != base_len)
		return tether_error_set(TETHER_ERROR, "malformed git delta: bad header");
	/* Each instruction takes at least a byte and makes at most 127 bytes (an
	 * insert) or a copy of the base (at most 0xffffff of it): a declared
	 * result no instruction stream of this length can make is refused
	 * before it is allocated. */
	size_t per_byte = base_len > 0xffffff ? 0xffffff : base_len < 127 ? 127 : base_len;
	if (dst / per_byte > (size_t)(end - q))
		return tether_error_set(TETHER_ERROR, "malformed git delta: declares a result larger than its %zu bytes can make",
		                        delta_len);
	if (!(buf = malloc(dst + 1)))
		return tether_error_set(TETHER_ERROR, "out of memory");
	while (q < end) {
		unsigned op = *q++;
		if (op & 0x80) {
			size_t off = 0, n = 0;
			for (int i = 0; i < 4; i++)
				if (op & (1u << i)) {
					if (q >= end)
						goto bad;
					off |= (size_t)*q++ << (8 * i);
				}
			for (int i = 0; i < 3; i++)
				if (op & (0x10u << i)) {
					if (q >= end)
						goto bad;
					n |= (size_t)*q++ << (8 * i);
				}
			if (n == 0)
				n = 0x10000;
			if (off > base_len || n > base_len - off || n > dst - at)
				goto bad;
			memcpy(buf + at, base + off, n);
			at += n;
		} else if (op) {
			if (op > (size_t)(end - q) || op > dst - at)
				goto bad;
			memcpy(buf + at, q, op);
			q += op;
			at += op;
		} else {
			goto bad;
		}
	}
	if (at != dst)
		goto bad;
	buf[dst] = '\0';
	*out = buf;
	*out_len = dst;
	return 0;
bad:
	free(buf);
	return tether_error_set(TETHER_ERROR, "malformed git delta");
}
