/* Lance manifest files: the footer, the length-prefixed Manifest and the
 * flags. Whatever decodes must pack back (protobuf-c keeping the fields
 * tether does not declare) to a message that decodes to the same bytes
 * again, and a file cut short by one byte must be refused. */
#include "fuzz.h"

#include "backends/lance/lance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lc_manifest m;
	int rc = lc_manifest_parse(data, size, "fuzz", &m);
	if (rc != 0) {
		lc_manifest_free(&m);
		return 0;
	}
	FUZZ_ASSERT(m.m != NULL);
	size_t n = tether_lance__manifest__get_packed_size(m.m);
	uint8_t *a = malloc(n ? n : 1);
	FUZZ_ASSERT(a != NULL);
	tether_lance__manifest__pack(m.m, a);
	TetherLance__Manifest *again = tether_lance__manifest__unpack(NULL, n, a);
	FUZZ_ASSERT(again != NULL);
	size_t n2 = tether_lance__manifest__get_packed_size(again);
	uint8_t *b = malloc(n2 ? n2 : 1);
	FUZZ_ASSERT(b != NULL);
	tether_lance__manifest__pack(again, b);
	FUZZ_ASSERT(n2 == n && memcmp(a, b, n) == 0);
	FUZZ_ASSERT(again->version == m.version && again->n_fragments == m.m->n_fragments);
	tether_lance__manifest__free_unpacked(again, NULL);
	free(a);
	free(b);
	lc_manifest_free(&m);
	struct lc_manifest cut;
	FUZZ_ASSERT(lc_manifest_parse(data, size - 1, "fuzz", &cut) != 0);
	lc_manifest_free(&cut);
	return 0;
}
