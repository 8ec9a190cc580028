/* The native commit parser (tt_gcommit_parse, gitrevwalk.c), which the
 * history walk runs on every commit of a clone: on any bytes it must stay
 * inside the buffer, and what it accepts must be what it says (a tree id,
 * parent lines inside the buffer, each 48 bytes of "parent <hex>\n"). */
#include "fuzz.h"

#include "vcs/gitrevwalk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so ASan sees a read past it */
	unsigned char *copy = malloc(size ? size : 1);
	FUZZ_ASSERT(copy);
	memcpy(copy, data, size);
	struct tt_gcommit c;
	const char *why = NULL;
	if (tt_gcommit_parse(copy, size, &c, &why) == 0) {
		FUZZ_ASSERT(size >= 46 && memcmp(copy, "tree ", 5) == 0);
		FUZZ_ASSERT(c.parent_hex == (const char *)copy + 53);
		FUZZ_ASSERT(46 + 48 * c.nparents <= size);
		for (size_t i = 0; i < c.nparents; i++) {
			unsigned char id[20];
			FUZZ_ASSERT(memcmp(c.parent_hex + 48 * i - 7, "parent ", 7) == 0);
			FUZZ_ASSERT(tt_goid_from_hex(c.parent_hex + 48 * i, id) == 0);
		}
	} else {
		FUZZ_ASSERT(why != NULL && *why);
	}
	free(copy);
	return 0;
}
