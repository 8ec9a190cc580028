/* Computes: endpoints, connection URIs, and what tether asks Postgres.
 *
 * A branch tether reads or writes gets one read_write endpoint (Neon
 * allows one per branch); objects of one project that fingerprint the same
 * branch at once share it, because the lookup and the creation run under
 * the session's mutex and the session remembers the answer. Pins and
 * time-travel reads get a read_only endpoint.
 *
 * The state is read over SQL: the LSN (volatile: it moves without user
 * writes) and commit_xid, the newest transaction that committed, found by
 * scanning back from the snapshot's xmax with pg_xact_status over at most
 * 65536 ids. Ids a restarted compute skipped never commit, so they do not
 * count; with none committed in the window, commit_xid reads "<xmax". */
#include "backends/neon/neon.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

static int list_endpoint(struct neon_conn *c, const char *branch_id, const char *type, char **id)
{
	*id = NULL;
	char *p = neon_esc(c->project), *b = neon_esc(branch_id);
	char *path = p && b ? tt_strdupf("/projects/%s/branches/%s/endpoints", p, b) : NULL;
	free(p);
	free(b);
	if (!path)
		return tt_fail_oom();
	long status;
	json_t *j = NULL;
	int rc = neon_request(c, "GET", path, NULL, NULL, &status, &j);
	free(path);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "endpoints"), i, e) {
		const char *t = json_string_value(json_object_get(e, "type"));
		const char *eid = json_string_value(json_object_get(e, "id"));
		if (!*id && t && eid && strcmp(t, type) == 0 && !json_is_true(json_object_get(e, "disabled")))
			*id = strdup(eid);
	}
	json_decref(j);
	return rc;
}

static int create_endpoint(struct neon_conn *c, const char *branch_id, const char *type, char **id)
{
	*id = NULL;
	char *p = neon_esc(c->project);
	char *path = p ? tt_strdupf("/projects/%s/endpoints", p) : NULL;
	free(p);
	json_t *body = json_pack("{s:{s:s, s:s}}", "endpoint", "branch_id", branch_id, "type", type);
	long status;
	json_t *j = NULL;
	int rc = path && body ? neon_request(c, "POST", path, body, NULL, &status, &j) : tt_fail_oom();
	const char *eid = json_string_value(json_object_get(json_object_get(j, "endpoint"), "id"));
	if (rc == 0 && !eid)
		rc = tether_error_set(TETHER_EIO, "neon object %s: Neon project %s: the new endpoint has no id", c->key,
		                      c->project);
	if (rc == 0 && !(*id = strdup(eid)))
		rc = tt_fail_oom();
	json_decref(j);
	json_decref(body);
	free(path);
	return rc;
}

int neon_endpoint(struct neon_conn *c, const char *branch_id, const char *type, char **endpoint_id)
{
	*endpoint_id = NULL;
	struct neon_session *s = c->session;
	char *slot = tt_strdupf("%s:%s", type, branch_id);
	if (!slot)
		return tt_fail_oom();
	if (s)
		pthread_mutex_lock(&s->mu);
	const char *known = s ? json_string_value(json_object_get(s->endpoints, slot)) : NULL;
	int rc = 0;
	if (known)
		*endpoint_id = strdup(known);
	else if ((rc = list_endpoint(c, branch_id, type, endpoint_id)) == 0 && !*endpoint_id)
		rc = create_endpoint(c, branch_id, type, endpoint_id);
	if (rc == 0 && !*endpoint_id)
		rc = tt_fail_oom();
	if (rc == 0 && s && !known)
		json_object_set_new(s->endpoints, slot, json_string(*endpoint_id));
	if (s)
		pthread_mutex_unlock(&s->mu);
	free(slot);
	return rc;
}

int neon_connection_uri(struct neon_conn *c, const struct neon_loc *loc, const char *branch_id,
                        const char *endpoint_id, char **uri)
{
	*uri = NULL;
	char *p = neon_esc(c->project), *b = neon_esc(branch_id), *e = neon_esc(endpoint_id);
	char *d = neon_esc(loc->database), *r = neon_esc(loc->role);
	char *path = p && b && e && d && r ? tt_strdupf("/projects/%s/connection_uri?branch_id=%s&endpoint_id=%s&"
	                                                "database_name=%s&role_name=%s", p, b, e, d, r)
	                                   : NULL;
	free(p);
	free(b);
	free(e);
	free(d);
	free(r);
	if (!path)
		return tt_fail_oom();
	long status;
	json_t *j = NULL;
	int rc = neon_request(c, "GET", path, NULL, NULL, &status, &j);
	const char *u = json_string_value(json_object_get(j, "uri"));
	if (rc == 0 && (!u || (strncmp(u, "postgresql://", 13) != 0 && strncmp(u, "postgres://", 11) != 0)))
		rc = tether_error_set(TETHER_EIO, "neon object %s: Neon project %s: the connection URI is not a postgresql:// "
		                                  "URI", c->key, c->project);
	if (rc == 0 && !(*uri = strdup(u)))
		rc = tt_fail_oom();
	json_decref(j);
	free(path);
	return rc;
}

int neon_branch_uri(struct neon_conn *c, const struct neon_loc *loc, const char *branch_name, const char *type,
                    json_t **branch, char **uri)
{
	*uri = NULL;
	*branch = NULL;
	int rc = neon_branch_by_name(c, branch_name, branch);
	if (rc == 0 && !*branch)
		return tether_error_set(TETHER_ENOTFOUND, "neon object %s: Neon project %s has no branch \"%s\"", c->key,
		                        c->project, branch_name);
	const char *id = json_string_value(json_object_get(*branch, "id"));
	char *ep = NULL;
	if (rc == 0)
		rc = neon_endpoint(c, id, type, &ep);
	if (rc == 0)
		rc = neon_connection_uri(c, loc, id, ep, uri);
	free(ep);
	if (rc) {
		json_decref(*branch);
		*branch = NULL;
	}
	return rc;
}

/* libpq's message, first line only. */
static int pg_fail(struct neon_conn *c, const char *branch_name, const char *doing, const char *msg)
{
	size_t n = msg ? strcspn(msg, "\n") : 0;
	return tether_error_set(TETHER_EIO, "neon object %s: Neon project %s branch %s: %s: %.*s", c->key, c->project,
	                        branch_name, doing, (int)(n > 300 ? 300 : n), msg ? msg : "");
}

static PGconn *pg_open(struct neon_conn *c, const char *branch_name, const char *uri, int *rc)
{
	const char *const keys[] = {"dbname", "connect_timeout", "application_name", NULL};
	const char *const vals[] = {uri, "15", "tether", NULL};
	PGconn *pg = PQconnectdbParams(keys, vals, 1);
	*rc = 0;
	if (!pg)
		*rc = tt_fail_oom();
	else if (PQstatus(pg) != CONNECTION_OK) {
		*rc = pg_fail(c, branch_name, "connecting to its endpoint", PQerrorMessage(pg));
		PQfinish(pg);
		pg = NULL;
	}
	return pg;
}

static PGresult *pg_query(struct neon_conn *c, PGconn *pg, const char *branch_name, const char *what,
                          const char *sql, int *rc)
{
	PGresult *r = PQexec(pg, sql);
	*rc = 0;
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		const char *m = r ? PQresultErrorMessage(r) : "";
		*rc = pg_fail(c, branch_name, what, *m ? m : PQerrorMessage(pg));
		PQclear(r);
		return NULL;
	}
	return r;
}

static const char probe_sql[] =
	"WITH s AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax) "
	"SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text, "
	"(SELECT x FROM generate_series(s.xmax - 1, greatest(s.xmax - 65536, 3), -1) AS x "
	" WHERE pg_xact_status(x::text::xid8) = 'committed' LIMIT 1)::text, s.xmax::text FROM s";

int neon_probe(struct neon_conn *c, const struct neon_loc *loc, const char *branch_name, const char *uri,
               char **lsn, char **commit_xid)
{
	(void)loc;
	*lsn = NULL;
	*commit_xid = NULL;
	int rc;
	PGconn *pg = pg_open(c, branch_name, uri, &rc);
	if (!pg)
		return rc;
	PGresult *r = pg_query(c, pg, branch_name, "reading its LSN and newest commit", probe_sql, &rc);
	if (r) {
		*lsn = strdup(PQgetvalue(r, 0, 0));
		*commit_xid = PQgetisnull(r, 0, 1) ? tt_strdupf("<%s", PQgetvalue(r, 0, 2)) : strdup(PQgetvalue(r, 0, 1));
		if (!*lsn || !*commit_xid || PQgetisnull(r, 0, 0)) {
			rc = PQgetisnull(r, 0, 0) ? pg_fail(c, branch_name, "reading its LSN", "no LSN") : tt_fail_oom();
			free(*lsn);
			free(*commit_xid);
			*lsn = *commit_xid = NULL;
		}
		PQclear(r);
	}
	PQfinish(pg);
	return rc;
}

static const char writers_sql[] =
	"SELECT count(*)::text, coalesce(string_agg(format('pid %s (%s, %s: %s)', pid, usename, state, "
	"left(regexp_replace(coalesce(query, ''), '\\s+', ' ', 'g'), 60)), '; ' ORDER BY pid), '') "
	"FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()";

int neon_writers(struct neon_conn *c, const char *branch_name, const char *uri, int *busy, char **why)
{
	*busy = 0;
	*why = NULL;
	int rc;
	PGconn *pg = pg_open(c, branch_name, uri, &rc);
	if (!pg)
		return rc;
	PGresult *r = pg_query(c, pg, branch_name, "reading pg_stat_activity", writers_sql, &rc);
	if (r) {
		long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
		*busy = n > 0;
		if (*busy && !(*why = tt_strdupf("Neon project %s branch %s: %ld session%s writing: %s", c->project,
		                                 branch_name, n, n == 1 ? "" : "s", PQgetvalue(r, 0, 1))))
			rc = tt_fail_oom();
		PQclear(r);
	}
	PQfinish(pg);
	return rc;
}

int neon_read_branch(struct neon_conn *c, const struct neon_loc *loc, const char *name, const char *type, char **lsn,
                     char **commit_xid)
{
	*lsn = *commit_xid = NULL;
	json_t *b = NULL;
	char *uri = NULL;
	int rc = neon_branch_uri(c, loc, name, type, &b, &uri);
	if (rc == 0)
		rc = neon_probe(c, loc, name, uri, lsn, commit_xid);
	json_decref(b);
	/* The URI carries the role's password. */
	if (uri) {
		memset(uri, 0, strlen(uri));
		free(uri);
	}
	return rc;
}
