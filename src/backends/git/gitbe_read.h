/* The `git` backend's read side, shared by its two modules and free of
 * libgit2.
 *
 * tether-backend-git.so is a front that never links libgit2: it answers
 * the calls that commands reading history make (identity, check_state,
 * list_pins, verify, verify_many) on the native git reader of src/vcs
 * (gitrefs.c, gitodb.c), and loads tether-gitbe-libgit2.so -- the backend
 * on libgit2, every other call -- beside it on first need (front.c). The
 * code below is compiled into both modules; what differs is the reader:
 * the hooks at the end of this file, implemented on libgit2 in
 * read_libgit2.c and natively in read_native.c. So the locator checks,
 * the hostile-clone checks of place.c, the verify and list_pins logic and
 * every message are one copy, whichever reader runs them.
 *
 * A native hook that cannot answer exactly as libgit2 would (a layout the
 * native reader does not read, a name whose validity only libgit2's rules
 * settle, any damage, whose wording is libgit2's) returns GB_FORWARD; the
 * call that met it returns GB_FORWARD too, and the front hands the whole
 * call to the libgit2 module. The libgit2 hooks never return it. */
#ifndef TETHER_BACKENDS_GIT_GITBE_READ_H
#define TETHER_BACKENDS_GIT_GITBE_READ_H

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#define GB_TAG_PREFIX "tether."
#define GB_HEX_SIZE 41
#define GB_OID_SIZE 20

/* Positive returns of the shared calls and hooks. */
#define GB_FORWARD 1  /* the native reader cannot answer exactly: libgit2 must */
#define GB_NOTFOUND 2 /* gb_rd_tag_target: no such ref (no error set) */

#define GB_CAPS                                                                                     \
	(TETHER_CAP_FINGERPRINT | TETHER_CAP_ADDRESSABLE | TETHER_CAP_PIN | TETHER_CAP_FORK |            \
	 TETHER_CAP_CHEAP_FINGERPRINT | TETHER_CAP_ATOMIC_REF | TETHER_CAP_CONDITIONAL_REF |              \
	 TETHER_CAP_DIFF | TETHER_CAP_HISTORY | TETHER_CAP_PROMOTE | TETHER_CAP_MERGE | TETHER_CAP_CREATE)
#define GB_SUMMARY "git repositories: pin the code that produced a dataset"

struct git_repository;
struct gb_native;

/* An object's repository, opened from a validated locator. The strings are
 * borrowed from the locator. Exactly one of repo (libgit2) and native (the
 * native reader) is set once opened. */
struct gb_obj {
	struct git_repository *repo;
	struct gb_native *native;
	const char *path;   /* absolute, the checkout top */
	const char *ref;    /* "HEAD" unless the locator names one */
	const char *at;     /* initial position, or NULL */
	const char *branch; /* a working branch a working ref overlays, or NULL */
	const char *remote; /* a configured remote's name, or NULL */
	char *real;         /* path with every link resolved (owned), once opened */
	int allow_dirty;
	struct gb_session *pool; /* repo goes back to this session's pool on gb_close */
};

/* session.c: the store session, a pool of checked libgit2 repositories
 * that calls take and give back (libgit2 repositories are not for two
 * threads at once). take: one opened for `path`, or NULL; give: -1 when it
 * could not be kept (the caller frees it). */
struct gb_session;
int gb_open_store(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session);
void gb_close_store(const struct tether_bctx *ctx, void *session);
struct git_repository *gb_session_take(struct gb_session *s, const char *path);
int gb_session_give(struct gb_session *s, const char *path, struct git_repository *repo,
                    void (*free_repo)(struct git_repository *));

extern const char *const gb_volatile_keys[];
extern const char *const gb_secret_keys[];
extern const struct tether_add_option gb_add_options[];

/* locator.c: strings, ids, locators, pin refs. */
/* The helpers' (tether-modutil) under the names the backend's files use. */
#define gb_fail_oom tt_fail_oom
#define gb_strdupf tt_strdupf
int gb_looks_like_url(const char *remote);
const char *gb_hex20(const unsigned char id[GB_OID_SIZE], char buf[GB_HEX_SIZE]);
/* holder["sha"] as 20 bytes; `what` names the holder in the message. */
int gb_parse_sha20(const json_t *holder, const char *what, unsigned char out[GB_OID_SIZE]);
int gb_parse_locator(const json_t *locator, struct gb_obj *o);
int gb_parse_flag(const json_t *v, const char *key, int code, int *out);
int gb_refuse_url_remote(const struct gb_obj *o, int code);
int gb_check_locator(const json_t *locator, struct gb_obj *o);
int gb_check_state(const json_t *state, const char **bad);
int gb_identity_do(const struct tether_bctx *ctx, const json_t *locator, json_t **identity);
int gb_tag_refname(const struct gb_obj *o, const char *tag, char **refname);
json_t *gb_make_pin_ref(const struct gb_obj *o, const char *tag, const unsigned char id[GB_OID_SIZE]);

/* place.c: where the repository really is. gb_resolve_path sets o->real
 * (every link resolved); gb_refuse_place refuses a repository whose path,
 * git directory, common directory or work tree (as its reader found them)
 * is in the dataset's checkout or under /proc, or whose git directory is
 * committed content of an enclosing repository; gb_refuse_create_place
 * checks a path create_store will use. */
int gb_resolve_path(struct gb_obj *o, int code);
char *gb_resolved(const char *path); /* realpath, no trailing slash; malloc'd or NULL */
int gb_is_at_or_under(const char *path, const char *dir);
int gb_refuse_place(const struct tether_bctx *ctx, const struct gb_obj *o, const char *gitdir,
                    const char *commondir, const char *workdir, int code);
/* The same checks on paths already resolved (realpath'd, no trailing
 * slash), as the native reader's tt_grepo_find hands them over: resolving
 * them again would only repeat a readlink for every ancestor. */
int gb_refuse_resolved_place(const struct tether_bctx *ctx, const struct gb_obj *o, const char *gitdir,
                             const char *commondir, const char *workdir, int code);
int gb_refuse_create_place(const struct tether_bctx *ctx, const struct gb_obj *o);

/* verify.c and list.c: the calls themselves. */
int gb_verify_do(const struct tether_bctx *, const json_t *locator, const json_t *state,
                 const json_t *pin_ref, int *ok, char **detail);
int gb_verify_many_do(const struct tether_bctx *, struct tether_verify_item *items, size_t n);
int gb_list_pins_do(const struct tether_bctx *, const json_t *locator, json_t **pin_refs);

/* ------------------------------------------------------------------ */
/* The reader: read_libgit2.c or read_native.c                         */
/* ------------------------------------------------------------------ */

/* Open the object's repository with every check of a fresh open (cached:
 * a read many of which come in a row may reuse a repository the command's
 * session holds, opened and checked before). 0, GB_FORWARD or < 0. */
int gb_rd_open(const struct tether_bctx *ctx, const json_t *locator, struct gb_obj *o, int cached);
void gb_close(struct gb_obj *o);
/* The commit tag `refname` names, peeled; `peeled` (or NULL) is what
 * packed-refs says it peels to. 0, GB_NOTFOUND, GB_FORWARD or < 0. */
int gb_rd_tag_target(const struct gb_obj *o, const char *refname, const unsigned char *peeled,
                     unsigned char out[GB_OID_SIZE]);
/* Is object id in the object database? 0, GB_FORWARD or < 0. */
int gb_rd_has_object(const struct gb_obj *o, const unsigned char id[GB_OID_SIZE], int *has);
/* Every tag refs/tags/tether.*, in the order the reader lists them:
 * cb(ud, name without "refs/tags/", direct target or NULL when symbolic,
 * packed-refs' peel or NULL). 0, GB_FORWARD or < 0. */
typedef int (*gb_tag_cb)(void *ud, const char *name, const unsigned char *target, const unsigned char *peeled);
int gb_rd_each_tag(const struct gb_obj *o, gb_tag_cb cb, void *ud);
/* Validity by git's rules: *valid 1 or 0; 0 or GB_FORWARD. */
int gb_rd_remote_name_valid(const char *name, int *valid);
int gb_rd_refname_valid(const char *refname, int *valid);
/* The work tree of a repository enclosing `dir` that tracks it (*by,
 * malloc'd) or NULL: every repository whose checkout holds `dir`, nearest
 * first, is asked. 0 or GB_FORWARD. */
int gb_rd_tracked_by(const char *dir, char **by);

#endif
