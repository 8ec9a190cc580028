/* The `delta` backend's internal interface, shared by its files.
 *
 * tether reads a Delta table's transaction log itself (no Rust, no Python
 * at run time): the `_delta_log/` listing, `_last_checkpoint`, the JSON
 * commits, and the checkpoints (Parquet through src/format/parquet.h, or
 * a V2 checkpoint's JSON) where log cleanup removed the early commits.
 * Every byte goes through the byte-store layer (tether/store.h), so a
 * table on s3:// is read as one on a local path is.
 *
 * Delta has no refs: a state is a version and the table's id, recorded,
 * never pinned; it stays readable while the log can rebuild it.
 *
 * Everything here is hidden; the module exports only tether_backend_module. */
#ifndef TETHER_BACKENDS_DELTA_DELTA_H
#define TETHER_BACKENDS_DELTA_DELTA_H

#include <tether/backend.h>
#include <tether/store.h>

#include <stddef.h>
#include <stdint.h>

#define DL_LOG "_delta_log/"
/* Bounds on what is read from a table tether does not trust. */
#define DL_MAX_COMMIT_BYTES ((size_t)256 << 20)
#define DL_MAX_CHECKPOINT_BYTES ((size_t)1 << 30)
#define DL_MAX_LAST_CHECKPOINT_BYTES ((size_t)1 << 20)
#define DL_LIST_PAGE 16384

/* The locator, read and checked. */
struct dl_loc {
	const char *uri;
	int64_t at; /* -1: the latest version */
};

enum dl_cp_kind {
	DL_CP_SINGLE,    /* N.checkpoint.parquet (V1, or V2 classic-named) */
	DL_CP_MULTIPART, /* N.checkpoint.O.P.parquet */
	DL_CP_UUID,      /* N.checkpoint.<uuid>.json|parquet (V2) */
};

/* One checkpoint the listing holds (a multi-part one once, with its parts
 * counted). */
struct dl_checkpoint {
	int64_t version;
	enum dl_cp_kind kind;
	char *key;       /* the file (the first part of a multi-part one) */
	int json;        /* a V2 checkpoint in JSON */
	uint32_t parts;  /* multi-part: P of O.P */
	uint32_t seen;   /* multi-part: how many distinct parts are listed */
	uint64_t seen_mask_lo; /* parts 1..64 seen (a listing names each once) */
	int checked;     /* dl_checkpoint_complete has looked at it */
	int whole;       /* ...and found every part and sidecar */
};

/* What the listing says of the log, and the newest protocol and metaData.
 * Versions are int64 (the format's 20 digits fit). */
struct dl_log {
	tether_store *store;
	const char *uri;           /* the store's canonical URI (for messages) */
	int64_t latest;            /* newest N.json; -1 when none */
	int64_t oldest_json;       /* oldest N.json of the contiguous run ending at latest */
	int full;                  /* the whole log was listed (not only after _last_checkpoint) */
	struct dl_checkpoint *cps; /* sorted by version */
	size_t ncps;
	unsigned char *have;       /* have[v - have_base]: N.json listed */
	int64_t have_base;
	size_t have_len;
	json_t *protocol;          /* newest protocol action (owned), after dl_log_load_state */
	json_t *metadata;          /* newest metaData action (owned) */
	const char *cache_dir;     /* the checkout's cache (ctx->cache_dir), or NULL */
};

/* The options the table's store opens with (committed storage_options of
 * tether.toml and the locator, region, then secrets.toml's). */
int dl_store_options(const struct tether_bctx *ctx, const json_t *locator, const char *uri, json_t **out);
int dl_read_locator(const json_t *locator, struct dl_loc *out);

/* List the log (all of it when full, else from _last_checkpoint's version
 * on), and check that the commits from the newest usable checkpoint (or
 * from version 0) to the latest have no gap. */
int dl_log_open(const struct tether_bctx *ctx, const json_t *locator, const char *uri, int full, struct dl_log *out);
void dl_log_close(struct dl_log *log);
/* Read the newest protocol and metaData (JSON commits back to the newest
 * complete checkpoint, then the checkpoint) and pass the protocol gate. */
int dl_log_load_state(struct dl_log *log);
int dl_log_has_json(const struct dl_log *log, int64_t v);
/* Can version v be rebuilt from what the log holds (a complete checkpoint
 * at or below it with every later commit to v, or every commit from 0)?
 * *oldest: the oldest version that can (-1: none). */
int dl_log_reconstructable(struct dl_log *log, int64_t v, int *ok, int64_t *oldest);
const char *dl_table_id(const struct dl_log *log);

/* The key of version v's commit ("_delta_log/<v:020>.json"). */
void dl_commit_key(int64_t v, char out[40]);
/* The actions of newline-delimited JSON (a commit, a V2 checkpoint), one
 * object per line; TETHER_EIO naming `what`, the line and column, when a
 * line is not a JSON object. */
int dl_parse_actions(const uint8_t *data, size_t len, const char *what, json_t **actions);
/* Read one commit's actions: the parsed lines, each an object of one key.
 * TETHER_ENOTFOUND when the file is gone; TETHER_EIO naming the file and
 * line when a line is not JSON. */
int dl_read_commit(tether_store *s, const char *uri, int64_t v, json_t **actions);

/* A checkpoint's protocol and metaData (either may stay NULL when it has
 * none): every part of a multi-part one is read until both are found. */
int dl_checkpoint_state(struct dl_log *log, const struct dl_checkpoint *cp, json_t **protocol, json_t **metadata);
/* Is the checkpoint whole: every part of a multi-part one, and a V2 one's
 * sidecars present? */
int dl_checkpoint_complete(struct dl_log *log, const struct dl_checkpoint *cp, int *complete);

/* A checkpoint's protocol and metaData from the checkout's cache: 1 on a
 * hit, else 0 with *path (malloc'd, or NULL: no cache) where dl_cache_put
 * keeps what the checkpoint gives. */
int dl_cache_get(struct dl_log *log, const struct dl_checkpoint *cp, json_t **protocol, json_t **metadata,
                 char **path);
void dl_cache_put(const char *path, const json_t *protocol, const json_t *metadata);
/* Apply one action to `live`, {path: true}: an add puts its path in, a
 * remove takes it out, anything else is left alone. */
int dl_apply_file_action(json_t *live, const json_t *action);
/* Add the files a checkpoint holds live (its add actions, its sidecars'
 * included; a remove takes one out) to `live`, {path: true}. */
int dl_checkpoint_files(struct dl_log *log, const struct dl_checkpoint *cp, json_t *live);
/* verify --deep: verify, then every data file of the version is there. */
int dl_verify_deep(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
                   int *ok, char **detail);
int dl_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state, const json_t *pin_ref,
              int *ok, char **detail);
/* The newest whole checkpoint at or below v (NULL: none). */
const struct dl_checkpoint *dl_base_checkpoint(struct dl_log *log, int64_t v, int *rc);

/* The protocol gate: refuse what tether cannot read the log of, naming the
 * feature. */
int dl_protocol_check(const json_t *protocol, const char *uri);

/* commitInfo -> the normalised metrics ({"rows_added", "rows_deleted",
 * "rows_updated", "files_added", "files_removed", "bytes_added",
 * "bytes_removed"}, those present) and a one-line summary
 * ("WRITE: +2 rows, +1 files"). Spark's string metrics and camelCase
 * names and delta-rs's numbers and snake_case ones alike. */
json_t *dl_commit_metrics(const json_t *commit_info);
char *dl_commit_summary(const char *operation, const json_t *metrics);
/* One history entry of version v from its actions (NULL actions: gone). */
json_t *dl_history_entry(int64_t v, const json_t *actions);

/* The state {"version", "table_id"} and its reading. */
json_t *dl_state(int64_t version, const char *table_id);
int dl_state_read(const json_t *state, const char *what, int64_t *version, const char **table_id);

int dl_fail_oom(void);

int dl_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
            const char *listing_a, size_t len_a, const char *listing_b, size_t len_b, size_t max_entries,
            json_t **diff);
int dl_history(const struct tether_bctx *ctx, const json_t *locator, int max_count, json_t **entries);

#endif
