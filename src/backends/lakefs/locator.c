/* The lakeFS locator: {repository, branch, prefix} plus, while an object
 * sits at an earlier point, `at`, and on a fork the engine's
 * working_branch overlay. What a committed manifest holds is untrusted:
 * every name is checked against lakeFS's own rules before it reaches a
 * URL, so a clone cannot smuggle a path segment or a query into one. */
#include "backends/lakefs/lakefs.h"

#include "util/fail.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static int is_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* lakeFS: ^[a-z0-9][a-z0-9-]{2,62}$ */
int lfs_valid_repository(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 3 || n > 63 || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* lakeFS: ^\w[-\w]*$ (ASCII word characters). */
int lfs_valid_branch(const char *s)
{
	if (!s || !is_word((unsigned char)s[0]))
		return 0;
	for (const char *p = s; *p; p++)
		if (!is_word((unsigned char)*p) && *p != '-')
			return 0;
	return strlen(s) <= 256;
}

/* A tag or commit a user names with --at: what a URL path segment can
 * carry once escaped, without control bytes or a path of its own. */
static int valid_ref(const char *s)
{
	if (!s || !*s || strlen(s) > 256 || strstr(s, ".."))
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x21 || *p == 0x7f || strchr("~^:?*[\\/", *p))
			return 0;
	return 1;
}

/* tether's branch names hold dots (tether.ws.<dataset8>.<bookmark>) and
 * a bookmark may hold anything; lakeFS's may not. Letters, digits and '-'
 * stay; '_' is the escape: "__" for itself, "_d" for '.', "_s" for '/',
 * "_xHH" for any other byte. Names without those read as they are. */
char *lfs_branch_encode(const char *name)
{
	size_t n = strlen(name);
	char *out = malloc(n * 4 + 1), *o = out;
	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-')
			*o++ = (char)*p;
		else if (*p == '_')
			o += sprintf(o, "__");
		else if (*p == '.')
			o += sprintf(o, "_d");
		else if (*p == '/')
			o += sprintf(o, "_s");
		else
			o += sprintf(o, "_x%02x", *p);
	}
	*o = 0;
	return out;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The inverse; NULL for a name encode would never write. */
char *lfs_branch_decode(const char *name)
{
	size_t n = strlen(name);
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = name; *p; p++) {
		if (*p != '_') {
			*o++ = *p;
			continue;
		}
		p++;
		if (*p == '_')
			*o++ = '_';
		else if (*p == 'd')
			*o++ = '.';
		else if (*p == 's')
			*o++ = '/';
		else if (*p == 'x' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0 && (hexval(p[1]) * 16 + hexval(p[2])) != 0) {
			*o++ = (char)(hexval(p[1]) * 16 + hexval(p[2]));
			p += 2;
		} else {
			free(out);
			return NULL;
		}
	}
	*o = 0;
	return out;
}

static int optional_string(const json_t *locator, const char *key, const char **out)
{
	json_t *v = json_object_get(locator, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return tether_error_set(TETHER_ECONFIG, "lakefs locator: \"%s\" must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static int valid_prefix(const char *p)
{
	if (p[0] == '/' || strlen(p) > 1024)
		return 0;
	for (const unsigned char *c = (const unsigned char *)p; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return 0;
	return 1;
}

int lfs_read_locator(const json_t *locator, struct lfs_loc *out)
{
	memset(out, 0, sizeof *out);
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "lakefs locator is not a table");
	int rc;
	if ((rc = optional_string(locator, "repository", &out->repository)) ||
	    (rc = optional_string(locator, "branch", &out->branch)) ||
	    (rc = optional_string(locator, "prefix", &out->prefix)) || (rc = optional_string(locator, "at", &out->at)) ||
	    (rc = optional_string(locator, "working_branch", &out->working_branch)))
		return rc;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)locator, k, v) {
		if (strcmp(k, "repository") && strcmp(k, "branch") && strcmp(k, "prefix") && strcmp(k, "at") &&
		    strcmp(k, "working_branch"))
			return tether_error_set(TETHER_ECONFIG, "lakefs locator: unknown key \"%s\"", k);
	}
	if (!out->repository || !lfs_valid_repository(out->repository))
		return tether_error_set(TETHER_ECONFIG, "lakefs locator: repository %s%s%s is not a lakeFS repository name "
		                                        "(3-63 of a-z, 0-9 and '-')", out->repository ? "\"" : "",
		                        out->repository ? out->repository : "missing", out->repository ? "\"" : "");
	if (!out->branch)
		out->branch = "main";
	if (!lfs_valid_branch(out->branch))
		return tether_error_set(TETHER_ECONFIG, "lakefs locator: branch \"%s\" is not a lakeFS branch name "
		                                        "(letters, digits, '_' and '-')", out->branch);
	if (!out->prefix)
		out->prefix = "";
	if (!valid_prefix(out->prefix))
		return tether_error_set(TETHER_ECONFIG, "lakefs locator: prefix \"%s\" must be relative, without control "
		                                        "characters", out->prefix);
	if (out->at && !valid_ref(out->at))
		return tether_error_set(TETHER_ECONFIG, "lakefs locator: at \"%s\" is not a lakeFS commit or tag", out->at);
	if (out->working_branch && (!*out->working_branch || strlen(out->working_branch) > 200))
		return tether_error_set(TETHER_ECONFIG, "lakefs locator: working_branch must be a name of 1-200 bytes");
	return 0;
}

char *lfs_position(const struct lfs_loc *loc, int *is_branch)
{
	*is_branch = loc->working_branch || !loc->at;
	if (loc->working_branch)
		return lfs_branch_encode(loc->working_branch);
	return strdup(loc->at ? loc->at : loc->branch);
}

const char *lfs_state_commit(const json_t *state)
{
	return json_string_value(json_object_get(state, "commit"));
}

/* lakefs://REPOSITORY[/BRANCH[/PREFIX]], the form lakectl takes. */
static int parse_uri(const char *uri, json_t *fields)
{
	const char *rest = uri + strlen("lakefs://");
	const char *slash = strchr(rest, '/');
	size_t rlen = slash ? (size_t)(slash - rest) : strlen(rest);
	json_object_set_new(fields, "repository", json_stringn(rest, rlen));
	if (!slash || !slash[1])
		return 0;
	const char *b = slash + 1, *bs = strchr(b, '/');
	json_object_set_new(fields, "branch", json_stringn(b, bs ? (size_t)(bs - b) : strlen(b)));
	if (bs && bs[1])
		json_object_set_new(fields, "prefix", json_string(bs + 1));
	return 0;
}

int lfs_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                     json_t **locator)
{
	(void)cwd;
	*locator = NULL;
	json_t *loc = json_object();
	if (!loc)
		return tt_fail_oom();
	if (uri && strncmp(uri, "lakefs://", 9) == 0)
		parse_uri(uri, loc);
	else if (uri && *uri) {
		json_decref(loc);
		return tether_error_set(TETHER_EUSAGE, "kind lakefs takes lakefs://REPOSITORY[/BRANCH[/PREFIX]] or "
		                                       "--repository, not '%s'", uri);
	}
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)options, k, v) {
		if (strcmp(k, "repository") && strcmp(k, "branch") && strcmp(k, "prefix") && strcmp(k, "at")) {
			json_decref(loc);
			return tether_error_set(TETHER_EUSAGE, "unknown option '--%s' for kind lakefs", k);
		}
		if (!json_is_string(v)) {
			json_decref(loc);
			return tether_error_set(TETHER_EUSAGE, "--%s for kind lakefs takes a string", k);
		}
		json_t *given = json_object_get(loc, k);
		if (given && !json_equal(given, v)) {
			json_decref(loc);
			return tether_error_set(TETHER_EUSAGE, "--%s '%s' contradicts the URI's '%s'", k, json_string_value(v),
			                        json_string_value(given));
		}
		json_object_set(loc, k, v);
	}
	if (!json_object_get(loc, "repository")) {
		json_decref(loc);
		return tether_error_set(TETHER_EUSAGE, "kind lakefs needs a repository: tether add KEY --kind lakefs "
		                                       "--repository NAME [--branch B] [--prefix P]");
	}
	if (!json_object_get(loc, "branch"))
		json_object_set_new(loc, "branch", json_string("main"));
	if (!json_object_get(loc, "prefix"))
		json_object_set_new(loc, "prefix", json_string(""));
	struct lfs_loc l;
	int rc = lfs_read_locator(loc, &l);
	if (rc) {
		json_decref(loc);
		return tether_error_set(TETHER_EUSAGE, "%s", tether_error_last());
	}
	/* The repository, the branch and --at must be there. */
	struct lfs_conn c;
	if ((rc = lfs_connect(ctx, &l, &c)) == 0) {
		char *commit = NULL;
		rc = lfs_branch_head(&c, l.branch, &commit);
		free(commit);
		commit = NULL;
		if (rc == 0 && l.at && (rc = lfs_resolve(&c, l.at, &commit)) == TETHER_ENOTFOUND)
			rc = tether_error_set(TETHER_EUSAGE, "--at: %s", tether_error_last());
		free(commit);
		lfs_disconnect(&c);
	}
	if (rc) {
		json_decref(loc);
		return rc;
	}
	*locator = loc;
	return 0;
}

int lfs_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	struct lfs_loc l;
	int rc = lfs_read_locator(locator, &l);
	if (rc)
		return rc;
	/* The branch and prefix are where the object reads, not which store
	 * holds it: one commit is one pin whichever prefix asked. */
	*identity = json_pack("{s:s}", "repository", l.repository);
	return *identity ? 0 : tt_fail_oom();
}

static int is_commit_id(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* {commit, dirty?}: what lfs_fingerprint writes and nothing else. */
int lfs_check_state(const json_t *state, const char **key)
{
	const char *k;
	json_t *v;
	*key = "commit";
	if (!is_commit_id(lfs_state_commit(state)))
		return tether_error_set(TETHER_ECONFIG, "commit must be a lakeFS commit id (lower-case hex)");
	json_object_foreach((json_t *)state, k, v) {
		*key = k;
		if (strcmp(k, "dirty") == 0 && !json_is_true(v))
			return tether_error_set(TETHER_ECONFIG, "dirty is written only as true");
		if (strcmp(k, "commit") != 0 && strcmp(k, "dirty") != 0)
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of a lakefs state (commit, dirty)", k);
	}
	return 0;
}

const struct tether_add_option lfs_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "repository", .value_name = "NAME", .help = "the lakeFS repository",
	 .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "branch", .value_name = "NAME", .help = "the lakeFS branch to follow",
	 .default_value = "main", .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "prefix", .value_name = "PATH",
	 .help = "the object path prefix the object covers; diffs and staging are read under it (default: the whole repository)",
	 .field = TETHER_ADD_LOCATOR},
	{0},
};

/* [objects."<key>"] of .tether/secrets.toml. */
const char *const lfs_secret_keys[] = {"endpoint", "access_key_id", "secret_access_key", "access_key_id_env",
                                       "secret_access_key_env", "allow_http", NULL};
