/* tether-sql.so: the writers of `tether export` and import's reader of
 * SQLite files (core/export_tables.h), in a module of their own so that
 * libsqlite3, libzstd and libsnappy are loaded by these commands only.
 * Postgres is tether-sql-pg.so's (sql_pg_module.c). */
#include "sql/sql.h"

#include <tether/backend.h>

#include <string.h>

static int sql_write(const struct tt_export_table *tables, size_t n, const char *format, const char *path)
{
	if (strcmp(format, "sqlite") == 0)
		return tt_sql_write_sqlite(tables, n, path);
	if (strcmp(format, "csv") == 0)
		return tt_sql_write_csv(tables, n, path);
	if (strcmp(format, "parquet") == 0)
		return tt_sql_write_parquet(tables, n, path);
	if (strcmp(format, "jsonl") == 0)
		return tt_sql_write_jsonl(tables, n, path);
	return tether_error_set(TETHER_EUSAGE, "unknown export format '%s'", format);
}

static int sql_query(const char *source, const char *password, const char *query, struct tt_sql_rows *out)
{
	(void)password;
	return tt_sql_query_sqlite(source, query, out);
}

TETHER_API const struct tt_sql_module tether_sql_module = {
	.version = TT_SQL_MODULE_VERSION,
	.size = sizeof(struct tt_sql_module),
	.write = sql_write,
	.query = sql_query,
};
