/* Crockford base32, most significant bit first, as the Rust base32 crate
 * writes Icechunk's ids. */
#include "format/base32.h"

static const char b32_alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

void b32_encode(const uint8_t *in, size_t n, char *out)
{
	uint32_t acc = 0; /* never holds more than 12 pending bits */
	unsigned bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8 | in[i]) & 0xfff;
		bits += 8;
		while (bits >= 5) {
			bits -= 5;
			out[o++] = b32_alphabet[(acc >> bits) & 31];
		}
	}
	if (bits > 0)
		out[o++] = b32_alphabet[(acc << (5 - bits)) & 31];
	out[o] = '\0';
}

/* The 5-bit value of c, or -1. Only the 32 symbols, in either case: the
 * Crockford aliases (O for 0, I and L for 1) never appear in an id. */
static int b32_value(char c)
{
	if (c >= 'a' && c <= 'z')
		c = (char)(c - 'a' + 'A');
	for (int v = 0; v < 32; v++)
		if (b32_alphabet[v] == c)
			return v;
	return -1;
}

int b32_decode(const char *s, size_t slen, uint8_t *out, size_t n)
{
	if (slen != B32_LEN(n))
		return -1;
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < slen; i++) {
		int v = b32_value(s[i]);
		if (v < 0)
			return -1;
		acc = (acc << 5 | (uint32_t)v) & 0xfff;
		bits += 5;
		if (bits >= 8) {
			bits -= 8;
			if (o < n)
				out[o++] = (uint8_t)(acc >> bits);
		}
	}
	return 0;
}
