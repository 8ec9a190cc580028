/* FlexBuffers: decode anything; what decodes must encode, decode again to
 * an equal value, and encode again to the same bytes. */
#include "fuzz.h"

#include "format/flexbuf.h"

#include <tether.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = NULL;
	if (flex_decode(data, size, &v) != 0) {
		FUZZ_ASSERT(v == NULL);
		return 0;
	}
	FUZZ_ASSERT(v != NULL);
	uint8_t *enc = NULL, *enc2 = NULL;
	size_t elen = 0, elen2 = 0;
	FUZZ_ASSERT(flex_encode(v, &enc, &elen) == 0);
	json_t *again = NULL;
	if (flex_decode(enc, elen, &again) != 0) {
		/* Only the size-bound allowance may refuse it, and only when the
		 * re-encoding is smaller than the input (shared keys can make the
		 * text grow faster than the buffer). */
		FUZZ_ASSERT(strstr(tether_error_last(), "more data than the buffer") && elen < size);
		free(enc);
		json_decref(v);
		return 0;
	}
	FUZZ_ASSERT(json_equal(v, again));
	FUZZ_ASSERT(flex_encode(again, &enc2, &elen2) == 0);
	FUZZ_ASSERT(elen == elen2 && memcmp(enc, enc2, elen) == 0);
	free(enc);
	free(enc2);
	json_decref(again);
	json_decref(v);
	return 0;
}
