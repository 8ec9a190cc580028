/* DuckLake locators: `metadata` (the catalog, as DuckDB's ATTACH takes it
 * after "ducklake:"), `data_path`, `table`, and `at` (add --at). A
 * locator is committed, so one read back from a manifest is untrusted: a
 * clone chose its hosts and paths. A connection string may therefore
 * carry only the keywords that name a server and a database, never a
 * password or a file libpq would read; credentials come from
 * .tether/secrets.toml (secrets.c). */
#include "backends/ducklake/dl.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const pg_keys[] = {"host", "hostaddr", "port", "dbname", "user", "sslmode",
                                      "connect_timeout", "application_name", NULL};
static const char *const mysql_keys[] = {"host", "port", "user", "database", "db", "ssl_mode", NULL};
/* Keywords that carry a credential, or make the client library read one
 * from a file of its choosing. */
static const char *const credential_keys[] = {"password", "passwd", "pwd", "passfile", "service", "sslkey",
                                              "sslcert", "sslpassword", NULL};

static int in_list(const char *const *list, const char *s)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return 0;
}

static void params_free(struct dl_target *t)
{
	for (size_t i = 0; i < t->nparams; i++) {
		free(t->params[i].key);
		free(t->params[i].value);
	}
	free(t->params);
	t->params = NULL;
	t->nparams = 0;
}

void dl_target_free(struct dl_target *t)
{
	free(t->metadata);
	free(t->path);
	params_free(t);
	free(t->server);
	free(t->data_path);
	free(t->schema);
	free(t->table);
	memset(t, 0, sizeof *t);
}

/* keyword=value pairs separated by blanks, a value optionally in single
 * quotes with \' and \\ escapes (libpq's conninfo form, which DuckDB's
 * postgres and mysql extensions both take). */
static int parse_params(const char *s, int code, const char *what, struct dl_target *t)
{
	const char *p = s;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			return 0;
		const char *k = p;
		while (*p && *p != '=' && !isspace((unsigned char)*p))
			p++;
		size_t klen = (size_t)(p - k);
		while (isspace((unsigned char)*p))
			p++;
		if (*p != '=' || klen == 0)
			return tether_error_set(code, "ducklake metadata '%s': expected keyword=value in the %s connection string",
			                        s, what);
		p++;
		while (isspace((unsigned char)*p))
			p++;
		char *v = malloc(strlen(p) + 1);
		if (!v)
			return tether_error_set(TETHER_ERROR, "out of memory");
		size_t n = 0;
		if (*p == '\'') {
			p++;
			while (*p && *p != '\'') {
				if (*p == '\\' && p[1])
					p++;
				v[n++] = *p++;
			}
			if (*p != '\'') {
				free(v);
				return tether_error_set(code, "ducklake metadata '%s': unterminated quote", s);
			}
			p++;
		} else {
			while (*p && !isspace((unsigned char)*p))
				v[n++] = *p++;
		}
		v[n] = '\0';
		struct dl_param *np = realloc(t->params, (t->nparams + 1) * sizeof *np);
		char *key = strndup(k, klen);
		if (!np || !key) {
			free(v);
			free(key);
			if (np)
				t->params = np;
			return tether_error_set(TETHER_ERROR, "out of memory");
		}
		t->params = np;
		t->params[t->nparams].key = key;
		t->params[t->nparams].value = v;
		t->nparams++;
	}
}

static int check_params(const char *s, int code, const char *what, const char *const *allowed, struct dl_target *t)
{
	for (size_t i = 0; i < t->nparams; i++) {
		const char *k = t->params[i].key;
		if (in_list(credential_keys, k)) {
			tether_error_set(code,
			                 "ducklake metadata '%s': '%s' is a credential, and a locator is committed; put "
			                 "user and password in .tether/secrets.toml ([objects.\"<key>\"] server, user, "
			                 "password)",
			                 s, k);
			return code;
		}
		if (!in_list(allowed, k))
			return tether_error_set(code, "ducklake metadata '%s': keyword '%s' is not one tether passes to %s", s,
			                        k, what);
	}
	return 0;
}

static int server_of(struct dl_target *t, const char *default_host, const char *default_port)
{
	const char *host = dl_param(t, "host");
	if (!host)
		host = dl_param(t, "hostaddr");
	const char *port = dl_param(t, "port");
	t->server = tt_strdupf("%s:%s", host && *host ? host : default_host, port && *port ? port : default_port);
	return t->server ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

int dl_parse_metadata(const char *metadata, int committed, struct dl_target *t)
{
	int code = committed ? TETHER_ECONFIG : TETHER_EUSAGE;
	const char *s = metadata;
	if (strncmp(s, "ducklake:", 9) == 0)
		s += 9;
	if (strncmp(s, "postgres:", 9) == 0) {
		t->type = DL_POSTGRES;
		int rc = parse_params(s + 9, code, "postgres", t);
		if (!rc)
			rc = check_params(metadata, code, "Postgres", pg_keys, t);
		if (!rc && !dl_param(t, "dbname"))
			rc = tether_error_set(code, "ducklake metadata '%s': the postgres connection names no dbname", metadata);
		return rc ? rc : server_of(t, "localhost", "5432");
	}
	if (strncmp(s, "mysql:", 6) == 0) {
		t->type = DL_MYSQL;
		int rc = parse_params(s + 6, code, "mysql", t);
		if (!rc)
			rc = check_params(metadata, code, "MySQL", mysql_keys, t);
		if (!rc && !dl_param(t, "database") && !dl_param(t, "db"))
			rc = tether_error_set(code, "ducklake metadata '%s': the mysql connection names no database", metadata);
		return rc ? rc : server_of(t, "localhost", "3306");
	}
	const char *path = s;
	t->type = DL_DUCKDB;
	if (strncmp(s, "sqlite:", 7) == 0) {
		t->type = DL_SQLITE;
		path = s + 7;
	} else if (strncmp(s, "duckdb:", 7) == 0) {
		path = s + 7;
	} else {
		/* Anything else with a scheme-like prefix is a catalog database
		 * tether does not read (MotherDuck's md:, a URL). */
		const char *colon = strchr(s, ':');
		const char *slash = strchr(s, '/');
		if (colon && (!slash || colon < slash))
			return tether_error_set(code,
			                        "ducklake metadata '%s': tether reads catalogs on duckdb:, sqlite:, postgres: "
			                        "and mysql:, not '%.*s'",
			                        metadata, (int)(colon - s), s);
	}
	if (!*path)
		return tether_error_set(code, "ducklake metadata '%s' names no catalog file", metadata);
	if (committed && path[0] != '/')
		return tether_error_set(code,
		                        "ducklake metadata '%s': a catalog file's path must be absolute (tether stores "
		                        "it so; `tether upgrade` makes an older relative one absolute)",
		                        metadata);
	t->path = strdup(path);
	return t->path ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

static int plain_ident(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

char *dl_table_name(const char *schema, const char *table)
{
	char *s = plain_ident(schema) ? strdup(schema) : dl_quote(schema, '"');
	char *t = plain_ident(table) ? strdup(table) : dl_quote(table, '"');
	char *out = s && t ? tt_strdupf("%s.%s", s, t) : NULL;
	free(s);
	free(t);
	return out;
}

/* One part of a dotted name: a plain run, or "..." with "" for a quote. */
static int read_part(const char **p, char **out)
{
	const char *s = *p;
	char *v = malloc(strlen(s) + 1);
	if (!v)
		return tether_error_set(TETHER_ERROR, "out of memory");
	size_t n = 0;
	if (*s == '"') {
		s++;
		for (;;) {
			if (!*s) {
				free(v);
				return -1;
			}
			if (*s == '"') {
				if (s[1] != '"')
					break;
				s++;
			}
			v[n++] = *s++;
		}
		s++;
	} else {
		while (*s && *s != '.' && *s != '"')
			v[n++] = *s++;
	}
	v[n] = '\0';
	*p = s;
	if (n == 0) {
		free(v);
		return -1;
	}
	*out = v;
	return 0;
}

int dl_parse_table(const char *text, char **schema, char **table)
{
	char *parts[2] = {NULL, NULL};
	int count = 0;
	const char *p = text;
	for (;;) {
		char *part = NULL;
		if (count == 2 || read_part(&p, &part) != 0) {
			free(parts[0]);
			free(parts[1]);
			return tether_error_set(TETHER_EUSAGE,
			                        "ducklake table '%s': give TABLE or SCHEMA.TABLE, a part that is not a plain "
			                        "identifier in double quotes",
			                        text);
		}
		parts[count++] = part;
		if (*p == '\0')
			break;
		if (*p != '.') {
			free(parts[0]);
			free(parts[1]);
			return tether_error_set(TETHER_EUSAGE, "ducklake table '%s': unexpected '%c'", text, *p);
		}
		p++;
	}
	if (count == 1) {
		*schema = strdup("main");
		*table = parts[0];
	} else {
		*schema = parts[0];
		*table = parts[1];
	}
	return *schema ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

static int parse_at(const char *s, int code, int64_t *at)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < 0 || !isdigit((unsigned char)*s))
		return tether_error_set(code, "ducklake: --at takes a snapshot id (a number), not '%s'", s);
	*at = v;
	return 0;
}

static const char *string_member(const json_t *o, const char *key, int *bad)
{
	json_t *v = json_object_get(o, key);
	if (v && (!json_is_string(v) || !*json_string_value(v)))
		*bad = 1;
	return v ? json_string_value(v) : NULL;
}

int dl_target_read(const json_t *locator, struct dl_target *t)
{
	memset(t, 0, sizeof *t);
	t->at = -1;
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "ducklake locator is not a table");
	static const char *const known[] = {"metadata", "data_path", "table", "at", NULL};
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)locator, k, v) {
		if (!in_list(known, k))
			return tether_error_set(TETHER_ECONFIG, "ducklake locator: unknown key '%s'", k);
	}
	int bad = 0;
	const char *metadata = string_member(locator, "metadata", &bad);
	const char *data_path = string_member(locator, "data_path", &bad);
	const char *table = string_member(locator, "table", &bad);
	const char *at = string_member(locator, "at", &bad);
	if (bad)
		return tether_error_set(TETHER_ECONFIG, "ducklake locator: metadata, data_path, table and at are "
		                                        "non-empty strings");
	if (!metadata || strncmp(metadata, "ducklake:", 9) != 0)
		return tether_error_set(TETHER_ECONFIG, "ducklake locator: \"metadata\" must be \"ducklake:...\"");
	int rc = dl_parse_metadata(metadata, 1, t);
	if (!rc && data_path && !strstr(data_path, "://") && data_path[0] != '/')
		rc = tether_error_set(TETHER_ECONFIG, "ducklake locator: data_path '%s' must be absolute or a URL",
		                      data_path);
	if (!rc && table && (rc = dl_parse_table(table, &t->schema, &t->table)) != 0)
		rc = tether_error_set(TETHER_ECONFIG, "ducklake locator: %s", tether_error_last());
	if (!rc && at)
		rc = parse_at(at, TETHER_ECONFIG, &t->at);
	if (!rc && (!(t->metadata = strdup(metadata)) || (data_path && !(t->data_path = strdup(data_path)))))
		rc = tether_error_set(TETHER_ERROR, "out of memory");
	if (rc)
		dl_target_free(t);
	return rc;
}

/* Does the file begin with SQLite's header? */
static int is_sqlite_file(const char *path)
{
	char head[16] = {0};
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	return n == sizeof head && memcmp(head, "SQLite format 3", 16) == 0;
}

/* A local path (not a URL) made absolute against cwd, "~" expanded. */
static char *absolute(const char *path, const char *cwd)
{
	return strstr(path, "://") ? strdup(path) : tether_path_resolve(path, cwd);
}

int dl_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                    json_t **locator)
{
	(void)ctx;
	*locator = NULL;
	static const char *const known[] = {"metadata", "data_path", "table", "at", NULL};
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)options, k, v) {
		if (!in_list(known, k))
			return tether_error_set(TETHER_EUSAGE, "unknown option '--%s' for kind ducklake", k);
		if (!json_is_string(v) || !*json_string_value(v))
			return tether_error_set(TETHER_EUSAGE, "--%s for kind ducklake takes a non-empty string", k);
	}
	const char *given = json_string_value(json_object_get(options, "metadata"));
	if (given && uri && *uri)
		return tether_error_set(TETHER_EUSAGE, "ducklake: give the catalog once, as the URI or as --metadata");
	if (!given)
		given = uri;
	if (!given || !*given)
		return tether_error_set(TETHER_EUSAGE, "ducklake: name the catalog: ducklake:sqlite:FILE, "
		                                       "ducklake:postgres:dbname=..., ducklake:mysql:database=..., or a "
		                                       "DuckDB file");
	char *metadata = strncmp(given, "ducklake:", 9) == 0 ? strdup(given) : tt_strdupf("ducklake:%s", given);
	if (!metadata)
		return tether_error_set(TETHER_ERROR, "out of memory");
	struct dl_target t = {0};
	int rc = dl_parse_metadata(metadata, 0, &t);
	if (!rc && t.path) {
		/* Stored absolute, in the form it was given (bare, duckdb:, sqlite:). */
		size_t prefix = strlen(metadata) - strlen(t.path);
		char *abs = absolute(t.path, cwd);
		/* A bare path is a DuckDB file to DuckLake; one that is a SQLite
		 * file is recorded as sqlite:, which is what it will be read as. */
		int sqlite = prefix == 9 && abs && is_sqlite_file(abs);
		char *m = abs ? tt_strdupf("%.*s%s%s", (int)prefix, metadata, sqlite ? "sqlite:" : "", abs) : NULL;
		free(abs);
		if (!m)
			rc = tether_error_set(TETHER_ERROR, "out of memory");
		free(metadata);
		metadata = m;
	}
	if (!rc && !(*locator = json_pack("{s:s}", "metadata", metadata)))
		rc = tether_error_set(TETHER_ERROR, "out of memory");
	/* The table as tether names it: parts quoted only where they must be. */
	const char *table = json_string_value(json_object_get(options, "table"));
	if (!rc && table && (rc = dl_parse_table(table, &t.schema, &t.table)) == 0) {
		char *canon = dl_table_name(t.schema, t.table);
		if (!canon || json_object_set_new(*locator, "table", json_string(canon)) != 0)
			rc = tether_error_set(TETHER_ERROR, "out of memory");
		free(canon);
	}
	const char *at = json_string_value(json_object_get(options, "at"));
	int64_t at_id;
	if (!rc && at)
		rc = parse_at(at, TETHER_EUSAGE, &at_id);
	const char *data_path = json_string_value(json_object_get(options, "data_path"));
	if (!rc && data_path) {
		char *abs = absolute(data_path, cwd);
		if (!abs || json_object_set_new(*locator, "data_path", json_string(abs)) != 0)
			rc = tether_error_set(TETHER_ERROR, "out of memory");
		free(abs);
	}
	if (!rc && at && json_object_set_new(*locator, "at", json_string(at)) != 0)
		rc = tether_error_set(TETHER_ERROR, "out of memory");
	free(metadata);
	dl_target_free(&t);
	if (rc) {
		json_decref(*locator);
		*locator = NULL;
	}
	return rc;
}

int dl_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	struct dl_target t;
	int rc = dl_target_read(locator, &t);
	if (rc)
		return rc;
	*identity = t.data_path ? json_pack("{s:s, s:s}", "metadata", t.metadata, "data_path", t.data_path)
	                        : json_pack("{s:s}", "metadata", t.metadata);
	dl_target_free(&t);
	return *identity ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}
