/* One hexadecimal digit's value. Header-only: the format layer, the VCS
 * modules and the test tools each compile it in (a module sees none of
 * libtether's internal symbols). */
#ifndef TETHER_UTIL_HEX_H
#define TETHER_UTIL_HEX_H

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
