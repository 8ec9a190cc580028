/* The `iceberg` backend's internal interface: locators, the catalog
 * factory, the table-metadata reading helpers and the operations the
 * backend table (backend.c) points at.
 *
 * A table is named by its locator: identifier "ns.table" (the last dot
 * splits), the branch it follows (default main), the catalog's name; the
 * catalog's committed properties (type, warehouse, name) come from the
 * locator's "catalog" table or [backends.iceberg] catalog in tether.toml,
 * everything else (uri, token, credential, password) from the object's
 * table in .tether/secrets.toml only. */
#ifndef TETHER_ICEBERG_IB_H
#define TETHER_ICEBERG_IB_H

#include "backends/iceberg/catalog.h"
#include "backends/iceberg/catalog_rest.h"

#include <tether/backend.h>
#include <tether/store.h>

#include <stdint.h>

struct ib_loc {
	const char *identifier;     /* "ns.table" */
	const char *branch;         /* the base branch, default "main" */
	const char *catalog_name;   /* default "default" */
	const char *at;             /* add --at: snapshot id or ref name, or NULL */
	const char *working_branch; /* the fork overlay, or NULL */
	const json_t *catalog;      /* the locator's committed catalog table, or NULL */
	char ns[512], table[256];   /* identifier split at its last dot */
};

int ib_read_locator(const json_t *locator, struct ib_loc *out);

/* The catalog properties an object's table of .tether/secrets.toml may
 * hold (the backend's secret_keys). */
extern const char *const ib_secret_keys[];

/* The catalog of a locator: the committed properties (checked: only type,
 * warehouse, name) merged with the object's secrets, and the
 * implementation chosen by "type" (or, absent, by the URI's scheme). */
int ib_catalog_open(const struct tether_bctx *ctx, const struct ib_loc *loc, struct ib_catalog **out);
void ib_catalog_close(struct ib_catalog *c);

/* The SQL catalog (catalog_sql.c): props holds "uri" (sqlite:///PATH or
 * postgresql://...), optionally "password". The context is kept for the
 * store options of the files it writes. */
int ib_catalog_sql_open(const struct tether_bctx *ctx, const char *name, const json_t *props,
                        struct ib_catalog **out);
/* The REST catalog: ib_catalog_rest_open (catalog_rest.h). */
/* The committed catalog properties (the locator's, tether.toml's) hold
 * only type, warehouse and name: TETHER_EREFUSED naming the key. */
int ib_catalog_check_committed(const json_t *locator_catalog, const json_t *config);

/* A table's metadata, loaded once per call. */
struct ib_table {
	struct ib_catalog *cat;
	struct ib_session *session; /* the catalog is the session's, borrowed under its lock */
	struct ib_loc loc;
	json_t *md;     /* the table-metadata object */
	char *md_location;
	char what[900]; /* "catalog 'c' table ns.t", for messages */
};

int ib_table_open(const struct tether_bctx *ctx, const json_t *locator, struct ib_table *t);
/* Store sessions (session.c): one catalog connection per table for a
 * command, taken by one call at a time. */
struct ib_session;
int ib_open_store(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity, void **session);
void ib_close_store(const struct tether_bctx *ctx, void *session);
/* The session's catalog for this call (locked until ib_session_give), or
 * NULL when the call must open its own (the session's was opened with
 * other secrets). */
struct ib_catalog *ib_session_take(struct ib_session *s, const struct tether_bctx *ctx, const struct ib_loc *loc,
                                   int *rc);
void ib_session_give(struct ib_session *s);
void ib_table_close(struct ib_table *t);
/* Re-read the metadata after a commit refused or to see a peer's. */
int ib_table_reload(struct ib_table *t);
/* Commit through the catalog; the table's metadata is replaced by the
 * committed one. */
int ib_table_commit(struct ib_table *t, json_t *requirements, json_t *updates);

/* Files (files.c). */
int ib_split_location(const char *location, char **dir, const char **name);
/* The store of a directory, with its options from secrets.toml [uris]. */
int ib_open_dir(const struct tether_bctx *ctx, const char *dir, tether_store **store);
int ib_file_exists(const struct tether_bctx *ctx, const char *location, int *exists);

/* Metadata reading (metadata_read.c). */
/* format-version 1, 2 or 3; anything else TETHER_EREFUSED naming it. */
int ib_md_check_version(const json_t *md, const char *what, int *version);
/* The snapshot a ref points at: *found 0 when there is no such ref.
 * "main" also answers from current-snapshot-id (-1, null or missing: no
 * snapshot, *id = -1, found 1) when refs lacks it. */
int ib_md_ref(const json_t *md, const char *name, int64_t *id, int *found, int *is_tag);
const json_t *ib_md_snapshot(const json_t *md, int64_t id);
int64_t ib_md_parent(const json_t *snap);
int64_t ib_json_id(const json_t *v); /* integer, or -1 */
/* Is `ancestor` on the parent chain of `of` (or equal to it)? */
int ib_md_is_ancestor(const json_t *md, int64_t ancestor, int64_t of);
/* A summary counter ("added-records"), or -1 when absent. */
int64_t ib_md_summary_count(const json_t *snap, const char *key);
/* The position a locator reads: working branch, else at, else branch. */
const char *ib_position(const struct ib_loc *loc);
/* That position's snapshot in the loaded metadata: a branch must exist. */
int ib_position_id(struct ib_table *t, int64_t *id);
/* Resolve a position (ref name or decimal snapshot id) to a snapshot. */
int ib_md_resolve(const json_t *md, const char *what, const char *pos, int64_t *id);

/* Requirements and updates (metadata_apply.c). */
int ib_requirements_check(const json_t *md, const json_t *requirements, const char *what);
/* A new metadata object: `md` with the updates applied, last-updated-ms,
 * snapshot-log and metadata-log (the entry for `md_location`) as the spec
 * says. *changed 0: nothing to write (every update a no-op). */
int ib_updates_apply(const json_t *md, const char *md_location, const json_t *updates, int64_t now_ms,
                     const char *what, json_t **out, int *changed);

/* States. */
json_t *ib_state_of(int64_t id);
int ib_state_id(const json_t *state, const char *what, int64_t *id);

/* Requirements and updates as JSON. */
json_t *ib_req_uuid(const json_t *md);
json_t *ib_req_ref(const char *ref, int64_t id, int absent);
json_t *ib_upd_set_ref(const char *ref, int64_t id, const char *type);
json_t *ib_upd_remove_ref(const char *ref);

int ib_fail_oom(void);

/* Operations (refs.c, history.c, diff.c). */
int ib_pin(const struct tether_bctx *, const json_t *, const json_t *, const char *, json_t **, int *);
int ib_unpin(const struct tether_bctx *, const json_t *, const json_t *);
int ib_list_pins(const struct tether_bctx *, const json_t *, json_t **);
int ib_verify(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, int *, char **);
int ib_verify_deep(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, int *, char **);
int ib_fork(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, const char *,
            const json_t *, json_t **);
int ib_delete_working_ref(const struct tether_bctx *, const json_t *, const json_t *);
int ib_delete_working_ref_if(const struct tether_bctx *, const json_t *, const json_t *, const json_t *);
int ib_list_working_refs(const struct tether_bctx *, const json_t *, json_t **);
int ib_promote(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, json_t **);
int ib_move_base(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, json_t **);
int ib_descends(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, int *);
int ib_history(const struct tether_bctx *, const json_t *, int, json_t **);
int ib_diff(const struct tether_bctx *, const json_t *, const json_t *, const json_t *, const char *, size_t,
            const char *, size_t, size_t, json_t **);

#endif
