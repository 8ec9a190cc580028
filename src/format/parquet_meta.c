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
static int pq_int_type_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_node *n = ctx;
	bool is_signed;
	if (id != 2)
		return TC_FIELD_SKIP;
	if (tc_bool(r, type, &is_signed) != 0)
		return -1;
	n->is_unsigned = !is_signed;
	return 0;
}

/* LogicalType, a union: the member's field id is the kind. */
static int pq_logical_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_node *n = ctx;
	if (type != TC_STRUCT)
		return tc_fail(r, "logical type member not a struct");
	n->logical = id;
	return id == PQ_LT_INTEGER ? tc_read_struct(r, pq_int_type_field, n) : TC_FIELD_SKIP;
}

struct pq_element_ctx {
	struct pq_node *n;
	int32_t *num_children;
	bool *oom;
	bool have_name;
};

static int pq_element_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_element_ctx *e = ctx;
	struct pq_node *n = e->n;
	int32_t v;
	switch (id) {
	case 1:
		if (tc_i32(r, type, &v) != 0)
			return -1;
		if (v < PQ_BOOLEAN || v > PQ_FIXED_LEN_BYTE_ARRAY)
			return tc_fail(r, "unknown physical type");
		n->type = v;
		return 0;
	case 2:
		return tc_i32(r, type, &n->type_length);
	case 3:
		if (tc_i32(r, type, &v) != 0)
			return -1;
		if (v < PQ_REQUIRED || v > PQ_REPEATED)
			return tc_fail(r, "unknown repetition type");
		n->repetition = v;
		return 0;
	case 4: {
		const uint8_t *s;
		size_t len;
		if (tc_binary(r, type, &s, &len) != 0)
			return -1;
		free(n->name);
		n->name = pq_strdup(s, len, e->oom);
		if (!n->name)
			return *e->oom ? -1 : tc_fail(r, "schema name with a NUL byte");
		e->have_name = true;
		return 0;
	}
	case 5:
		if (tc_i32(r, type, e->num_children) != 0)
			return -1;
		return *e->num_children < 0 ? tc_fail(r, "negative num_children") : 0;
	case 6:
		return tc_i32(r, type, &n->converted);
	case 10:
		if (type != TC_STRUCT)
			return tc_fail(r, "logical type not a struct");
		return tc_read_struct(r, pq_logical_field, n);
	default:
		return TC_FIELD_SKIP;
	}
}

/* One SchemaElement; *num_children is -1 when absent (a leaf). */
static int pq_schema_element(struct tc_reader *r, struct pq_node *n, int32_t *num_children, bool *oom)
{
	struct pq_element_ctx e = {n, num_children, oom, false};
	n->type = PQ_GROUP;
	n->repetition = PQ_REQUIRED;
	n->converted = PQ_CT_NONE;
	*num_children = -1;
	if (tc_read_struct(r, pq_element_field, &e) != 0)
		return -1;
	if (!e.have_name)
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

static int pq_column_meta_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_chunk *c = ctx;
	switch (id) {
	case 1:
		return tc_i32(r, type, &c->type);
	case 4:
		return tc_i32(r, type, &c->codec);
	case 5:
		return tc_i64(r, type, &c->num_values);
	case 7:
		return tc_i64(r, type, &c->compressed_size);
	case 9:
		return tc_i64(r, type, &c->data_page_offset);
	case 11:
		return tc_i64(r, type, &c->dictionary_page_offset);
	default:
		return TC_FIELD_SKIP;
	}
}

/* ColumnChunk {1: file_path, 3: ColumnMetaData}. */
static int pq_column_chunk_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_chunk *c = ctx;
	if (id == 1) {
		c->external = true;
		return TC_FIELD_SKIP;
	}
	if (id != 3)
		return TC_FIELD_SKIP;
	if (type != TC_STRUCT)
		return tc_fail(r, "column metadata not a struct");
	c->has_meta = true;
	c->type = c->codec = -1;
	c->data_page_offset = c->compressed_size = c->num_values = -1;
	if (tc_read_struct(r, pq_column_meta_field, c) != 0)
		return -1;
	if (c->type < 0 || c->codec < 0 || c->num_values < 0 || c->compressed_size < 0 || c->data_page_offset < 0)
		return tc_fail(r, "column metadata without its required fields");
	return 0;
}

struct pq_group_ctx {
	struct tt_parquet_file *f;
	struct pq_row_group *g;
	bool *oom;
	bool have_columns, have_rows;
};

static int pq_row_group_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_group_ctx *x = ctx;
	struct pq_row_group *g = x->g;
	if (id == 1) {
		int et;
		uint32_t n;
		if (x->have_columns || tc_list_begin(r, type, &et, &n) != 0)
			return tc_fail(r, "row group columns repeated or not a list");
		if (et != TC_STRUCT || n != x->f->nleaves)
			return tc_fail(r, "row group with another number of columns than the schema's");
		g->chunks = calloc(n ? n : 1, sizeof *g->chunks);
		if (!g->chunks) {
			*x->oom = true;
			return -1;
		}
		x->have_columns = true;
		for (uint32_t i = 0; i < n; i++) {
			g->chunks[i].dictionary_page_offset = -1;
			if (tc_read_struct(r, pq_column_chunk_field, &g->chunks[i]) != 0)
				return -1;
		}
		return 0;
	}
	if (id == 3) {
		if (tc_i64(r, type, &g->num_rows) != 0)
			return -1;
		x->have_rows = true;
		return g->num_rows < 0 ? tc_fail(r, "negative row count") : 0;
	}
	return TC_FIELD_SKIP;
}

static int pq_row_group(struct tt_parquet_file *f, struct tc_reader *r, struct pq_row_group *g, bool *oom)
{
	struct pq_group_ctx x = {f, g, oom, false, false};
	if (tc_read_struct(r, pq_row_group_field, &x) != 0)
		return -1;
	if (!x.have_columns || !x.have_rows)
		return tc_fail(r, "row group without columns or row count");
	return 0;
}

struct pq_kv_ctx {
	struct pq_kv *kv;
	bool *oom;
};

/* KeyValue {1: key, 2: value}. */
static int pq_kv_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_kv_ctx *x = ctx;
	const uint8_t *s;
	size_t len;
	if (id != 1 && id != 2)
		return TC_FIELD_SKIP;
	if (tc_binary(r, type, &s, &len) != 0)
		return -1;
	char **slot = id == 1 ? &x->kv->key : &x->kv->value;
	free(*slot);
	*slot = pq_strdup(s, len, x->oom);
	if (!*slot)
		return *x->oom ? -1 : tc_fail(r, "key-value metadata with a NUL byte");
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
		struct pq_kv_ctx x = {&f->kvs[f->nkvs++], oom};
		if (tc_read_struct(r, pq_kv_field, &x) != 0)
			return -1;
		if (!x.kv->key)
			return tc_fail(r, "key-value metadata without a key");
	}
	return 0;
}

struct pq_file_ctx {
	struct tt_parquet_file *f;
	bool *oom;
	bool have_rows, have_groups;
};

/* FileMetaData {2: schema, 3: num_rows, 4: row_groups, 5: key_value_metadata}. */
static int pq_file_field(struct tc_reader *r, int16_t id, int type, void *ctx)
{
	struct pq_file_ctx *x = ctx;
	struct tt_parquet_file *f = x->f;
	switch (id) {
	case 2:
		return pq_schema(f, r, type, x->oom);
	case 3:
		if (tc_i64(r, type, &f->num_rows) != 0)
			return -1;
		x->have_rows = true;
		return f->num_rows < 0 ? tc_fail(r, "negative row count") : 0;
	case 4: {
		int et;
		uint32_t n;
		if (!f->nodes)
			return tc_fail(r, "row groups before the schema");
		if (f->rgs || tc_list_begin(r, type, &et, &n) != 0 || et != TC_STRUCT)
			return tc_fail(r, "row groups repeated or not a list");
		f->rgs = calloc(n ? n : 1, sizeof *f->rgs);
		if (!f->rgs) {
			*x->oom = true;
			return -1;
		}
		x->have_groups = true;
		for (uint32_t i = 0; i < n; i++) {
			f->nrgs++;
			if (pq_row_group(f, r, &f->rgs[i], x->oom) != 0)
				return -1;
		}
		return 0;
	}
	case 5:
		return pq_kv_list(f, r, type, x->oom);
	default:
		return TC_FIELD_SKIP;
	}
}

static int pq_file_metadata(struct tt_parquet_file *f, struct tc_reader *r, bool *oom)
{
	struct pq_file_ctx x = {f, oom, false, false};
	if (tc_read_struct(r, pq_file_field, &x) != 0)
		return -1;
	if (!f->nodes || !x.have_rows || !x.have_groups)
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
