/* For the byte-store tests: what a paged listing gives, as one string. */
#ifndef TETHER_TESTS_STORE_LISTED_H
#define TETHER_TESTS_STORE_LISTED_H

#include <tether/store.h>

#include <stddef.h>

/* The keys tether_store_list(s, prefix, after, page) gives, in order,
 * joined by ' ' (malloc'd; "" for none), or NULL when the listing fails. */
char *listed(tether_store *s, const char *prefix, const char *after, size_t page);

#endif
