/* Reading a Parquet file's rows as JSON: the asked columns' chunks are
 * decoded (parquet_chunk.c), then each row is assembled from the leaves'
 * repetition and definition levels (Dremel's record assembly), one row
 * group at a time. */
#include "format/parquet_internal.h"

#include <tether/backend.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tt_parquet_open(const void *data, size_t len, const char *what, struct tt_parquet_file **out)
{
	*out = NULL;
	struct tt_parquet_file *f = calloc(1, sizeof *f);
	if (!f || !(f->what = strdup(what ? what : "parquet file"))) {
		free(f);
		return tether_error_set(TETHER_ERROR, "%s: out of memory", what ? what : "parquet file");
	}
	f->data = data;
	f->len = len;
	int rc = pq_parse_footer(f);
	if (rc != 0) {
		pq_file_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

void tt_parquet_close(struct tt_parquet_file *f)
{
	pq_file_free(f);
}

int64_t tt_parquet_num_rows(const struct tt_parquet_file *f)
{
	return f->num_rows;
}

const char *tt_parquet_kv(const struct tt_parquet_file *f, const char *key)
{
	for (size_t i = 0; i < f->nkvs; i++) {
		if (strcmp(f->kvs[i].key, key) == 0)
			return f->kvs[i].value;
	}
	return NULL;
}

/* ---- assembly ---- */

struct pq_asm {
	const struct tt_parquet_file *f;
	struct pq_column *cols; /* by leaf index; only the asked ones decoded */
	size_t rg;
	int64_t row;
	int rc;
};

static json_t *pq_asm_fail(struct pq_asm *a, const struct pq_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static json_t *pq_asm_fail(struct pq_asm *a, const struct pq_node *n, const char *fmt, ...)
{
	if (a->rc == 0) {
		char msg[200], path[256];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		pq_leaf_path(a->f, n->leaf_first, path, sizeof path);
		a->rc = tether_error_set(TETHER_EIO, "%s: row group %zu, row %lld, column %s: %s", a->f->what, a->rg,
		                         (long long)a->row, path, msg);
	}
	return NULL;
}

static json_t *pq_asm_oom(struct pq_asm *a)
{
	if (a->rc == 0)
		a->rc = tether_error_set(TETHER_ERROR, "%s: out of memory assembling rows", a->f->what);
	return NULL;
}

/* The levels of the next entry of node n's first leaf. */
static bool pq_peek(struct pq_asm *a, const struct pq_node *n, int *d, int *r)
{
	const struct pq_column *c = &a->cols[n->leaf_first];
	if (c->li >= c->nlevels) {
		pq_asm_fail(a, n, "fewer values than rows");
		return false;
	}
	*d = c->def ? c->def[c->li] : 0;
	*r = c->rep ? c->rep[c->li] : 0;
	return true;
}

/* Node n is absent (null, or an empty list) here: each leaf under it has
 * exactly one entry for that, below n's definition level. */
static bool pq_skip(struct pq_asm *a, const struct pq_node *n)
{
	for (uint32_t l = n->leaf_first; l < n->leaf_first + n->leaf_count; l++) {
		struct pq_column *c = &a->cols[l];
		if (c->li >= c->nlevels) {
			pq_asm_fail(a, n, "fewer values than rows");
			return false;
		}
		if ((c->def ? c->def[c->li] : 0) >= n->def) {
			pq_asm_fail(a, n, "columns of one field disagree on its definition");
			return false;
		}
		c->li++;
	}
	return true;
}

static json_t *pq_node_value(struct pq_asm *a, const struct pq_node *n, bool as_element);

static json_t *pq_leaf_value(struct pq_asm *a, const struct pq_node *n)
{
	struct pq_column *c = &a->cols[n->leaf_first];
	int d = c->def ? c->def[c->li] : 0;
	if (d != n->def)
		return pq_asm_fail(a, n, "definition level %d where %d is due", d, n->def);
	if (c->vi >= c->nvals)
		return pq_asm_fail(a, n, "fewer values than levels");
	c->li++;
	return json_incref(c->vals[c->vi++]);
}

/* How a list's elements are built: the element node's value, or a map's
 * key/value pair. */
enum pq_elem_kind { PQ_ELEM_VALUE, PQ_ELEM_PAIR };

static json_t *pq_pair(struct pq_asm *a, const struct pq_node *kv)
{
	const struct tt_parquet_file *f = a->f;
	json_t *k = pq_node_value(a, &f->nodes[kv->children[0]], false);
	if (!k)
		return NULL;
	json_t *v = kv->nchildren > 1 ? pq_node_value(a, &f->nodes[kv->children[1]], false) : json_null();
	if (!v) {
		json_decref(k);
		return NULL;
	}
	json_t *pair = json_pack("{s:o,s:o}", "key", k, "value", v);
	return pair ? pair : pq_asm_oom(a);
}

/* The elements of repeated node rep_node at this position, each built from
 * elem (rep_node itself, or the element under a LIST's repeated group). */
static json_t *pq_list(struct pq_asm *a, const struct pq_node *rep_node, const struct pq_node *elem, enum pq_elem_kind kind)
{
	int d, r;
	if (!pq_peek(a, rep_node, &d, &r))
		return NULL;
	json_t *arr = json_array();
	if (!arr)
		return pq_asm_oom(a);
	if (d < rep_node->def)
		return pq_skip(a, rep_node) ? arr : (json_decref(arr), NULL);
	for (;;) {
		json_t *v;
		if (kind == PQ_ELEM_PAIR)
			v = pq_pair(a, rep_node);
		else
			v = pq_node_value(a, elem, elem == rep_node);
		if (!v || json_array_append_new(arr, v) != 0) {
			json_decref(arr);
			return v ? pq_asm_oom(a) : NULL;
		}
		const struct pq_column *c = &a->cols[rep_node->leaf_first];
		if (c->li >= c->nlevels)
			break;
		r = c->rep ? c->rep[c->li] : 0;
		if (r > rep_node->rep) {
			json_decref(arr);
			return pq_asm_fail(a, rep_node, "repetition level %d inside a finished element", r);
		}
		if (r < rep_node->rep)
			break;
	}
	return arr;
}

static bool pq_is_list(const struct pq_node *n)
{
	return n->type == PQ_GROUP && (n->logical == PQ_LT_LIST || n->converted == PQ_CT_LIST);
}

static bool pq_is_map(const struct pq_node *n)
{
	return n->type == PQ_GROUP && (n->logical == PQ_LT_MAP || n->converted == PQ_CT_MAP ||
	                               n->converted == PQ_CT_MAP_KEY_VALUE);
}

/* A LIST: its one repeated child is either the element (the legacy
 * 2-level forms) or the 3-level wrapper of the element, by Parquet's
 * backward-compatibility rules. */
static json_t *pq_list_value(struct pq_asm *a, const struct pq_node *n)
{
	const struct tt_parquet_file *f = a->f;
	if (n->nchildren != 1)
		return pq_asm_fail(a, n, "LIST with %u fields", n->nchildren);
	const struct pq_node *c = &f->nodes[n->children[0]];
	if (c->repetition != PQ_REPEATED)
		return pq_asm_fail(a, n, "LIST whose field is not repeated");
	const struct pq_node *elem = c;
	if (c->type == PQ_GROUP && c->nchildren == 1 && strcmp(c->name, "array") != 0) {
		size_t nl = strlen(n->name);
		bool tuple = strlen(c->name) == nl + 6 && strncmp(c->name, n->name, nl) == 0 &&
		             strcmp(c->name + nl, "_tuple") == 0;
		if (!tuple)
			elem = &f->nodes[c->children[0]];
	}
	return pq_list(a, c, elem, PQ_ELEM_VALUE);
}

/* A MAP: an object when every key is a string, else [{key, value}]. */
static json_t *pq_map_value(struct pq_asm *a, const struct pq_node *n)
{
	const struct tt_parquet_file *f = a->f;
	const struct pq_node *kv = n->nchildren == 1 ? &f->nodes[n->children[0]] : NULL;
	if (!kv || kv->repetition != PQ_REPEATED || kv->type != PQ_GROUP || kv->nchildren < 1 || kv->nchildren > 2)
		return pq_asm_fail(a, n, "MAP not of one repeated key-value group");
	json_t *pairs = pq_list(a, kv, kv, PQ_ELEM_PAIR);
	if (!pairs)
		return NULL;
	size_t i;
	json_t *p;
	json_array_foreach (pairs, i, p) {
		if (!json_is_string(json_object_get(p, "key")))
			return pairs;
	}
	json_t *obj = json_object();
	if (!obj) {
		json_decref(pairs);
		return pq_asm_oom(a);
	}
	json_array_foreach (pairs, i, p) {
		json_t *k = json_object_get(p, "key");
		if (json_object_setn(obj, json_string_value(k), json_string_length(k), json_object_get(p, "value")) != 0) {
			json_decref(obj);
			json_decref(pairs);
			return pq_asm_oom(a);
		}
	}
	json_decref(pairs);
	return obj;
}

static json_t *pq_group_value(struct pq_asm *a, const struct pq_node *n)
{
	json_t *obj = json_object();
	if (!obj)
		return pq_asm_oom(a);
	for (uint32_t i = 0; i < n->nchildren; i++) {
		const struct pq_node *c = &a->f->nodes[n->children[i]];
		json_t *v = pq_node_value(a, c, false);
		if (!v || json_object_set_new(obj, c->name, v) != 0) {
			json_decref(obj);
			return v ? pq_asm_oom(a) : NULL;
		}
	}
	return obj;
}

/* Node n's value at the current position. as_element: n is a repeated
 * node whose list is being built, so this is one element of it. */
static json_t *pq_node_value(struct pq_asm *a, const struct pq_node *n, bool as_element)
{
	if (n->repetition == PQ_REPEATED && !as_element)
		return pq_list(a, n, n, PQ_ELEM_VALUE);
	if (n->repetition == PQ_OPTIONAL) {
		int d, r;
		if (!pq_peek(a, n, &d, &r))
			return NULL;
		if (d < n->def)
			return pq_skip(a, n) ? json_null() : NULL;
	}
	if (n->type != PQ_GROUP)
		return pq_leaf_value(a, n);
	if (pq_is_list(n))
		return pq_list_value(a, n);
	if (pq_is_map(n))
		return pq_map_value(a, n);
	return pq_group_value(a, n);
}

/* The leaves of the asked columns line up: at a row's start each is at
 * repetition level 0 (or done); at the end each is used up. */
static int pq_check_leaves(struct pq_asm *a, const uint32_t *top, size_t ntop, bool at_end)
{
	const struct tt_parquet_file *f = a->f;
	for (size_t i = 0; i < ntop; i++) {
		const struct pq_node *n = &f->nodes[top[i]];
		for (uint32_t l = n->leaf_first; l < n->leaf_first + n->leaf_count; l++) {
			const struct pq_column *c = &a->cols[l];
			if (at_end && (c->li != c->nlevels || c->vi != c->nvals)) {
				pq_asm_fail(a, &f->nodes[f->leaf_node[l]], "more values than rows");
				return a->rc;
			}
			if (!at_end && c->li < c->nlevels && c->rep && c->rep[c->li] != 0) {
				pq_asm_fail(a, n, "a row that does not start at repetition level 0");
				return a->rc;
			}
		}
	}
	return 0;
}

/* The rows of row group rg, appended to rows. */
static int pq_assemble(struct pq_asm *a, const uint32_t *top, size_t ntop, json_t *rows)
{
	const struct tt_parquet_file *f = a->f;
	int64_t nrows = f->rgs[a->rg].num_rows;
	for (a->row = 0; a->row < nrows; a->row++) {
		json_t *row = json_object();
		if (!row || json_array_append_new(rows, row) != 0) {
			pq_asm_oom(a);
			return a->rc;
		}
		if (pq_check_leaves(a, top, ntop, false) != 0)
			return a->rc;
		for (size_t i = 0; i < ntop; i++) {
			const struct pq_node *n = &f->nodes[top[i]];
			json_t *v = pq_node_value(a, n, false);
			if (!v || json_object_set_new(row, n->name, v) != 0) {
				if (v)
					pq_asm_oom(a);
				return a->rc;
			}
		}
	}
	return pq_check_leaves(a, top, ntop, true);
}

int tt_parquet_read_rows(struct tt_parquet_file *f, const char *const *columns, size_t ncolumns, json_t **rows)
{
	*rows = NULL;
	const struct pq_node *root = &f->nodes[0];
	uint32_t *top = calloc(root->nchildren, sizeof *top);
	struct pq_column *cols = calloc(f->nleaves ? f->nleaves : 1, sizeof *cols);
	json_t *out = json_array();
	int rc = 0;
	if (!top || !cols || !out) {
		rc = tether_error_set(TETHER_ERROR, "%s: out of memory", f->what);
		goto done;
	}
	/* The asked top-level fields, each once, in the schema's order. */
	size_t ntop = 0;
	for (uint32_t i = 0; i < root->nchildren; i++) {
		const char *name = f->nodes[root->children[i]].name;
		for (size_t j = 0; j < ncolumns; j++) {
			if (columns[j] && strcmp(columns[j], name) == 0) {
				top[ntop++] = root->children[i];
				break;
			}
		}
	}
	/* Every row costs an object even when no column is asked: a hostile
	 * row count is charged before anything is made. */
	struct pq_budget budget = {TT_PARQUET_MAX_DECODED};
	if ((uint64_t)f->num_rows > budget.left / 64) {
		rc = tether_error_set(TETHER_EIO, "%s: %lld rows, over the limit of %zu MiB decoded", f->what,
		                      (long long)f->num_rows, (size_t)TT_PARQUET_MAX_DECODED >> 20);
		goto done;
	}
	budget.left -= (size_t)f->num_rows * 64;
	for (size_t rg = 0; rg < f->nrgs && rc == 0; rg++) {
		for (size_t i = 0; i < ntop && rc == 0; i++) {
			const struct pq_node *n = &f->nodes[top[i]];
			for (uint32_t l = n->leaf_first; l < n->leaf_first + n->leaf_count && rc == 0; l++)
				rc = pq_read_chunk(f, rg, l, &budget, &cols[l]);
		}
		if (rc == 0) {
			struct pq_asm a = {.f = f, .cols = cols, .rg = rg};
			rc = pq_assemble(&a, top, ntop, out);
		}
		for (size_t l = 0; l < f->nleaves; l++)
			pq_column_free(&cols[l]);
	}
done:
	free(top);
	free(cols);
	if (rc != 0)
		json_decref(out);
	else
		*rows = out;
	return rc;
}
