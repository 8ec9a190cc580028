/* Fan-out: run fn(ud, i) for i in [0, n) on up to `threads` threads.
 * Items are independent and results land in caller-owned slots indexed by
 * i, so output order never depends on scheduling. */
#ifndef TETHER_UTIL_POOL_H
#define TETHER_UTIL_POOL_H

#include <stddef.h>

typedef void (*tt_pool_fn)(void *ud, size_t i);

/* threads <= 0: the number of online CPUs (or $TETHER_THREADS). One item
 * or one thread runs inline, without creating a thread. */
void tt_pool_run(size_t n, int threads, tt_pool_fn fn, void *ud);
/* The default thread count. */
int tt_pool_default_threads(void);

#endif
