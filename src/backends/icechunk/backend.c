/* The `icechunk` backend: Icechunk repositories (Forkable). A branch head's
 * snapshot id is the state, an immutable tag tether.<pin id> the pin, a
 * branch made off it the fork. Built as the module
 * tether-backend-icechunk.so, on libzstd and tether's own flatbuffer code.
 *
 * This file holds the description, locators, identity, fingerprint,
 * history and handles; pins.c, forks.c, create.c and report.c the rest;
 * repository.c, v1.c, repo*.c, files.c, diff.c and update.c the format. */
#include "backends/icechunk/ic.h"

#include "util/backend_args.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Locators                                                            */
/* ------------------------------------------------------------------ */

static int optional_string(const json_t *locator, const char *key, const char **out)
{
	return tt_locator_string(locator, "icechunk", key, out);
}

int ic_read_locator(const json_t *locator, struct ic_loc *out)
{
	memset(out, 0, sizeof *out);
	if (!json_is_object(locator))
		return tether_error_set(TETHER_ECONFIG, "icechunk locator is not a table");
	int rc;
	if ((rc = optional_string(locator, "uri", &out->uri)) || (rc = optional_string(locator, "branch", &out->branch)) ||
	    (rc = optional_string(locator, "at", &out->at)) ||
	    (rc = optional_string(locator, "working_branch", &out->working_branch)))
		return rc;
	if (!out->uri)
		return tether_error_set(TETHER_ECONFIG, "icechunk locator has no \"uri\"");
	/* A committed locator is untrusted: only what `tether add` records,
	 * by the store layer's one rule. */
	int refused = tether_store_check_committed(out->uri);
	if (refused)
		return tether_error_set(refused, "icechunk locator: %s", tether_error_last());
	if (!out->branch)
		out->branch = "main";
	return 0;
}

int ic_open_locator(const struct tether_bctx *ctx, const json_t *locator, struct ic_loc *loc,
                    struct ic_repository *repo)
{
	int rc = ic_read_locator(locator, loc);
	if (rc == 0 && (rc = ic_repository_open_at(ctx, loc->uri, repo)) == 0)
		repo->session = ctx ? ctx->session : NULL;
	return rc;
}

const char *ic_position(const struct ic_loc *loc, int *is_branch)
{
	*is_branch = loc->working_branch || !loc->at;
	return loc->working_branch ? loc->working_branch : loc->at ? loc->at : loc->branch;
}

static int check_options(const json_t *options)
{
	static const char *const known[] = {"branch", "at", "create", NULL}, *const flags[] = {"create", NULL};
	return tt_backend_options_check(options, "icechunk", known, flags);
}

static int ic_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options,
                           const char *cwd, json_t **locator)
{
	int rc = check_options(options);
	if (rc)
		return rc;
	if (!uri || !*uri)
		return tether_error_set(TETHER_EUSAGE, "kind icechunk needs the repository's path: "
		                                       "tether add KEY PATH --kind icechunk");
	const char *branch = json_string_value(json_object_get(options, "branch"));
	const char *at = json_string_value(json_object_get(options, "at"));
	int create = json_is_true(json_object_get(options, "create"));
	if (create && at)
		return tether_error_set(TETHER_EUSAGE, "--create makes an empty repository: it has no history for --at");
	/* The form the locator records (opening it then says whether this
	 * build has a store for its scheme). */
	char *path = NULL;
	if ((rc = tether_store_canonical(uri, cwd, &path)))
		return rc;
	tether_store *store = NULL;
	json_t *store_options = NULL;
	if (create && (rc = ic_store_options(ctx, path, &store_options)) == 0)
		rc = tether_store_open(path, store_options, &store);
	json_decref(store_options);
	if (create && rc) {
		free(path);
		return rc; /* no store for the scheme: refused before create_store */
	}
	tether_store_close(store);
	*locator = json_pack("{s:s, s:s}", "uri", path, "branch", branch ? branch : "main");
	if (*locator && at)
		json_object_set_new(*locator, "at", json_string(at));
	if (!*locator)
		rc = ic_fail_oom();
	/* Unless create_store is to make it, the repository must be there,
	 * with the branch, and --at must name something in it. */
	struct ic_repository repo;
	if (rc == 0 && !create && (rc = ic_repository_open_at(ctx, path, &repo)) == 0) {
		struct ic_id id;
		int found = 0;
		rc = ic_branch_head(&repo, branch ? branch : "main", &id, &found);
		if (rc == 0 && !found)
			rc = tether_error_set(TETHER_EUSAGE, "%s has no branch \"%s\"", path, branch ? branch : "main");
		if (rc == 0 && at && (rc = ic_resolve(&repo, at, &id)) == TETHER_ENOTFOUND)
			rc = tether_error_set(TETHER_EUSAGE, "--at: %s", tether_error_last());
		ic_repository_close(&repo);
	} else if (rc == TETHER_ENOTFOUND) {
		rc = tether_error_set(TETHER_EUSAGE, "%s", tether_error_last());
		tether_error_set_hint("to make a new repository there, add it with --create");
	}
	free(path);
	if (rc) {
		json_decref(*locator);
		*locator = NULL;
	}
	return rc;
}

static int ic_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	struct ic_loc loc;
	int rc = ic_read_locator(locator, &loc);
	if (rc)
		return rc;
	/* Where the repository is, not which branch is read: one snapshot on
	 * two branches is one pin. */
	*identity = json_pack("{s:s}", "uri", loc.uri);
	return *identity ? 0 : ic_fail_oom();
}

/* CONDITIONAL_REF where the repository's store compares and writes in one
 * request (TETHER_STORE_ATOMIC_CAS: S3, GCS, Azure): every ref move is a
 * put if-match of the `repo` file (or of the ref file, spec 1) whose
 * condition the mutation checked on the version it read, so a fork,
 * promote or reset moves the ref only from the head the plan reviewed. On
 * the local filesystem the same put compares and renames under tether's
 * lock, which Icechunk's own writers do not take, so it is not claimed
 * there. The store is opened with the object's options and asked, as its
 * options may take the flag away (S3's conditional_put = "disabled");
 * opening asks nothing of the network. A store that does not open adds
 * nothing: fingerprint reports why, naming the URI. */
static int ic_effective_capabilities(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                                     unsigned *caps)
{
	(void)policy;
	const char *uri = json_string_value(json_object_get(locator, "uri"));
	if (!uri || !strstr(uri, "://"))
		return 0; /* a plain path: the local store */
	json_t *options = NULL;
	tether_store *s = NULL;
	if (tether_store_check_committed(uri) == 0 && ic_store_options(ctx, uri, &options) == 0 &&
	    tether_store_open(uri, options, &s) == 0 && (tether_store_flags(s) & TETHER_STORE_ATOMIC_CAS))
		*caps |= TETHER_CAP_CONDITIONAL_REF;
	tether_store_close(s);
	json_decref(options);
	tether_error_clear();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Fingerprint and history                                             */
/* ------------------------------------------------------------------ */

static int read_position(struct ic_repository *repo, const struct ic_loc *loc, struct ic_id *out)
{
	int is_branch = 0, found = 0;
	const char *pos = ic_position(loc, &is_branch);
	if (!is_branch)
		return ic_resolve(repo, pos, out);
	int rc = ic_branch_head(repo, pos, out, &found);
	if (rc == 0 && !found)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\"", repo->uri, pos);
	return rc;
}

int ic_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                   struct tether_fingerprint *out)
{
	(void)policy;
	memset(out, 0, sizeof *out);
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id id;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	rc = read_position(&repo, &loc, &id);
	ic_repository_close(&repo);
	if (rc == 0 && !(out->state = ic_state_of(&id)))
		rc = ic_fail_oom();
	return rc;
}

/* {snapshot id: [branch and tag names]}: branches first, then tags, each
 * sorted, as `tether log KEY` decorates entries. */
static int refs_by_snapshot(struct ic_repository *repo, json_t **out)
{
	json_t *by = json_object(), *refs[2] = {NULL, NULL};
	int rc = by ? 0 : ic_fail_oom();
	for (int tags = 0; rc == 0 && tags < 2; tags++)
		rc = ic_list_refs(repo, tags, &refs[tags]);
	for (int tags = 0; rc == 0 && tags < 2; tags++) {
		const char *name;
		json_t *sid;
		json_object_foreach(refs[tags], name, sid) {
			json_t *list = json_object_get(by, json_string_value(sid));
			if (!list && (!(list = json_array()) || json_object_set_new(by, json_string_value(sid), list))) {
				rc = ic_fail_oom();
				break;
			}
			json_array_append_new(list, json_string(name));
		}
	}
	json_decref(refs[0]);
	json_decref(refs[1]);
	if (rc) {
		json_decref(by);
		return rc;
	}
	*out = by;
	return 0;
}

int ic_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id start;
	json_t *chain = NULL, *by = NULL;
	*entries = NULL;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	rc = read_position(&repo, &loc, &start);
	if (rc == 0)
		rc = ic_ancestry(&repo, &start, max_count > 0 ? (size_t)max_count : 0, &chain);
	if (rc == 0)
		rc = refs_by_snapshot(&repo, &by);
	ic_repository_close(&repo);
	size_t i;
	json_t *e;
	json_array_foreach(chain, i, e) {
		json_int_t us = json_integer_value(json_object_get(e, "flushed_at"));
		json_t *refs = json_object_get(by, json_string_value(json_object_get(e, "id")));
		json_object_set_new(e, "time", json_integer(us / 1000000));
		json_object_set_new(e, "time_us", json_integer(us));
		/* Icechunk takes only whole ids back. */
		json_object_set(e, "short_id", json_object_get(e, "id"));
		json_object_del(e, "flushed_at");
		json_object_set_new(e, "refs", refs ? json_incref(refs) : json_array());
	}
	json_decref(by);
	if (rc)
		json_decref(chain);
	else
		*entries = chain;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Handles                                                             */
/* ------------------------------------------------------------------ */

int ic_open_handle(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, const json_t *working_ref, int read_only, json_t **handle)
{
	struct ic_loc loc;
	struct ic_repository repo;
	struct ic_id id;
	char sid[IC_ID_CHARS + 1];
	char *tag = NULL;
	const char *branch = NULL;
	int found = 0;
	*handle = NULL;
	int rc = ic_open_locator(ctx, locator, &loc, &repo);
	if (rc)
		return rc;
	const char *recorded = json_string_value(json_object_get(pin_ref, "tag"));
	const char *pin = json_string_value(json_object_get(pin_ref, "pin"));
	if (read_only && recorded && pin) {
		/* A pin: its live generation (a repair may have moved it on). */
		rc = ic_live_tag(&repo, recorded, pin, &tag, &id);
		if (rc == 0 && !tag)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s: tag %s is gone: `tether repair` re-pins the state "
			                                        "if the repository still holds it", repo.uri, recorded);
	} else if (read_only && state) {
		int exists = 0;
		if ((rc = ic_state_snapshot(state, repo.uri, &id)) == 0 && (rc = ic_snapshot_exists(&repo, &id, &exists)) == 0 &&
		    !exists)
			rc = tether_error_set(TETHER_ENOTFOUND, "%s no longer holds snapshot %s", repo.uri,
			                      json_string_value(json_object_get(state, "snapshot_id")));
	} else {
		const char *wb = json_string_value(json_object_get(working_ref, "working_branch"));
		int is_branch = 0;
		const char *pos = ic_position(&loc, &is_branch);
		branch = wb ? wb : is_branch ? pos : NULL;
		if (branch) {
			rc = ic_branch_head(&repo, branch, &id, &found);
			if (rc == 0 && !found)
				rc = tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\"", repo.uri, branch);
		} else {
			rc = ic_resolve(&repo, pos, &id);
			read_only = 1; /* a detached position is never written */
		}
	}
	int spec = repo.spec;
	ic_repository_close(&repo);
	if (rc == 0) {
		ic_id_text(&id, sid);
		*handle = json_pack("{s:s, s:s, s:b, s:s, s:i}", "kind", "icechunk", "uri", loc.uri, "read_only", read_only,
		                    "snapshot_id", sid, "spec_version", spec);
		if (*handle && tag)
			json_object_set_new(*handle, "tag", json_string(tag));
		if (*handle && branch && !tag)
			json_object_set_new(*handle, "branch", json_string(branch));
		if (!*handle)
			rc = ic_fail_oom();
	}
	free(tag);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */

static const char *const ic_volatile_keys[] = {NULL};

/* {snapshot_id}: one snapshot id in its canonical spelling. */
static int ic_check_state(const json_t *state, const char **bad)
{
	const char *k;
	json_t *v;
	struct ic_id id;
	*bad = "snapshot_id";
	if (ic_id_parse(json_string_value(json_object_get(state, "snapshot_id")), &id) != 0)
		return tether_error_set(TETHER_ECONFIG, "snapshot_id must be a snapshot id (%d Crockford base32 characters)%s",
		                        IC_ID_CHARS, json_object_get(state, "snapshot_id") ? "" : ", and is missing");
	json_object_foreach((json_t *)state, k, v) {
		*bad = k;
		if (strcmp(k, "snapshot_id") != 0)
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of an icechunk state (snapshot_id)", k);
	}
	return 0;
}

/* --branch NAME (also --option branch=NAME): the branch the object
 * follows. make_locator checks it names a branch of the repository. */
static const struct tether_add_option ic_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "branch", .value_name = "NAME", .help = "the repository's branch to follow",
	 .default_value = "main", .field = TETHER_ADD_LOCATOR},
	{0},
};

const struct tether_backend tt_backend_icechunk = {
	TETHER_BACKEND_INIT,
	.kind = "icechunk",
	.secret_keys = tether_store_option_names,
	.maturity = "stable",
	.summary = "Icechunk repositories (spec 1 and 2; local paths, s3://, gs://, az://): tags pin, branches fork",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |
	        TETHER_CAP_ATOMIC_REF | TETHER_CAP_DIFF | TETHER_CAP_HISTORY | TETHER_CAP_PROMOTE |
	        TETHER_CAP_CREATE,
	.volatile_keys = ic_volatile_keys,
	.make_locator = ic_make_locator,
	.effective_capabilities = ic_effective_capabilities,
	.identity = ic_identity,
	.open_store = ic_open_store,
	.close_store = ic_close_store,
	.fingerprint = ic_fingerprint,
	.pin = ic_pin,
	.unpin = ic_unpin,
	.list_pins = ic_list_pins,
	.verify = ic_verify,
	.fork = ic_fork,
	.delete_working_ref = ic_delete_working_ref,
	.open = ic_open_handle,
	.diff = ic_diff,
	.history = ic_history,
	.promote = ic_promote,
	.create_store = ic_create_store,
	.delete_store = ic_delete_store,
	.list_working_refs = ic_list_working_refs,
	.check_state = ic_check_state,
	.add_options = ic_add_options,
	.verify_deep = ic_verify_deep,
	.descends = ic_descends,
	.delete_working_ref_if = ic_delete_working_ref_if,
	.move_base = ic_move_base,
};

TETHER_API tether_backend_module_t tether_backend_module = {&tt_backend_icechunk, NULL};
