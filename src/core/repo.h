/* The dataset: its root, its configuration, and the VCS around it. */
#ifndef TETHER_CORE_REPO_H
#define TETHER_CORE_REPO_H

#include <tether.h>
#include <tether/backend.h>

#include "vcs/vcs.h"

struct tt_toml_where;

#include <pthread.h>

struct tether_repo {
	char *root;        /* absolute dataset root (holds tether.toml) */
	char *tether_dir;  /* root/.tether */
	char *cache_dir;   /* root/.tether/cache */
	json_t *config;    /* tether.toml */
	int layout;        /* tether.toml's [dataset] layout: 0 when absent (core/layout.h) */
	char id[33];
	/* The VCS is loaded on first use: a command that does not need it
	 * never loads libgit2. */
	const struct tether_vcs_ops *vcs;
	struct tether_vcs *vh;
	char *workdir;     /* checkout top */
	char *common_dir;
	char *rel;         /* dataset root relative to workdir: "" or "a/b" */
	char *trunk;       /* the trunk bookmark, once trunk.c has settled it */
	json_t *secrets;   /* .tether/secrets.toml, or NULL */
	struct tt_toml_where *secrets_where; /* where its keys are, for messages */
	int secrets_loaded;
	/* fcntl locks belong to the process: threads sharing this handle take
	 * turns on this mutex before taking them. */
	pthread_mutex_t turn;
	/* The running command's store sessions and progress callback
	 * (sessions.c), or NULL before the first command. */
	struct tt_sessions *sessions;
};

/* Load the VCS (idempotent). */
int tt_repo_vcs(struct tether_repo *repo);
/* A dataset-relative path ("tether.toml", ".tether/objects/a.toml") as a
 * path relative to the checkout top. malloc'd. Needs the VCS loaded. */
char *tt_repo_vcs_path(const struct tether_repo *repo, const char *dataset_rel);
/* A context for backend calls on object `key` (may be NULL). */
void tt_repo_bctx(struct tether_repo *repo, const char *kind, const char *key,
                  struct tether_bctx *ctx);
/* A boolean setting of tether.toml ("snapshot", "auto"), or dflt. */
int tt_repo_config_bool(const struct tether_repo *repo, const char *table, const char *key,
                        int dflt);
/* Refuse a .tether/secrets.toml or .tether/workspace.toml that the VCS
 * tracks (TETHER_EREFUSED), then load and validate the secrets
 * (TETHER_ECONFIG naming file:line:col): before any command writes to a
 * store or forks on the workspace's word. */
int tt_repo_check_secrets(struct tether_repo *repo);
/* The secrets part of it alone: .tether/secrets.toml read (once), refused
 * when the VCS tracks it. Every command that reaches an object's store
 * needs its options (tt_objs_prepare calls it), readers of history too. */
int tt_repo_load_secrets(struct tether_repo *repo);
/* Refuse secrets of object `key` that its backend does not read, when
 * the backend declares which it reads (secret_keys): a misspelt key would
 * leave the object without the secret meant for it, silently. */
int tt_repo_check_object_secrets(const struct tether_repo *repo, const struct tether_backend *b,
                                 const char *key);
/* Resolve a user-facing revision: NULL or "@" means the working copy
 * (id set to ""), anything else goes to the VCS. */
int tt_repo_resolve(struct tether_repo *repo, const char *rev, char id[41]);

/* Take the checkout lock (.tether/lock, 30 s) and the repository lock
 * (tether.lock in the VCS's shared directory, 60 s), in that order. */
struct tt_lock;
int tt_repo_lock(struct tether_repo *repo, struct tt_lock *checkout, struct tt_lock *shared);
/* Release both (either may be unheld: fd -1) and this handle's turn. */
void tt_repo_unlock(struct tether_repo *repo, struct tt_lock *checkout, struct tt_lock *shared);

#endif
