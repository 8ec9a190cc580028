/* What .tether/secrets.toml gives a DuckLake object ([objects."<key>"]):
 * `user` and `password` for a Postgres or MySQL catalog, with `server`
 * ("host:port") naming the one server they are for, and `init_sql`, the
 * statements run on every fresh DuckDB connection (CREATE SECRET ...).
 *
 * Both are kept out of committed files: a locator is committed and a
 * clone someone else prepared chooses its hosts, so a password goes only
 * to the server its entry names, and init_sql, which runs code, is read
 * from secrets.toml only (tether.toml's [backends.ducklake] init_sql is
 * refused, not ignored, so that nobody believes it ran). */
#include "backends/ducklake/dl.h"

#include <stdio.h>
#include <string.h>

static int secrets_error(const struct tether_bctx *ctx, const char *fmt, const char *a, const char *b)
{
	char msg[512];
	snprintf(msg, sizeof msg, fmt, a, b);
	return tether_error_set(TETHER_ECONFIG, ".tether/secrets.toml: objects.\"%s\": %s",
	                        ctx && ctx->key ? ctx->key : "?", msg);
}

int dl_secrets_read(const struct tether_bctx *ctx, const struct dl_target *t, struct dl_secrets *s)
{
	memset(s, 0, sizeof *s);
	if (ctx && ctx->config && json_object_get(ctx->config, "init_sql"))
		return tether_error_set(TETHER_ECONFIG,
		                        "tether.toml: [backends.ducklake] init_sql is committed, and it runs code: "
		                        "put it in .tether/secrets.toml as [objects.\"<key>\"] init_sql");
	const json_t *mine = ctx ? ctx->secrets : NULL;
	if (!mine)
		return 0;
	const json_t *init = json_object_get(mine, "init_sql");
	if (init) {
		size_t i;
		json_t *v;
		int ok = json_is_array(init);
		json_array_foreach(init, i, v) ok = ok && json_is_string(v);
		if (!ok)
			return secrets_error(ctx, "init_sql must be an array of strings%s%s", "", "");
		s->init_sql = init;
	}
	const json_t *user = json_object_get(mine, "user");
	const json_t *password = json_object_get(mine, "password");
	const json_t *server = json_object_get(mine, "server");
	if ((user && !json_is_string(user)) || (password && !json_is_string(password)) ||
	    (server && !json_is_string(server)))
		return secrets_error(ctx, "user, password and server must be strings%s%s", "", "");
	if (!user && !password)
		return 0;
	if (!t->server)
		return secrets_error(ctx, "a catalog file (%s) takes no user or password%s", t->metadata, "");
	if (!server)
		return secrets_error(ctx,
		                     "user and password need server = \"%s\", the server they are for (tether sends "
		                     "credentials only to the server their entry names)%s",
		                     t->server, "");
	if (strcmp(json_string_value(server), t->server) != 0)
		return secrets_error(ctx,
		                     "the credentials are for server %s, but the locator's catalog is on %s: tether "
		                     "sends credentials only to the server their entry names",
		                     json_string_value(server), t->server);
	s->user = user ? json_string_value(user) : NULL;
	s->password = password ? json_string_value(password) : NULL;
	return 0;
}
