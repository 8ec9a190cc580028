/* The journal: crash safety for store writes. A commit writes an
 * INCOMPLETE entry naming the pins it is about to create, before creating
 * any, and marks it COMPLETE once the VCS commit has landed (ABORTED when
 * it rolled back). An entry left INCOMPLETE means the process died in
 * between: gc keeps the pins it names, and the next commit finishes the
 * work and closes it.
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
/* An entry for any op: {op, status INCOMPLETE, started, pins: [], commit:
 * null} and the members of `fields` (stolen; may be NULL). */
int tt_journal_begin_op(struct tether_repo *repo, const char *op, json_t *fields, struct tt_journal *j);
/* Rewrite the open entry with what j->entry holds now (a step recorded). */
int tt_journal_save(struct tt_journal *j);
/* Close an open entry another process left (`entry` as listed, with its
 * "id"), with `status` and the members of `extra` (stolen; may be NULL). */
int tt_journal_close_other(struct tether_repo *repo, const json_t *entry, const char *status, json_t *extra);
/* Did the process that wrote an open entry die? (Its pid is in the id.) */
int tt_journal_entry_dead(const json_t *entry);
/* status: "COMPLETE" or "ABORTED"; commit id or NULL. */
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
/* Close INCOMPLETE entries whose work a later commit finished, and move
 * entries an earlier tether closed in place into closed/. */
int tt_journal_close_finished(struct tether_repo *repo, const char *commit);

/* Test hook: with TETHER_FAULT=<op>:<step> in the environment, the process
 * kills itself with SIGKILL when it reaches that step, as a crash would;
 * with <op>:<step>:stop it stops itself (SIGSTOP) there, so that a test can
 * race it (move a branch, say) before it continues (SIGCONT). */
void tt_fault_point(const char *op, const char *step);

#endif
