/* export.c: the dataset's history as the tables of export_tables.h. */
#ifndef TETHER_CORE_EXPORT_H
#define TETHER_CORE_EXPORT_H

#include "core/engine.h"
#include "core/export_tables.h"

struct tt_export_data {
	struct tt_export_table t[TT_T_COUNT];
	void *own; /* the cells, their strings, and what the rows are made of */
};

/* The tables of the commits reachable from any ref (nrevs 0) or from the
 * given revisions, with the refs naming them and meta. */
int tt_export_collect(struct tether_repo *repo, const char *const *revs, size_t nrevs, struct tt_export_data *out);
void tt_export_data_free(struct tt_export_data *d);

/* export_run.c: tether-sql.so (files, SQLite) or, for postgres,
 * tether-sql-pg.so, loaded on first use; NULL with the error set. */
const struct tt_sql_module *tt_sql_module(int postgres);

#endif
