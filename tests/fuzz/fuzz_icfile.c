/* Icechunk file envelope: header parse and decompression under a small
 * cap; whatever decodes must survive a write and a second read intact. */
#include "fuzz.h"

#include "format/icfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct icf_header h;
	uint8_t *payload = NULL;
	size_t plen = 0;
	uint8_t want = size > 37 ? data[37] : 0;
	if (icf_read(data, size, 0, 1 << 16, "fuzz", &h, &payload, &plen) != 0) {
		FUZZ_ASSERT(payload == NULL);
		return 0;
	}
	FUZZ_ASSERT(plen <= 1 << 16);
	FUZZ_ASSERT(h.spec == 1 || h.spec == 2);
	FUZZ_ASSERT(h.compression == 1);
	FUZZ_ASSERT(strlen(h.impl) <= 24);

	/* A cap one byte short of the payload must refuse it. */
	struct icf_header h2;
	uint8_t *p2 = NULL;
	size_t l2 = 0;
	if (plen > 0)
		FUZZ_ASSERT(icf_read(data, size, want, plen - 1, "fuzz", &h2, &p2, &l2) != 0 && p2 == NULL);

	uint8_t *file = NULL;
	size_t flen = 0;
	FUZZ_ASSERT(icf_write(h.spec, h.type, h.impl, payload, plen, 1, &file, &flen) == 0);
	FUZZ_ASSERT(icf_read(file, flen, want, plen, "fuzz", &h2, &p2, &l2) == 0);
	FUZZ_ASSERT(l2 == plen && (plen == 0 || memcmp(p2, payload, plen) == 0));
	FUZZ_ASSERT(h2.type == h.type && h2.spec == h.spec);
	free(p2);
	free(file);
	free(payload);
	return 0;
}
