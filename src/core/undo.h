/* tether undo: the last operation of the journal, taken back.
 *
 * Each op that can be undone registers its inverse in undo_ops.c's table:
 * the name its journal entries carry ("commit", "new", ...) and two
 * functions. check() reads the entry and the world as it is now, refuses
 * (TETHER_EREFUSED, saying what moved on) when the operation can no longer
 * be taken back whole, and otherwise lists its steps in u->steps; a dry run
 * stops there. apply() performs them, recording its progress in the undo's
 * own journal entry (u->journal->entry's "progress", saved with
 * tt_journal_update) so that a run killed part-way is finished by the next
 * `tether undo`, whose check() must then accept what the dead run already
 * did. An op without an inverse is refused, naming it. */
#ifndef TETHER_CORE_UNDO_H
#define TETHER_CORE_UNDO_H

#include "core/engine.h"
#include "core/journal.h"

struct tt_undo {
	struct tether_repo *repo;
	const json_t *entry;     /* the operation being undone, as listed (with "id") */
	json_t *progress;        /* {}: what a killed run of this undo already did (check and apply read it) */
	int dry_run;
	json_t *steps;           /* [str]: what apply does (or did), one line each */
	json_t *report;          /* {}: what the inverse adds to the report */
	struct tt_journal *journal; /* this undo's entry (apply only) */
};

struct tt_undo_inverse {
	const char *op;
	int (*check)(struct tt_undo *u);
	int (*apply)(struct tt_undo *u);
};

/* NULL-terminated (undo_ops.c). */
extern const struct tt_undo_inverse *const tt_undo_inverses[];

extern const struct tt_undo_inverse tt_undo_commit; /* undo_commit.c */
extern const struct tt_undo_inverse tt_undo_new;    /* undo_new.c */
extern const struct tt_undo_inverse tt_undo_promote; /* undo_promote.c */
extern const struct tt_undo_inverse tt_undo_merge;   /* undo_promote.c */
extern const struct tt_undo_inverse tt_undo_pull;    /* undo_pull.c */
extern const struct tt_undo_inverse tt_undo_restore; /* undo_restore.c */

/* Record a step of apply() as done, in the undo's journal entry. */
int tt_undo_progress(struct tt_undo *u, const char *step, json_t *value);

#endif
