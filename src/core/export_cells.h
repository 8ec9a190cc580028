/* The cells of export's tables (export_tables.h) and the strings they
 * point at, held in one arena that the export frees at once: a history of
 * thousands of commits makes hundreds of thousands of cells, most of them
 * the same few strings (a manifest's cells are made once and shared by
 * every commit holding it), so nothing is allocated or freed per cell. */
#ifndef TETHER_CORE_EXPORT_CELLS_H
#define TETHER_CORE_EXPORT_CELLS_H

#include "core/export_tables.h"

#include <stddef.h>
#include <stdint.h>

struct tt_arena; /* strings, freed together */

struct tt_arena *tt_arena_new(void);
void tt_arena_free(struct tt_arena *a);
/* A NUL-terminated copy of s[0..len) in the arena. */
const char *tt_arena_strn(struct tt_arena *a, const char *s, size_t len);

/* Cells. Text is copied into the arena; NULL text is a null cell. */
struct tt_cell tt_cell_text(struct tt_arena *a, const char *s);
struct tt_cell tt_cell_textn(struct tt_arena *a, const char *s, size_t len);
/* Text already in the arena (or living as long as it): not copied. */
struct tt_cell tt_cell_kept(const char *s);
struct tt_cell tt_cell_int(int64_t i);
struct tt_cell tt_cell_bool(int b);
struct tt_cell tt_cell_null(void);

/* A table's rows, ncols cells each, in one growing array. */
struct tt_cell_rows {
	struct tt_cell *v;
	size_t n, cap; /* rows */
	size_t ncols;
};

/* Room for one more row at the end: its ncols cells, to be filled. */
struct tt_cell *tt_cell_rows_add(struct tt_cell_rows *t);
/* Rows by their first two cells' text (null first), as the tables are
 * ordered: by primary key, which is at most two text columns. */
void tt_cell_rows_sort(struct tt_cell_rows *t);
void tt_cell_rows_free(struct tt_cell_rows *t);

/* tt_export_table.row for a table whose src is a struct tt_cell_rows. */
void tt_cell_rows_row(const struct tt_export_table *t, size_t r, struct tt_cell *out);

#endif
