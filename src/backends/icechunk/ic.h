/* The `icechunk` backend's internal interface, shared by its files.
 *
 * tether speaks Icechunk's format itself: the `repo` file of spec 2
 * (Icechunk 2.x), the refs/ layout of spec 1 (Icechunk 1.x), snapshot and
 * transaction-log files for ancestry and diff. Every byte goes through the
 * byte-store layer (src/store/), so an object store plugs in beneath this
 * code without changing it.
 *
 * The model of a `repo` file keeps every field it read (slices into the
 * decompressed payload, which it owns), so a rewrite carries over
 * everything; what tether does not know (a vtable slot past the last one it
 * knows, an update type it has no name for, a spec version above 2) makes
 * the model unwritable, with the reason kept for the refusal.
 *
 * Everything here is hidden; the module exports only tether_backend_module. */
#ifndef TETHER_BACKENDS_ICECHUNK_IC_H
#define TETHER_BACKENDS_ICECHUNK_IC_H

#include <tether/backend.h>

#include <tether/store.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <stddef.h>
#include <stdint.h>

#define IC_ID_BYTES 12
#define IC_NODE_ID_BYTES 8
#define IC_ID_CHARS 20
#define IC_INITIAL_SNAPSHOT "1CECHNKREP0F1RSTCMT0"
#define IC_IMPL_NAME "tether-" TETHER_VERSION
#define IC_ZSTD_LEVEL 3
/* Payload caps: a repo file of ten million snapshots is about 1 GiB. */
#define IC_MAX_REPO_PAYLOAD ((size_t)2 << 30)
#define IC_MAX_FILE_PAYLOAD ((size_t)1 << 30)
#define IC_UPDATES_PER_FILE 1000
#define IC_MAX_GENERATIONS 1000
#define IC_OWNER_KEY "tether.owner"

/* Feature flags (Repo.enabled_feature_flags / disabled_feature_flags). */
#define IC_FLAG_MOVE_NODE 3
#define IC_FLAG_CREATE_TAG 4
#define IC_FLAG_DELETE_TAG 5

/* Update types (the UpdateType union's discriminants). */
enum ic_update_type {
	IC_UP_REPO_INITIALIZED = 1,
	IC_UP_REPO_MIGRATED = 2,
	IC_UP_CONFIG_CHANGED = 3,
	IC_UP_METADATA_CHANGED = 4,
	IC_UP_TAG_CREATED = 5,
	IC_UP_TAG_DELETED = 6,
	IC_UP_BRANCH_CREATED = 7,
	IC_UP_BRANCH_DELETED = 8,
	IC_UP_BRANCH_RESET = 9,
	IC_UP_NEW_COMMIT = 10,
	IC_UP_COMMIT_AMENDED = 11,
	IC_UP_NEW_DETACHED_SNAPSHOT = 12,
	IC_UP_GC_RAN = 13,
	IC_UP_EXPIRATION_RAN = 14,
	IC_UP_FEATURE_FLAG_CHANGED = 15,
	IC_UP_REPO_STATUS_CHANGED = 16,
	IC_UP_LAST = 16,
};

enum ic_availability { IC_ONLINE = 0, IC_READ_ONLY = 1, IC_OFFLINE = 2 };

struct ic_id {
	uint8_t b[IC_ID_BYTES];
};

/* A string or byte run: into the payload, or into memory the model owns. */
struct ic_str {
	const char *p;
	uint32_t n;
};

struct ic_bytes {
	const uint8_t *p;
	uint32_t n;
};

struct ic_meta {
	struct ic_str name;
	struct ic_bytes value; /* FlexBuffers (spec 2), kept verbatim */
};

struct ic_metas {
	struct ic_meta *v;
	uint32_t n;
	int present;
};

struct ic_snap {
	struct ic_id id;
	int32_t parent;       /* index into snaps, -1 for the root */
	uint64_t flushed_at;  /* microseconds since the epoch */
	struct ic_str message;
	struct ic_metas meta;
	struct ic_id *pruned; /* pruned_ancestor_tx_logs, oldest first */
	uint32_t npruned;
	int pruned_present;
};

struct ic_ref {
	struct ic_str name;
	uint32_t snap;        /* index into snaps */
};

struct ic_status {
	uint8_t availability;
	uint64_t set_at;
	struct ic_str reason;
	int has_reason;
};

struct ic_update {
	uint8_t type;          /* enum ic_update_type */
	uint64_t at;           /* updated_at, microseconds */
	struct ic_str backup;  /* backup_path: a file name under overwritten/ */
	int has_backup;
	/* The union member's fields; which are meaningful depends on type. */
	struct ic_str name;    /* tag or branch name */
	struct ic_id prev;     /* previous_snap_id */
	struct ic_id next;     /* new_snap_id */
	uint8_t from_version, to_version;
	uint16_t flag_id;
	uint8_t flag_value, flag_set;
	struct ic_status status;
	int has_status;
};

struct ic_u16s {
	uint16_t *v;
	uint32_t n;
	int present;
};

struct ic_repo {
	uint8_t *payload;      /* the decompressed flatbuffer, owned */
	size_t payload_len;
	struct ic_chunk *mem;  /* what the model allocated beyond the payload */
	uint8_t spec_version;
	struct ic_ref *tags;
	uint32_t ntags;
	struct ic_ref *branches;
	uint32_t nbranches;
	struct ic_str *deleted_tags;
	uint32_t ndeleted;
	struct ic_snap *snaps;
	uint32_t nsnaps;
	struct ic_status status;
	struct ic_metas meta;
	struct ic_update *updates; /* newest first */
	uint32_t nupdates;
	struct ic_str before;      /* repo_before_updates */
	int has_before;
	struct ic_bytes config;    /* FlexBuffers RepositoryConfig, verbatim */
	int has_config;
	struct ic_u16s enabled_flags;
	struct ic_u16s disabled_flags;
	struct ic_bytes extra;
	int has_extra;
	char unwritable[256];      /* why tether must not rewrite it; "" when it may */
};

/* ------------------------------------------------------------------ */
/* repo.c: the `repo` file <-> the model                               */
/* ------------------------------------------------------------------ */

/* Parse a decompressed Repo flatbuffer; the model takes ownership of
 * payload (also on failure). `what` names the file in messages. */
int ic_repo_parse(uint8_t *payload, size_t len, const char *what, struct ic_repo *out);
void ic_repo_free(struct ic_repo *r);
/* The flatbuffer of the model, finished with identifier "Ichk". */
int ic_repo_serialize(const struct ic_repo *r, uint8_t **out, size_t *len);
/* Memory owned by the model, freed with it. */
void *ic_repo_alloc(struct ic_repo *r, size_t n);
struct ic_str ic_repo_strdup(struct ic_repo *r, const char *s);

/* ------------------------------------------------------------------ */
/* repo_ops.c: lookups and mutations of the model                      */
/* ------------------------------------------------------------------ */

int ic_str_eq(struct ic_str a, const char *s);
int ic_str_cmp(struct ic_str a, struct ic_str b);
/* Index of the branch / tag / snapshot, or -1. */
long ic_repo_branch(const struct ic_repo *r, const char *name);
long ic_repo_tag(const struct ic_repo *r, const char *name);
long ic_repo_snapshot(const struct ic_repo *r, const struct ic_id *id);
int ic_repo_tag_deleted(const struct ic_repo *r, const char *name);
/* Is feature flag `id` on (every flag defaults to on)? */
int ic_repo_flag_enabled(const struct ic_repo *r, uint16_t id);
/* The ops log length the repository's config asks for (default 1000). */
unsigned ic_repo_updates_per_file(const struct ic_repo *r);

/* Mutations: each checks what Icechunk checks first, refusing with
 * TETHER_EREFUSED (exists, previously deleted, flag off) or
 * TETHER_ENOTFOUND (no such ref or snapshot), and appends nothing to the
 * ops log: ic_repo_log does that. */
int ic_repo_add_tag(struct ic_repo *r, const char *name, uint32_t snap);
int ic_repo_delete_tag(struct ic_repo *r, const char *name, struct ic_id *previous);
int ic_repo_add_branch(struct ic_repo *r, const char *name, uint32_t snap);
int ic_repo_set_branch(struct ic_repo *r, const char *name, uint32_t snap, struct ic_id *previous);
int ic_repo_delete_branch(struct ic_repo *r, const char *name, struct ic_id *previous);
/* Replace the repository metadata with `items` (sorted here). */
int ic_repo_set_metadata(struct ic_repo *r, struct ic_meta *items, uint32_t n);
/* Put `u` at the head of the ops log as Icechunk does: the old head takes
 * the backup's name, the log keeps `keep` entries and the first backup
 * beyond them becomes repo_before_updates. u->at must be after the old
 * head's time (TETHER_EREFUSED otherwise). */
int ic_repo_log(struct ic_repo *r, const struct ic_update *u, const char *backup, unsigned keep);

/* ------------------------------------------------------------------ */
/* update.c: reading `repo`, and the read-backup-write protocol        */
/* ------------------------------------------------------------------ */

/* Read and parse `repo`. version may be NULL. */
int ic_repo_read(tether_store *s, struct ic_repo *out, struct tether_store_version *version);

/* A mutation of the model. It returns 0 having filled *u (the ops-log
 * entry) when the repository changed, sets *unchanged = 1 when nothing
 * needs writing, or returns an error (which ends the loop). It is called
 * again on a fresh read after a lost race, so it must derive everything
 * from the model it is given. */
typedef int (*ic_mutation_fn)(struct ic_repo *r, void *ud, struct ic_update *u, int *unchanged);

/* Read, check writable (known fields only, spec <= 2, online), mutate,
 * log, back the old file up under overwritten/ (conditional on the version
 * read) and write the new one (conditional again); on a lost race start
 * over, up to 100 times. `what` names the operation in messages. */
int ic_repo_update(tether_store *s, const char *what, ic_mutation_fn fn, void *ud);

/* Create `repo` (only if absent) from a finished model: the initial file. */
int ic_repo_create_file(tether_store *s, const struct ic_repo *r);

/* Microseconds since the epoch, now. */
uint64_t ic_now_us(void);
/* "repo.<14-digit index>.<random id>" for a backup made now. */
int ic_backup_name(char out[64]);
/* 12 random bytes. */
int ic_random_id(struct ic_id *id);

/* ------------------------------------------------------------------ */
/* ids.c                                                               */
/* ------------------------------------------------------------------ */

void ic_id_text(const struct ic_id *id, char out[IC_ID_CHARS + 1]);
/* 0, or -1 when s is not a 20-character snapshot id. */
int ic_id_parse(const char *s, struct ic_id *out);

/* ------------------------------------------------------------------ */
/* repository.c: one repository, either spec, behind one interface     */
/* ------------------------------------------------------------------ */

struct ic_session;
struct ic_view;
struct ic_repository {
	tether_store *store;
	const char *uri;   /* the store's root */
	int spec;          /* 1 or 2 */
	struct ic_session *session; /* the command's session (view.c), or NULL */
	struct ic_view *view;       /* the view this handle last asked for, or NULL */
};

/* Open the repository at uri (which must hold one). TETHER_ENOTFOUND with
 * a message when there is none. */
int ic_repository_open(const char *uri, const json_t *secrets, struct ic_repository *out);
/* The options of the store at uri for ctx's object (tether_bctx_store_options). */
int ic_store_options(const struct tether_bctx *ctx, const char *uri, json_t **out);
/* ic_repository_open with those options. */
int ic_repository_open_at(const struct tether_bctx *ctx, const char *uri, struct ic_repository *out);
void ic_repository_close(struct ic_repository *repo);

/* A name -> snapshot id table of every branch or tag (json object of
 * strings), read in one go. */
int ic_list_refs(struct ic_repository *repo, int tags, json_t **out);
/* Resolve a branch name, tag name or snapshot id, in that order. */
int ic_resolve(struct ic_repository *repo, const char *ref, struct ic_id *out);
int ic_branch_head(struct ic_repository *repo, const char *branch, struct ic_id *out, int *found);
int ic_tag_target(struct ic_repository *repo, const char *tag, struct ic_id *out, int *found);
int ic_snapshot_exists(struct ic_repository *repo, const struct ic_id *id, int *exists);

/* Tags as pins. A pin lives under generations of one name: tether.<id>,
 * then tether.<id>.2, .3, ... where Icechunk's tombstones burnt the earlier
 * names. *tag receives the name that holds it (malloc'd); *created says
 * whether this call made it. */
int ic_pin_tag(struct ic_repository *repo, const char *pin_id, const struct ic_id *snap, char **tag,
               int *created);
/* The live generation of a pin: the recorded tag, else the newest of the
 * same pin id. *tag NULL when none is live. */
int ic_live_tag(struct ic_repository *repo, const char *recorded_tag, const char *pin_id, char **tag,
                struct ic_id *snap);
/* Delete every live generation of pin_id. */
int ic_unpin_all(struct ic_repository *repo, const char *pin_id);
/* The pin id a tether tag holds ("tether.<pin>[.N]"), malloc'd, or NULL. */
char *ic_pin_of_tag(const char *tag);

/* Branches as working refs. `expect` NULL: no condition; `expect_absent`:
 * the branch must not exist; else it must be at *expect. */
int ic_fork_branch(struct ic_repository *repo, const char *branch, const struct ic_id *to,
                   int expect_absent, const struct ic_id *expect);
/* Delete a branch; with `expect` non-NULL only while it is at *expect
 * (TETHER_EREFUSED naming both otherwise). A branch already gone is 0. */
int ic_delete_branch(struct ic_repository *repo, const char *branch, const struct ic_id *expect);

/* Ancestry from snapshot `start`, newest first, at most max (0 = all):
 * a JSON array of {"id", "parent", "flushed_at" (µs), "message"}. */
int ic_ancestry(struct ic_repository *repo, const struct ic_id *start, size_t max, json_t **out);

/* view.c: the `repo` file read-only, parsed once per version and kept
 * in the command's session; *out stays valid until this handle's next
 * view or its close. The session is open_store / close_store's. */
int ic_repo_view(struct ic_repository *repo, const struct ic_repo **out);
void ic_repo_view_release(struct ic_repository *repo);
int ic_open_store(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session);
void ic_close_store(const struct tether_bctx *ctx, void *session);

/* ------------------------------------------------------------------ */
/* v1.c: spec 1 (Icechunk 1.x) refs/ layout                            */
/* ------------------------------------------------------------------ */

int ic_v1_list_refs(struct ic_repository *repo, int tags, json_t **out);
int ic_v1_ref(struct ic_repository *repo, int tag, const char *name, struct ic_id *out, int *found,
              struct tether_store_version *version);
/* Is the tag name burnt (a ref.json or its deletion marker exists)? */
int ic_v1_tag_burnt(struct ic_repository *repo, const char *name, int *burnt, int *live);
int ic_v1_create_tag(struct ic_repository *repo, const char *name, const struct ic_id *snap);
int ic_v1_delete_tag(struct ic_repository *repo, const char *name);
int ic_v1_set_branch(struct ic_repository *repo, const char *name, const struct ic_id *to,
                     int expect_absent, const struct ic_id *expect);
int ic_v1_delete_branch(struct ic_repository *repo, const char *name, const struct ic_id *expect);

/* ------------------------------------------------------------------ */
/* files.c: snapshot and transaction-log files                          */
/* ------------------------------------------------------------------ */

struct ic_node {
	uint8_t id[IC_NODE_ID_BYTES];
	struct ic_str path;
	uint8_t is_array;
};

struct ic_snapshot_file {
	uint8_t *payload;
	struct ic_id id;
	int has_parent;
	struct ic_id parent;
	uint64_t flushed_at;
	struct ic_str message;
	struct ic_node *nodes;
	uint32_t nnodes;
};

int ic_snapshot_read(tether_store *s, const struct ic_id *id, struct ic_snapshot_file *out);
/* The same from a decompressed payload (owned by *out, also on failure);
 * want, when given, is the id the file must hold. */
int ic_snapshot_parse(uint8_t *payload, size_t len, const struct ic_id *want, const char *what,
                      struct ic_snapshot_file *out);
void ic_snapshot_free(struct ic_snapshot_file *f);

/* A transaction log, decoded into what diff needs. */
struct ic_chunk_change {
	uint8_t node[IC_NODE_ID_BYTES];
	uint32_t ncoords;
	const uint8_t *coords; /* ncoords little-endian u32s, in the payload */
};

struct ic_move {
	struct ic_str from, to;
};

struct ic_txlog {
	uint8_t *payload;
	/* new_groups, new_arrays, deleted_groups, deleted_arrays,
	 * updated_arrays, updated_groups: node ids (8 bytes each) */
	const uint8_t *ids[6];
	uint32_t nids[6];
	struct ic_chunk_change *chunks;
	uint32_t nchunks;
	struct ic_move *moves;
	uint32_t nmoves;
};

enum {
	IC_TX_NEW_GROUPS,
	IC_TX_NEW_ARRAYS,
	IC_TX_DELETED_GROUPS,
	IC_TX_DELETED_ARRAYS,
	IC_TX_UPDATED_ARRAYS,
	IC_TX_UPDATED_GROUPS,
};

/* TETHER_ENOTFOUND when the log does not exist. */
int ic_txlog_read(tether_store *s, const struct ic_id *id, struct ic_txlog *out);
int ic_txlog_parse(uint8_t *payload, size_t len, const char *what, struct ic_txlog *out);
void ic_txlog_free(struct ic_txlog *t);

/* Write the initial snapshot and its transaction log (create_store). */
int ic_write_initial_files(tether_store *s, uint64_t now_us);

/* ------------------------------------------------------------------ */
/* diff.c                                                              */
/* ------------------------------------------------------------------ */

/* Repository.diff(from, to) where `from` is a strict ancestor of `to`:
 * {"new_groups", "new_arrays", "deleted_groups", "deleted_arrays",
 * "updated_groups", "updated_arrays" (sorted paths), "updated_chunks"
 * {path: number of chunks}, "moved_nodes" [[from, to], ...]}.
 * TETHER_EREFUSED when `from` is not a strict ancestor of `to`. */
int ic_native_diff(struct ic_repository *repo, const struct ic_id *from, const struct ic_id *to,
                   json_t **out);

/* ------------------------------------------------------------------ */
/* The functions of struct tether_backend, one file per job            */
/* ------------------------------------------------------------------ */

/* backend.c: locators. */
struct ic_loc {
	const char *uri;            /* absolute local path (or a URL, later) */
	const char *branch;         /* the base branch, "main" by default */
	const char *at;             /* initial position, or NULL */
	const char *working_branch; /* the overlay a working ref adds, or NULL */
};

int ic_read_locator(const json_t *locator, struct ic_loc *out);
int ic_open_locator(const struct tether_bctx *ctx, const json_t *locator, struct ic_loc *loc,
                    struct ic_repository *repo);
/* Where the object reads its state: the working branch, else `at`, else
 * the base branch. *is_branch says whether it names a branch. */
const char *ic_position(const struct ic_loc *loc, int *is_branch);

/* Shared helpers. */
/* The helpers' (tether-modutil) under the name the backend's files use. */
#define ic_fail_oom tt_fail_oom
/* Every key under prefix ("" = all), sorted, as a JSON array, read from
 * the store's paged listing. */
int ic_store_keys(tether_store *s, const char *prefix, json_t **keys);
int ic_state_snapshot(const json_t *state, const char *what, struct ic_id *out);
json_t *ic_state_of(const struct ic_id *id);

int ic_fingerprint(const struct tether_bctx *, const json_t *locator, const json_t *policy,
                   struct tether_fingerprint *out);
int ic_pin(const struct tether_bctx *, const json_t *locator, const json_t *state,
           const char *pin_id, json_t **pin_ref, int *created);
int ic_unpin(const struct tether_bctx *, const json_t *locator, const json_t *pin_ref);
int ic_list_pins(const struct tether_bctx *, const json_t *locator, json_t **pin_refs);
int ic_verify(const struct tether_bctx *, const json_t *locator, const json_t *state,
              const json_t *pin_ref, int *ok, char **detail);
/* verify, then the pinned snapshot file read and parsed (verify --deep). */
int ic_verify_deep(const struct tether_bctx *, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, int *ok, char **detail);
int ic_fork(const struct tether_bctx *, const json_t *locator, const json_t *state,
            const json_t *pin_ref, const char *branch, const json_t *expect, json_t **working_ref);
int ic_delete_working_ref(const struct tether_bctx *, const json_t *locator,
                          const json_t *working_ref);
int ic_delete_working_ref_if(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
                             const json_t *expect);
int ic_descends(const struct tether_bctx *, const json_t *locator, const json_t *ancestor,
                const json_t *descendant, int *answer);
int ic_list_working_refs(const struct tether_bctx *, const json_t *locator, json_t **refs);
int ic_open_handle(const struct tether_bctx *, const json_t *locator, const json_t *state,
                   const json_t *pin_ref, const json_t *working_ref, int read_only,
                   json_t **handle);
int ic_promote(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
               const json_t *expect, json_t **result);
int ic_move_base(const struct tether_bctx *, const json_t *locator, const json_t *state,
                 const json_t *expect, json_t **result);
int ic_diff(const struct tether_bctx *, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b,
            size_t max_entries, json_t **diff);
int ic_history(const struct tether_bctx *, const json_t *locator, int max_count,
               json_t **entries);
int ic_create_store(const struct tether_bctx *, const json_t *locator);
int ic_delete_store(const struct tether_bctx *, const json_t *locator);

#endif
