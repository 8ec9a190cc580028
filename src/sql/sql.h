/* tether-sql.so's parts (core/export_tables.h is its interface). */
#ifndef TETHER_SQL_SQL_H
#define TETHER_SQL_SQL_H

#include "core/export_tables.h"

#include <stdio.h>

/* sql_dir.c: a directory export written into a temporary directory beside
 * `path`, then put in its place. An existing `path` is replaced only when
 * it is a directory holding nothing but files named "<table><ext>" (an
 * earlier export); anything else is refused, never deleted. */
struct tt_sql_dir {
	char *path, *tmp;
};
int tt_sql_dir_begin(struct tt_sql_dir *d, const char *path, const struct tt_export_table *tables, size_t n,
                     const char *ext);
/* The file of one table in the temporary directory (malloc'd). */
char *tt_sql_dir_file(const struct tt_sql_dir *d, const char *table, const char *ext);
/* rc 0: put the directory in place; else remove it. Returns rc or the
 * error of the move. */
int tt_sql_dir_end(struct tt_sql_dir *d, int rc);

/* sql_text.c */
int tt_sql_write_csv(const struct tt_export_table *tables, size_t n, const char *path);
int tt_sql_write_jsonl(const struct tt_export_table *tables, size_t n, const char *path);
/* sql_sqlite.c */
int tt_sql_write_sqlite(const struct tt_export_table *tables, size_t n, const char *path);
int tt_sql_query_sqlite(const char *path, const char *query, struct tt_sql_rows *out);
/* sql_parquet.c */
int tt_sql_write_parquet(const struct tt_export_table *tables, size_t n, const char *path);
/* sql_pg.c */
int tt_sql_publish_pg(const struct tt_sql_publish *p, json_t **report);
int tt_sql_query_pg(const char *url, const char *password, const char *query, struct tt_sql_rows *out);

/* A stdio stream's error as the error slot's: "PATH: what". */
int tt_sql_io_error(const char *path, const char *what);

#endif
