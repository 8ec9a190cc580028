/* Postgres on libpq: `tether publish` (the export's tables upserted into a
 * schema, incrementally by commit, in one transaction) and import's query.
 *
 * A schema holds one dataset's tables, and its meta table says which
 * dataset and which schema version (TT_EXPORT_SCHEMA_VERSION) wrote them:
 * another dataset's schema, a newer version, or tables of the same names
 * that are not tether's are refused, nothing written. Each publish adds the
 * commits the schema does not hold yet (their objects, and the states and
 * listings they name that are not there), deletes the commits it holds
 * that the export does not (a rewritten history: the dropped commit, its
 * objects, and states and listings nothing names any more), and replaces
 * refs and meta. Rows go in by COPY into temporary tables, then INSERT ...
 * ON CONFLICT DO NOTHING. */
#include "sql/sql.h"

#include <tether/backend.h>

#include "util/fsutil.h"

#include <libpq-fe.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The first line of libpq's message (it ends in a newline, and a
 * connection failure can say more on further lines than a line holds). */
static const char *first_line(const char *msg, char *buf, size_t cap)
{
	size_t n = strcspn(msg, "\n");
	snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), msg);
	return buf;
}

/* GSSAPI encryption is off unless the URL asks for it (gssencmode=...):
 * libpq's probe for Kerberos credentials, on every connection otherwise,
 * costs a round of krb5 library calls and leaves krb5's per-thread data
 * behind. Keywords before dbname are overridden by the URL's own. */
static int pg_connect(const char *url, const char *password, PGconn **out)
{
	const char *keys[] = { "gssencmode", "dbname", password ? "password" : NULL, NULL };
	const char *vals[] = { "disable", url, password, NULL };
	PGconn *c = PQconnectdbParams(keys, vals, 1);
	*out = NULL;
	if (!c)
		return tether_error_set(TETHER_EIO, "%s: cannot connect: out of memory", url);
	if (PQstatus(c) != CONNECTION_OK) {
		char buf[512];
		const char *msg = first_line(PQerrorMessage(c), buf, sizeof buf);
		int auth = strstr(msg, "password") != NULL || strstr(msg, "authentication") != NULL;
		int rc = tether_error_set(auth ? TETHER_EAUTH : TETHER_EIO, "%s: cannot connect: %s", url, msg);
		if (auth)
			tether_error_set_hint("give the password in PGPASSWORD, ~/.pgpass, a service file or "
			                      ".tether/secrets.toml [databases.\"%s\"] password = \"...\"", url);
		PQfinish(c);
		return rc;
	}
	*out = c;
	return 0;
}

static int pg_fail(PGconn *c, const char *url, const char *what, PGresult *r)
{
	char buf[512];
	const char *msg = first_line(r ? PQresultErrorMessage(r) : PQerrorMessage(c), buf, sizeof buf);
	if (!*msg)
		msg = first_line(PQerrorMessage(c), buf, sizeof buf);
	return tether_error_set(TETHER_EIO, "%s: %s: %s", url, what, msg);
}

/* Run sql; rc 0 when the server answered `want`. *res (may be NULL) keeps
 * the result for the caller. */
static int run(PGconn *c, const char *url, const char *what, const char *sql, int nparams, const char *const *params,
               ExecStatusType want, PGresult **res)
{
	PGresult *r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
	int rc = PQresultStatus(r) == want ? 0 : pg_fail(c, url, what, r);
	if (res && !rc)
		*res = r;
	else
		PQclear(r);
	return rc;
}

static char *ident(PGconn *c, const char *name)
{
	char *q = PQescapeIdentifier(c, name, strlen(name));
	char *out = q ? strdup(q) : NULL;
	PQfreemem(q);
	if (!out)
		abort();
	return out;
}

static const char *pg_type(enum tt_col_type t)
{
	return t == TT_COL_TEXT ? "text" : t == TT_COL_INT ? "bigint" : "boolean";
}

static int create_table(PGconn *c, const char *url, const char *schema, const struct tt_export_table *t)
{
	size_t cap = 512 + 64 * t->ncols, len = 0;
	char *s = malloc(cap);
	if (!s)
		abort();
	len += (size_t)snprintf(s + len, cap - len, "CREATE TABLE %s.%s (", schema, t->name);
	for (size_t k = 0; k < t->ncols; k++)
		len += (size_t)snprintf(s + len, cap - len, "\"%s\" %s%s, ", t->cols[k].name, pg_type(t->cols[k].type),
		                        t->cols[k].nullable ? "" : " NOT NULL");
	len += (size_t)snprintf(s + len, cap - len, "PRIMARY KEY (");
	for (size_t k = 0; k < t->nkey; k++)
		len += (size_t)snprintf(s + len, cap - len, "%s\"%s\"", k ? ", " : "", t->cols[k].name);
	snprintf(s + len, cap - len, "))");
	int rc = run(c, url, "cannot create a table", s, 0, NULL, PGRES_COMMAND_OK, NULL);
	free(s);
	return rc;
}

/* Are the schema's tables of these names tether's, with exactly these
 * columns and types? *present: how many of them exist. */
static int check_tables(PGconn *c, const char *url, const char *schema_name, const struct tt_export_table *tables,
                        size_t n, size_t *present)
{
	*present = 0;
	for (size_t i = 0; i < n; i++) {
		const char *params[] = { schema_name, tables[i].name };
		PGresult *r = NULL;
		int rc = run(c, url, "cannot read the schema",
		             "SELECT column_name, data_type FROM information_schema.columns "
		             "WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
		             2, params, PGRES_TUPLES_OK, &r);
		if (rc)
			return rc;
		int rows = PQntuples(r);
		if (rows) {
			(*present)++;
			int same = (size_t)rows == tables[i].ncols;
			for (int k = 0; same && k < rows; k++)
				same = strcmp(PQgetvalue(r, k, 0), tables[i].cols[k].name) == 0 &&
				       strcmp(PQgetvalue(r, k, 1), pg_type(tables[i].cols[k].type)) == 0;
			if (!same) {
				PQclear(r);
				return tether_error_set(TETHER_EREFUSED,
				                        "%s: table %s.%s is not one tether writes (other columns): not "
				                        "touched; publish to another --schema",
				                        url, schema_name, tables[i].name);
			}
		}
		PQclear(r);
	}
	return 0;
}

/* What the schema's meta says it holds: refused when it is another
 * dataset's or of a schema version this tether does not know. */
static int check_meta(PGconn *c, const char *url, const char *schema, const char *dataset)
{
	char *sql = tt_strdupf("SELECT name, value FROM %s.meta WHERE name IN ('dataset_id', 'schema_version')", schema);
	PGresult *r = NULL;
	int rc = run(c, url, "cannot read the published meta", sql, 0, NULL, PGRES_TUPLES_OK, &r);
	free(sql);
	if (rc)
		return rc;
	const char *ds = NULL, *ver = NULL;
	for (int i = 0; i < PQntuples(r); i++) {
		if (strcmp(PQgetvalue(r, i, 0), "dataset_id") == 0)
			ds = PQgetvalue(r, i, 1);
		else
			ver = PQgetvalue(r, i, 1);
	}
	if (!ds || !ver)
		rc = tether_error_set(TETHER_EREFUSED, "%s: schema %s has tether's tables but no dataset_id / "
		                      "schema_version in meta: not touched", url, schema);
	else if (strcmp(ds, dataset) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "%s: schema %s holds dataset %s, not this one (%s): publish to "
		                      "another --schema", url, schema, ds, dataset);
	else if (atoi(ver) > TT_EXPORT_SCHEMA_VERSION)
		rc = tether_error_set(TETHER_EREFUSED, "%s: schema %s was written by a newer tether (schema version "
		                      "%s; this one writes %d): upgrade tether", url, schema, ver, TT_EXPORT_SCHEMA_VERSION);
	else if (atoi(ver) < 1)
		rc = tether_error_set(TETHER_EREFUSED, "%s: schema %s has schema version '%s', which no tether wrote",
		                      url, schema, ver);
	/* Versions older than this one would be migrated here; 1 is the first. */
	PQclear(r);
	return rc;
}

/* COPY's text format: backslash, tab, newline and CR escaped, \N null. */
static void copy_cell(char **buf, size_t *len, size_t *cap, enum tt_col_type type, const struct tt_cell *v)
{
	char num[32];
	const char *s;
	size_t n;
	if (v->null) {
		s = "\\N";
		n = 2;
	} else if (type == TT_COL_INT) {
		n = (size_t)snprintf(num, sizeof num, "%" PRId64, v->i);
		s = num;
	} else if (type == TT_COL_BOOL) {
		s = v->i ? "t" : "f";
		n = 1;
	} else {
		s = v->s;
		n = v->len;
	}
	if (*len + 2 * n + 4 > *cap) {
		*cap = 2 * (*cap + 2 * n + 4);
		*buf = realloc(*buf, *cap);
		if (!*buf)
			abort();
	}
	int raw = v->null || type != TT_COL_TEXT;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (raw) {
			(*buf)[(*len)++] = ch;
			continue;
		}
		switch (ch) {
		case '\\': (*buf)[(*len)++] = '\\'; (*buf)[(*len)++] = '\\'; break;
		case '\t': (*buf)[(*len)++] = '\\'; (*buf)[(*len)++] = 't'; break;
		case '\n': (*buf)[(*len)++] = '\\'; (*buf)[(*len)++] = 'n'; break;
		case '\r': (*buf)[(*len)++] = '\\'; (*buf)[(*len)++] = 'r'; break;
		default: (*buf)[(*len)++] = ch;
		}
	}
}

/* The rows of `t` that `keep` (NULL: all) lets through, sent into a
 * temporary copy of the table, then into it, skipping rows already there. */
static int send_rows(PGconn *c, const char *url, const char *schema, const struct tt_export_table *t,
                     int (*keep)(const struct tt_cell *row, void *ud), void *ud, size_t *sent)
{
	char *tmp = tt_strdupf("tt_in_%s", t->name);
	char *sql = tt_strdupf("CREATE TEMP TABLE %s (LIKE %s.%s) ON COMMIT DROP", tmp, schema, t->name);
	int rc = run(c, url, "cannot create a temporary table", sql, 0, NULL, PGRES_COMMAND_OK, NULL);
	free(sql);
	sql = tt_strdupf("COPY %s FROM STDIN", tmp);
	if (!rc)
		rc = run(c, url, "cannot start a COPY", sql, 0, NULL, PGRES_COPY_IN, NULL);
	free(sql);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	struct tt_cell *row = calloc(t->ncols, sizeof *row);
	*sent = 0;
	if (!buf || !row)
		abort();
	for (size_t i = 0; !rc && i < t->nrows; i++) {
		t->row(t, i, row);
		if (keep && !keep(row, ud))
			continue;
		for (size_t k = 0; k < t->ncols; k++) {
			copy_cell(&buf, &len, &cap, t->cols[k].type, &row[k]);
			buf[len++] = k + 1 < t->ncols ? '\t' : '\n';
		}
		(*sent)++;
		if (len > (1 << 15)) {
			if (PQputCopyData(c, buf, (int)len) != 1)
				rc = pg_fail(c, url, "COPY failed", NULL);
			len = 0;
		}
	}
	if (!rc && len && PQputCopyData(c, buf, (int)len) != 1)
		rc = pg_fail(c, url, "COPY failed", NULL);
	free(buf);
	free(row);
	if (!rc || PQtransactionStatus(c) == PQTRANS_ACTIVE) {
		int end = PQputCopyEnd(c, rc ? "tether stopped" : NULL);
		PGresult *r;
		while ((r = PQgetResult(c))) {
			if (!rc && (end != 1 || PQresultStatus(r) != PGRES_COMMAND_OK))
				rc = pg_fail(c, url, "COPY failed", r);
			PQclear(r);
		}
	}
	sql = tt_strdupf("INSERT INTO %s.%s SELECT * FROM %s ON CONFLICT DO NOTHING", schema, t->name, tmp);
	if (!rc)
		rc = run(c, url, "cannot insert the rows", sql, 0, NULL, PGRES_COMMAND_OK, NULL);
	free(sql);
	free(tmp);
	return rc;
}

static int row_in(const struct tt_cell *row, void *ud)
{
	/* the first cell (commit_id) in the set */
	return !row[0].null && json_object_get(ud, row[0].s) != NULL;
}

/* Rows whose first cell (state id, listing digest) the new objects name. */
struct wanted {
	json_t *set; /* {value: true} */
};

static int cell_in(const struct tt_cell *row, void *ud)
{
	struct wanted *w = ud;
	return !row[0].null && json_object_get(w->set, row[0].s) != NULL;
}

/* The index of t's column `name` (export.c's schema has it). */
static size_t column(const struct tt_export_table *t, const char *name)
{
	for (size_t k = 0; k < t->ncols; k++)
		if (strcmp(t->cols[k].name, name) == 0)
			return k;
	abort();
}

static int publish_in(PGconn *c, const struct tt_sql_publish *p, const char *schema, json_t *report)
{
	const char *url = p->url;
	const struct tt_export_table *T = p->tables;
	int rc = run(c, url, "cannot begin", "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL);
	/* two publishes into one schema take turns */
	const char *lock_params[] = { p->schema };
	if (!rc)
		rc = run(c, url, "cannot lock the schema", "SELECT pg_advisory_xact_lock(hashtext('tether:' || $1))", 1,
		         lock_params, PGRES_TUPLES_OK, NULL);
	char *sql = tt_strdupf("CREATE SCHEMA IF NOT EXISTS %s", schema);
	if (!rc)
		rc = run(c, url, "cannot create the schema", sql, 0, NULL, PGRES_COMMAND_OK, NULL);
	free(sql);
	size_t present = 0;
	if (!rc)
		rc = check_tables(c, url, p->schema, T, p->ntables, &present);
	if (!rc && present && present < p->ntables)
		rc = tether_error_set(TETHER_EREFUSED, "%s: schema %s holds only some of tether's tables: not touched",
		                      url, p->schema);
	if (!rc && present)
		rc = check_meta(c, url, schema, p->dataset);
	for (size_t i = 0; !rc && !present && i < p->ntables; i++)
		rc = create_table(c, url, schema, &T[i]);

	/* which commits are there, which are new, which are gone */
	json_t *there = json_object(), *exported = json_object(), *fresh = json_object();
	PGresult *r = NULL;
	sql = tt_strdupf("SELECT commit_id FROM %s.commits", schema);
	if (!rc)
		rc = run(c, url, "cannot read the published commits", sql, 0, NULL, PGRES_TUPLES_OK, &r);
	free(sql);
	for (int i = 0; !rc && i < PQntuples(r); i++)
		json_object_set_new(there, PQgetvalue(r, i, 0), json_true());
	PQclear(r);
	size_t width = T[TT_T_OBJECTS].ncols > T[TT_T_COMMITS].ncols ? T[TT_T_OBJECTS].ncols : T[TT_T_COMMITS].ncols;
	struct tt_cell *row = calloc(width, sizeof *row); /* a row of either table */
	if (!row)
		abort();
	for (size_t i = 0; i < T[TT_T_COMMITS].nrows; i++) {
		T[TT_T_COMMITS].row(&T[TT_T_COMMITS], i, row);
		const char *id = row[0].s;
		json_object_set_new(exported, id, json_true());
		if (!json_object_get(there, id))
			json_object_set_new(fresh, id, json_true());
	}
	json_t *gone = json_array();
	const char *id;
	json_t *v;
	json_object_foreach(there, id, v) if (!json_object_get(exported, id)) json_array_append_new(gone, json_string(id));
	if (!rc && json_array_size(gone)) {
		char *list = json_dumps(gone, JSON_COMPACT);
		const char *params[] = { list };
		static const char *const tables[] = { "objects", "commits" };
		for (size_t k = 0; !rc && k < 2; k++) {
			sql = tt_strdupf("DELETE FROM %s.%s WHERE commit_id IN (SELECT json_array_elements_text($1::json))",
			                 schema, tables[k]);
			rc = run(c, url, "cannot delete the commits no longer exported", sql, 1, params, PGRES_COMMAND_OK,
			         NULL);
			free(sql);
		}
		free(list);
	}
	/* the states and listings the new commits' objects name */
	struct wanted states = { json_object() }, listings = { json_object() };
	size_t state_col = column(&T[TT_T_OBJECTS], "state_id"), listing_col = column(&T[TT_T_OBJECTS], "listing");
	for (size_t i = 0; i < T[TT_T_OBJECTS].nrows; i++) {
		T[TT_T_OBJECTS].row(&T[TT_T_OBJECTS], i, row);
		if (!json_object_get(fresh, row[0].s))
			continue;
		if (!row[state_col].null)
			json_object_set_new(states.set, row[state_col].s, json_true());
		if (!row[listing_col].null)
			json_object_set_new(listings.set, row[listing_col].s, json_true());
	}
	free(row);
	size_t sent_commits = 0, sent_objects = 0, sent = 0;
	if (!rc)
		rc = send_rows(c, url, schema, &T[TT_T_COMMITS], row_in, fresh, &sent_commits);
	if (!rc)
		rc = send_rows(c, url, schema, &T[TT_T_OBJECTS], row_in, fresh, &sent_objects);
	if (!rc)
		rc = send_rows(c, url, schema, &T[TT_T_OBJECT_STATES], cell_in, &states, &sent);
	if (!rc)
		rc = send_rows(c, url, schema, &T[TT_T_LISTINGS], cell_in, &listings, &sent);
	if (!rc)
		rc = send_rows(c, url, schema, &T[TT_T_LISTING_ENTRIES], cell_in, &listings, &sent);
	/* what nothing names any more goes with the commits that named it */
	static const char *const orphans[] = {
		"DELETE FROM %1$s.object_states s WHERE NOT EXISTS (SELECT 1 FROM %1$s.objects o WHERE o.state_id = "
		"s.state_id)",
		"DELETE FROM %1$s.listing_entries e WHERE NOT EXISTS (SELECT 1 FROM %1$s.objects o WHERE o.listing = "
		"e.listing)",
		"DELETE FROM %1$s.listings l WHERE NOT EXISTS (SELECT 1 FROM %1$s.objects o WHERE o.listing = l.listing)",
		"DELETE FROM %1$s.refs",
		"DELETE FROM %1$s.meta",
	};
	for (size_t k = 0; !rc && k < sizeof orphans / sizeof orphans[0]; k++) {
		if (k < 3 && !json_array_size(gone))
			continue; /* nothing was deleted: nothing can be orphaned */
		sql = tt_strdupf(orphans[k], schema);
		rc = run(c, url, "cannot delete what no commit names", sql, 0, NULL, PGRES_COMMAND_OK, NULL);
		free(sql);
	}
	if (!rc)
		rc = send_rows(c, url, schema, &T[TT_T_REFS], NULL, NULL, &sent);
	if (!rc)
		rc = send_rows(c, url, schema, &T[TT_T_META], NULL, NULL, &sent);
	if (!rc)
		rc = run(c, url, "cannot commit", "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL);
	if (!rc) {
		json_object_set_new(report, "new_commits", json_integer((json_int_t)sent_commits));
		json_object_set_new(report, "new_objects", json_integer((json_int_t)sent_objects));
		json_object_set_new(report, "removed_commits", json_integer((json_int_t)json_array_size(gone)));
		json_object_set_new(report, "unchanged_commits",
		                    json_integer((json_int_t)(json_object_size(exported) - sent_commits)));
		json_object_set_new(report, "created", json_boolean(!present));
	}
	json_decref(there);
	json_decref(exported);
	json_decref(fresh);
	json_decref(gone);
	json_decref(states.set);
	json_decref(listings.set);
	return rc;
}

int tt_sql_publish_pg(const struct tt_sql_publish *p, json_t **report)
{
	PGconn *c = NULL;
	*report = NULL;
	int rc = pg_connect(p->url, p->password, &c);
	if (rc)
		return rc;
	char *schema = ident(c, p->schema);
	json_t *r = json_pack("{s:s}", "schema", p->schema);
	rc = publish_in(c, p, schema, r);
	free(schema);
	PQfinish(c); /* an open transaction is rolled back */
	if (rc)
		json_decref(r);
	else
		*report = r;
	return rc;
}

int tt_sql_query_pg(const char *url, const char *password, const char *query, struct tt_sql_rows *out)
{
	PGconn *c = NULL;
	memset(out, 0, sizeof *out);
	int rc = pg_connect(url, password, &c);
	if (rc)
		return rc;
	/* read only, whatever the query says; one statement (an extended-
	 * protocol query refuses several) */
	rc = run(c, url, "cannot begin", "BEGIN READ ONLY", 0, NULL, PGRES_COMMAND_OK, NULL);
	PGresult *r = NULL;
	if (!rc) {
		r = PQexecParams(c, query, 0, NULL, NULL, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			char buf[512];
			rc = tether_error_set(TETHER_EUSAGE, "%s: the query failed: %s", url,
			                      PQresultStatus(r) == PGRES_COMMAND_OK
			                              ? "it returns no rows"
			                              : first_line(PQresultErrorMessage(r), buf, sizeof buf));
		}
	}
	if (!rc) {
		out->columns = json_array();
		out->rows = json_array();
		int nc = PQnfields(r);
		for (int k = 0; k < nc; k++)
			json_array_append_new(out->columns, json_string(PQfname(r, k)));
		for (int i = 0; !rc && i < PQntuples(r); i++) {
			json_t *row = json_array();
			for (int k = 0; k < nc; k++) {
				json_t *v = PQgetisnull(r, i, k) ? json_null() : json_string(PQgetvalue(r, i, k));
				if (!v)
					rc = tether_error_set(TETHER_EUSAGE, "row %d, column %s: not UTF-8", i + 1, PQfname(r, k));
				json_array_append_new(row, v);
			}
			json_array_append_new(out->rows, row);
		}
	}
	PQclear(r);
	PQfinish(c);
	if (rc) {
		json_decref(out->columns);
		json_decref(out->rows);
		memset(out, 0, sizeof *out);
	}
	return rc;
}
