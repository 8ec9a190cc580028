/* export_cells.h: an arena of strings, and tables of cells. */
#include "core/export_cells.h"

#include <stdlib.h>
#include <string.h>

/* Strings go into blocks of BLOCK bytes; a longer one gets a block of its
 * own. */
#define BLOCK (256u << 10)

struct block {
	struct block *next;
	size_t used, cap;
	char bytes[];
};

struct tt_arena {
	struct block *head; /* the block being filled, first */
};

struct tt_arena *tt_arena_new(void)
{
	struct tt_arena *a = calloc(1, sizeof *a);
	if (!a)
		abort();
	return a;
}

void tt_arena_free(struct tt_arena *a)
{
	if (!a)
		return;
	for (struct block *b = a->head, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

const char *tt_arena_strn(struct tt_arena *a, const char *s, size_t len)
{
	struct block *b = a->head;
	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > BLOCK ? len + 1 : BLOCK;
		struct block *nb = malloc(sizeof *nb + cap);
		if (!nb)
			abort();
		nb->used = 0;
		nb->cap = cap;
		/* a string too big for a block goes behind the current one,
		 * which still has room for the small ones after it */
		if (b && cap > BLOCK) {
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			a->head = nb;
		}
		b = nb;
	}
	char *p = b->bytes + b->used;
	memcpy(p, s, len);
	p[len] = '\0';
	b->used += len + 1;
	return p;
}

struct tt_cell tt_cell_textn(struct tt_arena *a, const char *s, size_t len)
{
	if (!s)
		return tt_cell_null();
	return (struct tt_cell){ .s = tt_arena_strn(a, s, len), .len = len };
}

struct tt_cell tt_cell_text(struct tt_arena *a, const char *s)
{
	return tt_cell_textn(a, s, s ? strlen(s) : 0);
}

struct tt_cell tt_cell_kept(const char *s)
{
	if (!s)
		return tt_cell_null();
	return (struct tt_cell){ .s = s, .len = strlen(s) };
}

struct tt_cell tt_cell_int(int64_t i)
{
	return (struct tt_cell){ .i = i };
}

struct tt_cell tt_cell_bool(int b)
{
	return (struct tt_cell){ .i = b ? 1 : 0 };
}

struct tt_cell tt_cell_null(void)
{
	return (struct tt_cell){ .null = 1 };
}

struct tt_cell *tt_cell_rows_add(struct tt_cell_rows *t)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct tt_cell *v = realloc(t->v, cap * t->ncols * sizeof *v);
		if (!v)
			abort();
		t->v = v;
		t->cap = cap;
	}
	return t->v + t->n++ * t->ncols;
}

static int text_cmp(const struct tt_cell *x, const struct tt_cell *y)
{
	if (x->null || y->null)
		return y->null - x->null;
	return strcmp(x->s, y->s);
}

/* qsort's elements are whole rows; the comparator needs only their first
 * two cells, which are at the same place whatever the width. */
static int by_first_two(const void *a, const void *b)
{
	const struct tt_cell *x = a, *y = b;
	int c = text_cmp(&x[0], &y[0]);
	return c ? c : text_cmp(&x[1], &y[1]);
}

static int by_first(const void *a, const void *b)
{
	return text_cmp(a, b);
}

void tt_cell_rows_sort(struct tt_cell_rows *t)
{
	if (t->n > 1)
		qsort(t->v, t->n, t->ncols * sizeof *t->v, t->ncols > 1 ? by_first_two : by_first);
}

void tt_cell_rows_free(struct tt_cell_rows *t)
{
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}

void tt_cell_rows_row(const struct tt_export_table *t, size_t r, struct tt_cell *out)
{
	const struct tt_cell_rows *rows = t->src;
	memcpy(out, rows->v + r * rows->ncols, rows->ncols * sizeof *out);
}
