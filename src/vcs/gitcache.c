/* See gitcache.h. A direct-mapped table: a slot holds one entry, a new
 * entry for a taken slot replaces it, and entries are dropped, oldest
 * first, while the total is over the budget. */
#include "vcs/gitcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 1024

struct slot {
	const void *pack;
	uint64_t off;
	enum tt_gobj_type type;
	unsigned char *data; /* NULL: empty */
	size_t len;
	uint64_t age;
};

struct tt_gcache {
	pthread_mutex_t mu;
	struct slot slots[SLOTS];
	size_t bytes, budget;
	uint64_t clock;
};

struct tt_gcache *tt_gcache_new(size_t budget)
{
	struct tt_gcache *c = calloc(1, sizeof *c);
	if (c) {
		pthread_mutex_init(&c->mu, NULL);
		c->budget = budget;
	}
	return c;
}

static void drop(struct tt_gcache *c, struct slot *s)
{
	c->bytes -= s->len;
	free(s->data);
	s->data = NULL;
}

void tt_gcache_free(struct tt_gcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < SLOTS; i++)
		free(c->slots[i].data);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static struct slot *slot_of(struct tt_gcache *c, const void *pack, uint64_t off)
{
	uint64_t h = (uint64_t)(uintptr_t)pack * 0x9e3779b97f4a7c15ull ^ off * 0xff51afd7ed558ccdull;
	return &c->slots[(h >> 32) % SLOTS];
}

int tt_gcache_get(struct tt_gcache *c, const void *pack, uint64_t off, enum tt_gobj_type *type,
                  unsigned char **data, size_t *len)
{
	int hit = 0;
	pthread_mutex_lock(&c->mu);
	struct slot *s = slot_of(c, pack, off);
	if (s->data && s->pack == pack && s->off == off && (*data = malloc(s->len + 1))) {
		memcpy(*data, s->data, s->len + 1);
		*type = s->type;
		*len = s->len;
		s->age = ++c->clock;
		hit = 1;
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void tt_gcache_put(struct tt_gcache *c, const void *pack, uint64_t off, enum tt_gobj_type type,
                   const unsigned char *data, size_t len)
{
	if (len > c->budget / 4)
		return;
	unsigned char *copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, data, len);
	copy[len] = '\0';
	pthread_mutex_lock(&c->mu);
	struct slot *s = slot_of(c, pack, off);
	if (s->data)
		drop(c, s);
	*s = (struct slot){pack, off, type, copy, len, ++c->clock};
	c->bytes += len;
	while (c->bytes > c->budget) {
		struct slot *oldest = NULL;
		for (size_t i = 0; i < SLOTS; i++)
			if (c->slots[i].data && c->slots[i].data != copy && (!oldest || c->slots[i].age < oldest->age))
				oldest = &c->slots[i];
		if (!oldest)
			break;
		drop(c, oldest);
	}
	pthread_mutex_unlock(&c->mu);
}
