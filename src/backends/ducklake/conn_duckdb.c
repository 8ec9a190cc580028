/* A DuckLake catalog in a DuckDB file, through libduckdb's C API. Debian
 * has no libduckdb, and a 70 MB library has no place in every tether
 * process, so it is loaded with dlopen on the first DuckDB-file catalog:
 * from $TETHER_LIBDUCKDB, else by its soname libduckdb.so on the library
 * path; without it the error names the library and how to install it.
 *
 * The few functions used are declared here from DuckDB's documented C API
 * (duckdb.h): opaque handles, and duckdb_result, whose layout callers
 * allocate. The file is opened READ_ONLY with extension autoloading off,
 * and read in one transaction. A DuckDB file can be attached once per
 * process (docs: "DuckLake attachments"), so opens are serialised: a
 * connection holds the lock until it closes. */
#include "backends/ducklake/dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t duck_idx;
typedef struct {
	void *internal_ptr;
} *duck_database, *duck_connection, *duck_config;
typedef struct {
	duck_idx deprecated_column_count;
	duck_idx deprecated_row_count;
	duck_idx deprecated_rows_changed;
	void *deprecated_columns;
	char *deprecated_error_message;
	void *internal_data;
} duck_result;
enum { DUCK_SUCCESS = 0 };

static struct {
	int (*open_ext)(const char *path, duck_database *db, duck_config config, char **error);
	void (*close)(duck_database *db);
	int (*connect)(duck_database db, duck_connection *con);
	void (*disconnect)(duck_connection *con);
	int (*create_config)(duck_config *config);
	int (*set_config)(duck_config config, const char *name, const char *option);
	void (*destroy_config)(duck_config *config);
	int (*query)(duck_connection con, const char *sql, duck_result *out);
	void (*destroy_result)(duck_result *r);
	const char *(*result_error)(duck_result *r);
	duck_idx (*column_count)(duck_result *r);
	duck_idx (*row_count)(duck_result *r);
	char *(*value_varchar)(duck_result *r, duck_idx col, duck_idx row);
	bool (*value_is_null)(duck_result *r, duck_idx col, duck_idx row);
	void (*free)(void *p);
} duck;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[1024];
/* One DuckDB-file catalog open at a time in this process. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

#define SYM(field, name)                                                                                      \
	do {                                                                                                  \
		*(void **)&duck.field = dlsym(lib, name);                                                     \
		if (!duck.field) {                                                                            \
			snprintf(load_error, sizeof load_error, "%s has no %s: not DuckDB's C library", path, name); \
			return;                                                                               \
		}                                                                                             \
	} while (0)

static void load(void)
{
	const char *env = getenv("TETHER_LIBDUCKDB");
	const char *path = env && *env ? env : "libduckdb.so";
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		snprintf(load_error, sizeof load_error,
		         "libduckdb could not be loaded (%s): install DuckDB's C library (scripts/install-deps "
		         "installs libduckdb.so in ~/.local/share/tether-deps/lib; README, \"DuckLake catalogs and "
		         "libduckdb\") and set TETHER_LIBDUCKDB to its path, or put it on the library path",
		         why ? why : path);
		return;
	}
	SYM(open_ext, "duckdb_open_ext");
	SYM(close, "duckdb_close");
	SYM(connect, "duckdb_connect");
	SYM(disconnect, "duckdb_disconnect");
	SYM(create_config, "duckdb_create_config");
	SYM(set_config, "duckdb_set_config");
	SYM(destroy_config, "duckdb_destroy_config");
	SYM(query, "duckdb_query");
	SYM(destroy_result, "duckdb_destroy_result");
	SYM(result_error, "duckdb_result_error");
	SYM(column_count, "duckdb_column_count");
	SYM(row_count, "duckdb_row_count");
	SYM(value_varchar, "duckdb_value_varchar");
	SYM(value_is_null, "duckdb_value_is_null");
	SYM(free, "duckdb_free");
	/* Loaded for good: DuckDB starts threads of its own, and the
	 * process keeps the library to its end. */
}

struct duck_conn {
	struct dl_conn base;
	duck_database db;
	duck_connection con;
};

static int duck_query(struct dl_conn *base, const char *sql, dl_row_fn fn, void *ud)
{
	struct duck_conn *c = (struct duck_conn *)base;
	duck_result r;
	memset(&r, 0, sizeof r);
	if (duck.query(c->con, sql, &r) != DUCK_SUCCESS) {
		const char *e = duck.result_error(&r);
		int rc = tether_error_set(TETHER_EIO, "ducklake catalog %s: query: %s", base->what, e ? e : "failed");
		duck.destroy_result(&r);
		return rc;
	}
	duck_idx cols = duck.column_count(&r), rows = duck.row_count(&r);
	char **vals = calloc((size_t)cols + 1, sizeof *vals);
	int rc = vals ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
	for (duck_idx i = 0; !rc && fn && i < rows; i++) {
		for (duck_idx j = 0; j < cols; j++)
			vals[j] = duck.value_is_null(&r, j, i) ? NULL : duck.value_varchar(&r, j, i);
		rc = fn(ud, (int)cols, (const char *const *)vals);
		for (duck_idx j = 0; j < cols; j++) {
			if (vals[j])
				duck.free(vals[j]);
			vals[j] = NULL;
		}
	}
	free(vals);
	duck.destroy_result(&r);
	return rc;
}

static void duck_close(struct dl_conn *base)
{
	struct duck_conn *c = (struct duck_conn *)base;
	if (c->con) {
		duck_result r;
		memset(&r, 0, sizeof r);
		duck.query(c->con, "COMMIT", &r);
		duck.destroy_result(&r);
		duck.disconnect(&c->con);
	}
	if (c->db)
		duck.close(&c->db);
	free(c);
	pthread_mutex_unlock(&open_lock);
}

static const struct dl_conn_ops duck_ops = {
	.query = duck_query,
	.close = duck_close,
	.quote = '"',
	.time_sql = "epoch_us(%s)",
	.exists_sql = "SELECT COUNT(*) FROM information_schema.tables WHERE "
	              "table_schema = current_schema() AND table_name = %s",
};

int dl_duckdb_open(const struct dl_target *t, const struct dl_secrets *s, struct dl_conn **out)
{
	pthread_once(&load_once, load);
	if (load_error[0])
		return tether_error_set(TETHER_ENOTFOUND, "ducklake catalog %s is a DuckDB file, read through libduckdb: %s",
		                        t->metadata, load_error);
	struct duck_conn *c = calloc(1, sizeof *c);
	if (!c)
		return tether_error_set(TETHER_ERROR, "out of memory");
	c->base.ops = &duck_ops;
	c->base.what = t->metadata;
	pthread_mutex_lock(&open_lock);
	duck_config cfg = NULL;
	char *err = NULL;
	int rc = 0;
	if (duck.create_config(&cfg) != DUCK_SUCCESS)
		rc = tether_error_set(TETHER_ERROR, "out of memory");
	/* Read-only, and nothing fetched or loaded behind the caller's back;
	 * one thread, as a few rows of metadata need no more (DuckDB starts
	 * one per core at open otherwise). */
	if (!rc && (duck.set_config(cfg, "access_mode", "READ_ONLY") != DUCK_SUCCESS ||
	            duck.set_config(cfg, "threads", "1") != DUCK_SUCCESS ||
	            duck.set_config(cfg, "autoinstall_known_extensions", "false") != DUCK_SUCCESS ||
	            duck.set_config(cfg, "autoload_known_extensions", "false") != DUCK_SUCCESS))
		rc = tether_error_set(TETHER_ERROR, "ducklake: libduckdb refused its configuration");
	if (!rc && duck.open_ext(t->path, &c->db, cfg, &err) != DUCK_SUCCESS) {
		rc = tether_error_set(TETHER_EIO, "ducklake catalog %s: cannot open %s: %s", t->metadata, t->path,
		                      err ? err : "failed");
		c->db = NULL;
	}
	if (err)
		duck.free(err);
	if (cfg)
		duck.destroy_config(&cfg);
	if (!rc && duck.connect(c->db, &c->con) != DUCK_SUCCESS) {
		c->con = NULL;
		rc = tether_error_set(TETHER_EIO, "ducklake catalog %s: cannot connect", t->metadata);
	}
	size_t i;
	json_t *stmt;
	json_array_foreach(s->init_sql, i, stmt) {
		if (rc)
			break;
		rc = duck_query(&c->base, json_string_value(stmt), NULL, NULL);
	}
	if (!rc)
		rc = duck_query(&c->base, "BEGIN TRANSACTION", NULL, NULL);
	if (rc) {
		duck_close(&c->base);
		return rc;
	}
	*out = &c->base;
	return 0;
}
