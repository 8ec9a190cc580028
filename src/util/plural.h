/* The noun a count takes in a message: "1 chunk", "2 chunks". One helper
 * for the engine and the backends (the CLI has out_plural, the same rule
 * behind its own API boundary), so no message says "1 chunks". */
#ifndef TETHER_UTIL_PLURAL_H
#define TETHER_UTIL_PLURAL_H

static inline const char *tt_plural(long long n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

#endif
