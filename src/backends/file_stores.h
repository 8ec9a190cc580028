/* Open object stores kept between calls of the file backend, so that the
 * objects of one bucket, fingerprinted one after another on a worker
 * thread, reuse one store's connections and credentials instead of
 * opening a connection (and, for an assumed role, asking STS) per object.
 *
 * A store handle is used by one thread at a time (the store contract
 * does not promise more): a call takes an idle one opened at the same
 * root with the same options, or opens one, and gives it back when done.
 * Idle stores are kept for the life of the process, at most a few dozen,
 * and closed at exit. */
#ifndef TETHER_BACKENDS_FILE_STORES_H
#define TETHER_BACKENDS_FILE_STORES_H

#include <tether/store.h>

/* An open store at root with these options (tether_store_open's rules). */
int fr_store_take(const char *root, const json_t *options, tether_store **out);
/* Done with s (from fr_store_take with the same root and options): kept
 * for the next call, or closed. NULL: nothing. */
void fr_store_give(const char *root, const json_t *options, tether_store *s);

#endif
