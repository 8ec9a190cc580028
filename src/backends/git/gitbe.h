/* The `git` backend's internal interface, shared by its files.
 *
 * This is the libgit2 module, tether-gitbe-libgit2.so, which the front
 * tether-backend-git.so loads (gitbe_read.h says how the two share code).
 * Everything here is hidden (the build uses -fvisibility=hidden); the module
 * exports only `tether_gitbe_libgit2`. A module can call only what
 * libtether exports with TETHER_API, so the small helpers it needs (path
 * resolution, printf into a new string) are its own.
 *
 * Every call opens its own git_repository and frees it before returning:
 * libgit2 objects are never shared between threads or calls. */
#ifndef TETHER_BACKENDS_GIT_GITBE_H
#define TETHER_BACKENDS_GIT_GITBE_H

#include <tether/backend.h>

#include "backends/git/gitbe_read.h"
#include "util/git_error.h"

#include <git2.h>

extern const struct tether_backend tt_backend_git;

/* backend.c: gb_open for a read-only call many of which come in a row
 * (verify, list_pins in history walks): the repository stays open in a
 * small per-thread cache instead of being opened and parsed each time. */
int gb_open_cached(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o);

/* verify_deep.c: verify, then the commit and its trees read back. */
int gb_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, int *ok, char **detail);

/* util.c: libgit2, errors, ids, references. */
int gb_delete_ref(const struct gb_obj *o, const char *refname);
int gb_libgit2_ready(void);
char *gb_path_resolve(const char *path, const char *cwd);
const char *gb_hex(const git_oid *id, char buf[GB_HEX_SIZE]);
int gb_parse_sha(const json_t *holder, const char *what, git_oid *out);
const char *gb_secret_remote(const struct tether_bctx *ctx);

/* backend.c: locators. gb_open opens with every check (the shared ones of
 * gitbe_read.h on libgit2's view of the repository); gb_read_locator
 * checks a locator for a repository that need not exist yet. */
int gb_open(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o);
int gb_read_locator(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o);

/* place_libgit2.c: gb_refuse_place on the open repository's paths. */
int gb_refuse_untrusted_place(const struct tether_bctx *ctx, const struct gb_obj *o, int code);

/* pin.c: gb_tag_target gives the commit a tag names (peeled), or
 * GIT_ENOTFOUND with no error set when it is absent. */
int gb_tag_target(git_repository *repo, const char *refname, git_oid *out);

/* state.c: revisions and cleanliness. */
int gb_resolve_commit(const struct gb_obj *o, const char *rev, git_commit **out);
int gb_lookup_commit(const struct gb_obj *o, const git_oid *id, git_commit **out);
const char *gb_position(const struct gb_obj *o);
int gb_resolve_position(const struct gb_obj *o, git_commit **out);
int gb_head_branch(git_repository *repo, char **refname);
int gb_base_branch(const struct gb_obj *o, char **refname);
int gb_is_dirty(git_repository *repo, int *dirty);

/* remote.c: remotes made in memory from configured or secret URLs. */
int gb_remote_exists(git_repository *repo, const char *name, int *exists);
int gb_push_remote(git_repository *repo, const char *name, const char *url, git_remote **out);

/* worktree.c: checkouts of a branch, and moving a branch safely. */
int gb_find_checkout(const struct gb_obj *o, const char *refname, char **workdir);
int gb_move_ref(git_repository *repo, const char *refname, const git_oid *to,
                const git_oid *expected, const char *why);
int gb_move_branch(const struct gb_obj *o, const char *refname, const git_oid *from,
                   const git_oid *to, const char *why, char **workdir);

/* fork.c: branches by name. */
int gb_branch_refname(const struct gb_obj *o, const char *branch, char **refname);
int gb_branch_head(const struct gb_obj *o, const char *refname, git_oid *out);

/* The functions of struct tether_backend, one file per job. */
int gb_fingerprint(const struct tether_bctx *, const json_t *locator, const json_t *policy,
                   struct tether_fingerprint *out);
int gb_pin(const struct tether_bctx *, const json_t *locator, const json_t *state,
           const char *pin_id, json_t **pin_ref, int *created);
int gb_unpin(const struct tether_bctx *, const json_t *locator, const json_t *pin_ref);
int gb_fork(const struct tether_bctx *, const json_t *locator, const json_t *state,
            const json_t *pin_ref, const char *branch, const json_t *expect,
            json_t **working_ref);
int gb_delete_working_ref(const struct tether_bctx *, const json_t *locator,
                          const json_t *working_ref);
int gb_delete_working_ref_if(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
                             const json_t *expect);
int gb_list_working_refs(const struct tether_bctx *, const json_t *locator, json_t **refs);
int gb_open_handle(const struct tether_bctx *, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, const json_t *working_ref, int read_only,
                   json_t **handle);
int gb_promote(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
               const json_t *expect, json_t **result);
int gb_merge(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
             const char *message, json_t **result);
int gb_descends(const struct tether_bctx *, const json_t *locator, const json_t *ancestor,
                const json_t *descendant, int *answer);
int gb_move_base(const struct tether_bctx *, const json_t *locator, const json_t *state,
                 const json_t *expect, json_t **result);
int gb_diff(const struct tether_bctx *, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b,
            size_t max_entries, json_t **diff);
int gb_history(const struct tether_bctx *, const json_t *locator, int max_count,
               json_t **entries);
int gb_create_store(const struct tether_bctx *, const json_t *locator);
int gb_delete_store(const struct tether_bctx *, const json_t *locator);

#endif
