/* A DuckLake catalog in Postgres, on libpq: one connection, one
 * REPEATABLE READ READ ONLY transaction, so every query of an operation
 * sees one snapshot of the catalog.
 *
 * The connection gets only the keywords the locator may carry (locator.c)
 * and the credentials of the server's entry in .tether/secrets.toml. libpq
 * would otherwise find a password on its own (PGPASSWORD, ~/.pgpass, a
 * service file) and hand it to whatever host a clone's manifest names: the
 * password file is pointed at a path that cannot exist, and a
 * PGPASSWORD or PGSERVICE in the environment of a catalog without an
 * entry is refused rather than sent. */
#include "backends/ducklake/dl.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

struct pg_conn {
	struct dl_conn base;
	PGconn *pg;
};

/* libpq's message on one line. */
static void one_line(char *msg)
{
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

static int pg_fail(const char *what, const char *doing, const char *server_said)
{
	char *msg = strdup(server_said ? server_said : "unknown error");
	if (msg)
		one_line(msg);
	int rc = tether_error_set(TETHER_EIO, "ducklake catalog %s: %s: %s", what, doing, msg ? msg : "out of memory");
	free(msg);
	return rc;
}

static int pg_query(struct dl_conn *base, const char *sql, dl_row_fn fn, void *ud)
{
	struct pg_conn *c = (struct pg_conn *)base;
	PGresult *r = PQexec(c->pg, sql);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		int rc = pg_fail(base->what, "query", PQresultErrorMessage(r));
		PQclear(r);
		return rc;
	}
	int rows = PQntuples(r), n = PQnfields(r);
	const char **vals = calloc((size_t)n + 1, sizeof *vals);
	int rc = vals ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
	for (int i = 0; !rc && fn && i < rows; i++) {
		for (int j = 0; j < n; j++)
			vals[j] = PQgetisnull(r, i, j) ? NULL : PQgetvalue(r, i, j);
		rc = fn(ud, n, vals);
	}
	free(vals);
	PQclear(r);
	return rc;
}

static void pg_close(struct dl_conn *base)
{
	struct pg_conn *c = (struct pg_conn *)base;
	PQclear(PQexec(c->pg, "COMMIT"));
	PQfinish(c->pg);
	free(c);
}

static const struct dl_conn_ops pg_ops = {
	.query = pg_query,
	.close = pg_close,
	.quote = '"',
	.time_sql = "CAST(EXTRACT(EPOCH FROM %s) * 1000000 AS BIGINT)",
	.exists_sql = "SELECT COUNT(*) FROM information_schema.tables WHERE "
	              "table_schema = current_schema() AND table_name = %s",
};

int tether_ducklake_pg_open(const struct dl_target *t, const struct dl_secrets *s, struct dl_conn **out)
{
	if (!s->password && (getenv("PGPASSWORD") || getenv("PGSERVICE")))
		return tether_error_set(TETHER_EREFUSED,
		                        "ducklake catalog %s: PGPASSWORD or PGSERVICE is set, but .tether/secrets.toml "
		                        "has no entry for server %s: tether sends credentials only to a server with "
		                        "its own entry ([objects.\"<key>\"] server, user, password)",
		                        t->metadata, t->server);
	const char *keys[16], *vals[16];
	size_t n = 0;
	for (size_t i = 0; i < t->nparams && n < 12; i++) {
		if (s->user && strcmp(t->params[i].key, "user") == 0)
			continue;
		keys[n] = t->params[i].key;
		vals[n++] = t->params[i].value;
	}
	if (s->user) {
		keys[n] = "user";
		vals[n++] = s->user;
	}
	if (s->password) {
		keys[n] = "password";
		vals[n++] = s->password;
	}
	keys[n] = "passfile";
	vals[n++] = "/dev/null/tether-reads-no-password-file";
	if (!dl_param(t, "connect_timeout")) {
		keys[n] = "connect_timeout";
		vals[n++] = "10";
	}
	keys[n] = NULL;
	vals[n] = NULL;
	struct pg_conn *c = calloc(1, sizeof *c);
	if (!c)
		return tether_error_set(TETHER_ERROR, "out of memory");
	c->base.ops = &pg_ops;
	c->base.what = t->metadata;
	c->pg = PQconnectdbParams(keys, vals, 0);
	if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
		int rc = pg_fail(t->metadata, "connect", c->pg ? PQerrorMessage(c->pg) : "out of memory");
		PQfinish(c->pg);
		free(c);
		return rc;
	}
	PGresult *r = PQexec(c->pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		int rc = pg_fail(t->metadata, "begin", PQresultErrorMessage(r));
		PQclear(r);
		PQfinish(c->pg);
		free(c);
		return rc;
	}
	PQclear(r);
	*out = &c->base;
	return 0;
}
