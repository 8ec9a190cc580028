/* tether: version control for heterogeneous datasets.
 *
 * The public API. Every report is a jansson value (json_t); the CLI renders
 * the same values as text or with --json, so the two never disagree.
 *
 * Errors: functions return 0 or a negative TETHER_E* code; the message of the
 * last failure on this thread is tether_error_last(). */
#ifndef TETHER_H
#define TETHER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_VERSION "0.1.0"

#if defined(__GNUC__)
#define TETHER_API __attribute__((visibility("default")))
#else
#define TETHER_API
#endif

/* Error codes. The CLI maps them onto its exit codes (docs/CLI.md). */
enum {
	TETHER_OK = 0,
	TETHER_ERROR = -1,     /* generic failure                          exit 1 */
	TETHER_EUSAGE = -2,    /* bad argument or option                   exit 2 */
	TETHER_EREFUSED = -3,  /* refused: conflict, drift, unsafe state   exit 3 */
	TETHER_ELOCK = -4,     /* a lock was held past its timeout          exit 4 */
	TETHER_ENOTFOUND = -5, /* a key, revision, path or file is missing exit 1 */
	TETHER_ECONFIG = -6,   /* malformed tether.toml / manifest          exit 1 */
	TETHER_EIO = -7,       /* operating-system or store failure         exit 1 */
	TETHER_ENOREPO = -8,   /* not inside a repository / dataset         exit 1 */
	/* From byte stores (tether/store.h); a backend passes them on. */
	TETHER_EAUTH = -9,      /* a store refused the credentials          exit 1 */
	TETHER_ETRANSIENT = -10, /* a store failure worth retrying (timeout,
	                          * throttling, a lost connection)          exit 1 */
	TETHER_ECANCELLED = -11, /* stopped by tether_cancel (SIGINT, SIGTERM,
	                          * a deadline)        exit 130, 143 or 124 */
};

TETHER_API const char *tether_version(void);

/* Versioned structs (docs/BACKENDS.md, "Versions and sizes"). Every struct
 * that crosses the line between tether and code built apart from it (a
 * module, a harness, a caller of this API) begins with
 *
 *     uint32_t version;  the struct's TETHER_<NAME>_VERSION it was built with
 *     uint32_t size;     sizeof the struct as that code saw it
 *
 * set by its TETHER_<NAME>_INIT macro, a list of designated initializers to
 * begin the braces with: `struct tether_commit_opts o = {
 * TETHER_COMMIT_OPTS_INIT, .message = msg };`. Members are only ever
 * appended (each time with a version bump), so a struct from older code is
 * a prefix of today's: tether reads a member only when it lies inside the
 * struct's size, and one from newer code (a version tether does not know)
 * is refused. TETHER_STRUCT_HAS tells whether member m of *p is inside. */
#define TETHER_STRUCT_HAS(type, p, m) ((size_t)(p)->size >= offsetof(type, m) + sizeof(((type *)0)->m))
#define TETHER_STRUCT_INIT(type, ver) .version = (ver), .size = (uint32_t)sizeof(type)

/* The message of the last error on the calling thread ("" if none). */
TETHER_API const char *tether_error_last(void);
/* An optional hint for the last error (NULL if none). */
TETHER_API const char *tether_error_hint(void);
/* Exit code the CLI uses for an error code. TETHER_ECANCELLED maps to
 * 128 + the signal tether_cancel was given (130 for SIGINT, 143 for
 * SIGTERM), or 124 for a deadline (reason 0), as shells and timeout(1) do. */
TETHER_API int tether_exit_code(int err);

/* Cancellation. tether_cancel asks every running command of this process
 * to stop: long loops of the engine and backends check the flag between
 * steps and return TETHER_ECANCELLED ("cancelled: ..."), leaving nothing
 * half-written (a commit stops before its VCS commit, so its journal entry
 * stays INCOMPLETE and gc keeps its pins; re-running the command finishes
 * it). reason is the signal number that asked (SIGINT, SIGTERM), or 0 for
 * a deadline. Async-signal-safe: it only stores two integers, so a signal
 * handler may call it. tether_cancel_reset clears the request (before the
 * next command, in a long-lived program). */
TETHER_API void tether_cancel(int reason);
TETHER_API void tether_cancel_reset(void);
/* -1 when no stop was asked, else the reason given to tether_cancel. */
TETHER_API int tether_cancel_reason(void);

/* Progress. The library never writes to stderr or a terminal: a command
 * that runs long reports its progress to the caller's callback (the
 * options' progress_fn), which draws it (the CLI: one line on stderr, on a
 * terminal only). Calls come from any thread, at most ten a second per
 * phase, and each phase ends with one call whose `finished` is 1. */
struct tether_progress {
	const char *phase; /* what is being done: "scanning", ... */
	const char *key;   /* the object it is about, or NULL */
	unsigned long long done;  /* items done (files, states, ...) */
	unsigned long long total; /* items in all, 0 when not known */
	unsigned long long bytes; /* bytes processed, 0 when not counted */
	int finished;      /* 1: the phase is over (clear its line) */
};
typedef void (*tether_progress_fn)(void *ud, const struct tether_progress *p);

typedef struct tether_repo tether_repo;

/* Find the dataset (the nearest directory holding tether.toml, at or above
 * start_dir, inside the enclosing VCS checkout). */
TETHER_API int tether_repo_find(const char *start_dir, tether_repo **out);
/* Create tether.toml and .tether/ in start_dir, which must be inside a VCS
 * checkout. Refuses when a dataset already exists there. */
TETHER_API int tether_repo_init(const char *start_dir, tether_repo **out);
TETHER_API void tether_repo_free(tether_repo *repo);
/* Absolute path of the dataset root. */
TETHER_API const char *tether_repo_root(const tether_repo *repo);
/* The dataset id (32 hex); its first 8 characters prefix every pin id. */
TETHER_API const char *tether_repo_id(const tether_repo *repo);

/* tether add KEY URI --kind K [options]. `options` holds the policy and
 * backend options as given on the command line ({"file": "mutable", ...});
 * `cwd` resolves relative paths. */
#define TETHER_ADD_OPTS_VERSION 1
#define TETHER_ADD_OPTS_INIT TETHER_STRUCT_INIT(struct tether_add_opts, TETHER_ADD_OPTS_VERSION)
struct tether_add_opts {
	uint32_t version; /* TETHER_ADD_OPTS_INIT */
	uint32_t size;
	const char *key;
	const char *kind;
	const char *uri;
	const char *cwd;
	const json_t *options; /* may be NULL */
	int create;            /* make the store first (backends with CREATE) */
};
TETHER_API int tether_add(tether_repo *repo, const struct tether_add_opts *opts, json_t **report);

/* The native history (newest first, at most max entries) of the store an
 * add would register, for `tether add --pick`: nothing is written. */
TETHER_API int tether_add_history(tether_repo *repo, const struct tether_add_opts *opts, int max, json_t **entries);

/* tether status. snapshot: -1 = tether.toml's snapshot.auto, 0 = no, 1 = yes.
 * Report: {"objects": [{key, kind, tier, status, ...}], "clean": bool,
 * "errors": int, "workspace": {"stale": bool, "reason", "hint", "bookmark",
 * ...}} (a stale workspace makes "clean" false). An object whose system cannot be read has status
 * "error" (detail: why); the report is still made, and the return is the
 * first such object's error code (its message says how many failed). */
#define TETHER_STATUS_OPTS_VERSION 1
#define TETHER_STATUS_OPTS_INIT TETHER_STRUCT_INIT(struct tether_status_opts, TETHER_STATUS_OPTS_VERSION)
struct tether_status_opts {
	uint32_t version; /* TETHER_STATUS_OPTS_INIT */
	uint32_t size;
	int snapshot;
	int progress; /* report progress to progress_fn */
	/* Appended: where progress goes when progress is set (NULL: nowhere). */
	tether_progress_fn progress_fn;
	void *progress_ud;
};
TETHER_API int tether_status(tether_repo *repo, const struct tether_status_opts *opts, json_t **report);

/* Plans (docs/CLI.md, "Plans"). Every store-writing command (commit, new,
 * gc, abandon, undo) builds a plan first: {"tether_plan": 1, "op", "dataset", "created",
 * "preconditions", "actions", ...}. With dry_run it only reports it (the
 * report holds "plan"); with plan_out it also saves it to that file (and
 * writes nothing else); with from_plan it re-checks the plan's
 * preconditions, refusing a stale plan (TETHER_EREFUSED, writing nothing),
 * then performs exactly its actions. plan_out and from_plan exclude each
 * other. */

/* Read a plan file. A file that cannot be read or is not a JSON object is
 * TETHER_EUSAGE, with a message naming FILE:LINE:COLUMN. */
TETHER_API int tether_plan_load(const char *path, json_t **plan);

/* tether commit -m MSG. Report: {"commit": id|null, "dry_run", "objects":
 * [...], "warnings": [...]}; "commit" is null when nothing changed (and in
 * a dry run). With from_plan, message may be NULL: the plan's is used. */
#define TETHER_COMMIT_OPTS_VERSION 2
#define TETHER_COMMIT_OPTS_INIT TETHER_STRUCT_INIT(struct tether_commit_opts, TETHER_COMMIT_OPTS_VERSION)
struct tether_commit_opts {
	uint32_t version; /* TETHER_COMMIT_OPTS_INIT */
	uint32_t size;
	const char *message;
	int strict;   /* refuse objects that cannot be pinned or addressed */
	int progress;
	int dry_run;              /* plan only */
	const char *plan_out;     /* plan only, and save the plan here */
	const json_t *from_plan;  /* apply this plan */
	const char *from_plan_file; /* the plan's file, for messages (may be NULL) */
	/* Appended: where progress goes when progress is set (NULL: nowhere). */
	tether_progress_fn progress_fn;
	void *progress_ud;
	/* Version 2: skip the quiescence check. Without it, an object whose
	 * backend has NEEDS_QUIESCENCE and reports writers active
	 * (check_quiescence) makes the commit refuse (TETHER_EREFUSED, naming
	 * the object), before anything is fingerprinted or written. */
	int force;
};
TETHER_API int tether_commit(tether_repo *repo, const struct tether_commit_opts *opts, json_t **report);

/* tether diff A B [--content]. Report: {"from", "to", "objects": [...]}. */
#define TETHER_DIFF_OPTS_VERSION 1
#define TETHER_DIFF_OPTS_INIT TETHER_STRUCT_INIT(struct tether_diff_opts, TETHER_DIFF_OPTS_VERSION)
struct tether_diff_opts {
	uint32_t version; /* TETHER_DIFF_OPTS_INIT */
	uint32_t size;
	const char *from;
	const char *to;
	int content;
	size_t max_entries; /* per object; 0 = default 2000 */
};
/* An object that cannot be fingerprinted or diffed is an entry with
 * "error" (why); the report is still made ("errors": how many), and the
 * return is the first such object's error code. */
TETHER_API int tether_diff(tether_repo *repo, const struct tether_diff_opts *opts, json_t **report);

/* tether log: the dataset's commits, newest first. */
#define TETHER_LOG_OPTS_VERSION 1
#define TETHER_LOG_OPTS_INIT TETHER_STRUCT_INIT(struct tether_log_opts, TETHER_LOG_OPTS_VERSION)
struct tether_log_opts {
	uint32_t version; /* TETHER_LOG_OPTS_INIT */
	uint32_t size;
	const char *rev; /* NULL = HEAD. A rev that names an object key of the
	                  * working copy means that object's native history:
	                  * {"key", "kind", "entries": [{"id", "time", "message",
	                  * "refs"}]} (its backend must have HISTORY). */
	int max_count;   /* 0 = all */
};
TETHER_API int tether_log(tether_repo *repo, const struct tether_log_opts *opts, json_t **report);

/* tether verify: every recorded state is still what it says.
 * Report: {"ok": bool, "objects": [{key, ok, detail}]}; with deep also
 * "deep": true, "deep_failed": [{key, pin}], each object's "pin", and in
 * each object that verify found held "deep": "ok" | "failed" |
 * "unsupported" (the backend has no verify_deep). */
#define TETHER_VERIFY_OPTS_VERSION 2
#define TETHER_VERIFY_OPTS_INIT TETHER_STRUCT_INIT(struct tether_verify_opts, TETHER_VERIFY_OPTS_VERSION)
struct tether_verify_opts {
	uint32_t version; /* TETHER_VERIFY_OPTS_INIT */
	uint32_t size;
	int progress;
	int all_history; /* every distinct recorded state in every commit of every ref */
	/* Appended: where progress goes when progress is set (NULL: nowhere). */
	tether_progress_fn progress_fn;
	void *progress_ud;
	/* Version 2: also re-read each pinned state's metadata (the backend's
	 * verify_deep), not only check that its ref exists. */
	int deep;
};
TETHER_API int tether_verify(tether_repo *repo, const struct tether_verify_opts *opts, json_t **report);

/* tether gc: release this dataset's pins that no manifest in any commit
 * reachable from any ref (nor the working copy) names, and remove listings
 * no working manifest names. Dry run unless dry_run is 0. Report:
 * {"dry_run", "commits", "referenced", "stores", "release": [{kind,
 * identity, pin, pin_ref, done}], "listings": [hash], "skipped": [{pin |
 * listing, reason}], "errors": [str]}. With from_plan, only the plan's pins
 * and listings are candidates: one referenced again is refused, one
 * already gone is skipped.
 * With prune_workspaces, the report's "prune": [{kind, identity, branch,
 * head, pinned, action: "delete" | "keep", reason, done}] lists this
 * dataset's working branches (tether.ws.<dataset8>.<bookmark>) whose
 * bookmark is no live bookmark of the VCS, not this checkout's, and not
 * in keep_workspaces. One whose head a pin in history holds is deleted;
 * the rest, and every branch of a BRANCH_IS_STORAGE store, only with
 * force_prune. Not combined with plans (TETHER_EUSAGE). */
#define TETHER_GC_OPTS_VERSION 1
#define TETHER_GC_OPTS_INIT TETHER_STRUCT_INIT(struct tether_gc_opts, TETHER_GC_OPTS_VERSION)
struct tether_gc_opts {
	uint32_t version; /* TETHER_GC_OPTS_INIT */
	uint32_t size;
	int dry_run;
	int progress;
	const char *plan_out;     /* plan only (whatever dry_run says), and save the plan here */
	const json_t *from_plan;  /* release only what this plan names */
	const char *from_plan_file; /* the plan's file, for messages (may be NULL) */
	int prune_workspaces;     /* also delete dead workspaces' working branches */
	const char *const *keep_workspaces; /* bookmarks whose branches stay, n_keep of them */
	size_t n_keep;
	int force_prune;          /* delete unpinned and storage branches too */
	/* Appended: where progress goes when progress is set (NULL: nowhere). */
	tether_progress_fn progress_fn;
	void *progress_ud;
};
TETHER_API int tether_gc(tether_repo *repo, const struct tether_gc_opts *opts, json_t **report);

/* tether new [REV] [-b NAME]: move the checkout to REV (creating branch
 * NAME there), then fork a writable branch tether.ws.<dataset8>.<bookmark>
 * in every Forkable object with write = "fork", off the state REV records.
 * On the trunk bookmark (trunk.h: `[new] trunk`, else main/master/trunk)
 * objects work on their upstream branch and nothing is forked; an object
 * at a detached `at` is never forked.
 * Report: {"commit", "bookmark", "dry_run", "objects": [{key, action:
 * "forked" | "adopted" | "tracking" | "upstream" | "detached" | "skipped",
 * "ref", "detail"}]}. */
#define TETHER_NEW_OPTS_VERSION 2 /* 2: adopt */
#define TETHER_NEW_OPTS_INIT TETHER_STRUCT_INIT(struct tether_new_opts, TETHER_NEW_OPTS_VERSION)
struct tether_new_opts {
	uint32_t version; /* TETHER_NEW_OPTS_INIT */
	uint32_t size;
	const char *rev;    /* NULL: stay on the current commit */
	const char *branch; /* NULL: no new branch */
	int dry_run;              /* plan only */
	const char *plan_out;     /* plan only, and save the plan here */
	const json_t *from_plan;  /* apply this plan (rev and branch must be NULL) */
	const char *from_plan_file; /* the plan's file, for messages (may be NULL) */
	/* Take the checkout's bookmark as the workspace where it is (no rev, no
	 * branch): working branches the stores hold already are adopted as
	 * they are, only missing ones forked. (version 2) */
	int adopt;
};
TETHER_API int tether_new(tether_repo *repo, const struct tether_new_opts *opts, json_t **report);

/* tether promote [KEY...] and tether merge [KEY...]: land this workspace's
 * working branches on their base branches (docs/CLI.md, "tether promote").
 * Each object with a working branch here (or each of `keys`) must have it
 * at the state its working manifest records (committed). promote
 * fast-forwards the base branch to it (PROMOTE), conditional on the base
 * head the plan reviewed, system by system: the first failure stops it,
 * and its message names what landed before it. merge three-way merges it
 * into the base (MERGE), then moves the working branch to the merged head
 * (conditional on the head it was at), so the next commit records what the
 * base now holds; an object that conflicts is reported and nothing is
 * written for it, the others proceed, and the return is TETHER_EREFUSED
 * with the report still made.
 * Report: {"op", "dry_run", "objects": [{"key", "action": "promoted" |
 * "merged" | "up-to-date" | "skipped" | "conflict" | "refused", "branch",
 * "base": {"branch", "from", "to"}, "detail"}], "journal": id|null}; a
 * plan's report has "plan" and "plan_file" instead of "objects". Both
 * take the locks and journal their moves (op "promote" / "merge"). */
#define TETHER_LAND_OPTS_VERSION 1
#define TETHER_LAND_OPTS_INIT TETHER_STRUCT_INIT(struct tether_land_opts, TETHER_LAND_OPTS_VERSION)
struct tether_land_opts {
	uint32_t version; /* TETHER_LAND_OPTS_INIT */
	uint32_t size;
	const char *const *keys;  /* the objects to land, n_keys of them; none: every one with a working branch */
	size_t n_keys;
	const char *message;      /* merge: the merge commit's message (NULL: the backend's) */
	int dry_run;              /* plan only */
	const char *plan_out;     /* plan only, and save the plan here */
	const json_t *from_plan;  /* apply this plan (no keys, no message) */
	const char *from_plan_file; /* the plan's file, for messages (may be NULL) */
};
TETHER_API int tether_promote(tether_repo *repo, const struct tether_land_opts *opts, json_t **report);
TETHER_API int tether_merge(tether_repo *repo, const struct tether_land_opts *opts, json_t **report);

/* tether restore [-r REV] [KEY...]: put each object's working branch in
 * this workspace back to the state REV records (default HEAD: discard the
 * writes made since), as `jj restore` puts files back. A conditional fork
 * reset: the branch moves only from the head the plan reviewed. A base
 * branch is never moved: a named object with no working branch here, one
 * with write = track, one that is not forkable, or one REV does not record
 * is refused (TETHER_EREFUSED) naming it; with no keys those are skipped.
 * A reset refused or failing part-way takes back the resets made. Report:
 * {"rev", "commit", "dry_run", "objects": [{key, action: "reset" |
 * "unchanged" | "skip", "branch", "from", "to", "detail"}]}. */
#define TETHER_RESTORE_OPTS_VERSION 1
#define TETHER_RESTORE_OPTS_INIT TETHER_STRUCT_INIT(struct tether_restore_opts, TETHER_RESTORE_OPTS_VERSION)
struct tether_restore_opts {
	uint32_t version; /* TETHER_RESTORE_OPTS_INIT */
	uint32_t size;
	const char *rev;               /* NULL: HEAD */
	const char *const *keys;       /* n_keys of them; none: every object with a working branch */
	size_t n_keys;
	int dry_run;                   /* plan only */
	const char *plan_out;          /* plan only, and save the plan here */
	const json_t *from_plan;       /* apply this plan (rev and keys must be unset) */
	const char *from_plan_file;    /* the plan's file, for messages (may be NULL) */
};
TETHER_API int tether_restore(tether_repo *repo, const struct tether_restore_opts *opts, json_t **report);

/* tether drop KEY...: remove objects from the dataset. Each manifest is
 * removed from the working copy (the next commit records the removal, as
 * `git rm` does), and this workspace's working branch of each is deleted
 * when a pin in history holds its head, else kept and reported (force:
 * deleted anyway). With delete_store, a store tether created (CREATE) that
 * no other object and no recorded state names is deleted too, the backend
 * re-checking that tether made it and that it is still ref-empty just
 * before. Report: {"dry_run", "objects": [{key, manifest: "removed",
 * "branch", "fork": "delete" | "keep" | "gone" | "none", "store": "delete"
 * | "keep" | "gone" | "none", "reason", "done"}]}. */
#define TETHER_DROP_OPTS_VERSION 1
#define TETHER_DROP_OPTS_INIT TETHER_STRUCT_INIT(struct tether_drop_opts, TETHER_DROP_OPTS_VERSION)
struct tether_drop_opts {
	uint32_t version; /* TETHER_DROP_OPTS_INIT */
	uint32_t size;
	const char *const *keys;       /* n_keys of them, at least one (none with from_plan) */
	size_t n_keys;
	int force;                     /* delete working branches no pin holds */
	int delete_store;              /* delete stores tether created that are ref-empty */
	int dry_run;
	const char *plan_out;
	const json_t *from_plan;       /* keys, force and delete_store come from the plan */
	const char *from_plan_file;
};
TETHER_API int tether_drop(tether_repo *repo, const struct tether_drop_opts *opts, json_t **report);

/* tether pull [KEY...]: on the trunk, move every object at a detached `at`
 * onto its upstream branch: the working manifest's locator loses `at`,
 * and the next commit pins the branch head. Refused off the trunk and on a
 * stale workspace. Report: {"bookmark", "dry_run", "objects": [{key,
 * action: "moved" | "stay", "from", "to", "detail"}]}, and "plan" when
 * only planned. */
#define TETHER_PULL_OPTS_VERSION 1
#define TETHER_PULL_OPTS_INIT TETHER_STRUCT_INIT(struct tether_pull_opts, TETHER_PULL_OPTS_VERSION)
struct tether_pull_opts {
	uint32_t version; /* TETHER_PULL_OPTS_INIT */
	uint32_t size;
	const char *const *keys; /* only these objects (n_keys of them); none: every object */
	size_t n_keys;
	int dry_run;               /* plan only */
	const char *plan_out;      /* plan only, and save the plan here */
	const json_t *from_plan;   /* apply this plan (no keys) */
	const char *from_plan_file; /* the plan's file, for messages (may be NULL) */
};
TETHER_API int tether_pull(tether_repo *repo, const struct tether_pull_opts *opts, json_t **report);

/* tether open KEY [-r REV]: the object's handle descriptor. With a rev (or
 * $TETHER_REV when rev is NULL), read-only at the state that revision
 * records; otherwise writable on this workspace's working ref, forked on
 * first use. Handle: {"key", "kind", "uri", "ref", "read_only", ...}. */
#define TETHER_OPEN_OPTS_VERSION 1
#define TETHER_OPEN_OPTS_INIT TETHER_STRUCT_INIT(struct tether_open_opts, TETHER_OPEN_OPTS_VERSION)
struct tether_open_opts {
	uint32_t version; /* TETHER_OPEN_OPTS_INIT */
	uint32_t size;
	const char *key;
	const char *rev;
	int ignore_env; /* do not read $TETHER_REV */
	/* At a revision, an observed object (below ADDRESSABLE) whose bytes no
	 * longer match what the revision recorded is TETHER_EREFUSED; with
	 * allow_drift its handle is given anyway, with "warnings": [str]. */
	int allow_drift;
};
TETHER_API int tether_open(tether_repo *repo, const struct tether_open_opts *opts, json_t **handle);

/* tether repair [--all-history]: re-create pins that are missing while
 * their system still holds the state. Report: {"ok", "dry_run", "objects":
 * [{key, keys, commit, pin, action: "held" | "repinned" | "would-repin" |
 * "lost" | "failed", detail}]}; ok is false when any state is lost. */
#define TETHER_REPAIR_OPTS_VERSION 1
#define TETHER_REPAIR_OPTS_INIT TETHER_STRUCT_INIT(struct tether_repair_opts, TETHER_REPAIR_OPTS_VERSION)
struct tether_repair_opts {
	uint32_t version; /* TETHER_REPAIR_OPTS_INIT */
	uint32_t size;
	int all_history;
	int dry_run;
};
TETHER_API int tether_repair(tether_repo *repo, const struct tether_repair_opts *opts, json_t **report);

/* tether upgrade [--all-history]: migrate the dataset's files to the
 * newest layout this tether writes (TETHER_LAYOUT; docs/ARCHITECTURE.md,
 * "Layout versions"): the working copy's manifests, then tether.toml, each
 * written atomically, under the locks, journalled as "upgrade". With
 * all_history, also every commit of the current branch whose dataset
 * directory holds an older file, re-created (vcs rewrite_files) and the
 * branch moved conditionally; refused (TETHER_EREFUSED, the report still
 * given, nothing written) without yes, when a remote-tracking ref reaches
 * a commit to rewrite and force is not set, and on a VCS that cannot
 * rewrite. Report: {"from", "to", "dry_run", "files": [{"path", "from",
 * "to"}], "history": null | {"branch", "head", "commits": [{"id", "new",
 * "summary"}], "remote": [{"id", "ref"}]}}. */
#define TETHER_LAYOUT 1
#define TETHER_UPGRADE_OPTS_VERSION 1
#define TETHER_UPGRADE_OPTS_INIT TETHER_STRUCT_INIT(struct tether_upgrade_opts, TETHER_UPGRADE_OPTS_VERSION)
struct tether_upgrade_opts {
	uint32_t version; /* TETHER_UPGRADE_OPTS_INIT */
	uint32_t size;
	int dry_run;     /* report what would change, write nothing */
	int all_history; /* rewrite the current branch's history too */
	int yes;         /* confirm the history rewrite */
	int force;       /* rewrite commits a remote-tracking ref reaches */
};
TETHER_API int tether_upgrade(tether_repo *repo, const struct tether_upgrade_opts *opts, json_t **report);

/* tether ops: the journal of store-writing operations, oldest first.
 * Report: {"ops": [{"id", "op", "status": "INCOMPLETE" | "COMPLETE" |
 * "ABORTED" | "PARTIAL", "started", "message", "pins": [...], "commit",
 * "moves" (promote, merge)}]}. */
TETHER_API int tether_ops(tether_repo *repo, json_t **report);

/* tether abandon REV: drop dataset commit REV from the current branch
 * through the VCS (jj abandon; on git a rebase of the branch's descendants
 * of REV onto its parent, conditional on HEAD), refused (TETHER_EREFUSED)
 * when another ref holds REV (pushed, or in another branch) unless force,
 * when the working tree is dirty, or when the rewrite would conflict or
 * cross a merge. Report: {"commit", "head_before", "head" (the new tip;
 * null in a dry run), "dry_run", "finished" (this run only closed a killed
 * run's rewrite), "refs": [{"ref", "remote"}] (the refs holding REV, with
 * force), "pins": [{"key", "kind", "pin"}]}: the pins only REV named, which
 * the next gc releases (a dry run: the pins REV brought in). */
#define TETHER_ABANDON_OPTS_VERSION 1
#define TETHER_ABANDON_OPTS_INIT TETHER_STRUCT_INIT(struct tether_abandon_opts, TETHER_ABANDON_OPTS_VERSION)
struct tether_abandon_opts {
	uint32_t version; /* TETHER_ABANDON_OPTS_INIT */
	uint32_t size;
	const char *rev;          /* NULL with from_plan: the plan's commit */
	int force;                /* abandon a commit other refs hold */
	int dry_run;              /* check and report only (the report holds "plan") */
	const char *plan_out;     /* plan only, and save the plan here */
	const json_t *from_plan;  /* apply this plan: stale (TETHER_EREFUSED) when HEAD or the refs holding the commit moved */
	const char *from_plan_file; /* the plan's file, for messages (may be NULL) */
};
TETHER_API int tether_abandon(tether_repo *repo, const struct tether_abandon_opts *opts, json_t **report);

/* tether undo: take back the last operation of the journal that is not
 * undone yet (docs/CLI.md, "undo"): a commit (its VCS commit removed while
 * it is HEAD and no other ref holds it; the pins it created released), a
 * new (the checkout and workspace put back, the working refs it forked
 * deleted or moved back while untouched), and the ops that registered an
 * inverse. Refused (TETHER_EREFUSED, naming why) when history or a store
 * moved on since, or the op has no inverse. Report: {"undone": {"id",
 * "op", ...}, "dry_run", "steps": [str], "released": [...], ...}. */
#define TETHER_UNDO_OPTS_VERSION 1
#define TETHER_UNDO_OPTS_INIT TETHER_STRUCT_INIT(struct tether_undo_opts, TETHER_UNDO_OPTS_VERSION)
struct tether_undo_opts {
	uint32_t version; /* TETHER_UNDO_OPTS_INIT */
	uint32_t size;
	int dry_run;              /* check and report only (the report holds "plan") */
	const char *plan_out;     /* plan only, and save the plan here */
	const json_t *from_plan;  /* apply this plan: stale (TETHER_EREFUSED) when the operation to undo or its steps changed */
	const char *from_plan_file; /* the plan's file, for messages (may be NULL) */
};
TETHER_API int tether_undo(tether_repo *repo, const struct tether_undo_opts *opts, json_t **report);

/* tether export FILE: the dataset's history as tables (docs/CLI.md, "tether
 * export": commits, objects, object_states, refs, listings,
 * listing_entries, meta), written as SQLite, Parquet, CSV or JSON Lines
 * (the last three a directory of one file per table). The same history
 * gives the same bytes. Report: {"path", "format", "tables": {name: rows}}. */
#define TETHER_EXPORT_OPTS_VERSION 1
#define TETHER_EXPORT_OPTS_INIT TETHER_STRUCT_INIT(struct tether_export_opts, TETHER_EXPORT_OPTS_VERSION)
struct tether_export_opts {
	uint32_t version; /* TETHER_EXPORT_OPTS_INIT */
	uint32_t size;
	const char *path;   /* the file (sqlite) or directory (the others) */
	const char *format; /* "sqlite" | "parquet" | "csv" | "jsonl"; NULL: by path's extension */
	const char *const *revs; /* the ancestors of these revisions; none: every commit of any ref */
	size_t nrevs;
};
TETHER_API int tether_export(tether_repo *repo, const struct tether_export_opts *opts, json_t **report);

/* tether publish --to postgresql://...: the same tables upserted into a
 * Postgres schema in one transaction: commits not yet there are added,
 * commits there that the export no longer holds (a rewritten history)
 * are deleted with their objects; refs and meta are replaced. Report:
 * {"to" (without password), "schema", "new_commits", "removed_commits",
 * "unchanged_commits"}. */
#define TETHER_PUBLISH_OPTS_VERSION 1
#define TETHER_PUBLISH_OPTS_INIT TETHER_STRUCT_INIT(struct tether_publish_opts, TETHER_PUBLISH_OPTS_VERSION)
struct tether_publish_opts {
	uint32_t version; /* TETHER_PUBLISH_OPTS_INIT */
	uint32_t size;
	const char *to;     /* postgresql://[user@]host[:port]/db (no password) */
	const char *schema; /* NULL: "tether" */
	const char *const *revs;
	size_t nrevs;
};
TETHER_API int tether_publish(tether_repo *repo, const struct tether_publish_opts *opts, json_t **report);

/* tether import SOURCE --query SQL: rows with tether's canonical columns
 * (key, kind, and the locator and policy fields: docs/CLI.md, "tether
 * import") planned into adds, updates and (sync) removals of manifests.
 * Never records or pins: the next commit does. tether_import_plan reads
 * and validates every row (a bad one refuses the whole import, naming its
 * row and column) and returns the plan ({"tether_plan", "op": "import",
 * ..., "actions": [{"action": "add" | "update" | "remove", "key",
 * "manifest"}]}); tether_import_apply checks a plan against the manifests
 * now and writes it. */
#define TETHER_IMPORT_OPTS_VERSION 1
#define TETHER_IMPORT_OPTS_INIT TETHER_STRUCT_INIT(struct tether_import_opts, TETHER_IMPORT_OPTS_VERSION)
struct tether_import_opts {
	uint32_t version; /* TETHER_IMPORT_OPTS_INIT */
	uint32_t size;
	const char *source; /* postgresql://... or a SQLite file */
	const char *query;
	int sync;           /* remove objects the rows do not name */
	const char *plan_out; /* also save the plan to this file */
};
TETHER_API int tether_import_plan(tether_repo *repo, const struct tether_import_opts *opts, json_t **plan);
/* Report: {"added", "updated", "removed": [keys]}. */
TETHER_API int tether_import_apply(tether_repo *repo, const json_t *plan, const char *plan_file, json_t **report);

/* The registered backends: [{kind, maturity, tier, flags: [...], summary,
 * add_options: [...]}] (add_options as tether_add_options gives them). */
TETHER_API json_t *tether_backends(void);
/* The options `tether add --kind KIND` takes beyond the engine's, as the
 * backend declares them: [{"name", "value_name", "help", "choices" (array
 * of strings, or null for free text), "default" (string or null),
 * "field" ("locator" | "policy"), "defaults" (true when tether.toml's
 * [defaults] may set it)}]. NULL with the error set when the kind is
 * unknown. */
TETHER_API json_t *tether_add_options(const char *kind);

#ifdef __cplusplus
}
#endif

#endif
