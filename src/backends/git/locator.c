/* The git backend's locators, states and pin refs: what both of its
 * modules read the same way, without libgit2 (gitbe_read.h). */
#include "backends/git/gitbe_read.h"
#include "util/backend_args.h"
#include "util/hex.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gb_volatile_keys[] = {"dirty", "change_id", NULL};
/* A remote URL: never committed (docs/CLI.md, the git backend). */
const char *const gb_secret_keys[] = {"remote", NULL};

/* `tether add --kind git --remote NAME --ref REF`: both land in the
 * locator, as free text (make_locator checks them). */
static const char *const gb_bool_choices[] = {"true", "false", NULL};

const struct tether_add_option gb_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "remote", .value_name = "NAME",
	 .help = "push pins to this configured remote", .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "ref", .value_name = "REF", .help = "the ref to follow",
	 .default_value = "HEAD", .field = TETHER_ADD_LOCATOR},
	{TETHER_ADD_OPTION_INIT, .name = "allow_dirty", .value_name = "BOOL",
	 .help = "pin the checked-out commit even while the worktree has uncommitted changes",
	 .choices = gb_bool_choices, .default_value = "false", .field = TETHER_ADD_LOCATOR},
	{0},
};

/* A committed `remote` must be the name of a configured remote. Anything
 * that reads as a URL, an scp-style address or a path is not one: those
 * go in .tether/secrets.toml, which is never committed. */
int gb_looks_like_url(const char *remote)
{
	return strstr(remote, "://") || strchr(remote, ':') || strchr(remote, '\\') ||
	       remote[0] == '/' || remote[0] == '.' || remote[0] == '~';
}

const char *gb_hex20(const unsigned char id[GB_OID_SIZE], char buf[GB_HEX_SIZE])
{
	tt_hex(id, GB_OID_SIZE, buf);
	return buf;
}

int gb_parse_sha20(const json_t *holder, const char *what, unsigned char out[GB_OID_SIZE])
{
	const char *sha = json_string_value(json_object_get(holder, "sha"));
	size_t i;

	for (i = 0; sha && i < 2 * GB_OID_SIZE && tt_hex_digit(sha[i]) >= 0; i++)
		;
	if (!sha || i != 2 * GB_OID_SIZE || sha[i])
		return tether_error_set(TETHER_ECONFIG, "the %s has no valid \"sha\" (40 hex digits)", what);
	for (i = 0; i < GB_OID_SIZE; i++)
		out[i] = (unsigned char)(tt_hex_digit(sha[2 * i]) << 4 | tt_hex_digit(sha[2 * i + 1]));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reading a locator                                                   */
/* ------------------------------------------------------------------ */

static int optional_string(const json_t *locator, const char *key, const char **out)
{
	return tt_locator_string(locator, "git", key, out);
}

/* "true"/"false" as strings (the command line) or booleans (TOML). */
int gb_parse_flag(const json_t *v, const char *key, int code, int *out)
{
	const char *s = json_string_value(v);

	*out = 0;
	if (!v)
		return 0;
	if (json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (s && (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)) {
		*out = strcmp(s, "true") == 0;
		return 0;
	}
	return tether_error_set(code, "git: \"%s\" must be true or false", key);
}

int gb_parse_locator(const json_t *locator, struct gb_obj *o)
{
	int rc;

	memset(o, 0, sizeof *o);
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "git locator is not a table");
	if ((rc = optional_string(locator, "path", &o->path)) < 0 ||
	    (rc = optional_string(locator, "ref", &o->ref)) < 0 ||
	    (rc = optional_string(locator, "at", &o->at)) < 0 ||
	    (rc = optional_string(locator, "remote", &o->remote)) < 0 ||
	    (rc = optional_string(locator, "branch", &o->branch)) < 0 ||
	    (rc = gb_parse_flag(json_object_get(locator, "allow_dirty"), "allow_dirty", TETHER_ECONFIG,
	                        &o->allow_dirty)) < 0)
		return rc;
	if (!o->path || o->path[0] != '/')
		return tether_error_set(TETHER_ECONFIG, "git locator has no absolute \"path\"");
	if (!o->ref)
		o->ref = "HEAD";
	return 0;
}

/* Made at `tether add` and again at every use. */
int gb_refuse_url_remote(const struct gb_obj *o, int code)
{
	int valid = 0, rc;

	if (!o->remote)
		return 0;
	if (gb_looks_like_url(o->remote))
		return tether_error_set(code,
		                        "git repository %s: remote \"%s\" is a URL or a path; a committed "
		                        "remote must be the name of a remote the repository has configured "
		                        "(a URL goes in .tether/secrets.toml as [objects.\"<key>\"] remote)",
		                        o->path, o->remote);
	if ((rc = gb_rd_remote_name_valid(o->remote, &valid)) != 0)
		return rc;
	if (!valid)
		return tether_error_set(code, "git repository %s: \"%s\" is not a valid remote name",
		                        o->path, o->remote);
	return 0;
}

/* A locator's checks that need no repository (verify_many: the
 * repository is open). */
int gb_check_locator(const json_t *locator, struct gb_obj *o)
{
	int rc = gb_parse_locator(locator, o);

	return rc < 0 ? rc : gb_refuse_url_remote(o, TETHER_EREFUSED);
}

int gb_identity_do(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	struct gb_obj o;
	int rc = gb_check_locator(locator, &o);

	(void)ctx;
	if (rc != 0)
		return rc;
	*identity = json_pack("{s:s}", "path", o.path);
	return *identity ? 0 : gb_fail_oom();
}

/* {sha, dirty?, change_id?}: what read_state writes, and nothing else. */
int gb_check_state(const json_t *state, const char **bad)
{
	const char *k;
	json_t *v;
	*bad = "sha";
	const char *sha = json_string_value(json_object_get(state, "sha"));
	size_t n = sha ? strlen(sha) : 0;
	if (!sha || !((n == 40 || n == 64) && tt_is_lower_hex(sha, n)))
		return tether_error_set(TETHER_ECONFIG, "sha must be a commit id (40 or 64 lower-case hex digits)%s",
		                        json_object_get(state, "sha") ? "" : ", and is missing");
	json_object_foreach((json_t *)state, k, v) {
		*bad = k;
		if (strcmp(k, "dirty") == 0 && !json_is_boolean(v))
			return tether_error_set(TETHER_ECONFIG, "dirty must be true or false");
		if (strcmp(k, "change_id") == 0 && !json_is_string(v))
			return tether_error_set(TETHER_ECONFIG, "change_id must be a string");
		if (strcmp(k, "sha") != 0 && strcmp(k, "dirty") != 0 && strcmp(k, "change_id") != 0)
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of a git state (sha, dirty, change_id)", k);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pin tags                                                            */
/* ------------------------------------------------------------------ */

/* refs/tags/<tag>, refusing a name that is no tether pin tag. */
int gb_tag_refname(const struct gb_obj *o, const char *tag, char **refname)
{
	int valid = 0, rc;

	if (!tag || strncmp(tag, GB_TAG_PREFIX, strlen(GB_TAG_PREFIX)) != 0)
		return tether_error_set(TETHER_EREFUSED, "git repository %s: '%s' is not a tether pin tag",
		                        o->path, tag ? tag : "(none)");
	if (!(*refname = gb_strdupf("refs/tags/%s", tag)))
		return gb_fail_oom();
	if ((rc = gb_rd_refname_valid(*refname, &valid)) != 0 || !valid) {
		free(*refname);
		*refname = NULL;
		return rc ? rc : tether_error_set(TETHER_EUSAGE, "'%s' is not a valid git tag name", tag);
	}
	return 0;
}

/* Printable ASCII only: a tag name jansson need not check as UTF-8. */
static int plain_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return 0;
	return 1;
}

json_t *gb_make_pin_ref(const struct gb_obj *o, const char *tag, const unsigned char id[GB_OID_SIZE])
{
	char hex[GB_HEX_SIZE];
	json_t *ref;
	/* gc lists every pin of every store: the usual tag, plain ASCII, skips
	 * jansson's UTF-8 checks (half the cost of the object); any other name
	 * (a clone may hold one) goes through them. */
	if (plain_ascii(tag) && (ref = json_object())) {
		json_object_set_new_nocheck(ref, "tag", json_string_nocheck(tag));
		json_object_set_new_nocheck(ref, "pin", json_string_nocheck(tag + strlen(GB_TAG_PREFIX)));
		json_object_set_new_nocheck(ref, "sha", json_string_nocheck(gb_hex20(id, hex)));
		if (json_object_size(ref) != 3) {
			json_decref(ref);
			ref = NULL;
		}
	} else {
		ref = json_pack("{s:s, s:s, s:s}", "tag", tag, "pin", tag + strlen(GB_TAG_PREFIX), "sha",
		                gb_hex20(id, hex));
	}

	if (ref && o->remote)
		json_object_set_new(ref, "remote", json_string(o->remote));
	return ref;
}
