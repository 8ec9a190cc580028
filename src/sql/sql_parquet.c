/* Parquet: a directory of one file per table (<table>.parquet), written by
 * format/parquet.h's writer: TEXT as STRING, INT as INT64, BOOL as
 * BOOLEAN, nullable columns OPTIONAL. */
#include "sql/sql.h"

#include <tether/backend.h>

#include "format/parquet.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static enum tt_parquet_type parquet_type(enum tt_col_type t)
{
	return t == TT_COL_TEXT ? TT_PARQUET_STRING : t == TT_COL_INT ? TT_PARQUET_INT64 : TT_PARQUET_BOOLEAN;
}

static int write_table(const struct tt_export_table *t, const char *file)
{
	struct tt_parquet_column *cols = calloc(t->ncols, sizeof *cols);
	struct tt_parquet_value *vals = calloc(t->ncols, sizeof *vals);
	struct tt_cell *cells = calloc(t->ncols, sizeof *cells);
	if (!cols || !vals || !cells)
		abort();
	for (size_t c = 0; c < t->ncols; c++)
		cols[c] = (struct tt_parquet_column){ t->cols[c].name, parquet_type(t->cols[c].type), t->cols[c].nullable };
	int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	struct tt_parquet_writer *w = NULL;
	/* Row groups of the table's row count: as many as the default gives
	 * (only the writer's size limit splits a table), and the writer knows
	 * how many rows to make room for. */
	int rc = fd < 0 ? tt_sql_io_error(file, "cannot create")
	                : tt_parquet_writer_new(fd, file, cols, t->ncols, t->nrows, &w);
	for (size_t r = 0; !rc && r < t->nrows; r++) {
		t->row(t, r, cells);
		for (size_t c = 0; c < t->ncols; c++) {
			const struct tt_cell *v = &cells[c];
			struct tt_parquet_value *p = &vals[c];
			p->is_null = v->null;
			if (p->is_null)
				continue;
			if (t->cols[c].type == TT_COL_INT)
				p->v.i64 = v->i;
			else if (t->cols[c].type == TT_COL_BOOL)
				p->v.b = v->i != 0;
			else {
				p->v.str.s = v->s;
				p->v.str.len = v->len;
			}
		}
		rc = tt_parquet_writer_add(w, vals);
	}
	if (w) {
		if (rc)
			tt_parquet_writer_free(w);
		else
			rc = tt_parquet_writer_finish(w);
	}
	if (fd >= 0 && close(fd) != 0 && !rc)
		rc = tt_sql_io_error(file, "cannot write");
	free(cols);
	free(vals);
	free(cells);
	return rc;
}

int tt_sql_write_parquet(const struct tt_export_table *tables, size_t n, const char *path)
{
	struct tt_sql_dir d;
	int rc = tt_sql_dir_begin(&d, path, tables, n, ".parquet");
	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < n; i++) {
		char *file = tt_sql_dir_file(&d, tables[i].name, ".parquet");
		rc = write_table(&tables[i], file);
		free(file);
	}
	return tt_sql_dir_end(&d, rc);
}
