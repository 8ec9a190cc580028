/* include/tether/listing.h's hash cache: core/hashcache.c's file format
 * and matching rule behind a handle that gathers what the next save keeps
 * (the records found by lookup and those recorded). */
#include <tether/backend.h>
#include <tether/listing.h>

#include "core/hashcache.h"

#include <stdlib.h>
#include <string.h>

struct kept {
	char *path;
	size_t path_len;
	size_t seq; /* the order kept in: of two records of one path, the later wins */
	struct tt_hashcache_item item;
};

struct tether_hashcache {
	char *file;
	struct tt_hashcache *cache;
	struct kept *kept;
	size_t n, cap;
};

struct tether_hashcache *tether_hashcache_open(const char *cache_dir, const char *key)
{
	struct tether_hashcache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->file = tt_hashcache_file(cache_dir, key);
	c->cache = c->file ? tt_hashcache_load(c->file) : NULL;
	if (!c->cache) {
		free(c->file);
		free(c);
		return NULL;
	}
	return c;
}

void tether_hashcache_close(struct tether_hashcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->kept[i].path);
	free(c->kept);
	tt_hashcache_free(c->cache);
	free(c->file);
	free(c);
}

int64_t tether_hashcache_now_ns(void)
{
	return tt_hashcache_now_ns();
}

static struct tt_hashcache_stat stat_of(const struct tether_file_stamp *st)
{
	return (struct tt_hashcache_stat){st->size, st->mtime_ns, st->ctime_ns, st->inode};
}

static int keep(struct tether_hashcache *c, const char *path, size_t len, const struct tt_hashcache_stat *st,
                int64_t hashed_ns, const unsigned char sha256[32])
{
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct kept *n = realloc(c->kept, ncap * sizeof *n);
		if (!n)
			return tether_error_set(TETHER_ERROR, "hash cache: out of memory");
		c->kept = n;
		c->cap = ncap;
	}
	struct kept *k = &c->kept[c->n];
	k->path = malloc(len + 1);
	if (!k->path)
		return tether_error_set(TETHER_ERROR, "hash cache: out of memory");
	memcpy(k->path, path, len);
	k->path[len] = '\0';
	k->path_len = len;
	k->seq = c->n;
	k->item = (struct tt_hashcache_item){.path = k->path, .path_len = len, .st = *st, .hashed_ns = hashed_ns};
	memcpy(k->item.sha256, sha256, 32);
	c->n++;
	return 0;
}

int tether_hashcache_lookup(struct tether_hashcache *c, const char *path, size_t path_len,
                            const struct tether_file_stamp *st, unsigned char sha256[32])
{
	struct tt_hashcache_stat now = stat_of(st);
	const struct tt_hashcache_rec *rec = tt_hashcache_find(c->cache, path, path_len);
	if (!rec || !tt_hashcache_matches(rec, &now))
		return 0;
	memcpy(sha256, rec->sha256, 32);
	if (keep(c, path, path_len, &now, rec->hashed_ns, rec->sha256) != 0) {
		tether_error_clear(); /* the hit stands; the next save only forgets it */
	}
	return 1;
}

int tether_hashcache_record(struct tether_hashcache *c, const char *path, size_t path_len,
                            const struct tether_file_stamp *st, int64_t hashed_ns, const unsigned char sha256[32])
{
	struct tt_hashcache_stat s = stat_of(st);
	return keep(c, path, path_len, &s, hashed_ns, sha256);
}

static size_t dir_len(const struct kept *k)
{
	size_t n = k->path_len;
	while (n > 0 && k->path[n - 1] != '/')
		n--;
	return n;
}

/* The format's order: grouped by directory, by name within a group; one
 * path's records in the order they were kept. */
static int by_dir_then_name(const void *x, const void *y)
{
	const struct kept *a = x, *b = y;
	size_t da = dir_len(a), db = dir_len(b);
	int c = memcmp(a->path, b->path, da < db ? da : db);
	if (c == 0 && da != db)
		return da < db ? -1 : 1;
	if (c == 0)
		c = strcmp(a->path + da, b->path + db);
	if (c == 0)
		c = a->seq < b->seq ? -1 : a->seq > b->seq;
	return c;
}

static int kept_item(void *ud, size_t i, struct tt_hashcache_item *item)
{
	const struct tether_hashcache *c = ud;
	/* A path recorded twice: the later record wins, the earlier is left out. */
	if (i + 1 < c->n && strcmp(c->kept[i].path, c->kept[i + 1].path) == 0)
		return 0;
	*item = c->kept[i].item;
	return 1;
}

int tether_hashcache_save(struct tether_hashcache *c)
{
	qsort(c->kept, c->n, sizeof *c->kept, by_dir_then_name);
	return tt_hashcache_write(c->file, c->n, kept_item, c);
}
