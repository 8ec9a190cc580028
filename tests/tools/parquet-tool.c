/* The Parquet reader and writer (format/parquet.h) from the command line,
 * for tests/e2e/test_parquet.py:
 *
 *   parquet-tool rows FILE [COLUMN...]   the rows as a JSON array (all
 *                                        top-level columns when none named)
 *   parquet-tool info FILE               {"num_rows", "kv": {key: value}}
 *
 * Errors go to stderr as one line; exit 1. */
#include "format/parquet.h"
#include "format/parquet_internal.h"

#include <tether.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(void)
{
	fprintf(stderr, "%s\n", tether_error_last());
	return 1;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		perror(path);
		return NULL;
	}
	unsigned char *buf = NULL;
	size_t cap = 0;
	*len = 0;
	for (;;) {
		if (*len == cap) {
			cap = cap ? cap * 2 : 65536;
			unsigned char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(fp);
				return NULL;
			}
			buf = nb;
		}
		size_t got = fread(buf + *len, 1, cap - *len, fp);
		if (got == 0)
			break;
		*len += got;
	}
	fclose(fp);
	return buf;
}

static int cmd_read(int argc, char **argv, bool info)
{
	size_t len;
	unsigned char *data = slurp(argv[2], &len);
	if (!data)
		return 1;
	struct tt_parquet_file *f;
	if (tt_parquet_open(data, len, argv[2], &f) != 0) {
		free(data);
		return fail();
	}
	json_t *out = NULL;
	int rc = 0;
	if (info) {
		json_t *kv = json_object();
		for (size_t i = 0; i < f->nkvs; i++)
			json_object_set_new(kv, f->kvs[i].key, f->kvs[i].value ? json_string(f->kvs[i].value) : json_null());
		out = json_pack("{s:I,s:o}", "num_rows", (json_int_t)tt_parquet_num_rows(f), "kv", kv);
	} else {
		const char **cols;
		size_t n;
		const struct pq_node *root = &f->nodes[0];
		if (argc > 3) {
			cols = (const char **)argv + 3;
			n = (size_t)argc - 3;
			rc = tt_parquet_read_rows(f, cols, n, &out);
		} else {
			cols = calloc(root->nchildren, sizeof *cols);
			for (uint32_t i = 0; i < root->nchildren; i++)
				cols[i] = f->nodes[root->children[i]].name;
			rc = tt_parquet_read_rows(f, cols, root->nchildren, &out);
			free(cols);
		}
	}
	tt_parquet_close(f);
	free(data);
	if (rc != 0)
		return fail();
	char *s = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	json_decref(out);
	if (!s)
		return 1;
	puts(s);
	free(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "rows") == 0)
		return cmd_read(argc, argv, false);
	if (argc == 3 && strcmp(argv[1], "info") == 0)
		return cmd_read(argc, argv, true);
	fprintf(stderr, "usage: parquet-tool rows FILE [COLUMN...] | info FILE\n");
	return 2;
}
