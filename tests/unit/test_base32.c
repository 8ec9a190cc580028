/* Crockford base32 as Icechunk spells ids. */
#include "check.h"

#include "format/base32.h"

#include <stdint.h>

int main(void)
{
	/* The initial snapshot id, and the counting bytes from icechunk-format's
	 * own unit test. */
	const uint8_t initial[12] = {0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75, 0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34};
	uint8_t counting[12];
	for (int i = 0; i < 12; i++)
		counting[i] = (uint8_t)i;
	char s[B32_LEN(12) + 1];
	uint8_t back[12];

	CHECK(B32_LEN(12) == 20);
	CHECK(B32_LEN(8) == 13);
	b32_encode(initial, 12, s);
	CHECK_STR(s, "1CECHNKREP0F1RSTCMT0");
	b32_encode(counting, 12, s);
	CHECK_STR(s, "000G40R40M30E209185G");

	CHECK(b32_decode("1CECHNKREP0F1RSTCMT0", 20, back, 12) == 0);
	CHECK(memcmp(back, initial, 12) == 0);
	CHECK(b32_decode("000g40r40m30e209185g", 20, back, 12) == 0);
	CHECK(memcmp(back, counting, 12) == 0);

	/* Node ids: 8 bytes, 13 characters. */
	const uint8_t node[8] = {0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88};
	char ns[B32_LEN(8) + 1];
	uint8_t nback[8];
	b32_encode(node, 8, ns);
	CHECK(strlen(ns) == 13);
	CHECK(b32_decode(ns, 13, nback, 8) == 0);
	CHECK(memcmp(nback, node, 8) == 0);
	const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	b32_encode(ones, 8, ns);
	CHECK_STR(ns, "ZZZZZZZZZZZZY"); /* 64 ones, then a zero pad bit: 11110 */

	/* Leftover bits are dropped, as Icechunk drops them: the last A's low
	 * bits vanish, so the canonical form ends in 0. */
	CHECK(b32_decode("AAAAAAAAAAAAAAAAAAAA", 20, back, 12) == 0);
	b32_encode(back, 12, s);
	CHECK_STR(s, "AAAAAAAAAAAAAAAAAAA0");

	/* Every byte value survives, at every position. */
	int all_ok = 1;
	for (int v = 0; v < 256; v++) {
		uint8_t in[12], out[12];
		for (int i = 0; i < 12; i++)
			in[i] = (uint8_t)(v + 37 * i);
		b32_encode(in, 12, s);
		if (b32_decode(s, 20, out, 12) != 0 || memcmp(in, out, 12) != 0)
			all_ok = 0;
	}
	CHECK(all_ok);

	/* Wrong length, and characters outside the alphabet (Crockford's
	 * excluded letters included). */
	CHECK(b32_decode("1CECHNKREP0F1RSTCMT", 19, back, 12) == -1);
	CHECK(b32_decode("1CECHNKREP0F1RSTCMT00", 21, back, 12) == -1);
	CHECK(b32_decode("1CECHNKREP0F1RSTCMTU", 20, back, 12) == -1);
	CHECK(b32_decode("1CECHNKREPOF1RSTCMT0", 20, back, 12) == -1);
	CHECK(b32_decode("ICECHNKREP0F1RSTCMT0", 20, back, 12) == -1);
	CHECK(b32_decode("LCECHNKREP0F1RSTCMT0", 20, back, 12) == -1);
	CHECK(b32_decode("1CECHNKREP-F1RSTCMT0", 20, back, 12) == -1);
	CHECK(b32_decode("1CECHNKREP\0F1RSTCMT0", 20, back, 12) == -1);

	CHECK_DONE();
}
