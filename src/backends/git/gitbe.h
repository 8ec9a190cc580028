/* The `git` backend's internal interface, shared by its files.
 *
 * Everything here is hidden (the build uses -fvisibility=hidden); the module
 * exports only `tether_backend_module`. A module can call only what
 * libtether exports with TETHER_API, so the small helpers it needs (path
 * resolution, printf into a new string) are its own.
 *
 * Every call opens its own git_repository and frees it before returning:
 * libgit2 objects are never shared between threads or calls. */
#ifndef TETHER_BACKENDS_GIT_GITBE_H
#define TETHER_BACKENDS_GIT_GITBE_H

#include <tether/backend.h>

#include "util/git_error.h"

#include <git2.h>

#define GB_TAG_PREFIX "tether."
#define GB_HEX_SIZE (GIT_OID_HEXSZ + 1)

extern const struct tether_backend tt_backend_git;

/* An object's repository, opened from a validated locator. The strings are
 * borrowed from the locator. */
struct gb_obj {
	git_repository *repo;
	const char *path;   /* absolute, the checkout top */
	const char *ref;    /* "HEAD" unless the locator names one */
	const char *at;     /* initial position, or NULL */
	const char *branch; /* a working branch a working ref overlays, or NULL */
	const char *remote; /* a configured remote's name, or NULL */
	char *real;         /* path with every link resolved (owned), once opened */
	int allow_dirty;
	int cached;         /* repo belongs to the thread's cache: gb_close keeps it */
};

/* backend.c: gb_open for a read-only call many of which come in a row
 * (verify, list_pins in history walks): the repository stays open in a
 * small per-thread cache instead of being opened and parsed each time. */
int gb_open_cached(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o);

/* util.c: libgit2, errors, strings, paths, references. */
int gb_delete_ref(const struct gb_obj *o, const char *refname);
int gb_libgit2_ready(void);
int gb_fail_oom(void);
char *gb_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *gb_path_resolve(const char *path, const char *cwd);
int gb_looks_like_url(const char *remote);
const char *gb_hex(const git_oid *id, char buf[GB_HEX_SIZE]);
int gb_parse_sha(const json_t *holder, const char *what, git_oid *out);
const char *gb_secret_remote(const struct tether_bctx *ctx);

/* backend.c: locators. gb_check_locator reads a locator and makes the
 * checks that need no repository (verify_many: the repository is open). */
int gb_open(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o);
int gb_check_locator(const json_t *locator, struct gb_obj *o);
int gb_read_locator(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o);
void gb_close(struct gb_obj *o);

/* place.c: where the repository really is. gb_resolve_path sets o->real
 * (every link resolved); gb_refuse_untrusted_place refuses an open
 * repository whose path, git directory or work tree is in the dataset's
 * checkout, or whose git directory is committed content of an enclosing
 * repository; gb_refuse_create_place checks a path create_store will use. */
int gb_resolve_path(struct gb_obj *o, int code);
int gb_refuse_untrusted_place(const struct tether_bctx *ctx, const struct gb_obj *o, int code);
int gb_refuse_create_place(const struct tether_bctx *ctx, const struct gb_obj *o);

/* pin.c: pin tags. gb_tag_refname refuses a name that is no tether pin
 * tag; gb_tag_target gives the commit a tag names (peeled), or
 * GIT_ENOTFOUND with no error set when it is absent. */
int gb_tag_refname(const struct gb_obj *o, const char *tag, char **refname);
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
int gb_list_pins(const struct tether_bctx *, const json_t *locator, json_t **pin_refs);
int gb_verify(const struct tether_bctx *, const json_t *locator, const json_t *state,
              const json_t *pin_ref, int *ok, char **detail);
int gb_verify_many(const struct tether_bctx *, struct tether_verify_item *items, size_t n);
int gb_fork(const struct tether_bctx *, const json_t *locator, const json_t *state,
            const json_t *pin_ref, const char *branch, const json_t *expect,
            json_t **working_ref);
int gb_delete_working_ref(const struct tether_bctx *, const json_t *locator,
                          const json_t *working_ref);
int gb_list_working_refs(const struct tether_bctx *, const json_t *locator, json_t **refs);
int gb_open_handle(const struct tether_bctx *, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, const json_t *working_ref, int read_only,
                   json_t **handle);
int gb_promote(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
               const json_t *expect, json_t **result);
int gb_merge(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
             const char *message, json_t **result);
int gb_diff(const struct tether_bctx *, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b,
            size_t max_entries, json_t **diff);
int gb_history(const struct tether_bctx *, const json_t *locator, int max_count,
               json_t **entries);
int gb_create_store(const struct tether_bctx *, const json_t *locator);
int gb_delete_store(const struct tether_bctx *, const json_t *locator);

#endif
