/* tether backends: the interface every kind of data system implements.
 *
 * A backend is a const struct tether_backend: its kind, maturity,
 * capabilities, the state keys that are addresses rather than content, and
 * function pointers. The engine asks for capabilities and never names a
 * backend. Built-in backends sit in a table; others register with
 * tether_backend_register(), or are shared objects in the module path that
 * export `tether_module` (or, the older form, `tether_backend_module`; see
 * docs/BACKENDS.md).
 *
 * Every struct here that a module fills or tether hands to one begins with
 * `uint32_t version, size` (see TETHER_STRUCT_HAS in tether.h): start its
 * initializer with the struct's *_INIT macro, and add members only at the
 * end, bumping its version.
 *
 * Every function returns 0 or a negative TETHER_E* code after setting the
 * message with tether_error_set(). Output values (json_t **, char **) are
 * owned by the caller. Functions may run concurrently on worker threads for
 * different objects, so a backend keeps no unsynchronised global state. */
#ifndef TETHER_BACKEND_H
#define TETHER_BACKEND_H

#include <tether.h>

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of struct tether_backend. It continues the numbers of the
 * `int abi` member the struct began with before it carried a size: 2 added
 * pin's `created`, 3 diff_streams, 4 the version and size members
 * themselves (and the same members in every struct below) and the members
 * after diff_streams (add_options, drift_hint, config_keys, open_store,
 * close_store), which the engine reads only inside a module's size, as it
 * will every member appended from now on with a new version; 5 added
 * verify_deep and check_quiescence, 6 descends, delete_working_ref_if and
 * move_base. A module of version 4 or 5 loads as it is (the members it
 * lacks read as NULL), one of version 3 through an adapter; one newer than
 * this tether is refused. */
#define TETHER_BACKEND_VERSION 6
#define TETHER_BACKEND_INIT TETHER_STRUCT_INIT(struct tether_backend, TETHER_BACKEND_VERSION)

/* Tiers: each includes the ones above it. */
#define TETHER_CAP_FINGERPRINT (1u << 0)
#define TETHER_CAP_ADDRESSABLE (1u << 1)
#define TETHER_CAP_PIN (1u << 2)
#define TETHER_CAP_FORK (1u << 3)
/* Orthogonal flags. */
#define TETHER_CAP_CHEAP_FINGERPRINT (1u << 8)
#define TETHER_CAP_RETENTION_BOUND (1u << 9)
#define TETHER_CAP_NEEDS_QUIESCENCE (1u << 10)
#define TETHER_CAP_ATOMIC_REF (1u << 11)
#define TETHER_CAP_CONDITIONAL_REF (1u << 12)
#define TETHER_CAP_DIFF (1u << 13)
#define TETHER_CAP_HISTORY (1u << 14)
#define TETHER_CAP_PROMOTE (1u << 15)
#define TETHER_CAP_MERGE (1u << 16)
#define TETHER_CAP_CREATE (1u << 17)
#define TETHER_CAP_BRANCH_IS_STORAGE (1u << 18)
/* fingerprint waits on a round trip to a remote server (an object store's
 * HEAD), not on the CPU: the engine runs many such at once. */
#define TETHER_CAP_REMOTE_FINGERPRINT (1u << 19)

#define TETHER_TIER_MASK 0xffu

/* Name of the highest tier in caps: "observed", "addressable", "pinnable",
 * "forkable", or "none". */
TETHER_API const char *tether_tier_name(unsigned caps);
/* Names of the flags set in caps, in a fixed order, as a JSON array. */
TETHER_API json_t *tether_cap_names(unsigned caps);

/* What every backend call receives. tether fills it; a member beyond its
 * size (TETHER_STRUCT_HAS) is one this tether does not provide. */
#define TETHER_BCTX_VERSION 1
#define TETHER_BCTX_INIT TETHER_STRUCT_INIT(struct tether_bctx, TETHER_BCTX_VERSION)
struct tether_bctx {
	uint32_t version;          /* TETHER_BCTX_INIT */
	uint32_t size;
	const char *dataset_root;  /* absolute */
	const char *dataset_id;    /* 32 hex */
	const char *cache_dir;     /* .tether/cache, absolute; backends may keep files here */
	const json_t *config;      /* [backends.<kind>] of tether.toml, or NULL */
	const json_t *defaults;    /* [defaults] of tether.toml, or NULL */
	const json_t *secrets;     /* this object's secrets, or NULL */
	const char *key;           /* the object's key, or NULL outside an object */
	int threads;               /* worker threads a backend may use itself */
	int progress;              /* a backend may report progress (tether_bctx_progress) */
	volatile int *cancel;      /* non-zero: stop early with TETHER_ECANCELLED
	                            * (tether_bctx_cancelled); never NULL from the engine */
	int state_only;            /* fingerprint: the caller needs the state only; a backend may
	                            * leave the listing out (NULL) and save building it */
	/* Appended (sessions, progress). */
	void *session;             /* what the backend's open_store made for the store this
	                            * call is about, or NULL: no session (a backend without
	                            * open_store, a call outside a command, or open_store
	                            * failed) -- every call must work without one */
	tether_progress_fn progress_fn; /* where tether_bctx_progress reports, or NULL */
	void *progress_ud;
	/* Appended (store options). */
	const json_t *uri_secrets; /* [uris] of .tether/secrets.toml, or NULL: the engine's,
	                            * read through tether_bctx_store_options, never directly */
	/* Appended (policy). */
	const json_t *policy;      /* the object's [policy] as its manifest records it, for
	                            * calls that take none (open), or NULL outside an object */
};

/* Has the command been asked to stop? Backends check between steps of
 * long work (files, refs, snapshots) and then return tether_bctx_cancel. */
static inline int tether_bctx_cancelled(const struct tether_bctx *ctx)
{
	return ctx && ctx->cancel && *ctx->cancel;
}
/* Set and return TETHER_ECANCELLED with a message naming what stopped. */
TETHER_API int tether_bctx_cancel(const struct tether_bctx *ctx, const char *what);
/* The options of the store at `uri` for this call's object, merged: the
 * `committed` ones first (a locator's storage_options, already checked
 * with tether_store_check_committed_options; may be NULL), then the
 * [uris."<prefix>"] table of .tether/secrets.toml whose prefix is the
 * longest at or above the canonical uri (a whole segment: "s3://b/pre"
 * is not above "s3://b/prefix2"), then the object's own
 * [objects."<key>"] (ctx->secrets). *out: a new object, or NULL when
 * nothing applies. TETHER_ECONFIG naming secrets.toml and the key when
 * the object's table holds what is no store option. A backend hands
 * the result to tether_store_open and knows nothing of prefixes. */
TETHER_API int tether_bctx_store_options(const struct tether_bctx *ctx, const char *uri, const json_t *committed,
                                         json_t **out);
/* Report progress (nothing when ctx->progress is 0 or no callback). */
static inline void tether_bctx_progress(const struct tether_bctx *ctx, const struct tether_progress *p)
{
	if (ctx && ctx->progress && ctx->progress_fn)
		ctx->progress_fn(ctx->progress_ud, p);
}

/* A fingerprint: the state, and for digest states the listing the engine
 * stores content-addressed under .tether/listings/ (NULL when none). */
#define TETHER_FINGERPRINT_VERSION 1
#define TETHER_FINGERPRINT_INIT TETHER_STRUCT_INIT(struct tether_fingerprint, TETHER_FINGERPRINT_VERSION)
struct tether_fingerprint {
	uint32_t version;   /* TETHER_FINGERPRINT_INIT, set by whoever calls fingerprint */
	uint32_t size;
	json_t *state;
	char *listing;      /* malloc'd JSONL text, or NULL */
	size_t listing_len;
};

/* One recorded state for verify_many: what verify takes, and its answer. */
#define TETHER_VERIFY_ITEM_VERSION 1
#define TETHER_VERIFY_ITEM_INIT TETHER_STRUCT_INIT(struct tether_verify_item, TETHER_VERIFY_ITEM_VERSION)
struct tether_verify_item {
	uint32_t version;      /* TETHER_VERIFY_ITEM_INIT, set by the caller */
	uint32_t size;
	const json_t *locator;
	const json_t *state;
	const json_t *pin_ref; /* may be NULL, as for verify */
	int ok;                /* out: 1 or 0 */
	char *detail;          /* out: malloc'd, or NULL; set when not ok */
};

/* A policy key a backend accepts beyond write and pin, and the values it
 * may take (what make_policy fills in). */
struct tether_policy_option {
	const char *key;
	const char *const *choices; /* NULL-terminated */
};

/* A `tether add` option a backend takes: `tether add KEY URI --kind K
 * --NAME VALUE`. The CLI builds its parser and `tether add --help` from
 * these, and the engine checks each value before the backend sees it.
 * `field` says where the value lands: TETHER_ADD_LOCATOR options are
 * handed to make_locator, TETHER_ADD_POLICY ones to make_policy (and a
 * manifest's [policy] may then hold the key, with one of `choices`).
 * With TETHER_ADD_DEFAULTS, tether.toml's [defaults] may set the option
 * for every object of the kind (`[defaults] NAME = "VALUE"`, checked
 * against `choices` as well); the engine hands the backend that value when
 * the command line gives none.
 *
 * Versioned as an array may be: an entry starts with version and size
 * (fill them with TETHER_ADD_OPTION_INIT), and the engine steps through
 * the array by the first entry's size, reading only the members that lie
 * inside it, so members appended later leave older modules working. The
 * array ends with an entry whose name is NULL. */
enum tether_add_field {
	TETHER_ADD_LOCATOR = 1,
	TETHER_ADD_POLICY = 2,
};
#define TETHER_ADD_DEFAULTS (1u << 0)
#define TETHER_ADD_OPTION_VERSION 1

struct tether_add_option {
	uint32_t version;           /* TETHER_ADD_OPTION_INIT */
	uint32_t size;
	const char *name;           /* --NAME, and the key in the options object */
	const char *value_name;     /* the value's name in help ("REF") */
	const char *help;           /* one line */
	const char *const *choices; /* the values allowed, NULL-terminated; NULL: free text */
	const char *default_value;  /* what an absent option means, for help; NULL: none */
	enum tether_add_field field;
	unsigned flags;             /* TETHER_ADD_DEFAULTS */
};

#define TETHER_ADD_OPTION_INIT TETHER_STRUCT_INIT(struct tether_add_option, TETHER_ADD_OPTION_VERSION)

/* A listing handed over in pieces (diff_streams): read(ud, buf, cap, &got)
 * puts up to cap bytes in buf (got 0 at the end) and returns 0, or
 * non-zero with the error set. Any read may fail, the last one included:
 * the content is checked against its name as it ends, so a reader acts
 * only on a source it read to its end. */
#define TETHER_LISTING_SOURCE_VERSION 1
#define TETHER_LISTING_SOURCE_INIT TETHER_STRUCT_INIT(struct tether_listing_source, TETHER_LISTING_SOURCE_VERSION)
struct tether_listing_source {
	uint32_t version; /* TETHER_LISTING_SOURCE_INIT */
	uint32_t size;
	int (*read)(void *ud, char *buf, size_t cap, size_t *got);
	void *ud;
};

struct tether_backend {
	uint32_t version;            /* TETHER_BACKEND_INIT: { TETHER_BACKEND_INIT, .kind = ... } */
	uint32_t size;
	const char *kind;
	const char *maturity;        /* "stable" | "experimental" */
	const char *summary;         /* one line for `tether backends` */
	unsigned caps;
	const char *const *volatile_keys; /* NULL-terminated; may be NULL */

	/* Build a locator from `tether add`'s URI and options, resolving
	 * relative paths against cwd. Refuse bad options with TETHER_EUSAGE. */
	int (*make_locator)(const struct tether_bctx *, const char *uri, const json_t *options,
	                    const char *cwd, json_t **locator);
	/* The policy keys this backend accepts beyond write/pin, with defaults
	 * filled in (e.g. {"file": "immutable"}). */
	int (*make_policy)(const struct tether_bctx *, const json_t *options, json_t **policy);
	/* Capabilities for one object, when they vary by locator and policy. */
	int (*effective_capabilities)(const struct tether_bctx *, const json_t *locator,
	                              const json_t *policy, unsigned *caps);
	/* The subset of the locator that names the system. */
	int (*identity)(const struct tether_bctx *, const json_t *locator, json_t **identity);
	/* Read the current state. */
	int (*fingerprint)(const struct tether_bctx *, const json_t *locator, const json_t *policy,
	                   struct tether_fingerprint *out);
	/* Would committing `current` over `recorded` be drift the policy
	 * forbids? Sets *refused and returns a reason. Optional. */
	int (*check_drift)(const struct tether_bctx *, const json_t *locator, const json_t *policy,
	                   const json_t *recorded, const json_t *current, int *refused, char **why);

	/* PIN tier. A pin_ref (from pin and list_pins) is the backend's own
	 * description of the native reference, and always carries "pin": the
	 * pin id it holds, which is how gc tells whose pin it is. */
	/* *created = 1 when this call made the native reference, 0 when it
	 * was there already (pinning is idempotent): a command that fails
	 * later releases only the pins it created, never one an earlier
	 * commit made and history names. A backend that cannot tell says 0
	 * (a pin left behind is an orphan gc releases; one deleted is a
	 * recorded state lost). */
	int (*pin)(const struct tether_bctx *, const json_t *locator, const json_t *state,
	           const char *pin_id, json_t **pin_ref, int *created);
	int (*unpin)(const struct tether_bctx *, const json_t *locator, const json_t *pin_ref);
	int (*list_pins)(const struct tether_bctx *, const json_t *locator, json_t **pin_refs);
	/* Is the recorded state still held (by its pin when there is one)?
	 * *ok = 1 or 0, *detail explains a failure. */
	int (*verify)(const struct tether_bctx *, const json_t *locator, const json_t *state,
	              const json_t *pin_ref, int *ok, char **detail);

	/* FORK tier. fork creates or moves `branch` to the pinned state.
	 * `expect` makes the move conditional: a NULL pointer means no
	 * condition, JSON null means the branch must not exist yet, and a
	 * state means the head the caller last saw there; a mismatch is
	 * TETHER_EREFUSED. The working_ref it returns is an overlay: merged
	 * into the locator, it names the working branch, and every function
	 * given that locator (fingerprint, pin, history, open) works there.
	 * Pinning twice is idempotent; the same pin id at another state is
	 * TETHER_EREFUSED; verify with a NULL pin_ref checks the state alone,
	 * and a failed verify sets *detail. */
	int (*fork)(const struct tether_bctx *, const json_t *locator, const json_t *state,
	            const json_t *pin_ref, const char *branch, const json_t *expect,
	            json_t **working_ref);
	int (*delete_working_ref)(const struct tether_bctx *, const json_t *locator,
	                          const json_t *working_ref);
	/* A handle descriptor: at least {"kind", "uri", "read_only"}, plus what
	 * the native library needs (ref, snapshot_id, sha, ...). */
	int (*open)(const struct tether_bctx *, const json_t *locator, const json_t *state,
	            const json_t *pin_ref, const json_t *working_ref, int read_only,
	            json_t **handle);

	/* DIFF flag: what changed between two recorded states. listing_a/b are
	 * the stored listings (NULL when missing). Result:
	 * {"unit", "summary", "entries": [...], "totals": {...}, "truncated"}. */
	int (*diff)(const struct tether_bctx *, const json_t *locator, const json_t *a,
	            const json_t *b, const char *listing_a, size_t len_a, const char *listing_b,
	            size_t len_b, size_t max_entries, json_t **diff);
	/* HISTORY flag: native history from the locator's ref (or its "at"),
	 * newest first: [{"id", "time" (seconds since the epoch), "message",
	 * "refs": [...]}], and optionally "short_id", the abbreviation `tether
	 * log KEY` shows (default: the first 12 characters of "id"), which the
	 * system must accept back (`add --at`). */
	int (*history)(const struct tether_bctx *, const json_t *locator, int max_count,
	               json_t **entries);
	/* PROMOTE flag: fast-forward the locator's base branch to the working
	 * ref's head. `expect` is the base head the caller saw ({...} as in a
	 * state), or NULL; a base that moved, or a non-fast-forward, is
	 * TETHER_EREFUSED. *result describes what moved. */
	int (*promote)(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
	               const json_t *expect, json_t **result);
	/* MERGE flag: three-way merge of the working ref into the base branch.
	 * Conflicts are TETHER_EREFUSED with the conflicting paths in the
	 * message, and nothing is half-merged. */
	int (*merge)(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
	             const char *message, json_t **result);
	/* CREATE flag. */
	int (*create_store)(const struct tether_bctx *, const json_t *locator);
	int (*delete_store)(const struct tether_bctx *, const json_t *locator);

	/* FORK tier, optional (NULL: gc --prune-workspaces skips the store).
	 * This dataset's working branches in the store: those named
	 * tether.ws.<dataset8>.* (dataset8 = the first 8 hex of
	 * ctx->dataset_id), as [{"branch": name, "ref": <the working_ref
	 * overlay fork would return>, "head": <the branch head's state, as
	 * fingerprint would give it there>}]. Appended last so the offsets of
	 * everything above stay as they were. */
	int (*list_working_refs)(const struct tether_bctx *, const json_t *locator, json_t **refs);

	/* Optional (NULL: the engine calls verify once per state). Verify the
	 * n recorded states of one store at once, as a history walk finds them
	 * (verify --all-history), so that the store is opened and its refs
	 * listed once rather than once per state. Every item's locator has the
	 * same identity, and ctx is the one verify would get for each. Each
	 * answer is what verify would give for that item alone; where verify
	 * would return an error, the item is not ok and its detail is the
	 * error's message. A negative return means the batch could not be
	 * checked as a whole (the store cannot be opened, say): the engine
	 * then asks verify for each item, so a backend need not handle those
	 * cases twice. Appended last, as above. */
	int (*verify_many)(const struct tether_bctx *, struct tether_verify_item *items, size_t n);

	/* The policy keys make_policy writes, with their values, terminated by
	 * {NULL, NULL}. The engine refuses a manifest whose [policy] holds any
	 * other key (beyond write and pin) or another value, naming the file,
	 * line and the values allowed. NULL with make_policy NULL: the backend
	 * has no policy keys; NULL with a make_policy: not declared, and the
	 * backend's keys go unchecked. Appended last, as above. */
	const struct tether_policy_option *policy_options;
	/* Optional. Is `state`, a recorded state read from a manifest (which a
	 * clone may have written), of the shape this backend records: the keys
	 * it writes, each of its type? When not, return TETHER_ECONFIG with a
	 * message saying what is wrong and set *key to the state's key at
	 * fault (a string that lives as long as `state`, or a static one;
	 * NULL: the state as a whole), so the engine can name its line and
	 * column. A malformed state is refused as a malformed manifest, never
	 * compared as if it were drift. Appended last, as above. */
	int (*check_state)(const json_t *state, const char **key);
	/* The keys this backend reads from its object's secrets
	 * ([objects."<key>"] of .tether/secrets.toml), NULL-terminated. The
	 * engine refuses any other key there, naming the file and line. NULL:
	 * not declared, unchecked. Appended last, as above. */
	const char *const *secret_keys;
	/* Optional (NULL: the engine hands diff the listings whole). diff with
	 * each listing handed over in pieces as it is read (NULL when missing),
	 * so that the listings of a million files are merged without being
	 * held: the same result diff gives. An error from a source is the
	 * call's error. Appended last (version 3). */
	int (*diff_streams)(const struct tether_bctx *, const json_t *locator, const json_t *a, const json_t *b,
	                    const struct tether_listing_source *listing_a,
	                    const struct tether_listing_source *listing_b, size_t max_entries, json_t **diff);

	/* The options `tether add` takes for this kind (see struct
	 * tether_add_option); NULL: none beyond the engine's. Options given
	 * through `--option NAME=VALUE` that are not declared reach the
	 * backend unchecked, as before. Appended last, as above. */
	const struct tether_add_option *add_options;
	/* A hint the engine prints under a commit this backend refused as
	 * drift (check_drift set *refused): what the user can do about it, in
	 * the backend's own terms ("re-add the object with --x y"). NULL: a
	 * generic one. Appended last, as above. */
	const char *drift_hint;
	/* The keys [backends.<kind>] of tether.toml may hold, NULL-terminated;
	 * the engine refuses any other, naming the file, line and column. NULL:
	 * not declared, unchecked. Appended last, as above. */
	const char *const *config_keys;
	/* Store sessions, optional (both or neither; NULL: no sessions).
	 * During one command (one tether_status, tether_commit, ... call) the
	 * engine opens at most one session per store -- per identity, as
	 * canonical JSON -- on the first call about that store, hands it to
	 * every later call about it in ctx->session, whichever key and thread
	 * the call is for, and closes it when the command ends, on error paths
	 * too. A session holds what is costly to open and safe to reuse within
	 * one command: an open repository handle, a parsed ref table.
	 *
	 * open_store gets the identity and the first locator seen with it
	 * (every locator of the store shares the identity, not the ref); it
	 * should be cheap and lazy (allocate, open on first need), and must not
	 * load a heavy library that the call it precedes would not load. Its
	 * failure is not the command's: the engine clears the error and makes
	 * that call, and those after it, without a session (ctx->session NULL).
	 *
	 * Threads: calls about one store run concurrently on the engine's
	 * worker threads, all with the same session, so a session must be safe
	 * for concurrent use. The engine does not serialise them (that would
	 * serialise every object of one store); a backend whose library is not
	 * thread-safe (libgit2's git_repository, say) locks inside its session,
	 * or keeps a small pool of handles that a call takes and gives back.
	 * close_store is called once, when no call is running, with a context
	 * without key; it frees everything the session holds. Appended last. */
	int (*open_store)(const struct tether_bctx *ctx, const json_t *locator, const json_t *identity,
	                  void **session);
	void (*close_store)(const struct tether_bctx *ctx, void *session);

	/* Version 5. Optional (NULL: `verify --deep` checks what verify
	 * checks, and says the backend has no deeper check). What verify
	 * answers, and then the pinned state re-read: its metadata fetched and
	 * parsed as a reader of that state would (a git commit and its trees, an
	 * Icechunk snapshot file), so that a state whose ref is there but whose
	 * data is damaged or gone fails. Same arguments and answers as verify;
	 * *detail says what could not be read. Costlier than verify: the engine
	 * calls it only for `verify --deep`, once per state. */
	int (*verify_deep)(const struct tether_bctx *, const json_t *locator, const json_t *state,
	                   const json_t *pin_ref, int *ok, char **detail);
	/* Version 5. Optional, for backends with NEEDS_QUIESCENCE (NULL: the
	 * engine cannot tell, and commits). Are writers active on the object
	 * now, so that its fingerprint would not be a consistent state? *busy =
	 * 1 with *why (malloc'd: who is writing, in the system's terms), or 0.
	 * `tether commit` asks every object whose capabilities have
	 * NEEDS_QUIESCENCE before it fingerprints, and refuses while any is
	 * busy unless --force. */
	int (*check_quiescence)(const struct tether_bctx *, const json_t *locator, int *busy, char **why);

	/* Version 6. Optional, for backends with HISTORY (NULL: the engine
	 * cannot tell, and `tether promote` leaves a diverged base to promote's
	 * own refusal). Is `ancestor` in the history of `descendant` (or the
	 * same state)? Both are states as fingerprint gives them at the
	 * locator's store (its ref does not matter): *answer = 1 or 0. A state
	 * the store does not hold is TETHER_ENOTFOUND. `tether promote` asks it
	 * of each base head and working head in its plan, so that a base that
	 * moved on since the fork shows as diverged before anything moves. */
	int (*descends)(const struct tether_bctx *, const json_t *locator, const json_t *ancestor,
	                const json_t *descendant, int *answer);
	/* Version 6. Optional, for FORK (NULL: the engine re-reads the head and
	 * calls delete_working_ref, which leaves a window between the two).
	 * delete_working_ref, conditional: the branch is deleted only while its
	 * head is `expect` (a state, as fingerprint gives it on the branch),
	 * compared and deleted in one step as far as the system allows (git:
	 * under the ref's lock); a branch at another head is TETHER_EREFUSED
	 * naming both, and stays. A branch already gone is 0, as for
	 * delete_working_ref. `tether drop` and `gc --prune-workspaces` delete
	 * through it with the head their plan reviewed. */
	int (*delete_working_ref_if)(const struct tether_bctx *, const json_t *locator, const json_t *working_ref,
	                             const json_t *expect);
	/* Version 6. Optional, for PROMOTE (NULL: a promote or merge of this
	 * kind cannot be taken back, and `tether undo` refuses it naming the
	 * object). Move the locator's base branch to `state` (a state as
	 * fingerprint gives it there: the head the base had before a promote
	 * or merge moved it), whether or not that is a fast-forward, only
	 * while the base is at `expect` (the head tether left it at): compared
	 * and moved in one step as far as the system allows. A base at another
	 * head is TETHER_EREFUSED naming both, and nothing moves; a base at
	 * `state` already is 0 (moved false). A checked-out base must be clean
	 * and its checkout follows, as for promote. *result as promote's. */
	int (*move_base)(const struct tether_bctx *, const json_t *locator, const json_t *state,
	                 const json_t *expect, json_t **result);
};

/* Register a backend (a third party's, or one from a module). Refuses a
 * duplicate kind, or a version newer than TETHER_BACKEND_VERSION (or older
 * than 3), naming both. */
TETHER_API int tether_backend_register(const struct tether_backend *backend);
/* Look a backend up by kind, loading module tether-backend-<kind>.so from
 * the module path on first use. NULL (with an error set) when unknown. */
TETHER_API const struct tether_backend *tether_backend_find(const char *kind);

/* A module exports `TETHER_API const struct tether_module tether_module`:
 *
 *     TETHER_API const struct tether_module tether_module = {
 *             TETHER_MODULE_INIT, .backends = my_backends, .init = my_init,
 *     };
 *
 * init (optional) runs once, after the module is loaded and before its
 * backends are registered; a non-zero return (with the error set) refuses
 * the module. shutdown (optional) runs once, at process exit or when
 * libtether is unloaded, for every module whose init succeeded (or that
 * has no init), in the reverse order of loading. Both run while tether's
 * backend registry is locked: they must not call tether_backend_find or
 * tether_backend_register. */
#define TETHER_MODULE_VERSION 1
#define TETHER_MODULE_INIT TETHER_STRUCT_INIT(struct tether_module, TETHER_MODULE_VERSION)
struct tether_module {
	uint32_t version; /* TETHER_MODULE_INIT */
	uint32_t size;
	const struct tether_backend *const *backends; /* NULL-terminated */
	int (*init)(void);
	void (*shutdown)(void);
};

/* The older form, still loaded: a module exporting
 * `tether_backend_module_t tether_backend_module`, a NULL-terminated array
 * of backends, and no hooks. */
typedef const struct tether_backend *const tether_backend_module_t[];

/* Errors, for backends and modules. */
TETHER_API int tether_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TETHER_API int tether_error_setv(int code, const char *fmt, va_list ap);
TETHER_API void tether_error_set_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
TETHER_API void tether_error_clear(void);

/* A local path as tether stores it in a locator (the spec's identity of a
 * local store): made absolute against cwd, a leading "~" expanded,
 * "file://" folded, ".", ".." and doubled or trailing slashes gone, and
 * the symlinks of the part that exists resolved. malloc'd. */
TETHER_API char *tether_path_resolve(const char *path, const char *cwd);

/* SHA-256, as tether computes it everywhere (hex is 64 chars + NUL). */
TETHER_API void tether_sha256_hex(const void *data, size_t len, char hex[65]);

#ifdef __cplusplus
}
#endif

#endif
