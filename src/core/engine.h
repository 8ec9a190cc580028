/* What the commands share: objects resolved to their backends, fanned out
 * over the worker pool, and manifests read at any revision. */
#ifndef TETHER_CORE_ENGINE_H
#define TETHER_CORE_ENGINE_H

#include "core/manifest.h"
#include "core/repo.h"

struct tt_obj {
	struct tt_manifest *m;
	const struct tether_backend *b;
	unsigned caps;
	struct tether_bctx ctx;
	json_t *working_ref; /* from workspace.toml, or NULL: the base branch */
	json_t *locator;     /* the manifest's, with the working ref merged in */
	int threads_alone;   /* ctx.threads when it is snapshotted alone */
	/* Filled by tt_objs_snapshot. */
	struct tether_fingerprint fp;
	int rc;             /* fingerprint result */
	char *error;        /* its message, when rc != 0 */
	const char *status; /* "clean" | "modified" | "never-recorded" | "drifted" | "unknown" */
	char *detail;       /* why drifted/modified, or NULL */
};

/* Resolve each manifest's backend and capabilities. An unknown kind or a
 * bad locator fails with the manifest named. */
int tt_objs_prepare(struct tether_repo *repo, struct tt_manifest_set *set, int progress,
                    struct tt_obj **objs);
/* Fingerprint every object and classify it against its recorded state:
 * one by one on this thread for the first millisecond, then the rest
 * concurrently. Per-object failures land in obj->rc / obj->error. */
void tt_objs_snapshot(struct tt_obj *objs, size_t n);
void tt_objs_free(struct tt_obj *objs, size_t n);
/* The pin id of an object's fingerprinted state (obj->fp.state). */
int tt_obj_pin_id(const struct tether_repo *repo, const struct tt_obj *o, char *out);

/* Manifests at a commit id, or the working copy when id is "". */
int tt_manifests_at(struct tether_repo *repo, const char *id, struct tt_manifest_set *out);

/* fork.c: working branches. */
/* What `new` does to one object, decided without touching it: "fork" a
 * working branch, "track" the upstream one (write = track), work on the
 * "upstream" branch itself (on the trunk), stay "detached" at the `at` its
 * locator names, or "skip" it (*detail says why). */
const char *tt_fork_decision(const struct tt_obj *o, int on_trunk, const char **detail);
/* Does the object's locator hold a detached `at` (add --at / --pick)? */
int tt_obj_detached(const struct tt_obj *o);
/* Does the object work on a working branch (forkable, write = fork)? */
int tt_fork_wanted(const struct tt_obj *o);
/* The condition a fork of `branch` is made on: the head tether last left
 * it at in this checkout (borrowed from ws), or NULL when tether never made
 * it here, so it must not exist. Objects in one branch scope (one store)
 * share the branch: a head another of them recorded counts. */
json_t *tt_fork_expect(const json_t *ws, struct tt_obj *o, const char *branch);
/* The object's branch scope: its kind and identity, as one string
 * (malloc'd), or NULL when the backend gives no identity. */
char *tt_fork_scope(struct tt_obj *o);
/* Check that condition against the store, read-only, through the backend's
 * list_working_refs: TETHER_EREFUSED naming the object and the branch when
 * it does not hold; 0 when it does, or when the backend cannot list its
 * working branches (the fork's own condition then decides). */
int tt_fork_precheck(struct tt_obj *o, const char *branch, const json_t *expect);
/* Where `branch` of the object's store stands now: *head (new reference,
 * or NULL) and whether the branch exists, from list_working_refs, or from a
 * fingerprint of the object's working locator when the backend cannot
 * list its working branches. */
int tt_fork_head(struct tt_obj *o, const char *branch, json_t **head, int *exists);
/* The working branch `branch` as the store holds it now: its working ref
 * (the overlay a fork would return) and its head, both new references, or
 * both NULL when it is absent or the backend cannot list its branches. */
int tt_fork_find_working(struct tt_obj *o, const char *branch, json_t **wref, json_t **head);
/* `new --adopt`: take the existing working branch into the workspace as it
 * is, without moving it, on the condition that it is still at the head the
 * plan showed (TETHER_EREFUSED when it moved or went). */
int tt_fork_adopt(struct tether_repo *repo, struct tt_obj *o, json_t *ws, const char *branch,
                  const json_t *planned_head, json_t **result);
/* Objects of one branch scope fork one branch, so they must be recorded
 * at one state: TETHER_EREFUSED naming two that are not. */
int tt_fork_scopes_agree(struct tt_obj *objs, size_t n, const char *branch, int on_trunk);
/* A state in one short line, for messages (malloc'd). */
char *tt_state_brief(const struct tether_backend *b, const json_t *state);

/* The forks one run made, to take them back when a later step fails. */
struct tt_fork_done {
	struct tt_obj *obj;
	char *branch;
	json_t *before; /* the head it moved from, or NULL: this run made it */
	json_t *after;  /* the state it put the branch at */
	json_t *wref;
};
struct tt_fork_log {
	struct tt_fork_done *v;
	size_t n, cap;
};
/* Fork one object's working branch for `bookmark` into the workspace
 * document ws (or record that it tracks its upstream, or why it is
 * skipped). *result reports what happened. A fork made is noted in log
 * (when not NULL). */
int tt_fork_object(struct tether_repo *repo, struct tt_obj *o, json_t *ws, const char *bookmark,
                   struct tt_fork_log *log, json_t **result);
/* Take back every fork in the log, newest first; *failed (malloc'd, or
 * NULL) names the first that could not be. */
void tt_fork_log_undo(struct tt_fork_log *log, char **failed);
void tt_fork_log_free(struct tt_fork_log *log);

/* HEAD's manifests as status needs them: {key: {digest, kind, pin,
 * state}}, from a cache keyed by commit id when it is current. */
int tt_head_view(struct tether_repo *repo, json_t **view);
void tt_head_view_save(struct tether_repo *repo, const char *id, const struct tt_manifest_set *set);
/* pending.c: the changes to tether.toml, .tether/.gitignore and
 * .tether/listings/ since HEAD that the next commit records: [{"path"
 * (dataset-relative), "change": "added"|"removed"|"changed"}], by path. */
int tt_pending_files(struct tether_repo *repo, json_t **changes);
/* Cache HEAD's side of that for commit `id` (commit calls it once its
 * commit lands, so the next status needs no VCS). */
void tt_head_files_save(struct tether_repo *repo, const char *id);

/* Listings: .tether/listings/<sha256>.jsonl, named by their content. When
 * created is not NULL it receives the malloc'd path of the file if this call
 * wrote it, else NULL (it was already there, or the write failed). */
int tt_listing_save(struct tether_repo *repo, const char *text, size_t len, char hex[65], char **created);
/* Load a listing at a commit id ("" = working copy); TETHER_ENOTFOUND when
 * absent; a listing whose bytes do not hash to its name is refused. */
int tt_listing_load(struct tether_repo *repo, const char *id, const char *hex, char **text,
                    size_t *len);
/* Check the listing a manifest names is present and intact (working copy). */
int tt_listing_check(struct tether_repo *repo, const char *hex, char **why);

#endif
