/* tether export and tether publish: the tables (export.c) handed to the
 * SQL module, tether-sql.so, which is loaded here on first use so that
 * libsqlite3, libpq and libzstd are mapped by these commands only. */
#include "core/export.h"

#include "core/abi.h"
#include "core/module.h"
#include "core/sessions.h"
#include "util/fsutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The two SQL modules: tether-sql.so (the file formats and SQLite) and
 * tether-sql-pg.so (libpq, whose dependencies are two dozen libraries an
 * export to a file does not need). Each is loaded once, on first use. */
static const struct {
	const char *file;
} sql_files[2] = { { "tether-sql.so" }, { "tether-sql-pg.so" } };
static pthread_mutex_t sql_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct tt_sql_module *sql_mods[2];

const struct tt_sql_module *tt_sql_module(int postgres)
{
	int k = postgres ? 1 : 0;
	pthread_mutex_lock(&sql_lock);
	const struct tt_sql_module *m = sql_mods[k];
	if (!m) {
		m = tt_module_symbol(sql_files[k].file, "tether_sql_module");
		if (m && (m->version != TT_SQL_MODULE_VERSION || m->size != sizeof *m)) {
			tether_error_set(TETHER_ECONFIG, "%s is of another tether (interface %u, this is %d)",
			                 sql_files[k].file, m->version, TT_SQL_MODULE_VERSION);
			m = NULL;
		} else if (!m) {
			tether_error_set(TETHER_ECONFIG, "%s", tether_error_last());
		}
		sql_mods[k] = m;
	}
	pthread_mutex_unlock(&sql_lock);
	return m;
}

static const char *const formats[] = { "sqlite", "parquet", "csv", "jsonl", NULL };

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The format: as given, else by the path's extension. */
static int choose_format(const char *path, const char *given, const char **out)
{
	if (given) {
		for (size_t i = 0; formats[i]; i++)
			if (strcmp(given, formats[i]) == 0) {
				*out = formats[i];
				return 0;
			}
		return tether_error_set(TETHER_EUSAGE, "--format: unknown format '%s' (sqlite, parquet, csv, jsonl)", given);
	}
	static const struct {
		const char *ext, *format;
	} exts[] = { { ".sqlite", "sqlite" }, { ".sqlite3", "sqlite" }, { ".db", "sqlite" },
		     { ".parquet", "parquet" }, { ".csv", "csv" }, { ".jsonl", "jsonl" } };
	size_t end = strlen(path);
	while (end > 1 && path[end - 1] == '/')
		end--;
	char *trimmed = strndup(path, end);
	for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
		if (ends_with(trimmed, exts[i].ext)) {
			*out = exts[i].format;
			free(trimmed);
			return 0;
		}
	free(trimmed);
	return tether_error_set(TETHER_EUSAGE,
	                        "cannot tell the format of '%s' by its extension (.sqlite, .db, .parquet, .csv, "
	                        ".jsonl): give --format",
	                        path);
}

static json_t *counts(const struct tt_export_data *d)
{
	json_t *c = json_object();
	for (size_t t = 0; t < TT_T_COUNT; t++)
		json_object_set_new(c, d->t[t].name, json_integer((json_int_t)d->t[t].nrows));
	return c;
}

static int export_command(tether_repo *repo, const struct tether_export_opts *opts, json_t **report)
{
	*report = NULL;
	const char *format = NULL;
	if (!opts->path || !*opts->path)
		return tether_error_set(TETHER_EUSAGE, "export needs a FILE to write");
	int rc = choose_format(opts->path, opts->format, &format);
	const struct tt_sql_module *m = rc ? NULL : tt_sql_module(0);
	if (!rc && !m)
		rc = TETHER_ECONFIG;
	struct tt_export_data d;
	if (!rc)
		rc = tt_export_collect(repo, opts->revs, opts->nrevs, &d);
	else
		memset(&d, 0, sizeof d);
	if (!rc)
		rc = m->write(d.t, TT_T_COUNT, format, opts->path);
	if (!rc)
		*report = json_pack("{s:s, s:s, s:o}", "path", opts->path, "format", format, "tables", counts(&d));
	tt_export_data_free(&d);
	return rc;
}

int tether_export(tether_repo *repo, const struct tether_export_opts *opts, json_t **report)
{
	TT_COMMAND_RUN(tether_export_opts, TETHER_EXPORT_OPTS_VERSION, export_command, repo, opts, report);
}

/* The URL without a password: what reports and messages show, and what
 * .tether/secrets.toml's [databases."URL"] tables are keyed by. A URL that
 * carries a password itself is refused: it would end up in shell history
 * and in reports. */
int tt_database_url_check(const char *url)
{
	if (strncmp(url, "postgresql://", 13) != 0 && strncmp(url, "postgres://", 11) != 0)
		return tether_error_set(TETHER_EUSAGE, "'%s' is not a postgresql:// URL", url);
	const char *auth = strstr(url, "://") + 3;
	const char *at = strchr(auth, '@'), *slash = strchr(auth, '/');
	if (at && (!slash || at < slash) && memchr(auth, ':', (size_t)(at - auth)))
		return tether_error_set(TETHER_EUSAGE,
		                        "the database URL carries a password: give it in PGPASSWORD, ~/.pgpass, a "
		                        "service file or .tether/secrets.toml [databases.\"URL\"] instead");
	if (strstr(url, "password="))
		return tether_error_set(TETHER_EUSAGE,
		                        "the database URL carries a password parameter: give it in PGPASSWORD, "
		                        "~/.pgpass, a service file or .tether/secrets.toml instead");
	return 0;
}

/* The password .tether/secrets.toml holds for `url`: the [databases."P"]
 * table whose P is the longest prefix of the URL. NULL: libpq's own
 * sources (PGPASSWORD, ~/.pgpass, a service file). */
const char *tt_database_password(struct tether_repo *repo, const char *url)
{
	json_t *dbs = json_object_get(repo->secrets, "databases");
	const char *best = NULL, *k;
	size_t best_len = 0;
	json_t *v;
	json_object_foreach(dbs, k, v) {
		size_t n = strlen(k);
		if (n > best_len && strncmp(url, k, n) == 0 && json_is_string(json_object_get(v, "password"))) {
			best = json_string_value(json_object_get(v, "password"));
			best_len = n;
		}
	}
	return best;
}

static int publish_command(tether_repo *repo, const struct tether_publish_opts *opts, json_t **report)
{
	*report = NULL;
	if (!opts->to || !*opts->to)
		return tether_error_set(TETHER_EUSAGE, "publish needs --to postgresql://...");
	const char *schema = opts->schema && *opts->schema ? opts->schema : "tether";
	int rc = tt_database_url_check(opts->to);
	if (!rc)
		rc = tt_repo_load_secrets(repo);
	const struct tt_sql_module *m = rc ? NULL : tt_sql_module(1);
	if (!rc && !m)
		rc = TETHER_ECONFIG;
	struct tt_export_data d;
	memset(&d, 0, sizeof d);
	if (!rc)
		rc = tt_export_collect(repo, opts->revs, opts->nrevs, &d);
	if (!rc) {
		struct tt_sql_publish p = { d.t, TT_T_COUNT, opts->to, schema, tt_database_password(repo, opts->to),
			                    repo->id };
		json_t *r = NULL;
		rc = m->publish(&p, &r);
		if (!rc) {
			json_object_set_new(r, "to", json_string(opts->to));
			*report = r;
		} else {
			json_decref(r);
		}
	}
	tt_export_data_free(&d);
	return rc;
}

int tether_publish(tether_repo *repo, const struct tether_publish_opts *opts, json_t **report)
{
	TT_COMMAND_RUN(tether_publish_opts, TETHER_PUBLISH_OPTS_VERSION, publish_command, repo, opts, report);
}
