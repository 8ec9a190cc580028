/* Store sessions: what a backend's open_store made, one per store identity
 * per command, shared by every key and thread that touches the store, and
 * closed when the command ends (docs/BACKENDS.md, "Sessions"). */
#ifndef TETHER_CORE_SESSIONS_H
#define TETHER_CORE_SESSIONS_H

#include "core/abi.h"

#include <tether/backend.h>

struct tether_repo;
struct tt_sessions;

/* A command's scope. Every public command (tether_status, tether_commit,
 * ...) calls tt_command_begin first and tt_command_end on every return:
 * the begin sets where progress goes, the end closes the sessions. Nested calls (a command calling another's
 * internals) only count: the outermost end closes. */
void tt_command_begin(struct tether_repo *repo, tether_progress_fn progress_fn, void *progress_ud);
void tt_command_end(struct tether_repo *repo);

/* The body of a public command's entry point, for a command with no
 * progress callback: the caller's `struct opts_type` copied in as this
 * tether's (abi.h: members it lacks read as 0; refused, *report NULL),
 * then command(repo, &opts, report) in one command scope, so its store
 * sessions close whichever way it ends. Returns command's result. */
#define TT_COMMAND_RUN(opts_type, version, command, repo, caller_opts, report) \
	do { \
		struct opts_type tt_opts_; \
		int tt_rc_ = TT_OPTS_IN("struct " #opts_type, version, caller_opts, &tt_opts_); \
		if (tt_rc_) { \
			*(report) = NULL; \
			return tt_rc_; \
		} \
		tt_command_begin(repo, NULL, NULL); \
		tt_rc_ = command(repo, &tt_opts_, report); \
		tt_command_end(repo); \
		return tt_rc_; \
	} while (0)

/* Hand ctx the session of the store `locator` names (identity: its
 * identity, or NULL to ask the backend), opening it on first use. Does
 * nothing outside a command, for a backend without open_store, or when
 * the identity cannot be had (the call itself will say why). */
void tt_session_attach(struct tether_repo *repo, const struct tether_backend *b, const json_t *locator,
                       const json_t *identity, struct tether_bctx *ctx);

/* Copy the command's progress callback into ctx (tt_repo_bctx does). */
void tt_sessions_progress(const struct tether_repo *repo, struct tether_bctx *ctx);

/* Close every session (tether_repo_free calls it too, for a command that
 * never reached its end). */
void tt_sessions_close(struct tether_repo *repo);
/* Close them and free the table (tether_repo_free). */
void tt_sessions_free(struct tether_repo *repo);

#endif
