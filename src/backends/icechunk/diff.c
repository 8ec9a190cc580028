/* What changed between two snapshots, from transaction logs alone (no
 * manifest, no chunk is read), computed as Icechunk's Repository.diff
 * computes it (repository.rs diff, diff.rs): walk the ancestry of `to` back
 * to `from`; for every snapshot in between take the transaction logs of the
 * ancestors an expiration pruned from under it, then its own; take the set
 * union of each category's node ids and, per array, of the chunk
 * coordinates written; keep every move in order; name the nodes with the
 * paths of the `from` and `to` snapshots, `to` winning, and drop ids found
 * in neither (a node made and removed in between). */
#include "backends/icechunk/ic.h"

#include <stdlib.h>
#include <string.h>

struct node_path {
	const uint8_t *id;
	struct ic_str path;
	uint8_t is_array;
};

struct chunk_key {
	const uint8_t *node;
	uint32_t ncoords;
	const uint8_t *coords;
};

struct acc {
	uint8_t *ids[6];     /* 8-byte node ids, concatenated */
	size_t nids[6], capids[6];
	struct chunk_key *chunks;
	size_t nchunks, capchunks;
	json_t *moves;       /* [[from, to], ...] */
	struct ic_txlog *logs;
	size_t nlogs, caplogs;
};

static void acc_free(struct acc *a)
{
	for (int k = 0; k < 6; k++)
		free(a->ids[k]);
	free(a->chunks);
	json_decref(a->moves);
	for (size_t i = 0; i < a->nlogs; i++)
		ic_txlog_free(&a->logs[i]);
	free(a->logs);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t cap2 = *cap ? *cap : 16;
	while (cap2 < need)
		cap2 *= 2;
	void *q = realloc(*p, cap2 * size);
	if (!q)
		return ic_fail_oom();
	*p = q;
	*cap = cap2;
	return 0;
}

/* Take one log's changes. The log itself is kept in a->logs (the caller
 * has made room), since the chunk keys point into it. */
static int acc_add(struct acc *a, struct ic_txlog *t)
{
	a->logs[a->nlogs++] = *t;
	const struct ic_txlog *kept = &a->logs[a->nlogs - 1];
	int rc;
	for (int k = 0; k < 6; k++) {
		size_t n = kept->nids[k];
		if ((rc = grow((void **)&a->ids[k], &a->capids[k], (a->nids[k] + n) * IC_NODE_ID_BYTES, 1)))
			return rc;
		if (n)
			memcpy(a->ids[k] + a->nids[k] * IC_NODE_ID_BYTES, kept->ids[k], n * IC_NODE_ID_BYTES);
		a->nids[k] += n;
	}
	if ((rc = grow((void **)&a->chunks, &a->capchunks, a->nchunks + kept->nchunks, sizeof *a->chunks)))
		return rc;
	for (uint32_t i = 0; i < kept->nchunks; i++)
		a->chunks[a->nchunks++] = (struct chunk_key){kept->chunks[i].node, kept->chunks[i].ncoords,
		                                             kept->chunks[i].coords};
	for (uint32_t i = 0; i < kept->nmoves; i++) {
		json_t *m = json_pack("[s%, s%]", kept->moves[i].from.p, (size_t)kept->moves[i].from.n,
		                      kept->moves[i].to.p, (size_t)kept->moves[i].to.n);
		if (!m || json_array_append_new(a->moves, m) != 0)
			return ic_fail_oom();
	}
	return 0;
}

static int read_log(struct ic_repository *repo, struct acc *a, const struct ic_id *id, int pruned)
{
	struct ic_txlog t;
	int rc = ic_txlog_read(repo->store, id, &t);
	if (rc == TETHER_ENOTFOUND && pruned) {
		/* An Icechunk before 2.1 may have collected it: Icechunk skips it. */
		tether_error_clear();
		return 0;
	}
	if (rc)
		return rc;
	if ((rc = grow((void **)&a->logs, &a->caplogs, a->nlogs + 1, sizeof *a->logs))) {
		ic_txlog_free(&t);
		return rc;
	}
	return acc_add(a, &t);
}

static int not_ancestor(struct ic_repository *repo, const struct ic_id *from, const struct ic_id *to)
{
	char f[IC_ID_CHARS + 1], t[IC_ID_CHARS + 1];
	ic_id_text(from, f);
	ic_id_text(to, t);
	return tether_error_set(TETHER_EREFUSED, "%s: snapshot %s is not an ancestor of %s", repo->uri, f, t);
}

static int v2_collect(struct ic_repository *repo, const struct ic_id *from, const struct ic_id *to,
                      struct acc *a)
{
	const struct ic_repo *view;
	int rc = ic_repo_view(repo, &view);
	if (rc)
		return rc;
	/* A copy of the view's header: read_log below reads other files, but
	 * no other view, so the view stays valid throughout. */
	const struct ic_repo r = *view;
	long i = ic_repo_snapshot(&r, to), target = ic_repo_snapshot(&r, from);
	uint32_t steps = 0;
	while (i >= 0 && i != target && steps++ < r.nsnaps)
		i = r.snaps[i].parent;
	if (target < 0 || i != target || memcmp(from->b, to->b, IC_ID_BYTES) == 0)
		rc = not_ancestor(repo, from, to);
	i = ic_repo_snapshot(&r, to);
	while (rc == 0 && i != target) {
		const struct ic_snap *s = &r.snaps[i];
		for (uint32_t k = 0; rc == 0 && k < s->npruned; k++)
			rc = read_log(repo, a, &s->pruned[k], 1);
		if (rc == 0)
			rc = read_log(repo, a, &s->id, 0);
		i = s->parent;
	}
	return rc;
}

static int v1_collect(struct ic_repository *repo, const struct ic_id *from, const struct ic_id *to,
                      struct acc *a)
{
	json_t *chain = NULL;
	int rc = ic_ancestry(repo, to, 0, &chain);
	size_t n = json_array_size(chain), end = n;
	char f[IC_ID_CHARS + 1];
	ic_id_text(from, f);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(chain, i), "id")), f) == 0) {
			end = i;
			break;
		}
	if (rc == 0 && (end == n || end == 0))
		rc = not_ancestor(repo, from, to);
	for (size_t i = 0; rc == 0 && i < end; i++) {
		struct ic_id id;
		ic_id_parse(json_string_value(json_object_get(json_array_get(chain, i), "id")), &id);
		rc = read_log(repo, a, &id, 0);
	}
	json_decref(chain);
	return rc;
}

static int cmp_id8(const void *x, const void *y)
{
	return memcmp(x, y, IC_NODE_ID_BYTES);
}

static int cmp_node(const void *x, const void *y)
{
	return memcmp(((const struct node_path *)x)->id, ((const struct node_path *)y)->id, IC_NODE_ID_BYTES);
}

static int cmp_chunk(const void *x, const void *y)
{
	const struct chunk_key *a = x, *b = y;
	int c = memcmp(a->node, b->node, IC_NODE_ID_BYTES);
	if (c)
		return c;
	if (a->ncoords != b->ncoords)
		return a->ncoords < b->ncoords ? -1 : 1;
	return a->ncoords ? memcmp(a->coords, b->coords, (size_t)a->ncoords * 4) : 0;
}

/* Sorted, without duplicates: n afterwards. */
static size_t unique(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n < 2)
		return n;
	qsort(base, n, size, cmp);
	uint8_t *p = base;
	size_t out = 1;
	for (size_t i = 1; i < n; i++)
		if (cmp(p + (out - 1) * size, p + i * size) != 0)
			memmove(p + out++ * size, p + i * size, size);
	return out;
}

struct names {
	struct node_path *to, *from;
	uint32_t nto, nfrom;
	struct ic_snapshot_file fto, ffrom;
};

static int names_load(struct ic_repository *repo, const struct ic_id *from, const struct ic_id *to,
                      struct names *n)
{
	memset(n, 0, sizeof *n);
	int rc = ic_snapshot_read(repo->store, from, &n->ffrom);
	if (rc == 0)
		rc = ic_snapshot_read(repo->store, to, &n->fto);
	for (int side = 0; rc == 0 && side < 2; side++) {
		const struct ic_snapshot_file *f = side ? &n->fto : &n->ffrom;
		struct node_path *v = calloc(f->nnodes ? f->nnodes : 1, sizeof *v);
		if (!v)
			return ic_fail_oom();
		for (uint32_t i = 0; i < f->nnodes; i++)
			v[i] = (struct node_path){f->nodes[i].id, f->nodes[i].path, f->nodes[i].is_array};
		qsort(v, f->nnodes, sizeof *v, cmp_node);
		if (side) {
			n->to = v;
			n->nto = f->nnodes;
		} else {
			n->from = v;
			n->nfrom = f->nnodes;
		}
	}
	return rc;
}

static void names_free(struct names *n)
{
	free(n->to);
	free(n->from);
	ic_snapshot_free(&n->fto);
	ic_snapshot_free(&n->ffrom);
}

static const struct node_path *name_of(const struct names *n, const uint8_t *id)
{
	struct node_path key = {.id = id};
	const struct node_path *p = bsearch(&key, n->to, n->nto, sizeof key, cmp_node);
	return p ? p : bsearch(&key, n->from, n->nfrom, sizeof key, cmp_node);
}

static int cmp_json_str(const void *x, const void *y)
{
	return strcmp(json_string_value(*(json_t *const *)x), json_string_value(*(json_t *const *)y));
}

/* A JSON array of the paths of the ids, sorted and without duplicates. */
static json_t *path_set(const struct names *n, const uint8_t *ids, size_t nids)
{
	json_t **v = calloc(nids ? nids : 1, sizeof *v);
	size_t k = 0;
	json_t *out = json_array();
	if (!v || !out) {
		free(v);
		json_decref(out);
		return NULL;
	}
	for (size_t i = 0; i < nids; i++) {
		const struct node_path *p = name_of(n, ids + i * IC_NODE_ID_BYTES);
		if (p)
			v[k++] = json_stringn(p->path.p, p->path.n);
	}
	qsort(v, k, sizeof *v, cmp_json_str);
	for (size_t i = 0; i < k; i++) {
		if (i > 0 && strcmp(json_string_value(v[i - 1]), json_string_value(v[i])) == 0)
			json_decref(v[i]);
		else
			json_array_append_new(out, v[i]);
	}
	free(v);
	return out;
}

static const char *const category[6] = {"new_groups", "new_arrays", "deleted_groups", "deleted_arrays",
                                        "updated_arrays", "updated_groups"};

static int build_native(struct acc *a, const struct names *n, json_t **out)
{
	json_t *d = json_object(), *chunks = json_object();
	int rc = d && chunks ? 0 : ic_fail_oom();
	for (int k = 0; rc == 0 && k < 6; k++) {
		a->nids[k] = unique(a->ids[k], a->nids[k], IC_NODE_ID_BYTES, cmp_id8);
		json_t *set = path_set(n, a->ids[k], a->nids[k]);
		rc = set && json_object_set_new(d, category[k], set) == 0 ? 0 : ic_fail_oom();
	}
	a->nchunks = unique(a->chunks, a->nchunks, sizeof *a->chunks, cmp_chunk);
	for (size_t i = 0; rc == 0 && i < a->nchunks;) {
		size_t j = i;
		while (j < a->nchunks && memcmp(a->chunks[j].node, a->chunks[i].node, IC_NODE_ID_BYTES) == 0)
			j++;
		const struct node_path *p = name_of(n, a->chunks[i].node);
		if (p) {
			char *path = strndup(p->path.p, p->path.n);
			rc = path && json_object_set_new(chunks, path, json_integer((json_int_t)(j - i))) == 0 ? 0
			                                                                                   : ic_fail_oom();
			free(path);
		}
		i = j;
	}
	if (rc == 0 && json_object_set_new(d, "updated_chunks", chunks) == 0) {
		chunks = NULL;
		rc = json_object_set(d, "moved_nodes", a->moves) == 0 ? 0 : ic_fail_oom();
	}
	json_decref(chunks);
	if (rc) {
		json_decref(d);
		return rc;
	}
	*out = d;
	return 0;
}

int ic_native_diff(struct ic_repository *repo, const struct ic_id *from, const struct ic_id *to,
                   json_t **out)
{
	struct acc a;
	memset(&a, 0, sizeof a);
	a.moves = json_array();
	struct names n;
	int rc = a.moves ? 0 : ic_fail_oom();
	if (rc == 0)
		rc = repo->spec == 1 ? v1_collect(repo, from, to, &a) : v2_collect(repo, from, to, &a);
	memset(&n, 0, sizeof n);
	if (rc == 0)
		rc = names_load(repo, from, to, &n);
	if (rc == 0)
		rc = build_native(&a, &n, out);
	names_free(&n);
	acc_free(&a);
	return rc;
}
