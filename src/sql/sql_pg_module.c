/* tether-sql-pg.so: `tether publish` and import's reader of Postgres, on
 * libpq (core/export_tables.h), apart from tether-sql.so because libpq
 * brings two dozen libraries (TLS, Kerberos, LDAP) an export to a file
 * does not need. */
#include "sql/sql.h"

#include <tether/backend.h>

static int pg_query(const char *source, const char *password, const char *query, struct tt_sql_rows *out)
{
	return tt_sql_query_pg(source, password, query, out);
}

TETHER_API const struct tt_sql_module tether_sql_module = {
	.version = TT_SQL_MODULE_VERSION,
	.size = sizeof(struct tt_sql_module),
	.publish = tt_sql_publish_pg,
	.query = pg_query,
};
