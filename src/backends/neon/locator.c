/* The Neon locator: {project_id, database, role, branch} plus, on a fork,
 * the engine's working_branch overlay. A committed manifest is untrusted:
 * it names no host and no key (api_url and the key come from
 * .tether/secrets.toml only), and every name is checked before it reaches
 * a URL or a connection string. */
#include "backends/neon/neon.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* Neon project ids: lower-case words joined by '-' ("young-frog-123"). */
static int valid_project(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > 64 || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* A Postgres database or role name: 1-63 bytes, no control bytes. */
static int valid_pg_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > 63)
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

int neon_valid_branch_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > 256)
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

static int optional_string(const json_t *locator, const char *key, const char **out)
{
	json_t *v = json_object_get(locator, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return tether_error_set(TETHER_ECONFIG, "neon locator: \"%s\" must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static const char *const locator_keys[] = {"project_id", "database", "role", "branch", "working_branch", NULL};

int neon_read_locator(const json_t *locator, struct neon_loc *out)
{
	memset(out, 0, sizeof *out);
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "neon locator is not a table");
	const char **fields[] = {&out->project_id, &out->database, &out->role, &out->branch, &out->working_branch};
	int rc;
	for (int i = 0; locator_keys[i]; i++)
		if ((rc = optional_string(locator, locator_keys[i], fields[i])))
			return rc;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)locator, k, v) {
		int known = 0;
		for (int i = 0; locator_keys[i]; i++)
			known |= strcmp(k, locator_keys[i]) == 0;
		/* api_url and the key are never a manifest's to choose. */
		if (!known)
			return tether_error_set(TETHER_ECONFIG, "neon locator: unknown key \"%s\" (api_url and the API key "
			                                        "belong in .tether/secrets.toml)", k);
	}
	if (!valid_project(out->project_id))
		return tether_error_set(TETHER_ECONFIG, "neon locator: project_id %s%s%s is not a Neon project id "
		                                        "(a-z, 0-9 and '-')", out->project_id ? "\"" : "",
		                        out->project_id ? out->project_id : "missing", out->project_id ? "\"" : "");
	if (!valid_pg_name(out->database))
		return tether_error_set(TETHER_ECONFIG, "neon locator: database must be a Postgres name of 1-63 bytes");
	if (!valid_pg_name(out->role))
		return tether_error_set(TETHER_ECONFIG, "neon locator: role must be a Postgres name of 1-63 bytes");
	if (!out->branch)
		out->branch = "main";
	if (!neon_valid_branch_name(out->branch))
		return tether_error_set(TETHER_ECONFIG, "neon locator: branch must be a name of 1-256 bytes");
	if (out->working_branch && !neon_valid_branch_name(out->working_branch))
		return tether_error_set(TETHER_ECONFIG, "neon locator: working_branch must be a name of 1-256 bytes");
	return 0;
}

const char *neon_position(const struct neon_loc *loc)
{
	return loc->working_branch ? loc->working_branch : loc->branch;
}

static const char *const option_keys[][2] = {
	{"project-id", "project_id"}, {"database", "database"}, {"role", "role"}, {"branch", "branch"}, {NULL, NULL}};

int neon_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                      json_t **locator)
{
	(void)cwd;
	*locator = NULL;
	if (uri && *uri)
		return tether_error_set(TETHER_EUSAGE, "kind neon takes --project-id, --database and --role, not a URI "
		                                       "('%s')", uri);
	json_t *loc = json_object();
	if (!loc)
		return tt_fail_oom();
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)options, k, v) {
		const char *field = NULL;
		for (int i = 0; option_keys[i][0]; i++)
			if (strcmp(k, option_keys[i][0]) == 0)
				field = option_keys[i][1];
		if (!field || !json_is_string(v)) {
			json_decref(loc);
			return tether_error_set(TETHER_EUSAGE, field ? "--%s for kind neon takes a string"
			                                             : "unknown option '--%s' for kind neon", k);
		}
		json_object_set(loc, field, v);
	}
	for (int i = 0; i < 3; i++)
		if (!json_object_get(loc, option_keys[i][1])) {
			json_decref(loc);
			return tether_error_set(TETHER_EUSAGE, "kind neon needs --%s (Neon builds no connection URI without "
			                                       "the project, database and role): tether add KEY --kind neon "
			                                       "--project-id ID --database DB --role ROLE [--branch B]",
			                        option_keys[i][0]);
		}
	if (!json_object_get(loc, "branch"))
		json_object_set_new(loc, "branch", json_string("main"));
	struct neon_loc l;
	int rc = neon_read_locator(loc, &l);
	if (rc) {
		json_decref(loc);
		return tether_error_set(TETHER_EUSAGE, "%s", tether_error_last());
	}
	/* The project and the branch must be there. */
	struct neon_conn c;
	if ((rc = neon_connect(ctx, &l, &c)) == 0) {
		json_t *b = NULL;
		if ((rc = neon_branch_by_name(&c, l.branch, &b)) == 0 && !b)
			rc = tether_error_set(TETHER_EUSAGE, "Neon project %s has no branch \"%s\"", l.project_id, l.branch);
		json_decref(b);
		neon_disconnect(&c);
	}
	if (rc) {
		json_decref(loc);
		return rc;
	}
	*locator = loc;
	return 0;
}

int neon_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	struct neon_loc l;
	int rc = neon_read_locator(locator, &l);
	if (rc)
		return rc;
	/* A branch at an LSN is a snapshot of the whole project: database and
	 * role do not change which pin holds it. */
	*identity = json_pack("{s:s, s:s}", "project_id", l.project_id, "branch", l.branch);
	return *identity ? 0 : tt_fail_oom();
}

static int valid_lsn(const char *s)
{
	const char *slash = s ? strchr(s, '/') : NULL;
	if (!slash || slash == s || !slash[1] || strlen(s) > 17)
		return 0;
	for (const char *p = s; *p; p++)
		if (p != slash && !strchr("0123456789ABCDEF", *p))
			return 0;
	return 1;
}

/* A decimal transaction id, or "<N" when none committed in the window. */
static int valid_xid(const char *s)
{
	if (!s)
		return 0;
	if (*s == '<')
		s++;
	size_t n = strlen(s);
	if (n < 1 || n > 20)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* {lsn, commit_xid, branch, timeline}: what neon_fingerprint writes. */
int neon_check_state(const json_t *state, const char **key)
{
	static const char *const keys[] = {"lsn", "commit_xid", "branch", "timeline", NULL};
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)state, k, v) {
		int known = 0;
		for (int i = 0; keys[i]; i++)
			known |= strcmp(k, keys[i]) == 0;
		*key = k;
		if (!known)
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of a neon state (lsn, commit_xid, branch, "
			                                        "timeline)", k);
	}
	*key = "lsn";
	if (!valid_lsn(json_string_value(json_object_get(state, "lsn"))))
		return tether_error_set(TETHER_ECONFIG, "lsn must be a Postgres LSN (hex/hex)");
	*key = "commit_xid";
	if (!valid_xid(json_string_value(json_object_get(state, "commit_xid"))))
		return tether_error_set(TETHER_ECONFIG, "commit_xid must be a transaction id, or <N");
	*key = "branch";
	if (!neon_valid_branch_name(json_string_value(json_object_get(state, "branch"))))
		return tether_error_set(TETHER_ECONFIG, "branch must be a Neon branch name");
	*key = "timeline";
	if (!neon_valid_branch_name(json_string_value(json_object_get(state, "timeline"))))
		return tether_error_set(TETHER_ECONFIG, "timeline must be a Neon branch name");
	return 0;
}

const struct tether_add_option neon_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "project-id", .value_name = "ID", .help = "the Neon project",
	 .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "database", .value_name = "NAME", .help = "the database the handle connects to",
	 .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "role", .value_name = "NAME", .help = "the Postgres role the handle connects as",
	 .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "branch", .value_name = "NAME", .help = "the Neon branch to follow",
	 .default_value = "main", .field = TETHER_ADD_LOCATOR},
	{0},
};

/* [objects."<key>"] of .tether/secrets.toml: the only place that says
 * where the API is and which variable holds its key. */
const char *const neon_secret_keys[] = {"api_key_env", "api_url", "protected_pins", NULL};
