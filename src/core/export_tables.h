/* The tables of `tether export` / `tether publish`, and the interface of the
 * modules that write them and read rows back for `tether import`:
 * tether-sql.so (SQLite, Parquet, CSV, JSON Lines; write and query) and
 * tether-sql-pg.so (Postgres; publish and query).
 *
 * The engine builds the tables (core/export.c) and hands each to the module
 * as a row source: nrows rows, row(t, r, cells) filling a row's cells in
 * column order, each a string, an integer, a boolean or null as its
 * column's type says. The cells' strings belong to the table and live as
 * long as it does: a module copies nothing it only passes on. (Rows are
 * not stored as such: the objects table, commits times objects, is made of
 * one cell for the commit and the cells its manifest gave once.) The
 * module only writes what it is given, so the schema below is the one
 * place the column names and types live (docs/CLI.md, "tether export",
 * documents them: they are stable; a change bumps
 * TT_EXPORT_SCHEMA_VERSION). The module is loaded on first use, so
 * libsqlite3, libpq and libzstd are never mapped by other commands. */
#ifndef TETHER_CORE_EXPORT_TABLES_H
#define TETHER_CORE_EXPORT_TABLES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define TT_EXPORT_SCHEMA_VERSION 1

enum tt_col_type {
	TT_COL_TEXT,
	TT_COL_INT,  /* 64-bit */
	TT_COL_BOOL,
};

struct tt_export_column {
	const char *name;
	enum tt_col_type type;
	int nullable;
};

/* One cell. TEXT: s (NUL-terminated, valid UTF-8, len bytes, no NUL
 * inside); INT: i; BOOL: i, 0 or 1. null: the cell is NULL (s is NULL). */
struct tt_cell {
	const char *s;
	size_t len;
	int64_t i;
	int null;
};

struct tt_export_table {
	const char *name;
	const struct tt_export_column *cols;
	size_t ncols;
	size_t nkey;  /* the primary key: the first nkey columns */
	size_t nrows; /* rows, in the order they are written */
	/* Row r (< nrows) into out[0..ncols). Cheap (no allocation), any
	 * order, any number of times. */
	void (*row)(const struct tt_export_table *t, size_t r, struct tt_cell *out);
	const void *src; /* row's */
};

enum {
	TT_T_COMMITS,
	TT_T_OBJECTS,
	TT_T_OBJECT_STATES,
	TT_T_REFS,
	TT_T_LISTINGS,
	TT_T_LISTING_ENTRIES,
	TT_T_META,
	TT_T_COUNT
};

/* What the module gets for publish: the tables, and for each table the
 * column that says which commit a row belongs to (NULL: the table is
 * replaced whole), so an incremental publish sends only new commits. */
struct tt_sql_publish {
	const struct tt_export_table *tables;
	size_t ntables;
	const char *url;      /* postgresql://... as given (may hold no password) */
	const char *schema;   /* the Postgres schema to write */
	const char *password; /* from .tether/secrets.toml, or NULL: libpq's own sources */
	const char *dataset;  /* the dataset id: a schema holds one dataset */
};

/* Rows read back for import: column names, and each row an array of
 * strings or nulls in that order. */
struct tt_sql_rows {
	json_t *columns;
	json_t *rows;
};

#define TT_SQL_MODULE_VERSION 2
struct tt_sql_module {
	uint32_t version; /* TT_SQL_MODULE_VERSION */
	uint32_t size;
	/* Write the tables to `path` in `format` ("sqlite", "parquet", "csv",
	 * "jsonl"): a SQLite file, or a directory of one file per table. The
	 * path is replaced whole or not at all. */
	int (*write)(const struct tt_export_table *tables, size_t n, const char *format, const char *path);
	/* The members a module does not serve are NULL. */
	/* Upsert the tables into Postgres in one transaction. `known` (out) is
	 * set before any write: the commit ids already published, so the engine
	 * could skip them; the module itself sends only the rows of commits not
	 * yet there and deletes those no longer exported. *report:
	 * {"schema", "new_commits", "removed_commits", "migrated"}. */
	int (*publish)(const struct tt_sql_publish *p, json_t **report);
	/* Run `query` on `source` (postgresql://... or a SQLite file path) and
	 * return its rows as text. */
	int (*query)(const char *source, const char *password, const char *query, struct tt_sql_rows *out);
};

/* The module exports `tether_sql_module` (a struct tt_sql_module). */

#endif
