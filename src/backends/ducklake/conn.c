/* The connection interface's common half: opening the right
 * implementation for a target, and the small queries every caller makes. */
#define _GNU_SOURCE
#include "backends/ducklake/dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A connection module beside this one, loaded once per process. */
struct sibling {
	const char *file, *symbol;
	pthread_once_t once;
	dl_open_fn open;
	char why[PATH_MAX + 256];
};

static struct sibling pg_module = {"tether-ducklake-pg.so", "tether_ducklake_pg_open", PTHREAD_ONCE_INIT, NULL, ""};
static struct sibling mysql_module = {"tether-ducklake-mysql.so", "tether_ducklake_mysql_open", PTHREAD_ONCE_INIT,
                                      NULL, ""};

static void load_sibling(struct sibling *m)
{
	Dl_info info;
	char path[PATH_MAX];
	if (!dladdr((const void *)&dl_conn_open, &info) || !info.dli_fname) {
		snprintf(m->why, sizeof m->why, "cannot tell where tether-backend-ducklake.so was loaded from");
		return;
	}
	const char *slash = strrchr(info.dli_fname, '/');
	int dirlen = slash ? (int)(slash - info.dli_fname) : 1;
	snprintf(path, sizeof path, "%.*s/%s", dirlen, slash ? info.dli_fname : ".", m->file);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(*(void **)&m->open = dlsym(h, m->symbol)))
		snprintf(m->why, sizeof m->why, "cannot load %s: %s", path, h ? "no connection function" : dlerror());
}

static void load_pg(void)
{
	load_sibling(&pg_module);
}

static void load_mysql(void)
{
	load_sibling(&mysql_module);
}

static int open_with(struct sibling *m, void (*load)(void), const struct dl_target *t, const struct dl_secrets *s,
                     struct dl_conn **out)
{
	pthread_once(&m->once, load);
	if (!m->open)
		return tether_error_set(TETHER_ERROR, "ducklake catalog %s: %s", t->metadata, m->why);
	return m->open(t, s, out);
}

int dl_conn_open(const struct tether_bctx *ctx, const struct dl_target *t, struct dl_conn **out)
{
	*out = NULL;
	struct dl_secrets s;
	int rc = dl_secrets_read(ctx, t, &s);
	if (rc)
		return rc;
	switch (t->type) {
	case DL_SQLITE:
		return dl_sqlite_open(t, out);
	case DL_POSTGRES:
		return open_with(&pg_module, load_pg, t, &s, out);
	case DL_MYSQL:
		return open_with(&mysql_module, load_mysql, t, &s, out);
	case DL_DUCKDB:
		return dl_duckdb_open(t, &s, out);
	}
	return tether_error_set(TETHER_ERROR, "ducklake: unknown catalog type");
}

int dl_conn_query(struct dl_conn *c, const char *sql, dl_row_fn fn, void *ud)
{
	return c->ops->query(c, sql, fn, ud);
}

void dl_conn_close(struct dl_conn *c)
{
	if (c)
		c->ops->close(c);
}

struct first_int {
	int64_t v;
	int found;
	const char *what;
};

static int take_int(void *ud, int n, const char *const *vals)
{
	struct first_int *f = ud;
	if (f->found || n < 1 || !vals[0])
		return 0;
	char *end = NULL;
	errno = 0;
	long long v = strtoll(vals[0], &end, 10);
	if (errno || end == vals[0] || *end)
		return tether_error_set(TETHER_ERROR, "ducklake catalog %s: expected a number, got '%s'", f->what, vals[0]);
	f->v = v;
	f->found = 1;
	return 0;
}

int dl_conn_int(struct dl_conn *c, const char *sql, int64_t *v, int *found)
{
	struct first_int f = {0, 0, c->what};
	int rc = dl_conn_query(c, sql, take_int, &f);
	*v = f.v;
	*found = f.found;
	return rc;
}

char *dl_quote(const char *s, char q)
{
	char *out = malloc(2 * strlen(s) + 3);
	if (!out)
		return NULL;
	size_t n = 0;
	out[n++] = q;
	for (const char *p = s; *p; p++) {
		if (*p == q)
			out[n++] = q;
		out[n++] = *p;
	}
	out[n++] = q;
	out[n] = '\0';
	return out;
}

char *dl_conn_ident(const struct dl_conn *c, const char *name)
{
	return dl_quote(name, c->ops->quote);
}

int dl_conn_has_table(struct dl_conn *c, const char *name, int *yes)
{
	*yes = 0;
	/* A literal in every dialect here; MySQL would also read a backslash
	 * as an escape, and DuckLake names its tables without one. */
	if (strchr(name, '\\'))
		return 0;
	char *lit = dl_quote(name, '\'');
	char *sql = NULL;
	if (lit) {
		int len = snprintf(NULL, 0, c->ops->exists_sql, lit);
		sql = len > 0 ? malloc((size_t)len + 1) : NULL;
		if (sql)
			snprintf(sql, (size_t)len + 1, c->ops->exists_sql, lit);
	}
	free(lit);
	if (!sql)
		return tether_error_set(TETHER_ERROR, "out of memory");
	int64_t v = 0;
	int found = 0;
	int rc = dl_conn_int(c, sql, &v, &found);
	free(sql);
	*yes = found && v > 0;
	return rc;
}
