/* Cancellation inside the engine (tether.h: tether_cancel). */
#ifndef TETHER_CORE_CANCEL_H
#define TETHER_CORE_CANCEL_H

/* The flag every context's cancel points at: non-zero once a stop is
 * asked. */
volatile int *tt_cancel_flag(void);
/* Has a stop been asked? Cheap: one load; long loops check it per step. */
int tt_cancelled(void);
/* Why: "SIGINT", "SIGTERM", "deadline passed" (static). */
const char *tt_cancel_why(void);
/* TETHER_ECANCELLED with "cancelled (WHY): WHAT stopped", WHY being the
 * signal or the deadline. */
int tt_cancel_error(const char *what);

#endif
