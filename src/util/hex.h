/* One hexadecimal digit's value. Header-only: the format layer, the VCS
 * modules and the test tools each compile it in (a module sees none of
 * libtether's internal symbols). */
#ifndef TETHER_UTIL_HEX_H
#define TETHER_UTIL_HEX_H

/* Hex, said once (hex.c is in tether-modutil). */

#include <stddef.h>

/* Lower-case hex of n bytes into out (2n + 1 chars). */
void tt_hex(const unsigned char *bytes, size_t n, char *out);
/* Are the n chars at s all lower-case hex digits? */
int tt_is_lower_hex(const char *s, size_t n);

/* 0-15 for [0-9a-fA-F], else -1. */
static inline int tt_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
