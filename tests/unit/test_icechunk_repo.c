/* The Icechunk `repo` model: what create_store writes, round trips through
 * the model, the ops log's rotation, every mutation's checks, pins and
 * their generations, and the refusals (fields, update types and spec
 * versions tether does not know; corrupt files). Files the real library
 * writes are covered by tests/e2e/test_icechunk*.py. */
#include "check.h"

#include "backends/icechunk/ic.h"
#include "format/flatbuf.h"
#include "format/flexbuf.h"
#include "format/icfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char scratch[256];
static int serial;

#define DATASET "0123456789abcdef0123456789abcdef"

static struct tether_bctx ctx = {.dataset_id = DATASET};

/* A fresh repository made by create_store; its path in `path`. */
static int new_repo(char path[300], json_t **locator)
{
	snprintf(path, 300, "%s/repo%d", scratch, ++serial);
	*locator = json_pack("{s:s, s:s}", "uri", path, "branch", "main");
	return ic_create_store(&ctx, *locator);
}

static int read_model(const char *path, struct ic_repo *r)
{
	tether_store *s = NULL;
	int rc = tether_store_open(path, NULL, &s);
	if (rc == 0)
		rc = ic_repo_read(s, r, NULL);
	tether_store_close(s);
	return rc;
}

static int same_str(struct ic_str a, struct ic_str b)
{
	return ic_str_cmp(a, b) == 0;
}

static int same_bytes(struct ic_bytes a, struct ic_bytes b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

/* Every field of two models, compared. */
static int same_model(const struct ic_repo *a, const struct ic_repo *b)
{
	if (a->spec_version != b->spec_version || a->ntags != b->ntags || a->nbranches != b->nbranches ||
	    a->ndeleted != b->ndeleted || a->nsnaps != b->nsnaps || a->nupdates != b->nupdates ||
	    a->meta.n != b->meta.n || a->meta.present != b->meta.present || a->has_before != b->has_before ||
	    a->has_config != b->has_config || a->has_extra != b->has_extra)
		return 0;
	for (uint32_t i = 0; i < a->ntags; i++)
		if (!same_str(a->tags[i].name, b->tags[i].name) || a->tags[i].snap != b->tags[i].snap)
			return 0;
	for (uint32_t i = 0; i < a->nbranches; i++)
		if (!same_str(a->branches[i].name, b->branches[i].name) || a->branches[i].snap != b->branches[i].snap)
			return 0;
	for (uint32_t i = 0; i < a->ndeleted; i++)
		if (!same_str(a->deleted_tags[i], b->deleted_tags[i]))
			return 0;
	for (uint32_t i = 0; i < a->nsnaps; i++) {
		const struct ic_snap *x = &a->snaps[i], *y = &b->snaps[i];
		if (memcmp(x->id.b, y->id.b, IC_ID_BYTES) || x->parent != y->parent || x->flushed_at != y->flushed_at ||
		    !same_str(x->message, y->message) || x->meta.n != y->meta.n || x->npruned != y->npruned)
			return 0;
		for (uint32_t k = 0; k < x->meta.n; k++)
			if (!same_str(x->meta.v[k].name, y->meta.v[k].name) || !same_bytes(x->meta.v[k].value, y->meta.v[k].value))
				return 0;
	}
	for (uint32_t i = 0; i < a->meta.n; i++)
		if (!same_str(a->meta.v[i].name, b->meta.v[i].name) || !same_bytes(a->meta.v[i].value, b->meta.v[i].value))
			return 0;
	for (uint32_t i = 0; i < a->nupdates; i++) {
		const struct ic_update *x = &a->updates[i], *y = &b->updates[i];
		if (x->type != y->type || x->at != y->at || x->has_backup != y->has_backup ||
		    (x->has_backup && !same_str(x->backup, y->backup)) || !same_str(x->name, y->name) ||
		    memcmp(x->prev.b, y->prev.b, IC_ID_BYTES) || memcmp(x->next.b, y->next.b, IC_ID_BYTES))
			return 0;
	}
	return (!a->has_before || same_str(a->before, b->before)) && same_bytes(a->config, b->config) &&
	       same_bytes(a->extra, b->extra) && a->status.availability == b->status.availability &&
	       a->status.set_at == b->status.set_at;
}

static void test_create_store(void)
{
	char path[300];
	json_t *loc = NULL;
	CHECK(new_repo(path, &loc) == 0);
	struct ic_repo r;
	CHECK(read_model(path, &r) == 0);
	CHECK(r.spec_version == 2 && r.nbranches == 1 && ic_str_eq(r.branches[0].name, "main"));
	CHECK(r.nsnaps == 1 && r.snaps[0].parent == -1 && ic_str_eq(r.snaps[0].message, "Repository initialized"));
	char id[IC_ID_CHARS + 1];
	ic_id_text(&r.snaps[0].id, id);
	CHECK_STR(id, IC_INITIAL_SNAPSHOT);
	/* The owner, as the second update (newest first). */
	CHECK(r.nupdates == 2 && r.updates[0].type == IC_UP_METADATA_CHANGED &&
	      r.updates[1].type == IC_UP_REPO_INITIALIZED);
	CHECK(!r.updates[0].has_backup && r.updates[1].has_backup && r.updates[0].at > r.updates[1].at);
	CHECK(r.meta.n == 1 && ic_str_eq(r.meta.v[0].name, IC_OWNER_KEY));
	json_t *owner = NULL;
	CHECK(r.meta.n == 1 && flex_decode(r.meta.v[0].value.p, r.meta.v[0].value.n, &owner) == 0);
	CHECK_STR(json_string_value(owner), DATASET);
	json_decref(owner);
	char backup[400];
	snprintf(backup, sizeof backup, "%s/overwritten/%.*s", path, (int)r.updates[1].backup.n, r.updates[1].backup.p);
	CHECK(access(backup, F_OK) == 0);
	ic_repo_free(&r);
	/* Made once: a second create refuses, and so does delete_store for a
	 * repository some other dataset owns. */
	CHECK(ic_create_store(&ctx, loc) == TETHER_EREFUSED);
	struct tether_bctx other = {.dataset_id = "ffffffffffffffffffffffffffffffff"};
	CHECK(ic_delete_store(&other, loc) == TETHER_EREFUSED);
	CHECK(access(path, F_OK) == 0);
	CHECK(ic_delete_store(&ctx, loc) == 0);
	CHECK(access(path, F_OK) != 0);
	json_decref(loc);
}

static void test_round_trip(void)
{
	char path[300];
	json_t *loc = NULL;
	CHECK(new_repo(path, &loc) == 0);
	struct ic_repository repo;
	CHECK(ic_repository_open(path, NULL, &repo) == 0);
	struct ic_id first;
	ic_id_parse(IC_INITIAL_SNAPSHOT, &first);
	char *tag = NULL;
	int created = 0;
	CHECK(ic_pin_tag(&repo, "01234567.aaaaaaaaaaaaaaaa", &first, &tag, &created) == 0 && created);
	free(tag);
	CHECK(ic_fork_branch(&repo, "tether.ws.01234567.x", &first, 1, NULL) == 0);
	struct ic_repo a, b;
	CHECK(ic_repo_read(repo.store, &a, NULL) == 0);
	uint8_t *fb1 = NULL, *fb2 = NULL;
	size_t n1 = 0, n2 = 0;
	CHECK(ic_repo_serialize(&a, &fb1, &n1) == 0);
	CHECK(ic_repo_parse(fb1, n1, "round trip", &b) == 0);
	CHECK(same_model(&a, &b));
	/* The same model always gives the same bytes. */
	CHECK(ic_repo_serialize(&b, &fb2, &n2) == 0 && n1 == n2 && memcmp(b.payload, fb2, n1) == 0);
	free(fb2);
	ic_repo_free(&a);
	ic_repo_free(&b);
	ic_repository_close(&repo);
	CHECK(ic_delete_store(&ctx, loc) == TETHER_EREFUSED); /* it has a tag and a branch now */
	json_decref(loc);
}

static struct ic_update tagged(struct ic_repo *r, const char *name, uint64_t at)
{
	struct ic_update u;
	memset(&u, 0, sizeof u);
	u.type = IC_UP_TAG_CREATED;
	u.name = ic_repo_strdup(r, name);
	u.at = at;
	return u;
}

static void test_ops_log(void)
{
	char path[300];
	json_t *loc = NULL;
	CHECK(new_repo(path, &loc) == 0);
	struct ic_repo r;
	CHECK(read_model(path, &r) == 0);
	uint64_t t = r.updates[0].at;
	char name[32];
	/* Keep 3: the fourth entry pushed out is where history continues. */
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "b%d", i);
		struct ic_update u = tagged(&r, "t", t + 1 + (uint64_t)i);
		CHECK(ic_repo_log(&r, &u, name, 3) == 0);
	}
	CHECK(r.nupdates == 3);
	CHECK(!r.updates[0].has_backup && ic_str_eq(r.updates[1].backup, "b3") && ic_str_eq(r.updates[2].backup, "b2"));
	CHECK(r.has_before && ic_str_eq(r.before, "b1"));
	/* Time moves forward only. */
	struct ic_update late = tagged(&r, "t", t);
	CHECK(ic_repo_log(&r, &late, "bx", 3) == TETHER_EREFUSED);
	ic_repo_free(&r);
	json_decref(loc);
}

static void test_mutations(void)
{
	char path[300];
	json_t *loc = NULL;
	CHECK(new_repo(path, &loc) == 0);
	struct ic_repo r;
	struct ic_id prev;
	CHECK(read_model(path, &r) == 0);
	CHECK(ic_repo_add_tag(&r, "b", 0) == 0 && ic_repo_add_tag(&r, "a", 0) == 0 && ic_repo_add_tag(&r, "c", 0) == 0);
	CHECK(r.ntags == 3 && ic_str_eq(r.tags[0].name, "a") && ic_str_eq(r.tags[2].name, "c"));
	CHECK(ic_repo_add_tag(&r, "b", 0) == TETHER_EREFUSED);
	CHECK(ic_repo_add_tag(&r, "x/y", 0) == TETHER_EUSAGE);
	CHECK(ic_repo_delete_tag(&r, "b", &prev) == 0 && r.ntags == 2 && ic_repo_tag_deleted(&r, "b"));
	CHECK(ic_repo_add_tag(&r, "b", 0) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "never reuses") != NULL);
	CHECK(ic_repo_delete_tag(&r, "nope", &prev) == TETHER_ENOTFOUND);
	CHECK(ic_repo_add_branch(&r, "dev", 0) == 0 && ic_repo_add_branch(&r, "dev", 0) == TETHER_EREFUSED);
	CHECK(r.nbranches == 2 && ic_str_eq(r.branches[0].name, "dev"));
	CHECK(ic_repo_set_branch(&r, "ghost", 0, &prev) == TETHER_ENOTFOUND);
	CHECK(ic_repo_delete_branch(&r, "main", &prev) == TETHER_EREFUSED);
	CHECK(ic_repo_delete_branch(&r, "dev", &prev) == 0 && r.nbranches == 1);
	/* A disabled flag: create_tag off. */
	uint16_t off[] = {IC_FLAG_CREATE_TAG};
	r.disabled_flags = (struct ic_u16s){off, 1, 1};
	CHECK(!ic_repo_flag_enabled(&r, IC_FLAG_CREATE_TAG) && ic_repo_flag_enabled(&r, IC_FLAG_DELETE_TAG));
	CHECK(ic_repo_add_tag(&r, "d", 0) == TETHER_EREFUSED && strstr(tether_error_last(), "create_tag"));
	r.disabled_flags = (struct ic_u16s){NULL, 0, 0};
	CHECK(ic_repo_updates_per_file(&r) == IC_UPDATES_PER_FILE);
	ic_repo_free(&r);
	json_decref(loc);
}

static void test_pins(void)
{
	char path[300];
	json_t *loc = NULL;
	CHECK(new_repo(path, &loc) == 0);
	struct ic_repository repo;
	CHECK(ic_repository_open(path, NULL, &repo) == 0 && repo.spec == 2);
	struct ic_id first, other, snap;
	ic_id_parse(IC_INITIAL_SNAPSHOT, &first);
	memset(&other, 7, sizeof other);
	char *tag = NULL, *live = NULL;
	int created = 0;
	const char *pin = "01234567.bbbbbbbbbbbbbbbb";
	CHECK(ic_pin_tag(&repo, pin, &other, &tag, &created) == TETHER_ENOTFOUND && !tag);
	CHECK(ic_pin_tag(&repo, pin, &first, &tag, &created) == 0 && created);
	CHECK_STR(tag, "tether.01234567.bbbbbbbbbbbbbbbb");
	free(tag);
	CHECK(ic_pin_tag(&repo, pin, &first, &tag, &created) == 0 && !created);
	free(tag);
	/* Deleted: the name is burnt, the next pin is generation 2. */
	CHECK(ic_unpin_all(&repo, pin) == 0);
	CHECK(ic_live_tag(&repo, "tether.01234567.bbbbbbbbbbbbbbbb", pin, &live, &snap) == 0 && !live);
	CHECK(ic_pin_tag(&repo, pin, &first, &tag, &created) == 0 && created);
	CHECK_STR(tag, "tether.01234567.bbbbbbbbbbbbbbbb.2");
	free(tag);
	CHECK(ic_live_tag(&repo, "tether.01234567.bbbbbbbbbbbbbbbb", pin, &live, &snap) == 0);
	CHECK_STR(live, "tether.01234567.bbbbbbbbbbbbbbbb.2");
	CHECK(memcmp(snap.b, first.b, IC_ID_BYTES) == 0);
	free(live);
	char *p = ic_pin_of_tag("tether.01234567.bbbbbbbbbbbbbbbb.2");
	CHECK_STR(p, pin);
	free(p);
	p = ic_pin_of_tag("tether.01234567.bbbbbbbbbbbbbbbb");
	CHECK_STR(p, pin);
	free(p);
	p = ic_pin_of_tag("tether.a.b.x");
	CHECK_STR(p, "a.b.x");
	free(p);
	CHECK(ic_pin_of_tag("release-1") == NULL);
	/* Forks: absent, then a condition on the head. */
	CHECK(ic_fork_branch(&repo, "w", &first, 1, NULL) == 0);
	CHECK(ic_fork_branch(&repo, "w", &first, 1, NULL) == TETHER_EREFUSED);
	CHECK(ic_fork_branch(&repo, "w", &first, 0, &other) == TETHER_EREFUSED);
	CHECK(ic_fork_branch(&repo, "w", &first, 0, &first) == 0);
	CHECK(ic_delete_branch(&repo, "w", NULL) == 0 && ic_delete_branch(&repo, "w", NULL) == 0);
	ic_repository_close(&repo);
	json_decref(loc);
}

/* ------------------------------------------------------------------ */
/* Hand-built files: what tether must refuse                           */
/* ------------------------------------------------------------------ */

struct shape {
	uint8_t spec;
	uint8_t update_type;
	uint32_t branch_index;
	int extra_repo_slot;   /* a Repo field at slot 13 */
	int omit_snapshots;
};

static uint8_t *build_repo(const struct shape *sh, size_t *len)
{
	struct fbb b;
	fbb_init(&b);
	fb_ref tags = fbb_vector_refs(&b, NULL, 0);
	fb_ref name = fbb_string(&b, "main", 4);
	fbb_table_start(&b);
	fbb_add_ref(&b, 0, name);
	fbb_add_u32(&b, 1, sh->branch_index);
	fb_ref main_ref = fbb_table_end(&b);
	fb_ref branches = fbb_vector_refs(&b, &main_ref, 1);
	fb_ref deleted = fbb_vector_refs(&b, NULL, 0);
	fb_ref msg = fbb_string(&b, "init", 4);
	struct ic_id id;
	ic_id_parse(IC_INITIAL_SNAPSHOT, &id);
	fbb_table_start(&b);
	fbb_add_struct(&b, 0, id.b, IC_ID_BYTES, 1);
	fbb_add_i32(&b, 1, -1);
	fbb_add_u64(&b, 2, 1);
	fbb_add_ref(&b, 3, msg);
	fb_ref snap = fbb_table_end(&b);
	fb_ref snaps = fbb_vector_refs(&b, &snap, 1);
	fbb_table_start(&b);
	fbb_add_u8(&b, 0, 0);
	fbb_add_u64(&b, 1, 1);
	fb_ref status = fbb_table_end(&b);
	fbb_table_start(&b);
	fb_ref member = fbb_table_end(&b);
	fbb_table_start(&b);
	fbb_add_u8(&b, 0, sh->update_type);
	fbb_add_ref(&b, 1, member);
	fbb_add_u64(&b, 2, 1);
	fb_ref update = fbb_table_end(&b);
	fb_ref updates = fbb_vector_refs(&b, &update, 1);
	fbb_table_start(&b);
	fbb_add_u8(&b, 0, sh->spec);
	fbb_add_ref(&b, 1, tags);
	fbb_add_ref(&b, 2, branches);
	fbb_add_ref(&b, 3, deleted);
	if (!sh->omit_snapshots)
		fbb_add_ref(&b, 4, snaps);
	fbb_add_ref(&b, 5, status);
	fbb_add_ref(&b, 7, updates);
	if (sh->extra_repo_slot)
		fbb_add_u8(&b, 13, 1);
	fb_ref root = fbb_table_end(&b);
	uint8_t *out = NULL;
	if (fbb_finish(&b, root, "Ichk", &out, len) != 0)
		out = NULL;
	fbb_free(&b);
	return out;
}

static int parse_shape(const struct shape *sh, struct ic_repo *r)
{
	size_t len = 0;
	uint8_t *fb = build_repo(sh, &len);
	return fb ? ic_repo_parse(fb, len, "hand-built", r) : TETHER_ERROR;
}

static void test_refusals(void)
{
	struct ic_repo r;
	struct shape good = {2, IC_UP_REPO_INITIALIZED, 0, 0, 0};
	CHECK(parse_shape(&good, &r) == 0 && !r.unwritable[0]);
	uint8_t *out = NULL;
	size_t len = 0;
	CHECK(ic_repo_serialize(&r, &out, &len) == 0);
	free(out);
	out = NULL;
	ic_repo_free(&r);

	struct shape extra = good;
	extra.extra_repo_slot = 1;
	CHECK(parse_shape(&extra, &r) == 0 && strstr(r.unwritable, "does not know"));
	CHECK(ic_repo_serialize(&r, &out, &len) == TETHER_EREFUSED && !out);
	ic_repo_free(&r);

	struct shape update = good;
	update.update_type = IC_UP_LAST + 1;
	CHECK(parse_shape(&update, &r) == 0 && strstr(r.unwritable, "type 17"));
	ic_repo_free(&r);

	struct shape spec = good;
	spec.spec = 3;
	CHECK(parse_shape(&spec, &r) == 0 && strstr(r.unwritable, "spec version is 3"));
	ic_repo_free(&r);

	struct shape dangling = good;
	dangling.branch_index = 5;
	CHECK(parse_shape(&dangling, &r) == TETHER_EIO && strstr(tether_error_last(), "hand-built"));

	struct shape missing = good;
	missing.omit_snapshots = 1;
	CHECK(parse_shape(&missing, &r) == TETHER_EIO && strstr(tether_error_last(), "snapshots"));

	uint8_t junk[64];
	memset(junk, 0xff, sizeof junk);
	uint8_t *copy = malloc(sizeof junk);
	memcpy(copy, junk, sizeof junk);
	CHECK(ic_repo_parse(copy, sizeof junk, "junk", &r) == TETHER_EIO);
}

/* A spec-1 snapshot file naming `parent`, written under snapshots/. */
static int put_v1_snapshot(tether_store *s, const struct ic_id *id, const struct ic_id *parent)
{
	struct fbb b;
	fbb_init(&b);
	fb_ref nodes = fbb_vector_refs(&b, NULL, 0);
	fb_ref msg = fbb_string(&b, "loop", 4);
	fb_ref meta = fbb_vector_refs(&b, NULL, 0);
	fb_ref files = fbb_vector(&b, NULL, 0, 32, 8);
	fbb_table_start(&b);
	fbb_add_struct(&b, 0, id->b, IC_ID_BYTES, 1);
	fbb_add_struct(&b, 1, parent->b, IC_ID_BYTES, 1);
	fbb_add_ref(&b, 2, nodes);
	fbb_add_u64(&b, 3, 1);
	fbb_add_ref(&b, 4, msg);
	fbb_add_ref(&b, 5, meta);
	fbb_add_ref(&b, 6, files);
	uint8_t *fb = NULL, *file = NULL;
	size_t fblen = 0, len = 0;
	int rc = fbb_finish(&b, fbb_table_end(&b), "Ichk", &fb, &fblen);
	fbb_free(&b);
	if (rc == 0)
		rc = icf_write(1, ICF_SNAPSHOT, "test", fb, fblen, 1, &file, &len);
	char text[IC_ID_CHARS + 1], key[64];
	ic_id_text(id, text);
	snprintf(key, sizeof key, "snapshots/%s", text);
	if (rc == 0)
		rc = tether_store_put(s, key, file, len, TETHER_PUT_OVERWRITE, NULL, NULL);
	free(fb);
	free(file);
	return rc;
}

/* A spec-1 history whose parents loop (A -> B -> A): ancestry stops with
 * an error instead of reading the loop forever. */
static void test_v1_parent_loop(void)
{
	char path[300], ref[128];
	snprintf(path, sizeof path, "%s/v1loop", scratch);
	tether_store *s = NULL;
	struct ic_id a, b;
	memset(a.b, 1, sizeof a.b);
	memset(b.b, 2, sizeof b.b);
	char ta[IC_ID_CHARS + 1];
	ic_id_text(&a, ta);
	snprintf(ref, sizeof ref, "{\"snapshot\":\"%s\"}", ta);
	CHECK(tether_store_open(path, NULL, &s) == 0);
	CHECK(tether_store_put(s, "refs/branch.main/ref.json", ref, strlen(ref), TETHER_PUT_OVERWRITE, NULL, NULL) == 0);
	CHECK(put_v1_snapshot(s, &a, &b) == 0 && put_v1_snapshot(s, &b, &a) == 0);
	tether_store_close(s);
	struct ic_repository repo;
	CHECK(ic_repository_open(path, NULL, &repo) == 0 && repo.spec == 1);
	json_t *chain = NULL;
	CHECK(ic_ancestry(&repo, &a, 0, &chain) == TETHER_EIO && !chain);
	CHECK(strstr(tether_error_last(), "loops back") != NULL);
	CHECK(ic_ancestry(&repo, &a, 2, &chain) == 0 && json_array_size(chain) == 2);
	json_decref(chain);
	ic_repository_close(&repo);
}

int main(void)
{
	snprintf(scratch, sizeof scratch, "%s/tether-test-icechunk-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(scratch))
		return 1;
	test_create_store();
	test_round_trip();
	test_ops_log();
	test_mutations();
	test_pins();
	test_refusals();
	test_v1_parent_loop();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", scratch);
	CHECK_DONE();
}
