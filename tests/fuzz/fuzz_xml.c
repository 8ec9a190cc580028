/* The XML reader, on what a hostile or broken server answers (S3's and
 * Azure's listings and errors, STS). Beyond not crashing: a document is
 * either parsed or refused with "NAME:LINE:COL: why"; every element of a
 * parsed one has a non-empty name and text, its nesting stays within the
 * cap, and every lookup works on every node. */
#include "fuzz.h"

#include "format/xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void walk(const struct tt_xml_node *n, int depth)
{
	FUZZ_ASSERT(depth <= 64);
	for (; n; n = tt_xml_next(n, NULL)) {
		FUZZ_ASSERT(tt_xml_name(n) && tt_xml_name(n)[0]);
		FUZZ_ASSERT(tt_xml_text(n) != NULL);
		const struct tt_xml_node *same = tt_xml_child(n, tt_xml_name(n));
		FUZZ_ASSERT(!same || strcmp(tt_xml_name(same), tt_xml_name(n)) == 0);
		(void)tt_xml_attr(n, "xmlns");
		(void)tt_xml_child_text(n, "Key");
		walk(tt_xml_child(n, NULL), depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct tt_xml_doc *d = tt_xml_parse((const char *)data, size, "fuzz", err, sizeof err);
	if (!d) {
		unsigned long line = 0, col = 0;
		FUZZ_ASSERT(sscanf(err, "fuzz:%lu:%lu: ", &line, &col) == 2 && line >= 1 && col >= 1);
		FUZZ_ASSERT(strlen(err) > strlen("fuzz:1:1: "));
		return 0;
	}
	walk(tt_xml_root(d), 1);
	tt_xml_free(d);
	return 0;
}
