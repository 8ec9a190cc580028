/* Connections to a Dolt server over the MySQL protocol (libmariadb):
 * credentials, queries, errors, what the server supports, and the store
 * session (a small pool of open connections, so one command's calls about
 * one server pay for the handshake once).
 *
 * Credentials: a manifest chooses the host, so a password is sent only to
 * a server with its own [uris."mysql://host:port"] (or
 * [uris."mysql://host:port/database"]) entry in .tether/secrets.toml;
 * the object's own [objects."<key>"] table is not read for them, as a
 * clone could point that key at another host. */
#include "backends/dolt/dolt.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <errmsg.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_POOL_MAX 8
#define DT_CONNECT_TIMEOUT 10u
#define DT_RW_TIMEOUT 120u

struct dt_pool {
	pthread_mutex_t lock;
	MYSQL *idle[DT_POOL_MAX];
	char *idle_ref[DT_POOL_MAX]; /* the database each was opened on */
	int n;
	int has_dirty; /* dolt_branches.dirty: -1 not asked yet, else 0 or 1 */
};

/* ------------------------------------------------------------------ */
/* Credentials                                                         */
/* ------------------------------------------------------------------ */

struct creds {
	char *user;
	char *password;
};

static int from_env(const char *server, const json_t *entry, const char *key, char **out)
{
	const char *direct = json_string_value(json_object_get(entry, key));
	char env_key[32];
	snprintf(env_key, sizeof env_key, "%s_env", key);
	const char *var = json_string_value(json_object_get(entry, env_key));
	if (direct)
		return (*out = strdup(direct)) ? 0 : tt_fail_oom();
	if (!var)
		return 0;
	const char *v = getenv(var);
	if (!v)
		return tether_error_set(TETHER_ECONFIG, ".tether/secrets.toml: uris.\"%s\".%s names $%s, which is not set",
		                        server, env_key, var);
	return (*out = strdup(v)) ? 0 : tt_fail_oom();
}

static int credentials(const struct tether_bctx *ctx, const struct dt_loc *loc, struct creds *cr)
{
	memset(cr, 0, sizeof *cr);
	char *uri = dt_server_uri(loc, 1);
	if (!uri)
		return tt_fail_oom();
	json_t *entry = NULL;
	int rc = 0;
	if (ctx) {
		/* The [uris] tables only: no object table (see the top). */
		struct tether_bctx only_uris = *ctx;
		only_uris.secrets = NULL;
		rc = tether_bctx_store_options(&only_uris, uri, NULL, &entry);
	}
	if (rc == 0 && (rc = from_env(uri, entry, "user", &cr->user)) == 0)
		rc = from_env(uri, entry, "password", &cr->password);
	if (rc == 0 && !cr->user && !(cr->user = strdup(loc->user ? loc->user : "root")))
		rc = tt_fail_oom();
	json_decref(entry);
	free(uri);
	if (rc) {
		free(cr->user);
		free(cr->password);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

unsigned dt_errno(const struct dt_conn *c)
{
	return c->my ? mysql_errno(c->my) : 0;
}

static int code_of(unsigned err)
{
	switch (err) {
	case 1045: /* ER_ACCESS_DENIED_ERROR */
	case 1044: /* ER_DBACCESS_DENIED_ERROR */
	case 1698:
		return TETHER_EAUTH;
	case 1049: /* ER_BAD_DB_ERROR */
	case 1146: /* ER_NO_SUCH_TABLE */
		return TETHER_ENOTFOUND;
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_SERVER_LOST_EXTENDED:
		return TETHER_ETRANSIENT;
	default:
		return TETHER_EIO;
	}
}

int dt_fail(struct dt_conn *c, const char *doing)
{
	unsigned err = dt_errno(c);
	const char *msg = c->my ? mysql_error(c->my) : "no connection";
	/* Dolt answers most refusals as error 1105 with "database not found:
	 * db/ref" when a revision database's ref is gone. */
	int code = code_of(err);
	if (err == 1105 && (strstr(msg, "database not found") || strstr(msg, "branch not found")))
		code = TETHER_ENOTFOUND;
	return tether_error_set(code, "dolt %s: %s: the server said: %s (error %u)", c->where, doing, msg, err);
}

/* ------------------------------------------------------------------ */
/* Connecting                                                          */
/* ------------------------------------------------------------------ */

static int open_new(const struct tether_bctx *ctx, const struct dt_loc *loc, const char *dbname, struct dt_conn *c)
{
	struct creds cr;
	int rc = credentials(ctx, loc, &cr);
	if (rc)
		return rc;
	c->my = mysql_init(NULL);
	if (!c->my) {
		free(cr.user);
		free(cr.password);
		return tt_fail_oom();
	}
	unsigned ct = DT_CONNECT_TIMEOUT, rw = DT_RW_TIMEOUT;
	mysql_optionsv(c->my, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
	mysql_optionsv(c->my, MYSQL_OPT_READ_TIMEOUT, &rw);
	mysql_optionsv(c->my, MYSQL_OPT_WRITE_TIMEOUT, &rw);
	/* Nothing of the user's option files: the locator and secrets.toml
	 * say where and as whom, and nothing else may (a [client] password in
	 * ~/.my.cnf must not reach a host a manifest chose). */
	mysql_optionsv(c->my, MYSQL_READ_DEFAULT_FILE, "/dev/null");
	mysql_optionsv(c->my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	my_bool off = 0;
	mysql_optionsv(c->my, MYSQL_OPT_LOCAL_INFILE, &off);
	if (!mysql_real_connect(c->my, loc->host, cr.user, cr.password ? cr.password : "", dbname, loc->port, NULL,
	                        CLIENT_MULTI_RESULTS))
		rc = dt_fail(c, "cannot connect");
	free(cr.user);
	if (cr.password) {
		memset(cr.password, 0, strlen(cr.password));
		free(cr.password);
	}
	if (rc) {
		mysql_close(c->my);
		c->my = NULL;
	}
	return rc;
}

int dt_connect(const struct tether_bctx *ctx, const struct dt_loc *loc, const char *ref, struct dt_conn *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->where, sizeof c->where, "mysql://%s:%u/%s%s%s", loc->host, loc->port, loc->database, ref ? "/" : "",
	         ref ? ref : "");
	char *dbname = ref ? tt_strdupf("%s/%s", loc->database, ref) : strdup(loc->database);
	if (!dbname)
		return tt_fail_oom();
	snprintf(c->dbname, sizeof c->dbname, "%s", dbname);
	struct dt_pool *pool = ctx ? ctx->session : NULL;
	c->pool = pool;
	if (pool) { /* an idle connection on the same database, checked alive */
		MYSQL *found = NULL;
		pthread_mutex_lock(&pool->lock);
		for (int i = pool->n - 1; i >= 0; i--)
			if (strcmp(pool->idle_ref[i], dbname) == 0) {
				found = pool->idle[i];
				free(pool->idle_ref[i]);
				pool->idle[i] = pool->idle[pool->n - 1];
				pool->idle_ref[i] = pool->idle_ref[pool->n - 1];
				pool->n--;
				break;
			}
		pthread_mutex_unlock(&pool->lock);
		if (found) {
			c->my = found;
			free(dbname);
			return 0;
		}
	}
	int rc = open_new(ctx, loc, dbname, c);
	free(dbname);
	return rc;
}

int dt_connect_locator(const struct tether_bctx *ctx, const json_t *locator, struct dt_loc *loc, struct dt_conn *c)
{
	memset(c, 0, sizeof *c);
	int rc = dt_read_locator(locator, loc);
	return rc ? rc : dt_connect(ctx, loc, NULL, c);
}

void dt_release(struct dt_conn *c, int ok)
{
	struct dt_pool *pool = c->pool;
	if (!c->my)
		return;
	if (ok && pool) {
		char *name = strdup(c->dbname);
		pthread_mutex_lock(&pool->lock);
		if (name && pool->n < DT_POOL_MAX) {
			pool->idle[pool->n] = c->my;
			pool->idle_ref[pool->n++] = name;
			c->my = NULL;
			name = NULL;
		}
		pthread_mutex_unlock(&pool->lock);
		free(name);
	}
	if (c->my)
		mysql_close(c->my);
	c->my = NULL;
}

int dt_open_store(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session)
{
	(void)ctx;
	(void)locator;
	(void)identity;
	struct dt_pool *pool = calloc(1, sizeof *pool);
	if (!pool)
		return tt_fail_oom();
	pthread_mutex_init(&pool->lock, NULL);
	pool->has_dirty = -1;
	*session = pool;
	return 0;
}

void dt_close_store(const struct tether_bctx *ctx, void *session)
{
	(void)ctx;
	struct dt_pool *pool = session;
	if (!pool)
		return;
	for (int i = 0; i < pool->n; i++) {
		mysql_close(pool->idle[i]);
		free(pool->idle_ref[i]);
	}
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

char *dt_sql(struct dt_conn *c, const char *fmt, ...)
{
	va_list ap;
	size_t cap = strlen(fmt) + 1;
	va_start(ap, fmt);
	for (const char *p = fmt; *p; p++)
		if (*p == '?')
			cap += 2 * strlen(va_arg(ap, const char *)) + 2;
	va_end(ap);
	char *out = malloc(cap), *o = out;
	if (!out)
		return NULL;
	va_start(ap, fmt);
	for (const char *p = fmt; *p; p++) {
		if (*p != '?') {
			*o++ = *p;
			continue;
		}
		const char *s = va_arg(ap, const char *);
		*o++ = '\'';
		o += mysql_real_escape_string(c->my, o, s, (unsigned long)strlen(s));
		*o++ = '\'';
	}
	va_end(ap);
	*o = '\0';
	return out;
}

/* Every result of a statement read and dropped (a CALL answers with one
 * or more), so the connection is ready for the next. */
static int drain(struct dt_conn *c)
{
	int more;
	do {
		MYSQL_RES *res = mysql_store_result(c->my);
		if (res)
			mysql_free_result(res);
		else if (mysql_field_count(c->my) != 0)
			return -1;
		more = mysql_next_result(c->my);
		if (more > 0)
			return -1;
	} while (more == 0);
	return 0;
}

int dt_exec(struct dt_conn *c, const char *sql)
{
	if (!sql)
		return tt_fail_oom();
	if (mysql_query(c->my, sql) != 0 || drain(c) != 0)
		return -1;
	return 0;
}

/* The results after the first, read and dropped. */
static int drain_rest(struct dt_conn *c)
{
	while (mysql_more_results(c->my)) {
		if (mysql_next_result(c->my) > 0)
			return -1;
		MYSQL_RES *res = mysql_store_result(c->my);
		if (res)
			mysql_free_result(res);
	}
	return 0;
}

int dt_query_cols(struct dt_conn *c, const char *sql, json_t **rows, json_t **cols)
{
	*rows = NULL;
	if (cols)
		*cols = NULL;
	if (!sql)
		return tt_fail_oom();
	if (mysql_query(c->my, sql) != 0)
		return -1;
	MYSQL_RES *res = mysql_store_result(c->my);
	if (!res && mysql_field_count(c->my) != 0)
		return -1;
	json_t *out = json_array(), *names = json_array();
	if (res) {
		unsigned n = mysql_num_fields(res);
		MYSQL_FIELD *fields = mysql_fetch_fields(res);
		for (unsigned i = 0; i < n; i++)
			json_array_append_new(names, json_string(fields[i].name));
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(res))) {
			unsigned long *lens = mysql_fetch_lengths(res);
			json_t *r = json_array();
			for (unsigned i = 0; i < n; i++)
				json_array_append_new(r, row[i] ? json_stringn(row[i], lens[i]) : json_null());
			json_array_append_new(out, r);
		}
		mysql_free_result(res);
	}
	if (drain_rest(c) != 0) {
		json_decref(out);
		json_decref(names);
		return -1;
	}
	*rows = out;
	if (cols)
		*cols = names;
	else
		json_decref(names);
	return 0;
}

int dt_query(struct dt_conn *c, const char *sql, json_t **rows)
{
	return dt_query_cols(c, sql, rows, NULL);
}

/* ------------------------------------------------------------------ */
/* What the server supports                                            */
/* ------------------------------------------------------------------ */

int dt_has_column(struct dt_conn *c, const char *table, const char *column, int *has)
{
	/* Both are tether's own constants, never a user's text. */
	char *full = tt_strdupf("SHOW COLUMNS FROM `%s` LIKE '%s'", table, column);
	json_t *rows;
	int rc = dt_query(c, full, &rows);
	free(full);
	if (rc)
		return rc == -1 ? dt_fail(c, "cannot read the columns of its system tables") : rc;
	*has = json_array_size(rows) > 0;
	json_decref(rows);
	return 0;
}

int dt_has_dirty(struct dt_conn *c, int *has)
{
	struct dt_pool *pool = c->pool;
	int known = -1;
	if (pool) {
		pthread_mutex_lock(&pool->lock);
		known = pool->has_dirty;
		pthread_mutex_unlock(&pool->lock);
	}
	if (known >= 0) {
		*has = known;
		return 0;
	}
	int rc = dt_has_column(c, "dolt_branches", "dirty", has);
	if (rc == 0 && pool) {
		pthread_mutex_lock(&pool->lock);
		pool->has_dirty = *has;
		pthread_mutex_unlock(&pool->lock);
	}
	return rc;
}

int dt_has_table(struct dt_conn *c, const char *table, int *has)
{
	char *sql = tt_strdupf("SELECT 1 FROM `%s` LIMIT 0", table);
	int rc = dt_exec(c, sql);
	free(sql);
	*has = rc == 0;
	if (rc == -1 && dt_errno(c) != 1146 && !strstr(mysql_error(c->my), "not found"))
		return dt_fail(c, "cannot read its system tables");
	return rc == -1 ? 0 : rc;
}


char *dt_login_user(const struct tether_bctx *ctx, const struct dt_loc *loc)
{
	struct creds cr;
	if (credentials(ctx, loc, &cr) != 0)
		return NULL;
	if (cr.password) {
		memset(cr.password, 0, strlen(cr.password));
		free(cr.password);
	}
	return cr.user;
}

int dt_rows(struct dt_conn *c, char *sql, const char *doing, json_t **rows)
{
	*rows = NULL;
	int rc = dt_query(c, sql, rows);
	free(sql);
	return rc == -1 ? dt_fail(c, doing) : rc;
}

const char *dt_cell(const json_t *rows, size_t row, size_t col)
{
	return json_string_value(json_array_get(json_array_get(rows, row), col));
}

int dt_finish(struct dt_conn *c, int rc, json_t *out, json_t **dst)
{
	dt_release(c, rc == 0);
	if (rc)
		json_decref(out);
	else
		*dst = out;
	return rc;
}
