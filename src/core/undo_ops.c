/* The ops tether undo can take back, each with its inverse (undo.h). A new
 * op type that writes a journal entry adds its inverse here. */
#include "core/undo.h"

const struct tt_undo_inverse *const tt_undo_inverses[] = {
	&tt_undo_commit,
	&tt_undo_new,
	&tt_undo_promote,
	&tt_undo_merge,
	&tt_undo_pull,
	&tt_undo_restore,
	NULL,
};
