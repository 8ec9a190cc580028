/* The Parquet reader on hostile bytes (a clone's Delta checkpoint): open
 * the footer, read every top-level column's rows. Whatever is accepted
 * must be one JSON object per row; whatever is refused must leave nothing
 * behind. Built with a small decoded-bytes limit, so a bomb is refused
 * well inside libFuzzer's memory limit. */
#include "fuzz.h"

#include "format/parquet.h"
#include "format/parquet_internal.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tt_parquet_file *f = NULL;
	if (tt_parquet_open(data, size, "fuzz", &f) != 0) {
		FUZZ_ASSERT(f == NULL);
		return 0;
	}
	FUZZ_ASSERT(tt_parquet_num_rows(f) >= 0);
	(void)tt_parquet_kv(f, "ARROW:schema");
	const struct pq_node *root = &f->nodes[0];
	const char **names = calloc(root->nchildren + 1, sizeof *names);
	FUZZ_ASSERT(names);
	for (uint32_t i = 0; i < root->nchildren; i++)
		names[i] = f->nodes[root->children[i]].name;
	names[root->nchildren] = "no such column";
	json_t *rows = NULL;
	if (tt_parquet_read_rows(f, names, root->nchildren + 1, &rows) == 0) {
		FUZZ_ASSERT(json_is_array(rows));
		FUZZ_ASSERT((int64_t)json_array_size(rows) == tt_parquet_num_rows(f));
		size_t i;
		json_t *row;
		json_array_foreach (rows, i, row) {
			FUZZ_ASSERT(json_is_object(row));
			FUZZ_ASSERT(json_object_get(row, "no such column") == NULL);
		}
		json_decref(rows);
	} else {
		FUZZ_ASSERT(rows == NULL);
	}
	/* A read of no column gives the rows' count of empty objects. */
	if (tt_parquet_read_rows(f, NULL, 0, &rows) == 0) {
		FUZZ_ASSERT((int64_t)json_array_size(rows) == tt_parquet_num_rows(f));
		json_decref(rows);
	}
	free(names);
	tt_parquet_close(f);
	return 0;
}
