/* The two statements the SQL catalog runs, on SQLite (libsqlite3) or
 * Postgres (libpq), against the iceberg_tables table pyiceberg's
 * SqlCatalog and Java's JdbcCatalog share. Both schemas are read: v1's
 * iceberg_type column, when there, limits the rows to tables, as those
 * catalogs do. */
#ifndef TETHER_ICEBERG_SQL_DB_H
#define TETHER_ICEBERG_SQL_DB_H

struct ib_db;

/* uri: sqlite:///ABSOLUTE-PATH (SQLAlchemy's spelling: four slashes
 * before an absolute path) or postgresql[+driver]://...; password (may be
 * NULL) overrides the URI's, and libpq's PGPASSWORD and ~/.pgpass apply.
 * *display: the URI without credentials, for messages (malloc'd). */
int ib_db_open(const char *uri, const char *password, struct ib_db **out, char **display);
void ib_db_close(struct ib_db *db);
/* The table's metadata_location; *found = 0 when there is no such row. */
int ib_db_location(struct ib_db *db, const char *catalog, const char *ns, const char *table, char **location,
                   int *found);
/* UPDATE ... SET metadata_location = new, previous_metadata_location = old
 * WHERE ... AND metadata_location = old: *swapped = the row moved. */
int ib_db_swap(struct ib_db *db, const char *catalog, const char *ns, const char *table, const char *old_location,
               const char *new_location, int *swapped);

#endif
