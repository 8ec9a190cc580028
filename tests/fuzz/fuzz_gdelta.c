/* The git delta applier (tt_gdelta_apply): the first two bytes give the
 * base's length, the base follows, the delta is the rest. What it returns
 * must be exactly the size the delta declared, NUL-terminated. */
#include "fuzz.h"

#include "vcs/gitodb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t base_len = (size_t)data[0] << 8 | data[1];
	if (base_len > size - 2)
		base_len = size - 2;
	/* exact-size copies, so ASan sees a read past either */
	unsigned char *base = malloc(base_len ? base_len : 1), *delta = malloc(size - 2 - base_len + 1);
	FUZZ_ASSERT(base && delta);
	memcpy(base, data + 2, base_len);
	memcpy(delta, data + 2 + base_len, size - 2 - base_len);
	unsigned char *out = NULL;
	size_t out_len = 0;
	if (tt_gdelta_apply(base, base_len, delta, size - 2 - base_len, &out, &out_len) == 0) {
		FUZZ_ASSERT(out != NULL && out[out_len] == '\0');
		free(out);
	}
	free(base);
	free(delta);
	return 0;
}
