/* Snapshot and transaction-log files (snapshot.fbs, transaction_log.fbs):
 * read for what ancestry (spec 1) and diff need, and written for the one
 * snapshot tether ever makes, the initial one of a repository it creates.
 * tether never writes data, so it never writes any other snapshot, manifest
 * or transaction log. */
#include "backends/icechunk/ic.h"

#include "format/flatbuf.h"
#include "format/flexbuf.h"
#include "format/icfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SNAP_ID, SNAP_PARENT, SNAP_NODES, SNAP_FLUSHED_AT, SNAP_MESSAGE, SNAP_METADATA,
       SNAP_MANIFEST_FILES, SNAP_MANIFEST_FILES_V2 };
enum { NODE_ID, NODE_PATH, NODE_USER_DATA, NODE_DATA_TYPE, NODE_DATA };
enum { NODE_ARRAY = 1, NODE_GROUP = 2 };
enum { TX_ID, TX_FIRST_IDS, TX_UPDATED_CHUNKS = 7, TX_MOVED_NODES };

static int read_file(tether_store *s, const char *dir, const struct ic_id *id, uint8_t type,
                     uint8_t **payload, size_t *plen)
{
	char text[IC_ID_CHARS + 1];
	ic_id_text(id, text);
	char *key = tt_strdupf("%s/%s", dir, text);
	char *what = tt_strdupf("%s/%s/%s", tether_store_uri(s), dir, text);
	uint8_t *data = NULL;
	size_t len = 0;
	struct icf_header h;
	int rc = key && what ? tether_store_get(s, key, &data, &len, NULL) : ic_fail_oom();
	if (rc == 0)
		rc = icf_read(data, len, type, IC_MAX_FILE_PAYLOAD, what, &h, payload, plen);
	free(data);
	free(key);
	free(what);
	return rc;
}

static int need(int present, const char *what, const char *field)
{
	return present ? 0 : tether_error_set(TETHER_EIO, "%s: required field %s is missing", what, field);
}

static int read_nodes(const struct fb_table *root, struct ic_snapshot_file *out, const char *what)
{
	struct fb_vec v;
	int present = 0;
	int rc = fb_vector(root, SNAP_NODES, 4, 4, &v, &present);
	if (rc || (rc = need(present, what, "Snapshot.nodes")) || !v.n)
		return rc;
	if (!(out->nodes = calloc(v.n, sizeof *out->nodes)))
		return ic_fail_oom();
	out->nnodes = v.n;
	for (uint32_t i = 0; i < v.n; i++) {
		struct fb_table node;
		const uint8_t *id = NULL;
		const char *path = NULL;
		uint32_t n = 0;
		uint8_t type = 0;
		if ((rc = fb_vec_table(&v, i, &node)) || (rc = fb_struct(&node, NODE_ID, IC_NODE_ID_BYTES, 1, &id)) ||
		    (rc = need(id != NULL, what, "NodeSnapshot.id")) || (rc = fb_string(&node, NODE_PATH, &path, &n)) ||
		    (rc = need(path != NULL, what, "NodeSnapshot.path")) ||
		    (rc = fb_u8(&node, NODE_DATA_TYPE, 0, &type)))
			return rc;
		memcpy(out->nodes[i].id, id, IC_NODE_ID_BYTES);
		out->nodes[i].path = (struct ic_str){path, n};
		out->nodes[i].is_array = type == NODE_ARRAY;
	}
	return 0;
}

int ic_snapshot_parse(uint8_t *payload, size_t plen, const struct ic_id *want, const char *what,
                      struct ic_snapshot_file *out)
{
	memset(out, 0, sizeof *out);
	out->payload = payload;
	struct fb_table root;
	const uint8_t *sid = NULL, *parent = NULL;
	const char *msg = NULL;
	uint32_t mlen = 0;
	int rc = fb_root(out->payload, plen, &root);
	if (!rc)
		rc = fb_struct(&root, SNAP_ID, IC_ID_BYTES, 1, &sid);
	if (!rc)
		rc = need(sid != NULL, what, "Snapshot.id");
	if (!rc)
		rc = fb_struct(&root, SNAP_PARENT, IC_ID_BYTES, 1, &parent);
	if (!rc)
		rc = fb_u64(&root, SNAP_FLUSHED_AT, 0, &out->flushed_at);
	if (!rc)
		rc = fb_string(&root, SNAP_MESSAGE, &msg, &mlen);
	if (!rc)
		rc = read_nodes(&root, out, what);
	if (!rc) {
		memcpy(out->id.b, sid, IC_ID_BYTES);
		if (want && memcmp(out->id.b, want->b, IC_ID_BYTES) != 0)
			rc = tether_error_set(TETHER_EIO, "%s: the file holds another snapshot's id", what);
		if (parent) {
			out->has_parent = 1;
			memcpy(out->parent.b, parent, IC_ID_BYTES);
		}
		out->message = (struct ic_str){msg ? msg : "", msg ? mlen : 0};
	}
	if (rc)
		ic_snapshot_free(out);
	return rc;
}

/* <dir>/<id> read and unwrapped, and the name messages call it by, "<label>
 * <id>" (malloc'd). */
static int load(tether_store *s, const char *dir, const char *label, const struct ic_id *id, uint8_t type,
                uint8_t **payload, size_t *plen, char **what)
{
	int rc = read_file(s, dir, id, type, payload, plen);
	if (rc)
		return rc;
	char text[IC_ID_CHARS + 1];
	ic_id_text(id, text);
	if (!(*what = tt_strdupf("%s %s", label, text))) {
		free(*payload);
		*payload = NULL;
		return ic_fail_oom();
	}
	return 0;
}

int ic_snapshot_read(tether_store *s, const struct ic_id *id, struct ic_snapshot_file *out)
{
	memset(out, 0, sizeof *out);
	uint8_t *payload = NULL;
	size_t plen = 0;
	char *what = NULL;
	int rc = load(s, "snapshots", "snapshot", id, ICF_SNAPSHOT, &payload, &plen, &what);
	if (rc == 0)
		rc = ic_snapshot_parse(payload, plen, id, what, out);
	free(what);
	return rc;
}

void ic_snapshot_free(struct ic_snapshot_file *f)
{
	free(f->nodes);
	free(f->payload);
	memset(f, 0, sizeof *f);
}

static int read_chunks(const struct fb_table *root, struct ic_txlog *out, const char *what)
{
	struct fb_vec arrays;
	int present = 0;
	int rc = fb_vector(root, TX_UPDATED_CHUNKS, 4, 4, &arrays, &present);
	if (rc || (rc = need(present, what, "TransactionLog.updated_chunks")) || !arrays.n)
		return rc;
	/* First the count, then the entries: one per (array, chunk). */
	size_t total = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			if (total > UINT32_MAX)
				return tether_error_set(TETHER_EIO, "%s: too many chunk changes", what);
			if (total && !(out->chunks = calloc(total, sizeof *out->chunks)))
				return ic_fail_oom();
		}
		size_t k = 0;
		for (uint32_t i = 0; i < arrays.n; i++) {
			struct fb_table a;
			struct fb_vec chunks;
			const uint8_t *node = NULL;
			if ((rc = fb_vec_table(&arrays, i, &a)) ||
			    (rc = fb_struct(&a, 0, IC_NODE_ID_BYTES, 1, &node)) ||
			    (rc = need(node != NULL, what, "ArrayUpdatedChunks.node_id")) ||
			    (rc = fb_vector(&a, 1, 4, 4, &chunks, &present)) ||
			    (rc = need(present, what, "ArrayUpdatedChunks.chunks")))
				return rc;
			if (pass == 0) {
				total += chunks.n;
				continue;
			}
			for (uint32_t j = 0; j < chunks.n; j++, k++) {
				struct fb_table ci;
				struct fb_vec coords;
				if ((rc = fb_vec_table(&chunks, j, &ci)) || (rc = fb_vector(&ci, 0, 4, 4, &coords, &present)) ||
				    (rc = need(present, what, "ChunkIndices.coords")))
					return rc;
				memcpy(out->chunks[k].node, node, IC_NODE_ID_BYTES);
				out->chunks[k].ncoords = coords.n;
				out->chunks[k].coords = coords.n ? fb_vec_elem(&coords, 0) : NULL;
			}
		}
		out->nchunks = (uint32_t)k;
	}
	return 0;
}

static int read_moves(const struct fb_table *root, struct ic_txlog *out)
{
	struct fb_vec v;
	int present = 0;
	int rc = fb_vector(root, TX_MOVED_NODES, 4, 4, &v, &present);
	if (rc || !v.n)
		return rc;
	if (!(out->moves = calloc(v.n, sizeof *out->moves)))
		return ic_fail_oom();
	out->nmoves = v.n;
	for (uint32_t i = 0; i < v.n; i++) {
		struct fb_table m;
		const char *from = NULL, *to = NULL;
		uint32_t nf = 0, nt = 0;
		if ((rc = fb_vec_table(&v, i, &m)) || (rc = fb_string(&m, 0, &from, &nf)) ||
		    (rc = fb_string(&m, 1, &to, &nt)))
			return rc;
		out->moves[i].from = (struct ic_str){from ? from : "", from ? nf : 0};
		out->moves[i].to = (struct ic_str){to ? to : "", to ? nt : 0};
	}
	return 0;
}

int ic_txlog_parse(uint8_t *payload, size_t plen, const char *what, struct ic_txlog *out)
{
	memset(out, 0, sizeof *out);
	out->payload = payload;
	struct fb_table root;
	int rc = fb_root(out->payload, plen, &root);
	for (int k = 0; k < 6 && !rc; k++) {
		struct fb_vec v;
		int present = 0;
		rc = fb_vector(&root, (unsigned)(TX_FIRST_IDS + k), IC_NODE_ID_BYTES, 1, &v, &present);
		if (!rc)
			rc = need(present, what, "TransactionLog node ids");
		if (!rc) {
			out->ids[k] = v.n ? fb_vec_elem(&v, 0) : NULL;
			out->nids[k] = v.n;
		}
	}
	if (!rc)
		rc = read_chunks(&root, out, what);
	if (!rc)
		rc = read_moves(&root, out);
	if (rc)
		ic_txlog_free(out);
	return rc;
}

int ic_txlog_read(tether_store *s, const struct ic_id *id, struct ic_txlog *out)
{
	memset(out, 0, sizeof *out);
	uint8_t *payload = NULL;
	size_t plen = 0;
	char *what = NULL;
	int rc = load(s, "transactions", "transaction log", id, ICF_TXLOG, &payload, &plen, &what);
	if (rc == 0)
		rc = ic_txlog_parse(payload, plen, what, out);
	free(what);
	return rc;
}

void ic_txlog_free(struct ic_txlog *t)
{
	free(t->chunks);
	free(t->moves);
	free(t->payload);
	memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------ */
/* The initial snapshot and its (empty) transaction log                 */
/* ------------------------------------------------------------------ */

static int put_file(tether_store *s, const char *dir, uint8_t type, const uint8_t *fb, size_t fblen)
{
	uint8_t *file = NULL;
	size_t len = 0;
	char *key = tt_strdupf("%s/%s", dir, IC_INITIAL_SNAPSHOT);
	int rc = key ? icf_write(2, type, IC_IMPL_NAME, fb, fblen, IC_ZSTD_LEVEL, &file, &len) : ic_fail_oom();
	if (rc == 0)
		rc = tether_store_put(s, key, file, len, TETHER_PUT_IF_ABSENT, NULL, NULL);
	if (rc == TETHER_EREFUSED)
		rc = tether_error_set(TETHER_EREFUSED, "%s/%s already exists", tether_store_uri(s), key);
	free(file);
	free(key);
	return rc;
}

/* {"is_root": true}, the metadata Icechunk gives its initial snapshot. */
static int root_marker(uint8_t **value, size_t *len)
{
	json_t *v = json_pack("{s:b}", "is_root", 1);
	int rc = v ? flex_encode(v, value, len) : ic_fail_oom();
	json_decref(v);
	return rc;
}

static int initial_snapshot(tether_store *s, const struct ic_id *id, uint64_t now_us)
{
	uint8_t *marker = NULL, *fb = NULL;
	size_t mlen = 0, fblen = 0;
	int rc = root_marker(&marker, &mlen);
	if (rc)
		return rc;
	struct fbb b;
	fbb_init(&b);
	fb_ref nodes = fbb_vector_refs(&b, NULL, 0);
	fb_ref message = fbb_string(&b, "Repository initialized", strlen("Repository initialized"));
	fb_ref name = fbb_string(&b, "__icechunk", strlen("__icechunk"));
	fb_ref value = fbb_bytes(&b, marker, mlen);
	fbb_table_start(&b);
	fbb_add_ref(&b, 0, name);
	fbb_add_ref(&b, 1, value);
	fb_ref item = fbb_table_end(&b);
	fb_ref meta = fbb_vector_refs(&b, &item, 1);
	fb_ref files_v1 = fbb_vector(&b, NULL, 0, 32, 8); /* ManifestFileInfo structs: none */
	fb_ref files_v2 = fbb_vector_refs(&b, NULL, 0);
	fbb_table_start(&b);
	fbb_add_struct(&b, SNAP_ID, id->b, IC_ID_BYTES, 1);
	fbb_add_ref(&b, SNAP_NODES, nodes);
	fbb_add_u64(&b, SNAP_FLUSHED_AT, now_us);
	fbb_add_ref(&b, SNAP_MESSAGE, message);
	fbb_add_ref(&b, SNAP_METADATA, meta);
	fbb_add_ref(&b, SNAP_MANIFEST_FILES, files_v1);
	fbb_add_ref(&b, SNAP_MANIFEST_FILES_V2, files_v2);
	rc = fbb_finish(&b, fbb_table_end(&b), "Ichk", &fb, &fblen);
	fbb_free(&b);
	free(marker);
	if (rc == 0)
		rc = put_file(s, "snapshots", ICF_SNAPSHOT, fb, fblen);
	free(fb);
	return rc;
}

static int initial_txlog(tether_store *s, const struct ic_id *id)
{
	uint8_t *fb = NULL;
	size_t fblen = 0;
	struct fbb b;
	fbb_init(&b);
	fb_ref ids[6];
	for (int k = 0; k < 6; k++)
		ids[k] = fbb_vector(&b, NULL, 0, IC_NODE_ID_BYTES, 1);
	fb_ref chunks = fbb_vector_refs(&b, NULL, 0);
	fb_ref moves = fbb_vector_refs(&b, NULL, 0);
	fbb_table_start(&b);
	fbb_add_struct(&b, TX_ID, id->b, IC_ID_BYTES, 1);
	for (int k = 0; k < 6; k++)
		fbb_add_ref(&b, (unsigned)(TX_FIRST_IDS + k), ids[k]);
	fbb_add_ref(&b, TX_UPDATED_CHUNKS, chunks);
	fbb_add_ref(&b, TX_MOVED_NODES, moves);
	int rc = fbb_finish(&b, fbb_table_end(&b), "Ichk", &fb, &fblen);
	fbb_free(&b);
	if (rc == 0)
		rc = put_file(s, "transactions", ICF_TXLOG, fb, fblen);
	free(fb);
	return rc;
}

int ic_write_initial_files(tether_store *s, uint64_t now_us)
{
	struct ic_id id;
	if (ic_id_parse(IC_INITIAL_SNAPSHOT, &id) != 0)
		return tether_error_set(TETHER_ERROR, "the initial snapshot id does not parse");
	int rc = initial_snapshot(s, &id, now_us);
	return rc ? rc : initial_txlog(s, &id);
}
