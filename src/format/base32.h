/* Crockford base32 as Icechunk spells its ids: alphabet
 * 0123456789ABCDEFGHJKMNPQRSTVWXYZ, uppercase, no padding, the input
 * zero-padded on the right to a multiple of 5 bits (12 bytes -> 20
 * characters, 8 -> 13). */
#ifndef TETHER_FORMAT_BASE32_H
#define TETHER_FORMAT_BASE32_H

#include <stddef.h>
#include <stdint.h>

#define B32_LEN(nbytes) (((nbytes) * 8 + 4) / 5)

/* Writes B32_LEN(n) characters and a NUL. */
void b32_encode(const uint8_t *in, size_t n, char *out);
/* Decode exactly B32_LEN(n) characters (upper or lower case) into n bytes.
 * Returns 0, or -1 for a wrong length or a character outside the alphabet
 * (no message: callers say what they were decoding). Leftover bits are
 * dropped, as Icechunk drops them. */
int b32_decode(const char *s, size_t slen, uint8_t *out, size_t n);

#endif
