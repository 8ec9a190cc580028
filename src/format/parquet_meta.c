/* The Parquet footer: FileMetaData in the Thrift compact protocol, read
 * field by field with every count, offset and nesting checked. Fields the
 * reader has no use for are skipped (so newer writers' additions pass). */
#include "format/parquet_internal.h"
#include "format/thrift_compact.h"

#include <tether/backend.h>

#include <stdlib.h>
#include <string.h>

static const uint8_t pq_magic[4] = {'P', 'A', 'R', '1'};

/* A NUL-terminated copy of a Thrift string; NULL on a NUL inside or OOM
 * (*oom tells which). */
static char *pq_strdup(const uint8_t *s, size_t n, bool *oom)
{
	*oom = false;
	if (memchr(s, 0, n))
		return NULL;
	char *c = malloc(n + 1);
	if (!c) {
		*oom = true;
		return NULL;
	}
	memcpy(c, s, n);
	c[n] = '\0';
	return c;
}

/* IntType {1: i8 bitWidth, 2: bool isSigned}. */
static int pq_int_type(struct tc_reader *r, bool *is_unsigned)
{
	int16_t last;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	for (;;) {
		int t;
		int16_t id;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		bool b;
		if (id == 2) {
			if (tc_bool(r, t, &b) != 0)
				return -1;
			*is_unsigned = !b;
		} else if (tc_skip(r, t) != 0) {
			return -1;
		}
	}
	tc_struct_end(r);
	return 0;
}

/* LogicalType, a union: the member's field id is the kind. */
static int pq_logical_type(struct tc_reader *r, struct pq_node *n)
{
	int16_t last;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	for (;;) {
		int t;
		int16_t id;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		if (t != TC_STRUCT)
			return tc_fail(r, "logical type member not a struct");
		n->logical = id;
		if (id == PQ_LT_INTEGER) {
			if (pq_int_type(r, &n->is_unsigned) != 0)
				return -1;
		} else if (tc_skip(r, t) != 0) {
			return -1;
		}
	}
	tc_struct_end(r);
	return 0;
}

/* One SchemaElement; *num_children is -1 when absent (a leaf). */
static int pq_schema_element(struct tc_reader *r, struct pq_node *n, int32_t *num_children, bool *oom)
{
	int16_t last;
	bool have_name = false;
	n->type = PQ_GROUP;
	n->repetition = PQ_REQUIRED;
	n->converted = PQ_CT_NONE;
	*num_children = -1;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	for (;;) {
		int t;
		int16_t id;
		int32_t v;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		switch (id) {
		case 1:
			if (tc_i32(r, t, &v) != 0)
				return -1;
			if (v < PQ_BOOLEAN || v > PQ_FIXED_LEN_BYTE_ARRAY)
				return tc_fail(r, "unknown physical type");
			n->type = v;
			break;
		case 2:
			if (tc_i32(r, t, &n->type_length) != 0)
				return -1;
			break;
		case 3:
			if (tc_i32(r, t, &v) != 0)
				return -1;
			if (v < PQ_REQUIRED || v > PQ_REPEATED)
				return tc_fail(r, "unknown repetition type");
			n->repetition = v;
			break;
		case 4: {
			const uint8_t *s;
			size_t len;
			if (tc_binary(r, t, &s, &len) != 0)
				return -1;
			free(n->name);
			n->name = pq_strdup(s, len, oom);
			if (!n->name)
				return *oom ? -1 : tc_fail(r, "schema name with a NUL byte");
			have_name = true;
			break;
		}
		case 5:
			if (tc_i32(r, t, num_children) != 0)
				return -1;
			if (*num_children < 0)
				return tc_fail(r, "negative num_children");
			break;
		case 6:
			if (tc_i32(r, t, &n->converted) != 0)
				return -1;
			break;
		case 10:
			if (t != TC_STRUCT)
				return tc_fail(r, "logical type not a struct");
			if (pq_logical_type(r, n) != 0)
				return -1;
			break;
		default:
			if (tc_skip(r, t) != 0)
				return -1;
		}
	}
	tc_struct_end(r);
	if (!have_name)
		return tc_fail(r, "schema element without a name");
	return 0;
}

/* The flat, depth-first element list as a tree: node i's children follow
 * it. *next is the next element to place. */
static int pq_build_tree(struct tt_parquet_file *f, struct tc_reader *r, const int32_t *nchild, size_t *next,
                         int32_t parent, int depth, uint32_t *leaves)
{
	if (*next >= f->nnodes)
		return tc_fail(r, "schema num_children past the last element");
	size_t i = (*next)++;
	struct pq_node *n = &f->nodes[i];
	if (depth > PQ_MAX_SCHEMA_DEPTH)
		return tc_fail(r, "schema nested too deep");
	n->parent = parent;
	if (parent >= 0) {
		const struct pq_node *p = &f->nodes[parent];
		n->def = p->def + (n->repetition != PQ_REQUIRED);
		n->rep = p->rep + (n->repetition == PQ_REPEATED);
	} else {
		n->repetition = PQ_REQUIRED; /* the root's own repetition means nothing */
	}
	n->leaf_first = *leaves;
	bool is_group = nchild[i] >= 0 || parent < 0;
	if (!is_group) {
		if (n->type == PQ_GROUP)
			return tc_fail(r, "schema leaf without a type");
		if (n->type == PQ_FIXED_LEN_BYTE_ARRAY && n->type_length <= 0)
			return tc_fail(r, "fixed-length byte array without a length");
		n->is_string = (n->type == PQ_BYTE_ARRAY || n->type == PQ_FIXED_LEN_BYTE_ARRAY) &&
		               (n->converted == PQ_CT_UTF8 || n->converted == PQ_CT_ENUM || n->converted == PQ_CT_JSON ||
		                n->logical == PQ_LT_STRING || n->logical == PQ_LT_ENUM || n->logical == PQ_LT_JSON);
		if (n->converted >= PQ_CT_UINT_8 && n->converted <= PQ_CT_UINT_64)
			n->is_unsigned = true;
		f->leaf_node[(*leaves)++] = (uint32_t)i;
		n->leaf_count = 1;
		return 0;
	}
	int32_t k = nchild[i] < 0 ? 0 : nchild[i];
	if ((size_t)k > f->nnodes - *next)
		return tc_fail(r, "schema num_children past the last element");
	if (k == 0)
		return tc_fail(r, "schema group without fields");
	n->type = PQ_GROUP;
	n->children = calloc((size_t)k, sizeof *n->children);
	if (!n->children)
		return -2;
	n->nchildren = (uint32_t)k;
	for (int32_t c = 0; c < k; c++) {
		n->children[c] = (uint32_t)*next;
		int rc = pq_build_tree(f, r, nchild, next, (int32_t)i, depth + 1, leaves);
		if (rc != 0)
			return rc;
	}
	n->leaf_count = *leaves - n->leaf_first;
	return 0;
}

static int pq_schema(struct tt_parquet_file *f, struct tc_reader *r, int type, bool *oom)
{
	int et;
	uint32_t count;
	if (f->nodes)
		return tc_fail(r, "two schemas");
	if (tc_list_begin(r, type, &et, &count) != 0)
		return -1;
	if (et != TC_STRUCT || count == 0)
		return tc_fail(r, "schema not a list of elements");
	f->nodes = calloc(count, sizeof *f->nodes);
	int32_t *nchild = calloc(count, sizeof *nchild);
	f->leaf_node = calloc(count, sizeof *f->leaf_node);
	if (!f->nodes || !nchild || !f->leaf_node) {
		free(nchild);
		*oom = true;
		return -1;
	}
	f->nnodes = count;
	int rc = 0;
	for (uint32_t i = 0; i < count && rc == 0; i++)
		rc = pq_schema_element(r, &f->nodes[i], &nchild[i], oom);
	if (rc == 0) {
		size_t next = 0;
		uint32_t leaves = 0;
		rc = pq_build_tree(f, r, nchild, &next, -1, 0, &leaves);
		if (rc == -2) {
			*oom = true;
			rc = -1;
		} else if (rc == 0 && next != count) {
			rc = tc_fail(r, "schema elements past the root's fields");
		}
		f->nleaves = leaves;
	}
	free(nchild);
	return rc;
}

static int pq_column_meta(struct tc_reader *r, struct pq_chunk *c)
{
	int16_t last;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	c->has_meta = true;
	c->type = -1;
	c->codec = -1;
	c->data_page_offset = -1;
	c->compressed_size = -1;
	c->num_values = -1;
	for (;;) {
		int t;
		int16_t id;
		int rc = 0;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		switch (id) {
		case 1:
			rc = tc_i32(r, t, &c->type);
			break;
		case 4:
			rc = tc_i32(r, t, &c->codec);
			break;
		case 5:
			rc = tc_i64(r, t, &c->num_values);
			break;
		case 7:
			rc = tc_i64(r, t, &c->compressed_size);
			break;
		case 9:
			rc = tc_i64(r, t, &c->data_page_offset);
			break;
		case 11:
			rc = tc_i64(r, t, &c->dictionary_page_offset);
			break;
		default:
			rc = tc_skip(r, t);
		}
		if (rc != 0)
			return -1;
	}
	tc_struct_end(r);
	if (c->type < 0 || c->codec < 0 || c->num_values < 0 || c->compressed_size < 0 || c->data_page_offset < 0)
		return tc_fail(r, "column metadata without its required fields");
	return 0;
}

static int pq_column_chunk(struct tc_reader *r, struct pq_chunk *c)
{
	int16_t last;
	c->dictionary_page_offset = -1;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	for (;;) {
		int t;
		int16_t id;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		if (id == 1) {
			c->external = true;
			if (tc_skip(r, t) != 0)
				return -1;
		} else if (id == 3) {
			if (t != TC_STRUCT)
				return tc_fail(r, "column metadata not a struct");
			if (pq_column_meta(r, c) != 0)
				return -1;
		} else if (tc_skip(r, t) != 0) {
			return -1;
		}
	}
	tc_struct_end(r);
	return 0;
}

static int pq_row_group(struct tt_parquet_file *f, struct tc_reader *r, struct pq_row_group *g, bool *oom)
{
	int16_t last;
	bool have_columns = false, have_rows = false;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	for (;;) {
		int t;
		int16_t id;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		if (id == 1) {
			int et;
			uint32_t n;
			if (have_columns || tc_list_begin(r, t, &et, &n) != 0)
				return tc_fail(r, "row group columns repeated or not a list");
			if (et != TC_STRUCT || n != f->nleaves)
				return tc_fail(r, "row group with another number of columns than the schema's");
			g->chunks = calloc(n ? n : 1, sizeof *g->chunks);
			if (!g->chunks) {
				*oom = true;
				return -1;
			}
			have_columns = true;
			for (uint32_t i = 0; i < n; i++) {
				if (pq_column_chunk(r, &g->chunks[i]) != 0)
					return -1;
			}
		} else if (id == 3) {
			if (tc_i64(r, t, &g->num_rows) != 0)
				return -1;
			if (g->num_rows < 0)
				return tc_fail(r, "negative row count");
			have_rows = true;
		} else if (tc_skip(r, t) != 0) {
			return -1;
		}
	}
	tc_struct_end(r);
	if (!have_columns || !have_rows)
		return tc_fail(r, "row group without columns or row count");
	return 0;
}

static int pq_kv_list(struct tt_parquet_file *f, struct tc_reader *r, int type, bool *oom)
{
	int et;
	uint32_t n;
	if (f->kvs || tc_list_begin(r, type, &et, &n) != 0 || et != TC_STRUCT)
		return tc_fail(r, "key-value metadata repeated or not a list");
	f->kvs = calloc(n ? n : 1, sizeof *f->kvs);
	if (!f->kvs) {
		*oom = true;
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		int16_t last;
		struct pq_kv *kv = &f->kvs[f->nkvs++];
		if (tc_struct_begin(r, &last) != 0)
			return -1;
		for (;;) {
			int t;
			int16_t id;
			const uint8_t *s;
			size_t len;
			if (tc_field(r, &last, &t, &id) != 0)
				return -1;
			if (t == TC_STOP)
				break;
			if (id == 1 || id == 2) {
				if (tc_binary(r, t, &s, &len) != 0)
					return -1;
				char **slot = id == 1 ? &kv->key : &kv->value;
				free(*slot);
				*slot = pq_strdup(s, len, oom);
				if (!*slot)
					return *oom ? -1 : tc_fail(r, "key-value metadata with a NUL byte");
			} else if (tc_skip(r, t) != 0) {
				return -1;
			}
		}
		tc_struct_end(r);
		if (!kv->key)
			return tc_fail(r, "key-value metadata without a key");
	}
	return 0;
}

static int pq_file_metadata(struct tt_parquet_file *f, struct tc_reader *r, bool *oom)
{
	int16_t last;
	bool have_rows = false, have_groups = false;
	if (tc_struct_begin(r, &last) != 0)
		return -1;
	for (;;) {
		int t;
		int16_t id;
		if (tc_field(r, &last, &t, &id) != 0)
			return -1;
		if (t == TC_STOP)
			break;
		int rc = 0;
		switch (id) {
		case 2:
			rc = pq_schema(f, r, t, oom);
			break;
		case 3:
			rc = tc_i64(r, t, &f->num_rows);
			if (rc == 0 && f->num_rows < 0)
				rc = tc_fail(r, "negative row count");
			have_rows = true;
			break;
		case 4: {
			int et;
			uint32_t n;
			if (!f->nodes)
				return tc_fail(r, "row groups before the schema");
			if (f->rgs || tc_list_begin(r, t, &et, &n) != 0 || et != TC_STRUCT)
				return tc_fail(r, "row groups repeated or not a list");
			f->rgs = calloc(n ? n : 1, sizeof *f->rgs);
			if (!f->rgs) {
				*oom = true;
				return -1;
			}
			have_groups = true;
			for (uint32_t i = 0; i < n && rc == 0; i++) {
				f->nrgs++;
				rc = pq_row_group(f, r, &f->rgs[i], oom);
			}
			break;
		}
		case 5:
			rc = pq_kv_list(f, r, t, oom);
			break;
		default:
			rc = tc_skip(r, t);
		}
		if (rc != 0)
			return -1;
	}
	tc_struct_end(r);
	if (!f->nodes || !have_rows || !have_groups)
		return tc_fail(r, "file metadata without schema, row count or row groups");
	return 0;
}

int pq_parse_footer(struct tt_parquet_file *f)
{
	if (f->len < 12 || memcmp(f->data, pq_magic, 4) != 0)
		return tether_error_set(TETHER_EIO, "%s: not a Parquet file (no PAR1 at the start)", f->what);
	const uint8_t *tail = f->data + f->len - 8;
	if (memcmp(tail + 4, "PARE", 4) == 0)
		return tether_error_set(TETHER_EIO, "%s: encrypted Parquet footer (not supported)", f->what);
	if (memcmp(tail + 4, pq_magic, 4) != 0)
		return tether_error_set(TETHER_EIO, "%s: not a Parquet file or truncated (no PAR1 at the end)", f->what);
	uint32_t flen = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24;
	if (flen > f->len - 12)
		return tether_error_set(TETHER_EIO, "%s: footer length %u past the start of the file", f->what, flen);
	f->footer_start = f->len - 8 - flen;
	struct tc_reader r;
	tc_reader_init(&r, f->data + f->footer_start, flen);
	bool oom = false;
	if (pq_file_metadata(f, &r, &oom) != 0) {
		if (oom)
			return tether_error_set(TETHER_ERROR, "%s: out of memory reading the footer", f->what);
		return tether_error_set(TETHER_EIO, "%s: footer corrupt: %s at byte %zu of %u", f->what,
		                        r.err ? r.err : "unreadable", r.err_at, flen);
	}
	int64_t sum = 0;
	for (size_t i = 0; i < f->nrgs; i++) {
		if (f->rgs[i].num_rows > INT64_MAX - sum)
			return tether_error_set(TETHER_EIO, "%s: footer corrupt: row counts overflow", f->what);
		sum += f->rgs[i].num_rows;
	}
	if (sum != f->num_rows)
		return tether_error_set(TETHER_EIO, "%s: footer corrupt: %lld rows in the row groups, %lld in the file",
		                        f->what, (long long)sum, (long long)f->num_rows);
	return 0;
}

void pq_file_free(struct tt_parquet_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nnodes; i++) {
		free(f->nodes[i].name);
		free(f->nodes[i].children);
	}
	free(f->nodes);
	free(f->leaf_node);
	for (size_t i = 0; i < f->nrgs; i++)
		free(f->rgs[i].chunks);
	free(f->rgs);
	for (size_t i = 0; i < f->nkvs; i++) {
		free(f->kvs[i].key);
		free(f->kvs[i].value);
	}
	free(f->kvs);
	free(f->what);
	free(f);
}

const char *pq_leaf_path(const struct tt_parquet_file *f, uint32_t leaf, char *buf, size_t size)
{
	/* Walk up to the root, then write the names root-first. */
	uint32_t chain[PQ_MAX_SCHEMA_DEPTH + 2];
	size_t depth = 0;
	int32_t n = (int32_t)f->leaf_node[leaf];
	while (n > 0 && depth < sizeof chain / sizeof *chain) {
		chain[depth++] = (uint32_t)n;
		n = f->nodes[n].parent;
	}
	size_t len = 0;
	buf[0] = '\0';
	while (depth > 0 && len + 1 < size) {
		const char *name = f->nodes[chain[--depth]].name;
		size_t nl = strlen(name);
		if (len && len + 1 < size)
			buf[len++] = '.';
		if (nl > size - 1 - len)
			nl = size - 1 - len;
		memcpy(buf + len, name, nl);
		len += nl;
		buf[len] = '\0';
	}
	return buf;
}
