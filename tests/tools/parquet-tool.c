/* The Parquet reader and writer (format/parquet.h) from the command line,
 * for tests/e2e/test_parquet.py:
 *
 *   parquet-tool rows FILE [COLUMN...]   the rows as a JSON array (all
 *                                        top-level columns when none named)
 *   parquet-tool info FILE               {"num_rows", "kv": {key: value}}
 *   parquet-tool write FILE              a table from stdin: {"columns":
 *                                        [{"name","type","nullable"}],
 *                                        "row_group_rows": N, "rows": [[..]]}
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

static int parse_type(const char *s, enum tt_parquet_type *t)
{
	static const char *const names[] = {"boolean", "int32", "int64", "double", "string", "timestamp_us"};
	for (int i = 0; i < 6; i++) {
		if (strcmp(s, names[i]) == 0) {
			*t = (enum tt_parquet_type)i;
			return 0;
		}
	}
	return -1;
}

static int cmd_write(const char *path)
{
	json_error_t jerr;
	json_t *spec = json_loadf(stdin, 0, &jerr);
	if (!spec) {
		fprintf(stderr, "stdin:%d:%d: %s\n", jerr.line, jerr.column, jerr.text);
		return 1;
	}
	json_t *jcols = json_object_get(spec, "columns"), *jrows = json_object_get(spec, "rows");
	size_t ncols = json_array_size(jcols);
	struct tt_parquet_column *cols = calloc(ncols ? ncols : 1, sizeof *cols);
	struct tt_parquet_value *vals = calloc(ncols ? ncols : 1, sizeof *vals);
	for (size_t i = 0; i < ncols; i++) {
		json_t *c = json_array_get(jcols, i);
		cols[i].name = json_string_value(json_object_get(c, "name"));
		cols[i].nullable = json_is_true(json_object_get(c, "nullable"));
		if (!cols[i].name || parse_type(json_string_value(json_object_get(c, "type")) ?: "", &cols[i].type) != 0) {
			fprintf(stderr, "stdin: column %zu: bad name or type\n", i);
			return 1;
		}
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	struct tt_parquet_writer *w;
	size_t rgrows = (size_t)json_integer_value(json_object_get(spec, "row_group_rows"));
	if (tt_parquet_writer_new(fd, path, cols, ncols, rgrows, &w) != 0)
		return fail();
	size_t r;
	json_t *row;
	json_array_foreach (jrows, r, row) {
		for (size_t i = 0; i < ncols; i++) {
			json_t *v = json_array_get(row, i);
			memset(&vals[i], 0, sizeof vals[i]);
			if (json_is_null(v) || !v) {
				vals[i].is_null = true;
				continue;
			}
			switch (cols[i].type) {
			case TT_PARQUET_BOOLEAN:
				vals[i].v.b = json_is_true(v);
				break;
			case TT_PARQUET_INT32:
				vals[i].v.i32 = (int32_t)json_integer_value(v);
				break;
			case TT_PARQUET_INT64:
			case TT_PARQUET_TIMESTAMP_US:
				vals[i].v.i64 = json_integer_value(v);
				break;
			case TT_PARQUET_DOUBLE:
				vals[i].v.d = json_number_value(v);
				break;
			case TT_PARQUET_STRING:
				vals[i].v.str.s = json_string_value(v);
				vals[i].v.str.len = json_string_length(v);
				break;
			}
		}
		if (tt_parquet_writer_add(w, vals) != 0) {
			tt_parquet_writer_free(w);
			return fail();
		}
	}
	if (tt_parquet_writer_finish(w) != 0)
		return fail();
	if (close(fd) != 0) {
		perror(path);
		return 1;
	}
	free(cols);
	free(vals);
	json_decref(spec);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "rows") == 0)
		return cmd_read(argc, argv, false);
	if (argc == 3 && strcmp(argv[1], "info") == 0)
		return cmd_read(argc, argv, true);
	if (argc == 3 && strcmp(argv[1], "write") == 0)
		return cmd_write(argv[2]);
	fprintf(stderr, "usage: parquet-tool rows FILE [COLUMN...] | info FILE | write FILE < table.json\n");
	return 2;
}
