/* The lance backend's format code: manifest files (footer, length,
 * protobuf, feature flags) including every truncation of a good one, the
 * two naming schemes, branch ref names, and a branch cloned from a
 * manifest built here and read back. Datasets the real library writes are
 * covered by tests/e2e/test_lance.py. */
#include "check.h"

#include "backends/lance/lance.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A manifest file around a packed Manifest (a section of `pre` bytes first). */
static uint8_t *wrap(const TetherLance__Manifest *m, size_t pre, size_t *len)
{
	size_t n = tether_lance__manifest__get_packed_size(m);
	*len = pre + 4 + n + 16;
	uint8_t *out = calloc(1, *len);
	for (int i = 0; i < 4; i++)
		out[pre + (size_t)i] = (uint8_t)(n >> (8 * i));
	tether_lance__manifest__pack(m, out + pre + 4);
	uint64_t pos = pre;
	for (int i = 0; i < 8; i++)
		out[pre + 4 + n + (size_t)i] = (uint8_t)(pos >> (8 * i));
	out[*len - 6] = 2;
	memcpy(out + *len - 4, "LANC", 4);
	return out;
}

/* A manifest of one column `a` and one fragment of 3 rows in one file. */
struct sample {
	TetherLance__Manifest m;
	TetherLance__DataFragment f, *fp[1];
	TetherLance__DataFile d, *dp[1];
	TetherLance__Field col, *cp[1];
};

static void sample(struct sample *x)
{
	tether_lance__manifest__init(&x->m);
	tether_lance__data_fragment__init(&x->f);
	tether_lance__data_file__init(&x->d);
	tether_lance__field__init(&x->col);
	x->d.path = "abc.lance";
	x->dp[0] = &x->d;
	x->f.has_id = 1;
	x->f.n_files = 1;
	x->f.files = x->dp;
	x->f.has_physical_rows = 1;
	x->f.physical_rows = 3;
	x->fp[0] = &x->f;
	x->col.name = "a";
	x->col.has_parent_id = 1;
	x->col.parent_id = -1;
	x->col.logical_type = "int64";
	x->cp[0] = &x->col;
	x->m.n_fields = 1;
	x->m.fields = x->cp;
	x->m.n_fragments = 1;
	x->m.fragments = x->fp;
	x->m.has_version = 1;
	x->m.version = 2;
	x->m.has_max_fragment_id = 1;
}

static void test_parse(void)
{
	struct sample x;
	sample(&x);
	TetherLance__Manifest *mp = &x.m;
	size_t len;
	uint8_t *file = wrap(mp, 8, &len);
	struct lc_manifest out;
	CHECK(lc_manifest_parse(file, len, "x.manifest", &out) == 0);
	CHECK(out.version == 2 && out.m->n_fragments == 1 && out.m->fragments[0]->physical_rows == 3);
	CHECK_STR(out.m->fields[0]->name, "a");
	CHECK(out.m->fields[0]->parent_id == -1 && out.m->has_max_fragment_id && out.m->max_fragment_id == 0);
	lc_manifest_free(&out);
	/* Every truncation is refused, naming the file. */
	int refused = 0;
	for (size_t n = 0; n < len; n++) {
		if (lc_manifest_parse(file, n, "x.manifest", &out) != 0 && strstr(tether_error_last(), "x.manifest"))
			refused++;
		lc_manifest_free(&out);
	}
	CHECK(refused == (int)len);
	/* A position past the end, and one that leaves the length wrong. */
	file[len - 16] = 0xff;
	CHECK(lc_manifest_parse(file, len, "x.manifest", &out) == TETHER_EIO);
	lc_manifest_free(&out);
	file[len - 16] = 4;
	CHECK(lc_manifest_parse(file, len, "x.manifest", &out) == TETHER_EIO);
	CHECK(strstr(tether_error_last(), "does not match") != NULL);
	lc_manifest_free(&out);
	free(file);
	/* Garbage where the message should be. */
	uint8_t junk[40] = {4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
	memset(junk + 4, 0xff, 20);
	memcpy(junk + 36, "LANC", 4);
	junk[24] = 0;
	CHECK(lc_manifest_parse(junk, sizeof junk, "j", &out) != 0);
	lc_manifest_free(&out);
	/* Flags: the known ones pass, the first unknown is named. */
	mp->has_reader_feature_flags = mp->has_writer_feature_flags = 1;
	mp->reader_feature_flags = LC_KNOWN_FLAGS;
	mp->writer_feature_flags = LC_KNOWN_FLAGS | (1u << 12);
	file = wrap(mp, 0, &len);
	CHECK(lc_manifest_parse(file, len, "f.manifest", &out) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "f.manifest: unknown Lance writer feature flag 4096") != NULL);
	lc_manifest_free(&out);
	free(file);
}

static void test_names(void)
{
	enum lc_scheme s;
	CHECK(lc_parse_version_name("18446744073709551614.manifest", &s) == 1 && s == LC_SCHEME_V2);
	CHECK(lc_parse_version_name("12.manifest", &s) == 12 && s == LC_SCHEME_V1);
	const char *bad[] = {"d1.manifest", "latest_version_hint.json", "1.manifest-abc", ".tmp_7.manifest_x",
	                     "99999999999999999999.manifest", ".manifest", "1.txn", NULL};
	for (int i = 0; bad[i]; i++) {
		lc_parse_version_name(bad[i], &s);
		CHECK(s == LC_SCHEME_NONE);
	}
	char *k = lc_version_key("main", 1, LC_SCHEME_V2);
	CHECK_STR(k, "_versions/18446744073709551614.manifest");
	free(k);
	k = lc_version_key("a/b", 7, LC_SCHEME_V1);
	CHECK_STR(k, "tree/a/b/_versions/7.manifest");
	free(k);
	k = lc_branch_ref_key("bugfix/issue-123");
	CHECK_STR(k, "_refs/branches/bugfix%2Fissue-123.json");
	free(k);
	CHECK(lc_check_branch_name("tether.ws.0123abcd.x") == 0);
	const char *bad_branches[] = {"main", "", "/a", "a/", "a//b", "a..b", "x.lock", "sp ace", "a\\b", NULL};
	for (int i = 0; bad_branches[i]; i++)
		CHECK(lc_check_branch_name(bad_branches[i]) == TETHER_EUSAGE);
}

/* A dataset of one manifest written here; a branch cloned from it. */
static void test_clone(void)
{
	char dir[] = "/tmp/tether-lance-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct lc_dataset ds;
	CHECK(tether_store_open(dir, NULL, &ds.store) == 0);
	ds.uri = tether_store_uri(ds.store);
	struct sample x;
	sample(&x);
	TetherLance__Manifest *mp = &x.m;
	size_t len;
	uint8_t *file = wrap(mp, 0, &len);
	char *key = lc_version_key("main", 2, LC_SCHEME_V2);
	CHECK(tether_store_put(ds.store, key, file, len, TETHER_PUT_IF_ABSENT, NULL, NULL) == 0);
	uint64_t latest = 0;
	CHECK(lc_latest(&ds, "main", &latest, NULL) == 0 && latest == 2);
	CHECK(lc_branch_create(&ds, "dev", "main", 2) == 0);
	/* Twice is refused, and leaves the first as it was. */
	CHECK(lc_branch_create(&ds, "dev", "main", 2) == TETHER_EREFUSED);
	struct lc_manifest b;
	CHECK(lc_read_version(&ds, "dev", 2, &b) == 0);
	CHECK_STR(b.m->branch, "dev");
	CHECK(b.m->n_base_paths == 1 && b.m->base_paths[0]->is_dataset_root);
	CHECK_STR(b.m->base_paths[0]->path, ds.uri);
	CHECK(b.m->fragments[0]->files[0]->has_base_id && b.m->fragments[0]->files[0]->base_id == 0);
	CHECK((b.m->reader_feature_flags & LC_FLAG_BASE_PATHS) && (b.m->writer_feature_flags & LC_FLAG_BASE_PATHS));
	CHECK(b.m->has_transaction_section && b.m->timestamp && b.m->timestamp->seconds > 0);
	lc_manifest_free(&b);
	struct lc_pos head;
	CHECK(lc_branch_head(&ds, "dev", &head) == 0);
	CHECK_STR(head.branch, "main"); /* untouched: its parent's address */
	CHECK(head.version == 2 && head.branch_id == NULL);
	lc_pos_free(&head);
	/* A branch whose JSON is there already: refused, and the manifest and
	 * transaction written before the JSON are taken back. */
	CHECK(tether_store_put(ds.store, "_refs/branches/zz.json", "{}", 2, TETHER_PUT_IF_ABSENT, NULL, NULL) == 0);
	CHECK(lc_branch_create(&ds, "zz", "main", 2) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "branch zz already exists") != NULL);
	tether_store_iter *it = NULL;
	const char *left = NULL;
	CHECK(tether_store_list(ds.store, "tree", NULL, 0, &it) == 0);
	int nleft = 0;
	while (tether_store_next(it, &left) == 0 && left)
		nleft += strncmp(left, "tree/zz/", 8) == 0;
	tether_store_iter_free(it);
	CHECK(nleft == 0);
	CHECK(tether_store_delete(ds.store, "_refs/branches/zz.json") == 0);
	/* A tag on it blocks deleting it, as in Lance. */
	CHECK(lc_tag_create(&ds, "t", "dev", 2, 10) == 0);
	CHECK(lc_tag_create(&ds, "t", "dev", 2, 10) == TETHER_EREFUSED);
	CHECK(lc_branch_delete(&ds, "dev") == TETHER_EREFUSED);
	CHECK(lc_tag_delete(&ds, "t") == 0);
	CHECK(lc_branch_delete(&ds, "dev") == 0);
	int exists = 1;
	struct lc_branch gone;
	CHECK(lc_branch_read(&ds, "dev", &gone, &exists) == 0 && !exists);
	CHECK(lc_latest(&ds, "dev", &latest, NULL) == TETHER_ENOTFOUND);
	free(key);
	free(file);
	tether_store_close(ds.store);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	test_parse();
	test_names();
	test_clone();
	CHECK_DONE();
}
