/* Branches as Lance's create_branch makes them: a shallow clone. The
 * branch's first manifest is the source manifest at the same version
 * number, with `branch` set, every data and deletion file that lived in
 * the source's own directory pointed at it through a new base path, and a
 * Clone transaction beside it; then the branch's JSON under
 * _refs/branches/, whose identifier extends the parent's with
 * (version, uuid). Both are written if absent, manifest first, as Lance
 * does; a failure removes what this call wrote. */
#include "backends/lance/lance.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static int buf_add(struct buf *b, const void *data, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = (b->n + n) * 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p)
			return lc_fail_oom();
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
	return 0;
}

/* A length-prefixed message; *at is where its prefix starts. */
static int buf_message(struct buf *b, const ProtobufCMessage *msg, uint64_t *at)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t *tmp = malloc(n + 4);
	if (!tmp)
		return lc_fail_oom();
	put_le(tmp, n, 4);
	protobuf_c_message_pack(msg, tmp + 4);
	*at = b->n;
	int rc = buf_add(b, tmp, n + 4);
	free(tmp);
	return rc;
}

/* Unknown top-level fields may be offsets into the file (as index_section
 * and transaction_section are), which a rewrite would leave pointing at
 * the wrong bytes: refused, with their numbers. */
static int refuse_unknown(const TetherLance__Manifest *m, const char *name)
{
	if (m->base.n_unknown_fields == 0)
		return 0;
	char list[128] = "";
	size_t k = 0;
	for (unsigned i = 0; i < m->base.n_unknown_fields && k < sizeof list - 16; i++)
		k += (size_t)snprintf(list + k, sizeof list - k, "%s%u", i ? ", " : "", m->base.unknown_fields[i].tag);
	return tether_error_set(TETHER_EREFUSED, "%s: cannot branch from it: its manifest has fields tether does not "
	                                         "know (%s)", name, list);
}

static int rewrite_indices(const struct lc_manifest *src, uint32_t base_id, struct buf *out, uint64_t *at,
                           const char *name)
{
	uint64_t off = src->m->index_section;
	if (off > src->len || src->len - off < 4)
		return tether_error_set(TETHER_EIO, "%s: index section offset %llu lies outside the file", name,
		                        (unsigned long long)off);
	const uint8_t *p = src->bytes + off;
	uint32_t n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if (n > src->len - off - 4)
		return tether_error_set(TETHER_EIO, "%s: the index section runs past the end of the file", name);
	TetherLance__IndexSection *s = tether_lance__index_section__unpack(NULL, n, p + 4);
	if (!s)
		return tether_error_set(TETHER_EIO, "%s: the index section is not a valid protobuf message", name);
	/* Lance points every index at the new base, whatever its base was. */
	for (size_t i = 0; i < s->n_indices; i++) {
		s->indices[i]->has_base_id = 1;
		s->indices[i]->base_id = base_id;
	}
	int rc = buf_message(out, &s->base, at);
	tether_lance__index_section__free_unpacked(s, NULL);
	return rc;
}

static char *source_uri(const struct lc_dataset *ds, const char *branch)
{
	return strcmp(branch, "main") == 0 ? strdup(ds->uri) : tt_strdupf("%s/tree/%s", ds->uri, branch);
}

/* The clone's manifest file: transaction, index section, manifest, footer. */
static int build_clone(struct lc_dataset *ds, struct lc_manifest *src, const char *name, const char *from,
                       const char *uuid, char *txn_name, struct buf *file, struct buf *txn_file)
{
	TetherLance__Manifest *m = src->m;
	char *where = tt_strdupf("%s/%s", ds->uri, src->key);
	int rc = where ? refuse_unknown(m, where) : lc_fail_oom();
	uint32_t base_id = 0;
	for (size_t i = 0; i < m->n_base_paths; i++)
		if (m->base_paths[i]->id + 1 > base_id)
			base_id = m->base_paths[i]->id + 1;

	TetherLance__Clone clone = TETHER_LANCE__CLONE__INIT;
	TetherLance__Transaction txn = TETHER_LANCE__TRANSACTION__INIT;
	char *ref_path = source_uri(ds, from);
	clone.has_is_shallow = 1;
	clone.is_shallow = 1;
	clone.ref_name = strcmp(from, "main") == 0 ? NULL : (char *)from;
	clone.has_ref_version = 1;
	clone.ref_version = src->version;
	clone.ref_path = ref_path;
	clone.branch_name = (char *)name;
	txn.has_read_version = 1;
	txn.read_version = src->version;
	txn.uuid = (char *)uuid;
	txn.clone = &clone;
	uint64_t txn_at = 0, idx_at = 0, man_at = 0;
	if (rc == 0 && !ref_path)
		rc = lc_fail_oom();
	if (rc == 0)
		rc = buf_message(file, &txn.base, &txn_at);
	if (rc == 0) {
		size_t n = protobuf_c_message_get_packed_size(&txn.base);
		uint8_t *tmp = malloc(n ? n : 1);
		if (!tmp)
			rc = lc_fail_oom();
		else {
			protobuf_c_message_pack(&txn.base, tmp);
			rc = buf_add(txn_file, tmp, n);
			free(tmp);
		}
	}
	if (rc == 0 && m->has_index_section)
		rc = rewrite_indices(src, base_id, file, &idx_at, where);
	if (rc) {
		free(ref_path);
		free(where);
		return rc;
	}

	/* The manifest, changed in place; what it pointed at is put back
	 * before it is freed. */
	TetherLance__BasePath bp = TETHER_LANCE__BASE_PATH__INIT;
	bp.has_id = base_id != 0;
	bp.id = base_id;
	bp.name = clone.ref_name;
	bp.has_is_dataset_root = 1;
	bp.is_dataset_root = 1;
	bp.path = ref_path;
	TetherLance__BasePath **paths = malloc((m->n_base_paths + 1) * sizeof *paths);
	TetherLance__Timestamp ts = TETHER_LANCE__TIMESTAMP__INIT;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	ts.has_seconds = 1;
	ts.seconds = now.tv_sec;
	ts.has_nanos = now.tv_nsec != 0;
	ts.nanos = (int32_t)now.tv_nsec;
	if (!paths) {
		free(ref_path);
		free(where);
		return lc_fail_oom();
	}
	if (m->n_base_paths)
		memcpy(paths, m->base_paths, m->n_base_paths * sizeof *paths);
	paths[m->n_base_paths] = &bp;
	TetherLance__BasePath **old_paths = m->base_paths;
	size_t old_npaths = m->n_base_paths;
	char *old_branch = m->branch, *old_tag = m->tag, *old_txn = m->transaction_file;
	TetherLance__Timestamp *old_ts = m->timestamp;
	protobuf_c_boolean old_dep = m->has_transaction_section_deprecated;
	m->base_paths = paths;
	m->n_base_paths = old_npaths + 1;
	m->branch = (char *)name;
	m->tag = NULL;
	m->transaction_file = txn_name;
	m->timestamp = &ts;
	m->has_transaction_section_deprecated = 0;
	m->has_transaction_section = 1;
	m->transaction_section = txn_at;
	if (m->has_index_section)
		m->index_section = idx_at;
	m->reader_feature_flags |= LC_FLAG_BASE_PATHS;
	m->writer_feature_flags |= LC_FLAG_BASE_PATHS;
	m->has_reader_feature_flags = m->has_writer_feature_flags = 1;
	for (size_t f = 0; f < m->n_fragments; f++) {
		TetherLance__DataFragment *frag = m->fragments[f];
		for (size_t i = 0; i < frag->n_files; i++)
			if (!frag->files[i]->has_base_id) {
				frag->files[i]->has_base_id = 1;
				frag->files[i]->base_id = base_id;
			}
		if (frag->deletion_file && !frag->deletion_file->has_base_id) {
			frag->deletion_file->has_base_id = 1;
			frag->deletion_file->base_id = base_id;
		}
	}
	rc = buf_message(file, &m->base, &man_at);
	m->base_paths = old_paths;
	m->n_base_paths = old_npaths;
	m->branch = old_branch;
	m->tag = old_tag;
	m->transaction_file = old_txn;
	m->timestamp = old_ts;
	m->has_transaction_section_deprecated = old_dep;
	free(paths);
	free(ref_path);
	free(where);
	if (rc)
		return rc;
	uint8_t footer[16];
	put_le(footer, man_at, 8);
	put_le(footer + 8, 0, 2);
	put_le(footer + 10, 2, 2);
	memcpy(footer + 12, "LANC", 4);
	return buf_add(file, footer, sizeof footer);
}

static json_t *branch_doc(const struct lc_branch *parent, const char *from, uint64_t version, const char *uuid32,
                          uint64_t manifest_size)
{
	json_t *mapping = parent ? json_deep_copy(parent->mapping) : json_array();
	json_t *doc = json_object();
	if (!mapping || !doc || json_array_append_new(mapping, json_pack("[I, s]", (json_int_t)version, uuid32))) {
		json_decref(mapping);
		json_decref(doc);
		return NULL;
	}
	json_object_set_new(doc, "parentBranch", strcmp(from, "main") == 0 ? json_null() : json_string(from));
	json_object_set_new(doc, "identifier", json_pack("{s:o}", "version_mapping", mapping));
	json_object_set_new(doc, "parentVersion", json_integer((json_int_t)version));
	json_object_set_new(doc, "createAt", json_integer((json_int_t)time(NULL)));
	json_object_set_new(doc, "manifestSize", json_integer((json_int_t)manifest_size));
	json_object_set_new(doc, "metadata", json_object());
	return doc;
}

int lc_branch_create(struct lc_dataset *ds, const char *name, const char *from, uint64_t version)
{
	struct lc_manifest src;
	struct lc_branch parent;
	struct buf file = {0}, txn = {0};
	int exists = 0, rc = lc_check_branch_name(name);
	memset(&parent, 0, sizeof parent);
	if (rc)
		return rc;
	if ((rc = lc_read_version(ds, from, version, &src)))
		return rc;
	if (strcmp(from, "main") != 0 && (rc = lc_branch_read(ds, from, &parent, &exists)) == 0 && !exists)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s: parent branch %s does not exist", ds->uri, from);
	char *uuid = lc_uuid4(1), *uuid32 = lc_uuid4(0);
	char *txn_name = uuid ? tt_strdupf("%llu-%s.txn", (unsigned long long)version, uuid) : NULL;
	char *base = lc_base(name);
	char *txn_key = base && txn_name ? tt_strdupf("%s_transactions/%s", base, txn_name) : NULL;
	char *man_key = lc_version_key(name, version, src.scheme);
	char *ref_key = lc_branch_ref_key(name);
	char *hint_key = base ? tt_strdupf("%s_versions/latest_version_hint.json", base) : NULL;
	if (rc == 0 && (!uuid || !uuid32 || !txn_key || !man_key || !ref_key || !hint_key))
		rc = lc_fail_oom();
	if (rc == 0)
		rc = build_clone(ds, &src, name, from, uuid, txn_name, &file, &txn);
	json_t *doc = rc == 0 ? branch_doc(exists ? &parent : NULL, from, version, uuid32, src.len) : NULL;
	if (rc == 0 && !doc)
		rc = lc_fail_oom();
	int wrote_txn = 0, wrote_manifest = 0;
	if (rc == 0 && (rc = tether_store_put(ds->store, txn_key, txn.p, txn.n, TETHER_PUT_IF_ABSENT, NULL, NULL)) == 0)
		wrote_txn = 1;
	if (rc == 0) {
		rc = tether_store_put(ds->store, man_key, file.p, file.n, TETHER_PUT_IF_ABSENT, NULL, NULL);
		if (rc == TETHER_EREFUSED)
			rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s already has version %llu (%s)", ds->uri, name,
			                      (unsigned long long)version, man_key);
		wrote_manifest = rc == 0;
	}
	if (rc == 0) {
		char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		rc = text ? tether_store_put(ds->store, ref_key, text, strlen(text), TETHER_PUT_IF_ABSENT, NULL, NULL)
		          : lc_fail_oom();
		free(text);
		if (rc == TETHER_EREFUSED)
			rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s already exists", ds->uri, name);
	}
	if (rc == 0) {
		/* Best effort, as Lance's own hint write is. */
		char hint[40];
		snprintf(hint, sizeof hint, "{\"version\":%llu}", (unsigned long long)version);
		if (tether_store_put(ds->store, hint_key, hint, strlen(hint), TETHER_PUT_OVERWRITE, NULL, NULL))
			tether_error_clear();
	} else {
		/* Nothing left behind; the first error is the one reported. */
		char *why = strdup(tether_error_last());
		if (wrote_manifest)
			tether_store_delete(ds->store, man_key);
		if (wrote_txn)
			tether_store_delete(ds->store, txn_key);
		tether_error_set(rc, "%s", why ? why : "out of memory");
		free(why);
	}
	json_decref(doc);
	free(file.p);
	free(txn.p);
	free(uuid);
	free(uuid32);
	free(txn_name);
	free(base);
	free(txn_key);
	free(man_key);
	free(ref_key);
	free(hint_key);
	lc_branch_free(&parent);
	lc_manifest_free(&src);
	return rc;
}

int lc_tags_on_branch(struct lc_dataset *ds, const char *name, json_t **out)
{
	json_t *tags = NULL;
	*out = NULL;
	int rc = lc_tag_list(ds, &tags);
	if (rc)
		return rc;
	json_t *on = json_array();
	const char *tag;
	json_t *v;
	json_object_foreach(tags, tag, v)
		if (on && strcmp(json_string_value(json_object_get(v, "branch")), name) == 0)
			json_array_append_new(on, json_string(tag));
	json_decref(tags);
	if (!on)
		return lc_fail_oom();
	*out = on;
	return 0;
}

/* Does b's identifier extend a's (b is a's descendant)? */
static int extends(const json_t *a, const json_t *b)
{
	size_t n = json_array_size(a);
	if (n == 0 || json_array_size(b) <= n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!json_equal(json_array_get(a, i), json_array_get(b, i)))
			return 0;
	return 1;
}

int lc_branch_delete(struct lc_dataset *ds, const char *name)
{
	struct lc_branch b;
	int exists = 0;
	json_t *tags = NULL, *all = NULL;
	int rc = lc_branch_read(ds, name, &b, &exists);
	if (rc || !exists)
		return rc;
	if ((rc = lc_tags_on_branch(ds, name, &tags)) == 0 && json_array_size(tags) > 0) {
		char *list = json_dumps(tags, JSON_COMPACT);
		rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s is referenced by tags %s; Lance cannot delete it "
		                                       "until they are deleted", ds->uri, name, list ? list : "");
		free(list);
	}
	if (rc == 0 && (rc = lc_branch_list(ds, &all)) == 0) {
		const char *other;
		json_t *doc;
		json_object_foreach(all, other, doc) {
			json_t *m = json_object_get(json_object_get(doc, "identifier"), "version_mapping");
			if (strcmp(other, name) != 0 && extends(b.mapping, m)) {
				rc = tether_error_set(TETHER_EREFUSED, "%s: branch %s was branched from %s; Lance cannot delete "
				                                       "it while its descendants exist", ds->uri, other, name);
				break;
			}
		}
	}
	char *ref_key = rc == 0 ? lc_branch_ref_key(name) : NULL;
	if (rc == 0)
		rc = ref_key ? tether_store_delete(ds->store, ref_key) : lc_fail_oom();
	/* Then the branch's own directories; a nested branch's (tree/a/b
	 * under tree/a) are not among them. */
	static const char *const dirs[] = {"_versions", "_transactions", "_deletions", "_indices", "data", NULL};
	for (int d = 0; rc == 0 && dirs[d]; d++) {
		char *prefix = tt_strdupf("tree/%s/%s", name, dirs[d]);
		tether_store_iter *it = NULL;
		json_t *keys = json_array();
		rc = prefix && keys ? tether_store_list(ds->store, prefix, NULL, 0, &it) : lc_fail_oom();
		for (const char *key = NULL; rc == 0;) {
			if ((rc = tether_store_next(it, &key)) || !key)
				break;
			json_array_append_new(keys, json_string(key));
		}
		tether_store_iter_free(it);
		size_t i;
		json_t *k;
		json_array_foreach(keys, i, k)
			if (rc == 0)
				rc = tether_store_delete(ds->store, json_string_value(k));
		json_decref(keys);
		free(prefix);
	}
	free(ref_key);
	json_decref(tags);
	json_decref(all);
	lc_branch_free(&b);
	return rc;
}
