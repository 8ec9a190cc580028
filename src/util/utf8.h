/* UTF-8 as tether accepts it (jansson's rule): no overlong forms, no
 * surrogates, nothing past U+10FFFF. */
#ifndef TETHER_UTIL_UTF8_H
#define TETHER_UTIL_UTF8_H

#include <stddef.h>

/* Length of the valid multi-byte UTF-8 sequence at s (n bytes available),
 * or 0 when s[0] does not start one (ASCII included: callers handle bytes
 * below 0x80 themselves). */
static inline size_t tt_utf8_sequence(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
		return 0;
	return len;
}

#endif
