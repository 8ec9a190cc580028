/* tether add: register an object. Nothing is contacted beyond what the
 * backend needs to build a locator; the manifest records no state until
 * the next commit. */
#include "core/abi.h"
#include "core/engine.h"
#include "core/sessions.h"

#include "core/add.h"
#include "core/add_options.h"
#include "core/registry.h"
#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static const char *policy_value(const json_t *options, const json_t *defaults, const char *key,
                                const char *dflt)
{
	const char *v = json_string_value(json_object_get(options, key));
	if (!v)
		v = json_string_value(json_object_get(defaults, key));
	return v ? v : dflt;
}

/* The options as the backend gets them: each one the kind declares
 * checked against its choices here, before the backend sees it, and each
 * declared with TETHER_ADD_DEFAULTS that was not given taken from
 * [defaults]. A copy, *out. */
static int declared_options(const struct tether_backend *b, const struct tether_bctx *ctx, const json_t *given,
                            json_t **out)
{
	json_t *opts = given ? json_deep_copy(given) : json_object();
	if (!opts)
		return tether_error_set(TETHER_ERROR, "out of memory");
	const char *k;
	json_t *v;
	struct tether_add_option o;
	json_object_foreach(opts, k, v) {
		if (!tt_add_option_find(b, k, &o))
			continue; /* --option NAME=VALUE: the backend's to judge */
		const char *value = json_string_value(v);
		if (value && tt_add_option_allows(&o, value))
			continue;
		char allowed[256] = "a string";
		if (o.choices)
			tt_choices_join(o.choices, 0, allowed, sizeof allowed);
		int rc = tether_error_set(TETHER_EUSAGE, "--%s must be %s%s (kind %s), not '%s'", k,
		                          o.choices && o.choices[0] && o.choices[1] ? "one of " : "", allowed, b->kind,
		                          value ? value : "that");
		json_decref(opts);
		return rc;
	}
	for (size_t i = 0; tt_add_option_at(b, i, &o); i++) {
		json_t *d = json_object_get(ctx->defaults, o.name);
		if ((o.flags & TETHER_ADD_DEFAULTS) && json_is_string(d) && !json_object_get(opts, o.name))
			json_object_set(opts, o.name, d);
	}
	*out = opts;
	return 0;
}

/* Take out of opts the options the kind declares for the other field:
 * a policy option is make_policy's alone, a locator option make_locator's. */
static void drop_field(const struct tether_backend *b, json_t *opts, enum tether_add_field field)
{
	struct tether_add_option o;
	for (size_t i = 0; tt_add_option_at(b, i, &o); i++)
		if (o.field == field)
			json_object_del(opts, o.name);
}

/* write and pin are the engine's policies; every other option is the
 * backend's to accept or refuse. */
static int build_policy(const struct tether_backend *b, const struct tether_bctx *ctx, const json_t *options,
                        json_t **policy)
{
	json_t *backend_opts = json_deep_copy(options);
	json_object_del(backend_opts, "write");
	json_object_del(backend_opts, "pin");
	drop_field(b, backend_opts, TETHER_ADD_LOCATOR);
	json_t *p = NULL;
	int rc = TT_BACKEND_GET(b, make_policy) ? TT_BACKEND_GET(b, make_policy)(ctx, backend_opts, &p) : 0;
	json_decref(backend_opts);
	if (rc)
		return rc;
	if (!p)
		p = json_object();
	/* A declared policy option lands in the policy even when the backend
	 * leaves it out (or has no make_policy): the declaration says so. */
	struct tether_add_option o;
	for (size_t i = 0; tt_add_option_at(b, i, &o); i++) {
		json_t *given = json_object_get(options, o.name);
		if (o.field == TETHER_ADD_POLICY && given && !json_object_get(p, o.name))
			json_object_set(p, o.name, given);
	}
	const char *write = policy_value(options, NULL, "write", NULL);
	const char *pin = policy_value(options, ctx->defaults, "pin", "native");
	if (!write)
		write = (b->caps & TETHER_CAP_FORK) ? policy_value(NULL, ctx->defaults, "write", "fork") : "none";
	if (strcmp(write, "fork") != 0 && strcmp(write, "track") != 0 && strcmp(write, "none") != 0)
		rc = tether_error_set(TETHER_EUSAGE, "--write must be fork, track or none, not '%s'", write);
	else if (strcmp(write, "none") != 0 && !(b->caps & TETHER_CAP_FORK))
		rc = tether_error_set(TETHER_EUSAGE, "--write %s needs a forkable backend; kind %s is %s", write,
		                      b->kind, tether_tier_name(b->caps));
	else if (strcmp(pin, "native") != 0 && strcmp(pin, "record") != 0)
		rc = tether_error_set(TETHER_EUSAGE, "--pin must be native or record, not '%s'", pin);
	if (rc) {
		json_decref(p);
		return rc;
	}
	json_object_set_new(p, "write", json_string(write));
	json_object_set_new(p, "pin", json_string(pin));
	*policy = p;
	return 0;
}

/* tether add --create: the store is made before its manifest is written,
 * so a manifest never names a store that does not exist. */
static int create_store(const struct tether_backend *b, const struct tether_bctx *ctx, const json_t *locator)
{
	int rc = TT_BACKEND_GET(b, create_store)(ctx, locator);
	return rc ? tether_error_set(rc, "cannot create the store: %s", tether_error_last()) : 0;
}

/* The locator and policy `tether add` would record for `uri` and the
 * options given (the kind's declared options checked, [defaults] filled
 * in, make_policy and make_locator called): add's, and import's for each
 * row. */
int tt_add_build(const struct tether_backend *b, const struct tether_bctx *ctx, const char *uri, const json_t *given,
                 const char *cwd, int create, json_t **locator_out, json_t **policy_out)
{
	json_t *policy = NULL, *locator = NULL, *options = NULL;
	*locator_out = *policy_out = NULL;
	int rc = declared_options(b, ctx, given, &options);
	if (!rc)
		rc = build_policy(b, ctx, options, &policy);
	if (!rc) {
		json_t *backend_opts = json_deep_copy(options);
		json_object_del(backend_opts, "write");
		json_object_del(backend_opts, "pin");
		drop_field(b, backend_opts, TETHER_ADD_POLICY);
		/* Policy keys are the backend's too; the locator builder sees only
		 * what is left once they are taken. */
		const char *k;
		json_t *v;
		json_object_foreach(policy, k, v) {
			(void)v;
			if (TT_BACKEND_GET(b, make_policy))
				json_object_del(backend_opts, k);
		}
		if (create)
			json_object_set_new(backend_opts, "create", json_true());
		rc = b->make_locator(ctx, uri, backend_opts, cwd, &locator);
		json_decref(backend_opts);
	}
	json_decref(options);
	if (rc) {
		json_decref(policy);
		json_decref(locator);
		return rc;
	}
	*locator_out = locator;
	*policy_out = policy;
	return 0;
}

static int add_command(tether_repo *repo, const struct tether_add_opts *opts, json_t **report)
{
	*report = NULL;
	int rc = tt_key_check(opts->key);
	if (rc)
		return rc;
	if (!opts->kind)
		return tether_error_set(TETHER_EUSAGE, "--kind is required (`tether backends` lists the kinds)");
	const struct tether_backend *b = tether_backend_find(opts->kind);
	if (!b)
		return TETHER_EUSAGE;
	rc = tt_repo_check_secrets(repo);
	if (!rc) /* before any store is opened with them */
		rc = tt_repo_check_object_secrets(repo, b, opts->key);
	if (rc)
		return rc;
	struct tt_manifest existing;
	rc = tt_manifest_load_working(repo->root, opts->key, &existing);
	if (rc == 0) {
		tt_manifest_free(&existing);
		return tether_error_set(TETHER_EREFUSED, "object '%s' already exists (.tether/objects/%s.toml)",
		                        opts->key, opts->key);
	}
	if (rc != TETHER_ENOTFOUND)
		return rc;
	if (opts->create && (!(b->caps & TETHER_CAP_CREATE) || !TT_BACKEND_GET(b, create_store)))
		return tether_error_set(TETHER_EUSAGE, "kind %s cannot create its stores: make it with its own tools, "
		                        "then add it", b->kind);
	struct tether_bctx ctx;
	tt_repo_bctx(repo, b->kind, opts->key, &ctx);
	json_t *policy = NULL, *locator = NULL;
	rc = tt_add_build(b, &ctx, opts->uri, opts->options, opts->cwd, opts->create, &locator, &policy);
	int created = 0;
	if (!rc && opts->create)
		created = (rc = create_store(b, &ctx, locator)) == 0;
	unsigned caps = b->caps;
	if (!rc)
		rc = tt_object_caps(b, &ctx, locator, policy, &caps);
	struct tt_manifest m = {.key = strdup(opts->key)};
	if (!rc) {
		m.doc = json_pack("{s:s, s:O, s:O}", "kind", b->kind, "locator", locator, "policy", policy);
		rc = tt_manifest_save(repo->root, repo->layout, &m);
	}
	if (!rc) {
		json_t *warnings = json_array();
		if (!(caps & (TETHER_CAP_PIN | TETHER_CAP_ADDRESSABLE)))
			json_array_append_new(warnings, json_sprintf("%s is observed only: tether detects changes but "
			                                            "cannot recover earlier states", opts->key));
		/* Recorded, not pinned, in a system that expires its past
		 * (a Delta table's log cleanup and VACUUM): say so once, here. */
		if ((caps & TETHER_CAP_RETENTION_BOUND) && (caps & TETHER_CAP_ADDRESSABLE) && !(caps & TETHER_CAP_PIN))
			json_array_append_new(warnings, json_sprintf("%s is retention-bound (RETENTION_BOUND): kind %s has "
			                                            "no refs to pin with, so a recorded state stays "
			                                            "readable only until the system's own retention "
			                                            "removes it; `tether verify` says whether it still is",
			                                            opts->key, b->kind));
		if (b->maturity && strcmp(b->maturity, "stable") != 0)
			/* What it was tested against is the backend's to say (a
			 * fake of a hosted API, an old server, the real library):
			 * its summary in `tether backends`. */
			json_array_append_new(warnings, json_sprintf("kind %s is %s: `tether backends` says what it was "
			                                            "tested against", b->kind, b->maturity));
		char *rel = tt_manifest_relpath(opts->key);
		/* The object's own flags: a backend's effective_capabilities may
		 * grant more than `tether backends` lists (icechunk's
		 * CONDITIONAL_REF on an object store). */
		*report = json_pack("{s:s, s:s, s:s, s:o, s:s, s:O, s:o}", "key", opts->key, "kind", b->kind, "tier",
		                    tether_tier_name(caps), "flags", tether_cap_names(caps), "manifest", rel, "locator",
		                    locator, "warnings", warnings);
		free(rel);
	}
	if (rc && created && TT_BACKEND_GET(b, delete_store)) {
		/* Nothing half-written: the store goes with the manifest. */
		char *keep = strdup(tether_error_last());
		TT_BACKEND_GET(b, delete_store)(&ctx, locator);
		tether_error_set(rc, "%s", keep);
		free(keep);
	}
	tt_manifest_free(&m);
	json_decref(policy);
	json_decref(locator);
	return rc;
}

static int add_history_command(tether_repo *repo, const struct tether_add_opts *opts, int max, json_t **entries)
{
	*entries = NULL;
	if (!opts->kind)
		return tether_error_set(TETHER_EUSAGE, "--kind is required (`tether backends` lists the kinds)");
	const struct tether_backend *b = tether_backend_find(opts->kind);
	if (!b)
		return TETHER_EUSAGE;
	if (!(b->caps & TETHER_CAP_HISTORY))
		return tether_error_set(TETHER_EUSAGE, "kind %s keeps no history to pick from", b->kind);
	/* The store is read with its options from secrets.toml, as add reads it. */
	int rc = tt_repo_check_secrets(repo);
	if (!rc)
		rc = tt_repo_check_object_secrets(repo, b, opts->key);
	if (rc)
		return rc;
	struct tether_bctx ctx;
	tt_repo_bctx(repo, b->kind, opts->key, &ctx);
	/* The history is listed from the locator's own ref: the engine's
	 * options, the starting point and the policy's are left out. */
	json_t *backend_opts = NULL;
	rc = declared_options(b, &ctx, opts->options, &backend_opts);
	if (rc)
		return rc;
	static const char *const engine_keys[] = {"write", "pin", "at", NULL};
	for (size_t i = 0; engine_keys[i]; i++)
		json_object_del(backend_opts, engine_keys[i]);
	drop_field(b, backend_opts, TETHER_ADD_POLICY);
	json_t *locator = NULL;
	rc = b->make_locator(&ctx, opts->uri, backend_opts, opts->cwd, &locator);
	json_decref(backend_opts);
	if (!rc)
		rc = TT_BACKEND_GET(b, history)(&ctx, locator, max, entries);
	json_decref(locator);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_add(tether_repo *repo, const struct tether_add_opts *caller_opts, json_t **report)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_add_opts opts;
	int rc = TT_OPTS_IN("struct tether_add_opts", TETHER_ADD_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*report = NULL;
		return rc;
	}
	tt_command_begin(repo, NULL, NULL);
	rc = add_command(repo, &opts, report);
	tt_command_end(repo);
	return rc;
}

/* One command's scope (core/sessions.h): its store sessions close here,
 * whichever way it ends. */
int tether_add_history(tether_repo *repo, const struct tether_add_opts *caller_opts, int max, json_t **entries)
{
	/* The caller's struct as this tether's (abi.h): members it lacks read as 0. */
	struct tether_add_opts opts;
	int rc = TT_OPTS_IN("struct tether_add_opts", TETHER_ADD_OPTS_VERSION, caller_opts, &opts);
	if (rc) {
		*entries = NULL;
		return rc;
	}
	tt_command_begin(repo, NULL, NULL);
	rc = add_history_command(repo, &opts, max, entries);
	tt_command_end(repo);
	return rc;
}
