/* Dolt locators: host, port, database, branch, user (or one
 * mysql://user@host:port/database URL at `tether add`), and identity.
 *
 * A locator is committed and read from any clone, so it holds nothing
 * secret: a URL with a password is refused at add, and credentials come
 * only from .tether/secrets.toml (conn.c). */
#include "backends/dolt/dolt.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int optional_string(const json_t *locator, const char *key, const char **out)
{
	json_t *v = json_object_get(locator, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || !*json_string_value(v))
		return tether_error_set(TETHER_ECONFIG, "dolt locator: \"%s\" must be a non-empty string", key);
	*out = json_string_value(v);
	return 0;
}

/* A name tether puts inside SQL and URLs: printable, no quote, '@', '?',
 * '#' or space, and no '/' unless it is a ref (Dolt's branch and database
 * names allow far less anyway). */
int dt_plain_name(const char *s, int ref)
{
	for (; *s; s++)
		if (!isgraph((unsigned char)*s) || strchr("'\"`\\@?#", *s) || (*s == '/' && !ref))
			return 0;
	return 1;
}

int dt_read_locator(const json_t *locator, struct dt_loc *out)
{
	memset(out, 0, sizeof *out);
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "dolt locator is not a table");
	int rc;
	if ((rc = optional_string(locator, "host", &out->host)) ||
	    (rc = optional_string(locator, "database", &out->database)) ||
	    (rc = optional_string(locator, "branch", &out->branch)) ||
	    (rc = optional_string(locator, "user", &out->user)) || (rc = optional_string(locator, "at", &out->at)) ||
	    (rc = optional_string(locator, "working_branch", &out->working_branch)))
		return rc;
	if (!out->database)
		return tether_error_set(TETHER_ECONFIG, "dolt locator has no \"database\"");
	json_t *port = json_object_get(locator, "port");
	out->port = DT_DEFAULT_PORT;
	if (port) {
		if (!json_is_integer(port) || json_integer_value(port) < 1 || json_integer_value(port) > 65535)
			return tether_error_set(TETHER_ECONFIG, "dolt locator: \"port\" must be an integer from 1 to 65535");
		out->port = (unsigned)json_integer_value(port);
	}
	if (!out->host)
		out->host = "127.0.0.1";
	if (!out->branch)
		out->branch = "main";
	const char *names[][2] = {{"host", out->host},     {"database", out->database},
	                          {"branch", out->branch}, {"user", out->user},
	                          {"at", out->at},         {"working_branch", out->working_branch}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i][1] && !dt_plain_name(names[i][1], i >= 2 && i != 3))
			return tether_error_set(TETHER_ECONFIG,
			                        "dolt locator: \"%s\" = \"%s\" holds a character tether does not send "
			                        "(quotes, '/', '@', '?', '#', spaces, control characters)",
			                        names[i][0], names[i][1]);
	return 0;
}

const char *dt_work_branch(const struct dt_loc *loc)
{
	return loc->working_branch ? loc->working_branch : loc->branch;
}

char *dt_server_uri(const struct dt_loc *loc, int with_database)
{
	return with_database ? tt_strdupf("mysql://%s:%u/%s", loc->host, loc->port, loc->database)
	                     : tt_strdupf("mysql://%s:%u", loc->host, loc->port);
}

/* mysql://[user@]host[:port]/database, as `tether add` takes it. */
static int parse_url(const char *url, json_t *into)
{
	const char *p = url + strlen("mysql://");
	const char *slash = strchr(p, '/');
	if (!slash || !slash[1])
		return tether_error_set(TETHER_EUSAGE, "%s: a dolt URL names its database: mysql://[user@]host[:port]/database",
		                        url);
	char *auth = strndup(p, (size_t)(slash - p));
	if (!auth)
		return tt_fail_oom();
	int rc = 0;
	char *hostport = auth, *at = strrchr(auth, '@');
	if (at) {
		*at = '\0';
		hostport = at + 1;
		if (strchr(auth, ':'))
			rc = tether_error_set(TETHER_EUSAGE, "%s: a password does not go in a committed locator; put it "
			                                     "in .tether/secrets.toml [uris.\"mysql://host:port\"]", "the URL");
		else if (*auth)
			json_object_set_new(into, "user", json_string(auth));
	}
	char *colon = strrchr(hostport, ':');
	if (rc == 0 && colon) {
		*colon = '\0';
		char *end;
		long port = strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || port < 1 || port > 65535)
			rc = tether_error_set(TETHER_EUSAGE, "%s: the port must be a number from 1 to 65535", url);
		else
			json_object_set_new(into, "port", json_integer(port));
	}
	if (rc == 0 && !*hostport)
		rc = tether_error_set(TETHER_EUSAGE, "%s: no host", url);
	if (rc == 0) {
		for (char *h = hostport; *h; h++)
			*h = (char)tolower((unsigned char)*h);
		json_object_set_new(into, "host", json_string(hostport));
		const char *db = slash + 1;
		size_t n = strcspn(db, "/?#");
		if (db[n])
			rc = tether_error_set(TETHER_EUSAGE, "%s: a dolt URL names only its database (the branch goes in --branch)",
			                      url);
		else
			json_object_set_new(into, "database", json_string(db));
	}
	free(auth);
	return rc;
}

/* The server and database come from the URL `tether add` takes as its URI;
 * an API caller with no URI may give host, port and database as options
 * instead (undeclared: the command line always has the URL). */
const struct tether_add_option dt_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "branch", .value_name = "BRANCH",
	 .help = "the upstream branch the trunk stands for", .default_value = "main", .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "user", .value_name = "USER",
	 .help = "the user to connect as (secrets.toml's entry for the server wins)", .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = NULL},
};

int dt_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                    json_t **locator)
{
	(void)cwd;
	*locator = NULL;
	json_t *loc = json_object();
	if (!loc)
		return tt_fail_oom();
	const char *url = uri && *uri ? uri : NULL;
	int rc = 0;
	if (url && strncmp(url, "mysql://", 8) != 0)
		rc = tether_error_set(TETHER_EUSAGE, "%s: a dolt locator URL begins mysql://", url);
	else if (url)
		rc = parse_url(url, loc);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)options, k, v) {
		if (rc)
			break;
		if (url && (!strcmp(k, "host") || !strcmp(k, "port") || !strcmp(k, "database"))) {
			rc = tether_error_set(TETHER_EUSAGE, "--%s and the URL name the same thing: give the URL only", k);
		} else if (strcmp(k, "port") == 0) {
			const char *s = json_string_value(v);
			char *end = NULL;
			long port = s ? strtol(s, &end, 10) : json_is_integer(v) ? (long)json_integer_value(v) : 0;
			if ((s && (!*s || *end)) || port < 1 || port > 65535)
				rc = tether_error_set(TETHER_EUSAGE, "--port for kind dolt takes a number from 1 to 65535");
			else
				json_object_set_new(loc, "port", json_integer(port));
		} else if (!strcmp(k, "host") || !strcmp(k, "database") || !strcmp(k, "branch") || !strcmp(k, "user") ||
		           !strcmp(k, "at")) {
			if (!json_is_string(v) || !*json_string_value(v))
				rc = tether_error_set(TETHER_EUSAGE, "--%s for kind dolt takes a non-empty string", k);
			else
				json_object_set(loc, k, v);
		} else {
			rc = tether_error_set(TETHER_EUSAGE, "unknown option '--%s' for kind dolt", k);
		}
	}
	if (rc == 0 && !json_object_get(loc, "database"))
		rc = tether_error_set(TETHER_EUSAGE, "kind dolt needs a database: tether add KEY mysql://host:port/DB "
		                                     "--kind dolt");
	struct dt_loc l;
	if (rc == 0 && (rc = dt_read_locator(loc, &l)) == TETHER_ECONFIG)
		rc = tether_error_set(TETHER_EUSAGE, "%s", tether_error_last());
	if (rc == 0) { /* record every field, defaults included: the locator says where it points */
		if (!json_object_get(loc, "host"))
			json_object_set_new(loc, "host", json_string(l.host));
		if (!json_object_get(loc, "branch"))
			json_object_set_new(loc, "branch", json_string(l.branch));
		json_object_set_new(loc, "port", json_integer(l.port));
		rc = dt_read_locator(loc, &l); /* l pointed into what was replaced */
	}
	/* The server must answer, with the branch (and --at) there. */
	struct dt_conn c;
	if (rc == 0 && (rc = dt_connect(ctx, &l, NULL, &c)) == 0) {
		char hash[DT_HASH_MAX];
		int found = 0, dirty = 0;
		rc = dt_branch_head(&c, l.branch, hash, &found, &dirty);
		if (rc == 0 && !found)
			rc = tether_error_set(TETHER_EUSAGE, "%s has no branch \"%s\"", c.where, l.branch);
		if (rc == 0 && l.at && (rc = dt_resolve(&c, l.at, hash)) != 0)
			rc = tether_error_set(TETHER_EUSAGE, "--at: %s", tether_error_last());
		dt_release(&c, rc == 0);
	}
	if (rc) {
		json_decref(loc);
		return rc;
	}
	*locator = loc;
	return 0;
}

int dt_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	struct dt_loc loc;
	int rc = dt_read_locator(locator, &loc);
	if (rc)
		return rc;
	/* The server and database, not the branch or user: one commit read
	 * on two branches is one pin. */
	*identity = json_pack("{s:s, s:i, s:s}", "host", loc.host, "port", (int)loc.port, "database", loc.database);
	return *identity ? 0 : tt_fail_oom();
}
