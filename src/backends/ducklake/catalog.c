/* Reading a DuckLake catalog's metadata tables (DuckLake 1.0; the formats
 * are in the spec's "tables" pages): the version row, snapshots and their
 * times, the tables visible at a snapshot, and row counts from the data
 * and delete files and the inlined-data tables, never the data itself.
 *
 * Every number a caller puts in SQL is an int64 tether formatted; every
 * name is a metadata table's, quoted for the dialect. */
#include "backends/ducklake/dl.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The DuckLake versions tether reads: what duckdb-extension-ducklake
 * 1.5.5 (DuckDB 1.5.5) writes, and what tether's tests verify. */
static const char *const supported[] = {"1.0", NULL};
/* Versions the extension knew before 1.0; it migrates them on attach. */
static const char *const older[] = {"0.1", "0.2", "0.3-dev1", "0.3", "0.4-dev1", "0.4", NULL};

static int in_list(const char *const *list, const char *s)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return 0;
}

static int take_string(void *ud, int n, const char *const *vals)
{
	char **out = ud;
	if (!*out && n > 0 && vals[0] && !(*out = strdup(vals[0])))
		return tether_error_set(TETHER_ERROR, "out of memory");
	return 0;
}

int dl_check_version(struct dl_conn *c)
{
	int yes = 0;
	int rc = dl_conn_has_table(c, "ducklake_metadata", &yes);
	if (rc)
		return rc;
	if (!yes)
		return tether_error_set(TETHER_ENOTFOUND, "ducklake catalog %s is not a DuckLake catalog (it has no "
		                                          "ducklake_metadata table)", c->what);
	char *key = dl_conn_ident(c, "key"), *value = dl_conn_ident(c, "value");
	char *sql = key && value ? tt_strdupf("SELECT %s FROM ducklake_metadata WHERE %s = 'version' AND scope IS NULL",
	                                      value, key)
	                         : NULL;
	free(key);
	free(value);
	if (!sql)
		return tether_error_set(TETHER_ERROR, "out of memory");
	char *version = NULL;
	rc = dl_conn_query(c, sql, take_string, &version);
	free(sql);
	if (!rc && !version)
		rc = tether_error_set(TETHER_ECONFIG, "ducklake catalog %s has no version in ducklake_metadata", c->what);
	else if (!rc && in_list(older, version))
		rc = tether_error_set(TETHER_EREFUSED,
		                      "ducklake catalog %s is DuckLake %s, older than tether reads (1.0): attach it once "
		                      "with DuckDB 1.5 to migrate it",
		                      c->what, version);
	else if (!rc && !in_list(supported, version))
		rc = tether_error_set(TETHER_EREFUSED,
		                      "ducklake catalog %s is DuckLake %s, newer than tether reads (1.0): upgrade tether",
		                      c->what, version);
	free(version);
	return rc;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (*(*p)++ - '0');
	}
	*out = v;
	return 0;
}

int dl_parse_time(const char *text, int64_t *us)
{
	const char *p = text;
	int neg = *p == '-';
	const char *q = p + neg;
	while (isdigit((unsigned char)*q))
		q++;
	if (*q == '\0' && q > p + neg) {
		errno = 0;
		long long v = strtoll(text, NULL, 10);
		if (errno)
			goto bad;
		*us = v;
		return 0;
	}
	int y, mo, d, h, mi, s;
	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d) ||
	    (*p != ' ' && *p != 'T') || !*p++ || digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) ||
	    *p++ != ':' || digits(&p, 2, &s))
		goto bad;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		goto bad;
	int64_t frac = 0;
	if (*p == '.') {
		p++;
		int n = 0;
		while (isdigit((unsigned char)*p)) {
			if (n < 6) {
				frac = frac * 10 + (*p - '0');
				n++;
			}
			p++;
		}
		if (n == 0)
			goto bad;
		while (n++ < 6)
			frac *= 10;
	}
	int64_t offset = 0;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1;
		int oh = 0, om = 0, os = 0;
		if (digits(&p, 2, &oh))
			goto bad;
		if (*p == ':' && (p++, digits(&p, 2, &om)))
			goto bad;
		if (*p == ':' && (p++, digits(&p, 2, &os)))
			goto bad;
		offset = sign * ((int64_t)oh * 3600 + om * 60 + os);
	}
	if (*p)
		goto bad;
	int64_t secs = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s - offset;
	*us = secs * 1000000 + frac;
	return 0;
bad:
	return tether_error_set(TETHER_ECONFIG, "ducklake: cannot read snapshot time '%s'", text);
}

struct snap_read {
	struct dl_snapshot *s;
	int found;
};

static int take_snapshot(void *ud, int n, const char *const *vals)
{
	struct snap_read *r = ud;
	if (r->found || n < 2 || !vals[0] || !vals[1])
		return 0;
	char *end = NULL;
	errno = 0;
	r->s->id = strtoll(vals[0], &end, 10);
	if (errno || *end)
		return tether_error_set(TETHER_ECONFIG, "ducklake: snapshot id '%s' is not a number", vals[0]);
	int rc = dl_parse_time(vals[1], &r->s->time_us);
	r->found = rc == 0;
	return rc;
}

static char *time_column(const struct dl_conn *c, const char *col)
{
	int len = snprintf(NULL, 0, c->ops->time_sql, col);
	char *out = len > 0 ? malloc((size_t)len + 1) : NULL;
	if (out)
		snprintf(out, (size_t)len + 1, c->ops->time_sql, col);
	return out;
}

static int snapshot_query(struct dl_conn *c, const char *where, struct dl_snapshot *s, int *found)
{
	char *t = time_column(c, "snapshot_time");
	char *sql = t ? tt_strdupf("SELECT snapshot_id, %s FROM ducklake_snapshot %s", t, where) : NULL;
	free(t);
	if (!sql)
		return tether_error_set(TETHER_ERROR, "out of memory");
	struct snap_read r = {s, 0};
	int rc = dl_conn_query(c, sql, take_snapshot, &r);
	free(sql);
	*found = r.found;
	return rc;
}

int dl_latest(struct dl_conn *c, struct dl_snapshot *s)
{
	int found = 0;
	int rc = snapshot_query(c, "WHERE snapshot_id = (SELECT MAX(snapshot_id) FROM ducklake_snapshot)", s, &found);
	if (!rc && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "ducklake catalog %s has no snapshot", c->what);
	return rc;
}

int dl_snapshot_get(struct dl_conn *c, int64_t id, struct dl_snapshot *s, int *found)
{
	char where[64];
	snprintf(where, sizeof where, "WHERE snapshot_id = %" PRId64, id);
	return snapshot_query(c, where, s, found);
}

struct history_read {
	json_t *entries;
};

static int take_history(void *ud, int n, const char *const *vals)
{
	struct history_read *h = ud;
	if (n < 5 || !vals[0] || !vals[1])
		return 0;
	int64_t us;
	int rc = dl_parse_time(vals[1], &us);
	if (rc)
		return rc;
	/* The snapshot's changes as DuckLake lists them (changes_made), after
	 * its commit message and author when it has them. */
	const char *changes = vals[2] ? vals[2] : "";
	char *message = vals[4] && *vals[4] ? tt_strdupf("%s%s%s (%s)", vals[4], vals[3] && *vals[3] ? " -- " : "",
	                                                 vals[3] && *vals[3] ? vals[3] : "", changes)
	                                    : strdup(changes);
	json_t *e = message ? json_pack("{s:s, s:I, s:s, s:[]}", "id", vals[0], "time", (json_int_t)(us / 1000000),
	                                "message", message, "refs")
	                    : NULL;
	free(message);
	if (!e || json_array_append_new(h->entries, e) != 0)
		return tether_error_set(TETHER_ERROR, "out of memory");
	return 0;
}

int dl_history(struct dl_conn *c, int64_t at, int max, json_t **entries)
{
	char *t = time_column(c, "s.snapshot_time");
	char where[64] = "";
	if (at >= 0)
		snprintf(where, sizeof where, "WHERE s.snapshot_id <= %" PRId64, at);
	char limit[32] = "";
	if (max > 0)
		snprintf(limit, sizeof limit, " LIMIT %d", max);
	char *sql = t ? tt_strdupf("SELECT s.snapshot_id, %s, c.changes_made, c.author, c.commit_message FROM "
	                           "ducklake_snapshot s LEFT JOIN ducklake_snapshot_changes c ON c.snapshot_id = "
	                           "s.snapshot_id %s ORDER BY s.snapshot_id DESC%s",
	                           t, where, limit)
	              : NULL;
	free(t);
	struct history_read h = {json_array()};
	if (!sql || !h.entries) {
		free(sql);
		json_decref(h.entries);
		return tether_error_set(TETHER_ERROR, "out of memory");
	}
	int rc = dl_conn_query(c, sql, take_history, &h);
	free(sql);
	if (rc)
		json_decref(h.entries);
	else
		*entries = h.entries;
	return rc;
}

static int take_table(void *ud, int n, const char *const *vals)
{
	struct dl_tables *t = ud;
	if (n < 3 || !vals[0] || !vals[1] || !vals[2])
		return 0;
	struct dl_table *v = realloc(t->v, (t->n + 1) * sizeof *v);
	if (!v)
		return tether_error_set(TETHER_ERROR, "out of memory");
	t->v = v;
	struct dl_table *e = &t->v[t->n];
	e->id = strtoll(vals[0], NULL, 10);
	e->schema = strdup(vals[1]);
	e->name = strdup(vals[2]);
	t->n++;
	return e->schema && e->name ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

int dl_tables_at(struct dl_conn *c, int64_t snapshot, struct dl_tables *out)
{
	memset(out, 0, sizeof *out);
	char s[24];
	snprintf(s, sizeof s, "%" PRId64, snapshot);
	char *sql = tt_strdupf("SELECT t.table_id, sc.schema_name, t.table_name FROM ducklake_table t JOIN "
	                       "ducklake_schema sc ON sc.schema_id = t.schema_id AND sc.begin_snapshot <= %s AND "
	                       "(sc.end_snapshot IS NULL OR sc.end_snapshot > %s) WHERE t.begin_snapshot <= %s AND "
	                       "(t.end_snapshot IS NULL OR t.end_snapshot > %s) ORDER BY t.table_id",
	                       s, s, s, s);
	if (!sql)
		return tether_error_set(TETHER_ERROR, "out of memory");
	int rc = dl_conn_query(c, sql, take_table, out);
	free(sql);
	if (rc)
		dl_tables_free(out);
	return rc;
}

void dl_tables_free(struct dl_tables *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].schema);
		free(t->v[i].name);
	}
	free(t->v);
	memset(t, 0, sizeof *t);
}

const struct dl_table *dl_tables_find(const struct dl_tables *t, int64_t id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].id == id)
			return &t->v[i];
	return NULL;
}

static int int_query(struct dl_conn *c, char *sql, int64_t *v)
{
	if (!sql)
		return tether_error_set(TETHER_ERROR, "out of memory");
	int found = 0;
	int rc = dl_conn_int(c, sql, v, &found);
	free(sql);
	if (!found)
		*v = 0;
	return rc;
}

struct names {
	char **v;
	size_t n;
};

static int take_name(void *ud, int n, const char *const *vals)
{
	struct names *t = ud;
	if (n < 1 || !vals[0])
		return 0;
	char **v = realloc(t->v, (t->n + 1) * sizeof *v);
	if (!v)
		return tether_error_set(TETHER_ERROR, "out of memory");
	t->v = v;
	return (t->v[t->n++] = strdup(vals[0])) ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

static void names_free(struct names *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
}

/* The sum over table id's inlined-data tables of COUNT(*) WHERE cond, a
 * condition on their begin_snapshot and end_snapshot columns. */
static int inlined_count(struct dl_conn *c, int64_t id, const char *cond, int64_t *total)
{
	*total = 0;
	struct names names = {0};
	char *sql = tt_strdupf("SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id = %" PRId64, id);
	if (!sql)
		return tether_error_set(TETHER_ERROR, "out of memory");
	int rc = dl_conn_query(c, sql, take_name, &names);
	free(sql);
	for (size_t i = 0; !rc && i < names.n; i++) {
		/* Listed names are the extension's own, ducklake_inlined_data_<id>_<v>;
		 * one a clone's catalog made up is quoted, and is only counted. */
		int yes = 0;
		rc = dl_conn_has_table(c, names.v[i], &yes);
		if (rc || !yes)
			continue;
		char *q = dl_conn_ident(c, names.v[i]);
		int64_t v = 0;
		rc = int_query(c, q ? tt_strdupf("SELECT COUNT(*) FROM %s WHERE %s", q, cond) : NULL, &v);
		free(q);
		*total += v;
	}
	names_free(&names);
	return rc;
}

int dl_live_rows(struct dl_conn *c, int64_t id, int64_t s, int64_t *rows)
{
	char S[24];
	snprintf(S, sizeof S, "%" PRId64, s);
	int64_t files = 0, inlined_deletes = 0, inlined = 0;
	int rc = int_query(c,
	                   tt_strdupf("SELECT COALESCE(SUM(df.record_count - COALESCE(del.delete_count, 0)), 0) FROM "
	                              "ducklake_data_file df LEFT JOIN ducklake_delete_file del ON del.data_file_id = "
	                              "df.data_file_id AND del.begin_snapshot <= %s AND (del.end_snapshot IS NULL OR "
	                              "del.end_snapshot > %s) WHERE df.table_id = %" PRId64
	                              " AND df.begin_snapshot <= %s AND (df.end_snapshot IS NULL OR df.end_snapshot > %s)",
	                              S, S, id, S, S),
	                   &files);
	char name[64];
	snprintf(name, sizeof name, "ducklake_inlined_delete_%" PRId64, id);
	int yes = 0;
	if (!rc)
		rc = dl_conn_has_table(c, name, &yes);
	if (!rc && yes)
		rc = int_query(c,
		               tt_strdupf("SELECT COUNT(*) FROM %s d JOIN ducklake_data_file df ON df.data_file_id = "
		                          "d.file_id WHERE d.begin_snapshot <= %s AND df.begin_snapshot <= %s AND "
		                          "(df.end_snapshot IS NULL OR df.end_snapshot > %s)",
		                          name, S, S, S),
		               &inlined_deletes);
	char *cond = tt_strdupf("begin_snapshot <= %s AND (end_snapshot IS NULL OR end_snapshot > %s)", S, S);
	if (!rc)
		rc = cond ? inlined_count(c, id, cond, &inlined) : tether_error_set(TETHER_ERROR, "out of memory");
	free(cond);
	*rows = files - inlined_deletes + inlined;
	return rc;
}

int dl_inserted_rows(struct dl_conn *c, int64_t id, int64_t a, int64_t b, int64_t *rows)
{
	int64_t files = 0, inlined = 0;
	int rc = int_query(c,
	                   tt_strdupf("SELECT COALESCE(SUM(record_count), 0) FROM ducklake_data_file WHERE table_id = "
	                              "%" PRId64 " AND begin_snapshot > %" PRId64 " AND begin_snapshot <= %" PRId64,
	                              id, a, b),
	                   &files);
	char *cond = tt_strdupf("begin_snapshot > %" PRId64 " AND begin_snapshot <= %" PRId64, a, b);
	if (!rc)
		rc = cond ? inlined_count(c, id, cond, &inlined) : tether_error_set(TETHER_ERROR, "out of memory");
	free(cond);
	*rows = files + inlined;
	return rc;
}
