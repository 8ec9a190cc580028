/* Pins: a lightweight tag `tether.<pin_id>` at the state's sha, pushed to
 * the object's remote when it has one.
 *
 * With a remote, a pin is a pin only once the push succeeded: a failed push
 * fails the pin and removes the tag it created. unpin deletes on the remote
 * first and fails if that fails, so local and remote never diverge
 * silently. The remote is the URL in .tether/secrets.toml when there is one
 * (it overrides the committed name), else the committed name of a remote
 * the repository has configured. Pushes go through libgit2, which has no
 * ext:: transport and runs no hook or credential helper. */
#include "backends/git/gitbe.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Pushing one refspec                                                 */
/* ------------------------------------------------------------------ */

struct push_outcome {
	char *refused; /* why the remote or we refused, or NULL */
};

static void note_refusal(struct push_outcome *out, const char *refname, const char *why)
{
	if (!out->refused)
		out->refused = gb_strdupf("%s: %s", refname, why);
}

/* Before anything is sent: a pin tag the remote already has at another
 * commit is not ours to move. */
static int check_updates(const git_push_update **updates, size_t len, void *payload)
{
	for (size_t i = 0; i < len; i++) {
		const git_push_update *u = updates[i];

		if (!git_oid_is_zero(&u->src) && !git_oid_is_zero(&u->dst) && !git_oid_equal(&u->src, &u->dst)) {
			note_refusal(payload, u->dst_refname, "the remote already has it at another commit");
			return -1;
		}
	}
	return 0;
}

/* git_remote_push succeeds even when the remote rejected a ref: its verdict
 * arrives here. */
static int check_status(const char *refname, const char *status, void *payload)
{
	if (status)
		note_refusal(payload, refname, status);
	return 0;
}

struct push_target {
	git_remote *remote; /* NULL: the object has no remote */
	const char *label;  /* for messages; never the URL, which may carry a secret */
};

static int open_named_remote(const struct gb_obj *o, const char *name, struct push_target *t)
{
	int rc;

	if (gb_looks_like_url(name))
		return tether_error_set(TETHER_EREFUSED, "git repository %s: remote \"%s\" is a URL or a path; "
		                        "a committed remote must be the name of a configured remote (a URL "
		                        "goes in .tether/secrets.toml as [objects.\"<key>\"] remote)",
		                        o->path, name);
	if ((rc = gb_push_remote(o->repo, name, NULL, &t->remote)) < 0)
		return rc;
	t->label = name;
	return 0;
}

static int open_push_target(const struct tether_bctx *ctx, const struct gb_obj *o, const char *name,
                            struct push_target *t)
{
	const char *url = gb_secret_remote(ctx);
	int rc;

	memset(t, 0, sizeof *t);
	if (url) {
		if ((rc = gb_push_remote(o->repo, NULL, url, &t->remote)) < 0)
			return rc;
		t->label = "the remote in .tether/secrets.toml";
		return 0;
	}
	return name ? open_named_remote(o, name, t) : 0;
}

static int push_refspec(const struct gb_obj *o, const struct push_target *t, const char *refspec)
{
	git_push_options opts;
	struct push_outcome outcome = {NULL};
	char *spec = (char *)refspec;
	git_strarray specs = {&spec, 1};
	int rc;

	git_push_options_init(&opts, GIT_PUSH_OPTIONS_VERSION);
	opts.callbacks.push_negotiation = check_updates;
	opts.callbacks.push_update_reference = check_status;
	opts.callbacks.payload = &outcome;
	rc = git_remote_push(t->remote, &specs, &opts);
	if (outcome.refused)
		rc = tether_error_set(TETHER_EREFUSED, "git repository %s: %s refused %s", o->path, t->label,
		                      outcome.refused);
	else if (rc < 0)
		rc = tt_git_fail(rc, "git repository %s: pushing '%s' to %s failed", o->path, refspec, t->label);
	free(outcome.refused);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The local tag                                                       */
/* ------------------------------------------------------------------ */

int gb_tag_target(git_repository *repo, const char *refname, git_oid *out)
{
	git_reference *ref = NULL;
	git_object *peeled = NULL;
	int rc = git_reference_lookup(&ref, repo, refname);

	if (rc == GIT_ENOTFOUND)
		return rc;
	if (rc == 0)
		rc = git_reference_peel(&peeled, ref, GIT_OBJECT_COMMIT);
	if (rc == 0)
		git_oid_cpy(out, git_object_id(peeled));
	git_object_free(peeled);
	git_reference_free(ref);
	if (rc < 0)
		return tt_git_fail(rc, "git repository %s: cannot read %s", git_repository_path(repo), refname);
	return 0;
}

/* Create the tag at `id`; *created says whether this call made it. The tag
 * already there at `id` is the same pin (pins are idempotent). */
static int create_tag(const struct gb_obj *o, const char *refname, const git_oid *id, int *created)
{
	git_reference *ref = NULL;
	char want[GB_HEX_SIZE], have[GB_HEX_SIZE];
	git_oid existing;
	int rc = git_reference_create(&ref, o->repo, refname, id, 0, "tether: pin");

	git_reference_free(ref);
	*created = rc == 0;
	if (rc != GIT_EEXISTS)
		return rc < 0 ? tt_git_fail(rc, "git repository %s: cannot create %s", o->path, refname) : 0;
	if ((rc = gb_tag_target(o->repo, refname, &existing)) < 0)
		return rc == GIT_ENOTFOUND ? tether_error_set(TETHER_EREFUSED, "git repository %s: %s changed "
		                                              "while it was being created", o->path, refname)
		                           : rc;
	if (!git_oid_equal(&existing, id))
		return tether_error_set(TETHER_EREFUSED, "git repository %s: %s already names commit %s, not %s",
		                        o->path, refname, gb_hex(&existing, have), gb_hex(id, want));
	return 0;
}

/* ------------------------------------------------------------------ */
/* pin / unpin                                                         */
/* ------------------------------------------------------------------ */

static int refuse_dirty_state(const struct gb_obj *o, const json_t *state)
{
	if (!json_is_true(json_object_get(state, "dirty")) || o->allow_dirty)
		return 0;
	return tether_error_set(TETHER_EREFUSED, "git repository %s has uncommitted changes at '%s': commit "
	                        "them first, or set allow_dirty to pin the commit anyway",
	                        o->path, gb_position(o));
}

/* Push the new tag; a failed push leaves no tag this call made. */
static int publish_tag(const struct tether_bctx *ctx, const struct gb_obj *o, const char *refname,
                       int created)
{
	struct push_target t;
	char *spec;
	int rc = open_push_target(ctx, o, o->remote, &t);

	if (rc == 0 && t.remote) {
		spec = gb_strdupf("%s:%s", refname, refname);
		rc = spec ? push_refspec(o, &t, spec) : gb_fail_oom();
		free(spec);
	}
	git_remote_free(t.remote);
	if (rc < 0 && created) {
		git_reference *ref = NULL;

		/* The push's error is the one to report: delete quietly. */
		if (git_reference_lookup(&ref, o->repo, refname) == 0)
			git_reference_delete(ref);
		git_reference_free(ref);
	}
	return rc;
}

/* {"tag", "pin", "sha", "remote"?}: "pin" is the pin id the tag holds,
 * which is how gc tells whose pin it is. */
static int pin_open(const struct tether_bctx *ctx, const struct gb_obj *o, const json_t *state,
                    const char *pin_id, json_t **pin_ref, int *created)
{
	git_commit *commit = NULL;
	char *tag = NULL, *refname = NULL;
	git_oid id;
	int rc = gb_parse_sha(state, "state", &id);

	if (rc == 0)
		rc = gb_lookup_commit(o, &id, &commit);
	if (rc == 0)
		rc = refuse_dirty_state(o, state);
	if (rc == 0 && !(tag = gb_strdupf(GB_TAG_PREFIX "%s", pin_id ? pin_id : "")))
		rc = gb_fail_oom();
	if (rc == 0)
		rc = gb_tag_refname(o, tag, &refname);
	if (rc == 0)
		rc = create_tag(o, refname, &id, created);
	if (rc == 0)
		rc = publish_tag(ctx, o, refname, *created);
	if (rc < 0)
		*created = 0; /* publish_tag took back the tag it made */
	if (rc == 0 && !(*pin_ref = gb_make_pin_ref(o, tag, id.id)))
		rc = gb_fail_oom();
	git_commit_free(commit);
	free(tag);
	free(refname);
	return rc;
}

/* *created is about the local tag: one that existed is an earlier pin,
 * whether or not this call pushed it to the remote. */
int gb_pin(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const char *pin_id,
           json_t **pin_ref, int *created)
{
	struct gb_obj o;
	int rc;

	*created = 0;
	if (!pin_id || !*pin_id)
		return tether_error_set(TETHER_EUSAGE, "git pin: no pin id");
	if ((rc = gb_open(ctx, locator, &o)) < 0)
		return rc;
	rc = pin_open(ctx, &o, state, pin_id, pin_ref, created);
	gb_close(&o);
	return rc;
}

static int unpin_remote(const struct tether_bctx *ctx, const struct gb_obj *o, const json_t *pin_ref,
                        const char *refname)
{
	const char *name = json_string_value(json_object_get(pin_ref, "remote"));
	struct push_target t;
	char *spec;
	int rc = open_push_target(ctx, o, name ? name : o->remote, &t);

	if (rc == 0 && t.remote) {
		spec = gb_strdupf(":%s", refname);
		rc = spec ? push_refspec(o, &t, spec) : gb_fail_oom();
		free(spec);
	}
	git_remote_free(t.remote);
	return rc;
}

int gb_unpin(const struct tether_bctx *ctx, const json_t *locator, const json_t *pin_ref)
{
	struct gb_obj o;
	char *refname = NULL;
	int rc = gb_open(ctx, locator, &o);

	if (rc < 0)
		return rc;
	rc = gb_tag_refname(&o, json_string_value(json_object_get(pin_ref, "tag")), &refname);
	if (rc == 0)
		rc = unpin_remote(ctx, &o, pin_ref, refname);
	if (rc == 0)
		rc = gb_delete_ref(&o, refname);
	free(refname);
	gb_close(&o);
	return rc;
}
