/* An Iceberg catalog, as the Iceberg backend sees it: load a table's current
 * metadata, and commit a change to it as the REST protocol spells one, a
 * list of requirements and a list of updates (the REST spec's
 * TableRequirement and TableUpdate JSON objects: "assert-ref-snapshot-id",
 * "assert-table-uuid", "set-snapshot-ref", "remove-snapshot-ref", ...).
 *
 * Two implementations:
 *   catalog_rest.c  the REST catalog protocol over the HTTP client
 *                   (src/store/http): the server checks the requirements and
 *                   applies the updates; 409 is "refused, the head moved".
 *   catalog_sql.c   the SQL catalog pyiceberg's SqlCatalog and Java's
 *                   JdbcCatalog share (table iceberg_tables), on SQLite and
 *                   Postgres: tether checks the requirements against the
 *                   metadata it loaded, applies the updates itself
 *                   (metadata_apply.c), writes the next metadata JSON file
 *                   and moves metadata_location with a conditional UPDATE.
 *
 * Every function returns 0 or a negative TETHER_E* code with the message
 * set (tether_error_set), naming the catalog and the table. */
#ifndef TETHER_ICEBERG_CATALOG_H
#define TETHER_ICEBERG_CATALOG_H

#include <jansson.h>

struct ib_catalog;

struct ib_catalog_ops {
	const char *type; /* "rest", "sql" */
	/* The table's current metadata (the table-metadata JSON object, new
	 * reference) and where it is stored (malloc'd; may be NULL for a REST
	 * catalog that does not say). A missing table is TETHER_ENOTFOUND. */
	int (*load)(struct ib_catalog *c, const char *ns, const char *table, json_t **metadata,
	            char **metadata_location);
	/* Commit `updates` if every one of `requirements` holds; *metadata
	 * (optional) receives the table's metadata after the commit. A failed
	 * requirement is TETHER_EREFUSED with the catalog's reason; nothing is
	 * changed then. */
	int (*commit)(struct ib_catalog *c, const char *ns, const char *table, json_t *requirements,
	              json_t *updates, json_t **metadata);
	void (*close)(struct ib_catalog *c);
};

struct ib_catalog {
	const struct ib_catalog_ops *ops;
	char *name; /* the catalog_name of the locator, for messages */
};

#endif
