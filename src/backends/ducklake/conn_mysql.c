/* A DuckLake catalog in MySQL or MariaDB, on libmariadb: one connection,
 * one REPEATABLE READ transaction started WITH CONSISTENT SNAPSHOT, so
 * every query of an operation reads one snapshot of the catalog. The
 * password is the server's entry in .tether/secrets.toml or none: an
 * empty one is passed explicitly, so the client library never falls back
 * to MYSQL_PWD for a host a clone's manifest chose, and no option file is
 * read. */
#include "backends/ducklake/dl.h"

#include <mysql.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct my_conn {
	struct dl_conn base;
	MYSQL *my;
};

static int my_fail(struct my_conn *c, const char *doing)
{
	return tether_error_set(TETHER_EIO, "ducklake catalog %s: %s: %s", c->base.what, doing, mysql_error(c->my));
}

static int my_query(struct dl_conn *base, const char *sql, dl_row_fn fn, void *ud)
{
	struct my_conn *c = (struct my_conn *)base;
	if (mysql_query(c->my, sql) != 0)
		return my_fail(c, "query");
	MYSQL_RES *res = mysql_store_result(c->my);
	if (!res)
		return mysql_field_count(c->my) == 0 ? 0 : my_fail(c, "query");
	int rc = 0;
	unsigned n = mysql_num_fields(res);
	MYSQL_ROW row;
	while (!rc && fn && (row = mysql_fetch_row(res)) != NULL)
		rc = fn(ud, (int)n, (const char *const *)row);
	mysql_free_result(res);
	return rc;
}

static void my_close(struct dl_conn *base)
{
	struct my_conn *c = (struct my_conn *)base;
	mysql_query(c->my, "COMMIT");
	mysql_close(c->my);
	free(c);
}

static const struct dl_conn_ops mysql_ops = {
	.query = my_query,
	.close = my_close,
	.quote = '`',
	.time_sql = "%s",
	.exists_sql = "SELECT COUNT(*) FROM information_schema.tables WHERE "
	              "table_schema = DATABASE() AND table_name = %s",
};

/* mysql_init initialises the library on its first call, which is not
 * safe on two threads at once (the engine fingerprints objects
 * concurrently): done once, first. */
static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static int library_failed;

static void library_init(void)
{
	library_failed = mysql_library_init(0, NULL, NULL) != 0;
}

int tether_ducklake_mysql_open(const struct dl_target *t, const struct dl_secrets *s, struct dl_conn **out)
{
	pthread_once(&library_once, library_init);
	if (library_failed)
		return tether_error_set(TETHER_ERROR, "ducklake catalog %s: the MySQL client library did not initialise",
		                        t->metadata);
	struct my_conn *c = calloc(1, sizeof *c);
	if (!c || !(c->my = mysql_init(NULL))) {
		free(c);
		return tether_error_set(TETHER_ERROR, "out of memory");
	}
	c->base.ops = &mysql_ops;
	c->base.what = t->metadata;
	const char *host = dl_param(t, "host");
	const char *port = dl_param(t, "port");
	const char *db = dl_param(t, "database") ? dl_param(t, "database") : dl_param(t, "db");
	const char *user = s->user ? s->user : dl_param(t, "user");
	unsigned timeout = 10;
	mysql_optionsv(c->my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_optionsv(c->my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (!mysql_real_connect(c->my, host ? host : "localhost", user, s->password ? s->password : "", db,
	                        port ? (unsigned)strtoul(port, NULL, 10) : 0, NULL, 0)) {
		int rc = my_fail(c, "connect");
		mysql_close(c->my);
		free(c);
		return rc;
	}
	if (mysql_query(c->my, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ") != 0 ||
	    mysql_query(c->my, "SET time_zone = '+00:00'") != 0 ||
	    mysql_query(c->my, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY") != 0) {
		int rc = my_fail(c, "begin");
		mysql_close(c->my);
		free(c);
		return rc;
	}
	*out = &c->base;
	return 0;
}
