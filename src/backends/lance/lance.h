/* The `lance` backend's internal interface, shared by its files.
 *
 * tether reads Lance's format itself: manifests (protobuf, decoded by
 * protobuf-c from lance.proto), the `_versions/` naming schemes, and the
 * JSON refs under `_refs/`. It writes only what Lance's own ref API
 * writes: tags (`_refs/tags/<name>.json`) and branches (a shallow-clone
 * manifest under `tree/<name>/` plus `_refs/branches/<name>.json`), each
 * with a put-if-absent, as Lance's commit protocol does. Every byte goes
 * through the store layer (tether/store.h), so s3:// works as local paths
 * do.
 *
 * Everything here is hidden; the module exports only tether_backend_module. */
#ifndef TETHER_BACKENDS_LANCE_LANCE_H
#define TETHER_BACKENDS_LANCE_LANCE_H

#include <tether/backend.h>
#include <tether/store.h>

#include "lance.pb-c.h"

#include "util/fsutil.h"

#include <stddef.h>
#include <stdint.h>

/* Feature flags (Manifest.reader_feature_flags / writer_feature_flags). */
#define LC_FLAG_DELETION_FILES 1u
#define LC_FLAG_STABLE_ROW_IDS 2u
#define LC_FLAG_USE_V2_FORMAT 4u
#define LC_FLAG_TABLE_CONFIG 8u
#define LC_FLAG_BASE_PATHS 16u
#define LC_FLAG_DISABLE_TRANSACTION_FILE 32u
#define LC_FLAG_DATA_OVERLAY_FILES 64u
#define LC_FLAG_COVERED_INDEX_METADATA 128u
#define LC_FLAG_MIXED_DATA_FILE_VERSIONS 256u
#define LC_FLAG_FRAG_REUSE_STABLE_ROW_IDS 512u
#define LC_KNOWN_FLAGS 1023u

#define LC_MAX_MANIFEST ((size_t)1 << 30)

enum lc_scheme { LC_SCHEME_NONE = 0, LC_SCHEME_V1 = 1, LC_SCHEME_V2 = 2 };

/* A locator, read and checked. */
struct lc_loc {
	const char *uri;
	const char *branch;         /* default "main" */
	const char *at;             /* a version number on `branch`, or a tag; NULL */
	const char *working_branch; /* the fork's branch, from the working ref; NULL */
	const json_t *storage_options;
};

struct lc_dataset {
	tether_store *store;
	const char *uri; /* canonical, owned by the store */
};

/* One manifest file, decoded. */
struct lc_manifest {
	TetherLance__Manifest *m;
	uint8_t *bytes; /* the whole file */
	size_t len;
	uint64_t version;
	enum lc_scheme scheme;
	char *key;      /* its store key */
};

/* A branch's JSON under _refs/branches/. */
struct lc_branch {
	char *parent;            /* NULL: main */
	uint64_t parent_version;
	json_t *mapping;         /* identifier.version_mapping, [[v, "uuid"], ...] */
	const char *id;          /* the last mapping's uuid (into mapping), or NULL */
	json_t *doc;             /* the whole document */
};

/* A position resolved: (branch, version), and the branch's id. */
struct lc_pos {
	char *branch;   /* "main" or a branch name */
	uint64_t version;
	char *branch_id; /* NULL on main */
};

/* backend.c */
int lc_read_locator(const json_t *locator, struct lc_loc *out);
int lc_open(const struct tether_bctx *ctx, const json_t *locator, struct lc_loc *loc, struct lc_dataset *ds);
void lc_close(struct lc_dataset *ds);
int lc_fail_oom(void);

/* manifest.c: the bytes of one manifest file. */
int lc_manifest_parse(const uint8_t *bytes, size_t len, const char *name, struct lc_manifest *out);
void lc_manifest_free(struct lc_manifest *m);
/* Flags tether does not know, refused naming the flag and the file. */
int lc_check_flags(const TetherLance__Manifest *m, const char *name);

/* versions.c: naming schemes and the version listing. */
/* "tree/<branch>/" or "" for main. */
char *lc_base(const char *branch);
char *lc_version_key(const char *branch, uint64_t version, enum lc_scheme scheme);
/* The version a file name in _versions/ names, 0 (and scheme NONE) if none. */
uint64_t lc_parse_version_name(const char *name, enum lc_scheme *scheme);
/* The newest version on the branch; ENOTFOUND when the branch has none. */
int lc_latest(struct lc_dataset *ds, const char *branch, uint64_t *version, enum lc_scheme *scheme);
/* Every version on the branch, ascending (a malloc'd array). */
int lc_versions(struct lc_dataset *ds, const char *branch, uint64_t **out, size_t *n, enum lc_scheme *scheme);
/* Which key holds version v of the branch: *exists 0 when none. */
int lc_find_version(struct lc_dataset *ds, const char *branch, uint64_t version, char **key, uint64_t *size,
                    enum lc_scheme *scheme, int *exists);
/* The manifest of (branch, version), decoded, flags and branch checked. */
int lc_read_version(struct lc_dataset *ds, const char *branch, uint64_t version, struct lc_manifest *out);

/* refs.c: tags and branches. */
char *lc_branch_ref_key(const char *branch);
int lc_check_branch_name(const char *name);
int lc_branch_read(struct lc_dataset *ds, const char *name, struct lc_branch *out, int *exists);
void lc_branch_free(struct lc_branch *b);
/* {name: doc} of every branch. */
int lc_branch_list(struct lc_dataset *ds, json_t **out);
/* The tag's (branch, version): *exists 0 when there is none. */
int lc_tag_read(struct lc_dataset *ds, const char *name, char **branch, uint64_t *version, int *exists);
/* {name: {"branch", "version"}} of every tag. */
int lc_tag_list(struct lc_dataset *ds, json_t **out);
/* put-if-absent, as Lance writes it; TETHER_EREFUSED when it exists. */
int lc_tag_create(struct lc_dataset *ds, const char *name, const char *branch, uint64_t version,
                  uint64_t manifest_size);
int lc_tag_delete(struct lc_dataset *ds, const char *name);
char *lc_uuid4(int hyphens);

/* clone.c: a branch as Lance's create_branch makes one. */
int lc_branch_create(struct lc_dataset *ds, const char *name, const char *from_branch, uint64_t version);
/* Lance's rules: refused while a tag or another branch references it. */
int lc_branch_delete(struct lc_dataset *ds, const char *name);
/* Names of the tags on the branch, as a JSON array. */
int lc_tags_on_branch(struct lc_dataset *ds, const char *name, json_t **out);

/* state.c: positions and states. */
void lc_pos_free(struct lc_pos *p);
/* The locator's position (working branch, at, branch), with an untouched
 * fork reported at its parent's address. */
int lc_position(struct lc_dataset *ds, const struct lc_loc *loc, struct lc_pos *out);
/* A branch's head (latest), the same rule. */
int lc_branch_head(struct lc_dataset *ds, const char *branch, struct lc_pos *out);
json_t *lc_state_of(const struct lc_pos *p);
int lc_state_read(const json_t *state, struct lc_pos *out);
/* Does (branch, version, branch_id) still name what it named? *detail. */
int lc_state_check(struct lc_dataset *ds, const struct lc_pos *p, int *ok, char **detail);

/* backend entry points, in pins.c, forks.c, diff.c, history.c */
int lc_pin(const struct tether_bctx *, const json_t *, const json_t *, const char *, json_t **, int *);
int lc_unpin(const struct tether_bctx *, const json_t *, const json_t *);
int lc_list_pins(const struct tether_bctx *, const json_t *, json_t **);
int lc_verify(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, int *, char **);
int lc_verify_deep(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, int *, char **);
int lc_fork(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, const char *,
            const json_t *, json_t **);
int lc_delete_working_ref(const struct tether_bctx *, const json_t *, const json_t *);
int lc_delete_working_ref_if(const struct tether_bctx *, const json_t *, const json_t *, const json_t *);
int lc_list_working_refs(const struct tether_bctx *, const json_t *, json_t **);
int lc_diff(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, const char *, size_t,
            const char *, size_t, size_t, json_t **);
int lc_history(const struct tether_bctx *, const json_t *, int, json_t **);

#endif
