/* Flatbuffers: treat the input as a buffer of unknown schema and read
 * every slot of every table reachable from the root as every kind of
 * field, following sub-tables and vectors of tables, so every path of the
 * reader meets hostile bytes. Whatever it returns must lie inside the
 * input. */
#include "fuzz.h"

#include "format/flatbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 8
#define MAX_SLOTS 24
#define MAX_ELEMS 16

struct walk {
	const uint8_t *buf;
	size_t len;
	unsigned tables_left; /* a DAG of shared tables could otherwise take forever */
};

static void inside(const struct walk *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	FUZZ_ASSERT(b >= w->buf && b <= w->buf + w->len && n <= (size_t)(w->buf + w->len - b));
}

static void walk_table(struct walk *w, const struct fb_table *t, int depth);

static void walk_vector(struct walk *w, const struct fb_table *t, unsigned slot, size_t size, size_t align,
                        int depth)
{
	struct fb_vec v;
	int present;
	if (fb_vector(t, slot, size, align, &v, &present) != 0 || !present) {
		FUZZ_ASSERT(v.n == 0 || present);
		return;
	}
	if (v.n)
		inside(w, fb_vec_elem(&v, v.n - 1), size);
	FUZZ_ASSERT(fb_vec_elem(&v, v.n) == NULL);
	if (size != 4)
		return;
	for (uint32_t i = 0; i < v.n && i < MAX_ELEMS; i++) {
		struct fb_table sub;
		const char *s;
		uint32_t n;
		if (fb_vec_table(&v, i, &sub) == 0)
			walk_table(w, &sub, depth + 1);
		if (fb_vec_string(&v, i, &s, &n) == 0)
			inside(w, s, n);
	}
	struct fb_table sub;
	FUZZ_ASSERT(fb_vec_table(&v, v.n, &sub) != 0);
}

static void walk_slot(struct walk *w, const struct fb_table *t, unsigned slot, int depth)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	const uint8_t *p;
	const char *s;
	uint32_t n;
	struct fb_table sub;
	int present;

	int has = fb_has(t, slot);
	if (fb_u8(t, slot, 7, &u8) == 0 && !has)
		FUZZ_ASSERT(u8 == 7);
	(void)fb_u16(t, slot, 0, &u16);
	(void)fb_u32(t, slot, 0, &u32);
	(void)fb_i32(t, slot, -1, &i32);
	(void)fb_u64(t, slot, 0, &u64);
	static const size_t structs[][2] = {{12, 1}, {8, 1}, {8, 8}, {16, 4}, {3, 2}};
	for (size_t k = 0; k < sizeof structs / sizeof structs[0]; k++)
		if (fb_struct(t, slot, structs[k][0], structs[k][1], &p) == 0 && p)
			inside(w, p, structs[k][0]);
	if (fb_string(t, slot, &s, &n) == 0 && s)
		inside(w, s, n);
	if (fb_table(t, slot, &sub, &present) == 0 && present)
		walk_table(w, &sub, depth + 1);
	walk_vector(w, t, slot, 1, 1, depth);
	walk_vector(w, t, slot, 2, 2, depth);
	walk_vector(w, t, slot, 4, 4, depth);
	walk_vector(w, t, slot, 8, 8, depth);
	walk_vector(w, t, slot, 12, 1, depth);
}

static void walk_table(struct walk *w, const struct fb_table *t, int depth)
{
	if (depth > MAX_DEPTH || w->tables_left == 0)
		return;
	w->tables_left--;
	inside(w, t->buf + t->pos, t->size);
	inside(w, t->buf + t->vt, t->vt_len);
	unsigned slots = fb_slots(t);
	FUZZ_ASSERT(fb_used_slots(t) <= slots);
	unsigned limit = slots < MAX_SLOTS ? slots + 1 : MAX_SLOTS;
	for (unsigned slot = 0; slot < limit; slot++)
		walk_slot(w, t, slot, depth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct walk w = {data, size, 256};
	struct fb_table root;
	(void)fb_has_identifier(data, size, "Ichk");
	if (fb_root(data, size, &root) == 0)
		walk_table(&w, &root, 0);
	return 0;
}
