/* The journal: crash safety for store writes. A commit writes an
 * INCOMPLETE entry naming the pins it is about to create, before creating
 * any, and marks it COMPLETE once the VCS commit has landed (ABORTED when
 * it rolled back). An entry left INCOMPLETE means the process died in
 * between: gc keeps the pins it names, and the next commit finishes the
 * work and closes it. restore and drop write entries of their own ("op",
 * "keys", no pins) before their first store write; a dead one is closed by
 * the re-run of the same op over the same keys.
 *
 * <journal>/<unix-nanoseconds>-<pid>.json while open (INCOMPLETE), and
 * <journal>/closed/<same name> once closed, where <journal> is
 * tether/journal/<dataset id>/ in the directory every checkout of the
 * repository shares (never inside the dataset: a VCS that cannot be
 * opened is the error of every journal function):
 *   {"op": "commit", "status": "INCOMPLETE", "started": "...", "message": "...",
 *    "pins": [{"kind", "locator", "pin"}], "commit": null}
 *
 * Besides the pins gc keeps, an entry records what `tether undo` needs to
 * take the operation back (docs/ARCHITECTURE.md, "Undo"): a commit its
 * "head_before" and the pins it "created"; a new the position, the
 * workspace and the forks before and after; abandon and undo what they
 * rewrote. Every op writes one entry, pins or not.
 */
#ifndef TETHER_CORE_JOURNAL_H
#define TETHER_CORE_JOURNAL_H

#include "core/repo.h"

struct tt_journal {
	char *dir;  /* the journal directory */
	char *name; /* the entry's file name */
	json_t *entry;
};

int tt_journal_begin(struct tether_repo *repo, const char *op, const char *message, json_t *pins,
                     struct tt_journal *j);
/* tt_journal_begin, with more members for the entry (`fields`, may be
 * NULL): a promote's or merge's "moves". */
int tt_journal_begin_with(struct tether_repo *repo, const char *op, const char *message, json_t *pins,
                          const json_t *fields, struct tt_journal *j);
/* Rewrite the open entry after the caller changed j->entry (a move done). */
int tt_journal_update(struct tt_journal *j);
/* Is this entry (from tt_journal_open_entries) INCOMPLETE and its process
 * gone? */
int tt_journal_entry_dead(const json_t *entry);
/* Close such an entry as COMPLETE, its work finished by `finished_by` (an
 * entry id or a commit id; may be NULL). */
int tt_journal_close_dead(struct tether_repo *repo, const json_t *entry, const char *finished_by);
/* An entry for any op: {op, status INCOMPLETE, started, pins: [], commit:
 * null} and the members of `fields` (stolen; may be NULL). */
int tt_journal_begin_op(struct tether_repo *repo, const char *op, json_t *fields, struct tt_journal *j);
/* Close an open entry another process left (`entry` as listed, with its
 * "id"), with `status` and the members of `extra` (stolen; may be NULL). */
int tt_journal_close_other(struct tether_repo *repo, const json_t *entry, const char *status, json_t *extra);
/* status: "COMPLETE", "ABORTED" or "PARTIAL" (a promote or merge that moved some
 * bases and not others); commit id or NULL. */
int tt_journal_end(struct tt_journal *j, const char *status, const char *commit);
void tt_journal_free(struct tt_journal *j);
/* Remove the open entry: the op did nothing worth a record (a commit with
 * nothing to commit and no pin to keep). */
int tt_journal_discard(struct tt_journal *j);
/* Every entry, oldest first, each with "id" (its file name). */
int tt_journal_list(struct tether_repo *repo, json_t **entries);
/* The entries not closed yet (the only ones that can be INCOMPLETE), oldest
 * first: what gc reads. */
int tt_journal_open_entries(struct tether_repo *repo, json_t **entries);
/* One pin ({"kind", "key"?, "locator", "pin"}) for each distinct (kind,
 * key, locator) that any entry, open or closed, names: the stores the
 * journal's pins were made in, which gc visits. The closed entries are
 * summarised in <journal>/closed.index, a cache rebuilt from them when it
 * does not cover them (journal.c says how). */
int tt_journal_pin_stores(struct tether_repo *repo, json_t **pins);
/* Close INCOMPLETE commit entries whose work a later commit finished (an
 * entry of another op is finished by that op's re-run), and move
 * entries an earlier tether closed in place into closed/. */
int tt_journal_close_finished(struct tether_repo *repo, const char *commit);

/* Set `field` of the open entry to `value` (stolen) and write it again: a
 * command that is not a commit says there what it is doing (restore and
 * drop: "keys", "target", "steps"), so `ops` shows it and its re-run can
 * tell a dead run's work from its own. */
int tt_journal_note(struct tt_journal *j, const char *field, json_t *value);
/* A re-run of `op` finished what a dead process's INCOMPLETE entry of the
 * same op began: close every such entry whose "keys" are all among `keys`
 * and whose "target" is `target` (NULL: any), COMPLETE with "finished_by"
 * naming this run's entry (`by`). A live process's entry is left alone. */
int tt_journal_close_dead_runs(struct tether_repo *repo, const char *op, const json_t *keys, const char *target,
                               const char *by);
/* The INCOMPLETE entries of `op` a dead process left (new reference, an
 * array): what its re-run may find half-done. */
int tt_journal_dead_entries(struct tether_repo *repo, const char *op, json_t **entries);

/* Test hook: with TETHER_FAULT=<op>:<step> in the environment, the process
 * kills itself with SIGKILL when it reaches that step, as a crash would;
 * with <op>:<step>:stop it stops itself (SIGSTOP) there, so that a test can
 * race it (move a branch, say) before it continues (SIGCONT). */
void tt_fault_point(const char *op, const char *step);

#endif
