/* The versioned plug-in structs (core/abi.h): members past a short size read
 * as absent, a newer version is refused naming both, option structs from
 * older callers are read with what they lack as zero, and a backend of the
 * version 3 layout is adapted so its functions see the old layouts. */
#include "check.h"

#include "core/abi.h"
#include "core/abi_v3.h"
#include "store/store_impl.h"
#include "vcs/vcs.h"

#include <tether.h>
#include <tether/testing.h>

#include <stddef.h>

/* ---- a backend of today's layout ----------------------------------------- */

static int calls_many, calls_streams;

static int make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                        json_t **locator)
{
	(void)ctx, (void)options, (void)cwd;
	*locator = json_pack("{s:s}", "path", uri);
	return 0;
}

static int identity(const struct tether_bctx *ctx, const json_t *locator, json_t **out)
{
	(void)ctx;
	*out = json_deep_copy(locator);
	return 0;
}

static int fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                       struct tether_fingerprint *out)
{
	(void)ctx, (void)locator, (void)policy;
	out->state = json_pack("{s:s}", "v", "1");
	return 0;
}

static int verify_many(const struct tether_bctx *ctx, struct tether_verify_item *items, size_t n)
{
	(void)ctx, (void)items, (void)n;
	calls_many++;
	return 0;
}

static int list_working_refs(const struct tether_bctx *ctx, const json_t *locator, json_t **refs)
{
	(void)ctx, (void)locator;
	*refs = json_array();
	return 0;
}

static struct tether_backend full(const char *kind)
{
	return (struct tether_backend){
		TETHER_BACKEND_INIT,
		.kind = kind,
		.caps = TETHER_CAP_FINGERPRINT,
		.make_locator = make_locator,
		.identity = identity,
		.fingerprint = fingerprint,
		.list_working_refs = list_working_refs,
		.verify_many = verify_many,
	};
}

static int quiescent(const struct tether_bctx *ctx, const json_t *locator, int *busy, char **why)
{
	(void)ctx;
	(void)locator;
	*busy = 0;
	*why = NULL;
	return 0;
}

static int descends_yes(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *d,
                        int *answer)
{
	(void)ctx;
	(void)locator;
	(void)a;
	(void)d;
	*answer = 1;
	return 0;
}

static int move_base_stub(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                          const json_t *expect, json_t **result)
{
	(void)ctx;
	(void)locator;
	(void)state;
	(void)expect;
	*result = NULL;
	return 0;
}

static void test_short_size(void)
{
	struct tether_backend b = full("short");
	CHECK(TT_BACKEND_GET(&b, verify_many) == verify_many);
	/* As a module built when the struct ended before verify_many. */
	b.size = (uint32_t)offsetof(struct tether_backend, verify_many);
	CHECK(TT_BACKEND_GET(&b, verify_many) == NULL);
	CHECK(TT_BACKEND_GET(&b, diff_streams) == NULL);
	CHECK(TT_BACKEND_GET(&b, list_working_refs) == list_working_refs);
	CHECK(!TETHER_STRUCT_HAS(struct tether_backend, &b, verify_many));
	CHECK(TETHER_STRUCT_HAS(struct tether_backend, &b, list_working_refs));
	/* One byte short of the member is short. */
	b.size = (uint32_t)(offsetof(struct tether_backend, verify_many) + sizeof b.verify_many - 1);
	CHECK(TT_BACKEND_GET(&b, verify_many) == NULL);
	b.size = (uint32_t)(offsetof(struct tether_backend, verify_many) + sizeof b.verify_many);
	CHECK(TT_BACKEND_GET(&b, verify_many) == verify_many);
}

static void test_versions_refused(void)
{
	static struct tether_backend newer, tiny, zero;
	newer = full("newer");
	newer.version = TETHER_BACKEND_VERSION + 1;
	CHECK(tether_backend_register(&newer) == TETHER_ERROR);
	char want[128];
	snprintf(want, sizeof want, "is version %u, newer than this tether's version %u", TETHER_BACKEND_VERSION + 1,
	         TETHER_BACKEND_VERSION);
	CHECK(strstr(tether_error_last(), want) != NULL);
	CHECK(strstr(tether_error_last(), "backend 'newer'") != NULL);
	CHECK(!strchr(tether_error_last(), '\n'));

	tiny = full("tiny");
	tiny.size = (uint32_t)offsetof(struct tether_backend, diff_streams);
	CHECK(tether_backend_register(&tiny) == TETHER_ERROR);
	CHECK(strstr(tether_error_last(), "has size") != NULL);

	zero = full("zero");
	zero.version = 0;
	CHECK(tether_backend_register(&zero) == TETHER_ERROR);
	CHECK(strstr(tether_error_last(), "is version 0, older") != NULL);

	static struct tether_backend ok;
	ok = full("current");
	CHECK(tether_backend_register(&ok) == 0);
	CHECK(tether_backend_find("current") == &ok);

	/* A version 4 module: its struct ends at close_store, and loads; the
	 * members version 5 appended read as absent. */
	static struct tether_backend four;
	four = full("four");
	four.version = 4;
	four.size = (uint32_t)TT_SIZE_THROUGH(struct tether_backend, close_store);
	CHECK(tether_backend_register(&four) == 0);
	CHECK(tether_backend_find("four") == &four);
	CHECK(TT_BACKEND_GET(&four, verify_deep) == NULL);
	CHECK(TT_BACKEND_GET(&four, check_quiescence) == NULL);
	CHECK(TT_BACKEND_GET(&four, verify_many) == verify_many);
	CHECK(TT_BACKEND_GET(&four, descends) == NULL);
	CHECK(TT_BACKEND_GET(&four, delete_working_ref_if) == NULL);

	/* A version 5 module: its struct ends at check_quiescence, and loads;
	 * the members version 6 appended read as absent, its own as they are. */
	static struct tether_backend five;
	five = full("five");
	five.version = 5;
	five.check_quiescence = quiescent;
	five.size = (uint32_t)TT_SIZE_THROUGH(struct tether_backend, check_quiescence);
	CHECK(tether_backend_register(&five) == 0);
	CHECK(tether_backend_find("five") == &five);
	CHECK(TT_BACKEND_GET(&five, check_quiescence) == quiescent);
	CHECK(TT_BACKEND_GET(&five, descends) == NULL);
	CHECK(TT_BACKEND_GET(&five, delete_working_ref_if) == NULL);
	/* One byte short of delete_working_ref_if: that member is absent,
	 * descends before it present. */
	static struct tether_backend six;
	six = full("six");
	six.descends = descends_yes;
	six.size = (uint32_t)(offsetof(struct tether_backend, delete_working_ref_if) + sizeof six.delete_working_ref_if - 1);
	CHECK(TT_BACKEND_GET(&six, descends) == descends_yes);
	CHECK(TT_BACKEND_GET(&six, delete_working_ref_if) == NULL);
	CHECK(TT_BACKEND_GET(&four, move_base) == NULL);

	/* A version 5 module: its struct ends at check_quiescence, and loads;
	 * move_base, which version 6 appended, reads as absent. */
	static struct tether_backend five_mb;
	five_mb = full("five-move-base");
	five_mb.version = 5;
	five_mb.move_base = move_base_stub; /* past its size: never read */
	five_mb.size = (uint32_t)TT_SIZE_THROUGH(struct tether_backend, check_quiescence);
	CHECK(tether_backend_register(&five_mb) == 0);
	CHECK(tether_backend_find("five-move-base") == &five_mb);
	CHECK(TT_BACKEND_GET(&five_mb, move_base) == NULL);
	CHECK(TT_BACKEND_GET(&five_mb, verify_many) == verify_many);
	static struct tether_backend six_mb;
	six_mb = full("six-move-base");
	six_mb.move_base = move_base_stub;
	CHECK(TT_BACKEND_GET(&six_mb, move_base) == move_base_stub);
}

/* The other plug-in structs' accessors, the same way. */
static int bookmarks(struct tether_vcs *vh, json_t **names)
{
	(void)vh;
	*names = json_array();
	return 0;
}

static void store_close(void *impl)
{
	(void)impl;
}

static int new_locator(void *ud, json_t **locator)
{
	(void)ud;
	*locator = json_object();
	return 0;
}

static void test_other_structs(void)
{
	struct tether_vcs_ops vcs = {TETHER_VCS_OPS_INIT, .name = "x", .list_bookmarks = bookmarks};
	CHECK(TT_VCS_GET(&vcs, list_bookmarks) == bookmarks);
	vcs.size = (uint32_t)offsetof(struct tether_vcs_ops, list_bookmarks);
	CHECK(TT_VCS_GET(&vcs, list_bookmarks) == NULL);
	CHECK(TT_VCS_GET(&vcs, open) == NULL); /* NULL in the struct, inside the size */

	struct tether_store_ops store = {TETHER_STORE_OPS_INIT, .close = store_close};
	CHECK(TT_STORE_HAS(&store, close));
	store.size = (uint32_t)offsetof(struct tether_store_ops, close);
	CHECK(!TT_STORE_HAS(&store, close));

	struct tether_harness h = {TETHER_HARNESS_INIT, .new_locator = new_locator};
	CHECK(TT_STRUCT_GET(struct tether_harness, &h, new_locator) == new_locator);
	h.size = (uint32_t)offsetof(struct tether_harness, new_locator);
	CHECK(TT_STRUCT_GET(struct tether_harness, &h, new_locator) == NULL);
	CHECK(h.version == TETHER_HARNESS_VERSION);
}

/* ---- option structs ---------------------------------------------------- */

static void test_opts(void)
{
	/* An older caller's struct ends before dry_run; what lies past it in
	 * memory is not the caller's and must not be read. */
	struct tether_commit_opts in = {TETHER_COMMIT_OPTS_INIT, .message = "m", .strict = 1, .dry_run = 1};
	in.size = (uint32_t)offsetof(struct tether_commit_opts, dry_run);
	struct tether_commit_opts out;
	CHECK(TT_OPTS_IN("struct tether_commit_opts", TETHER_COMMIT_OPTS_VERSION, &in, &out) == 0);
	CHECK_STR(out.message, "m");
	CHECK(out.strict == 1);
	CHECK(out.dry_run == 0);

	struct tether_commit_opts bare = {.message = "m"}; /* no TETHER_COMMIT_OPTS_INIT */
	CHECK(TT_OPTS_IN("struct tether_commit_opts", TETHER_COMMIT_OPTS_VERSION, &bare, &out) == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "struct tether_commit_opts is version 0") != NULL);

	struct tether_commit_opts newer = {TETHER_COMMIT_OPTS_INIT};
	newer.version = TETHER_COMMIT_OPTS_VERSION + 1;
	CHECK(TT_OPTS_IN("struct tether_commit_opts", TETHER_COMMIT_OPTS_VERSION, &newer, &out) == TETHER_EUSAGE);
	char want[64];
	snprintf(want, sizeof want, "newer than this tether's version %d", TETHER_COMMIT_OPTS_VERSION);
	CHECK(strstr(tether_error_last(), want) != NULL);

	CHECK(TT_OPTS_IN("struct tether_commit_opts", TETHER_COMMIT_OPTS_VERSION, NULL, &out) == 0);
	CHECK(out.message == NULL && out.version == 0);

	/* A version 1 caller (before force): its struct ends at progress_ud,
	 * and force reads as 0, so the quiescence check is made. */
	struct tether_commit_opts v1 = {TETHER_COMMIT_OPTS_INIT, .message = "m", .force = 1};
	v1.version = 1;
	v1.size = (uint32_t)offsetof(struct tether_commit_opts, force);
	CHECK(TT_OPTS_IN("struct tether_commit_opts", TETHER_COMMIT_OPTS_VERSION, &v1, &out) == 0);
	CHECK(out.force == 0 && out.version == 1);
	struct tether_verify_opts vv1 = {TETHER_VERIFY_OPTS_INIT, .all_history = 1, .deep = 1}, vout;
	vv1.version = 1;
	vv1.size = (uint32_t)offsetof(struct tether_verify_opts, deep);
	CHECK(TT_OPTS_IN("struct tether_verify_opts", TETHER_VERIFY_OPTS_VERSION, &vv1, &vout) == 0);
	CHECK(vout.all_history == 1 && vout.deep == 0);
}

/* ---- a backend of the version 3 layout ------------------------------------ */

static const char *v3_seen_root;
static int v3_seen_threads;

static int v3_make_locator(const struct tt_v3_bctx *ctx, const char *uri, const json_t *options, const char *cwd,
                           json_t **locator)
{
	(void)ctx, (void)options, (void)cwd;
	*locator = json_pack("{s:s}", "path", uri);
	return 0;
}

static int v3_identity(const struct tt_v3_bctx *ctx, const json_t *locator, json_t **out)
{
	(void)ctx;
	*out = json_deep_copy(locator);
	return 0;
}

static int v3_fingerprint(const struct tt_v3_bctx *ctx, const json_t *locator, const json_t *policy,
                          struct tt_v3_fingerprint *out)
{
	(void)locator, (void)policy;
	v3_seen_root = ctx->dataset_root;
	v3_seen_threads = ctx->threads;
	out->state = json_pack("{s:s}", "v", ctx->key);
	out->listing = strdup("{}\n");
	out->listing_len = 3;
	return 0;
}

static int v3_verify_many(const struct tt_v3_bctx *ctx, struct tt_v3_verify_item *items, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		items[i].ok = json_equal(items[i].state, items[i].locator);
		items[i].detail = items[i].ok ? NULL : strdup(json_string_value(json_object_get(items[i].state, "why")));
	}
	return 0;
}

static int v3_diff_streams(const struct tt_v3_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
                           const struct tt_v3_listing_source *la, const struct tt_v3_listing_source *lb,
                           size_t max, json_t **diff)
{
	(void)ctx, (void)locator, (void)a, (void)b, (void)max;
	char buf[16];
	size_t got = 0;
	int rc = la->read(la->ud, buf, sizeof buf, &got);
	*diff = json_pack("{s:s#, s:b}", "first", buf, (int)got, "b_missing", lb == NULL);
	calls_streams++;
	return rc;
}

static int piece(void *ud, char *buf, size_t cap, size_t *got)
{
	const char *text = ud;
	*got = strlen(text) < cap ? strlen(text) : cap;
	memcpy(buf, text, *got);
	return 0;
}

static void test_v3_adapter(void)
{
	static const struct tt_v3_backend old = {
		.abi = 3,
		.kind = "oldthree",
		.summary = "a version 3 backend",
		.caps = TETHER_CAP_FINGERPRINT,
		.make_locator = v3_make_locator,
		.identity = v3_identity,
		.fingerprint = v3_fingerprint,
		.verify_many = v3_verify_many,
		.diff_streams = v3_diff_streams,
	};
	CHECK(tether_backend_register((const struct tether_backend *)&old) == 0);
	const struct tether_backend *b = tether_backend_find("oldthree");
	CHECK(b != NULL && (const void *)b != (const void *)&old);
	if (!b)
		return;
	CHECK(b->version == TETHER_BACKEND_VERSION && b->size == sizeof *b);
	CHECK_STR(b->kind, "oldthree");
	CHECK_STR(b->summary, "a version 3 backend");
	CHECK(b->caps == TETHER_CAP_FINGERPRINT);
	/* What the old one lacks, its adapter lacks. */
	CHECK(b->pin == NULL && b->diff == NULL && b->check_drift == NULL && b->check_state == NULL);

	struct tether_bctx ctx = {TETHER_BCTX_INIT, .dataset_root = "/data", .key = "k1", .threads = 3};
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	CHECK(b->fingerprint(&ctx, NULL, NULL, &fp) == 0);
	CHECK_STR(v3_seen_root, "/data");
	CHECK(v3_seen_threads == 3);
	CHECK_STR(json_string_value(json_object_get(fp.state, "v")), "k1");
	CHECK(fp.listing_len == 3 && fp.listing && strcmp(fp.listing, "{}\n") == 0);
	CHECK(fp.version == TETHER_FINGERPRINT_VERSION && fp.size == sizeof fp);
	json_decref(fp.state);
	free(fp.listing);

	json_t *s1 = json_pack("{s:s}", "why", "one"), *s2 = json_pack("{s:s}", "why", "two");
	struct tether_verify_item items[] = {
		{TETHER_VERIFY_ITEM_INIT, .locator = s1, .state = s1, .ok = -1},
		{TETHER_VERIFY_ITEM_INIT, .locator = s1, .state = s2, .ok = -1},
	};
	CHECK(TT_BACKEND_GET(b, verify_many)(&ctx, items, 2) == 0);
	CHECK(items[0].ok == 1 && items[0].detail == NULL);
	CHECK(items[1].ok == 0 && items[1].detail && strcmp(items[1].detail, "two") == 0);
	CHECK(items[1].version == TETHER_VERIFY_ITEM_VERSION);
	free(items[1].detail);
	json_decref(s1);
	json_decref(s2);

	struct tether_listing_source la = {TETHER_LISTING_SOURCE_INIT, .read = piece, .ud = "hello"};
	json_t *d = NULL;
	CHECK(TT_BACKEND_GET(b, diff_streams)(&ctx, NULL, NULL, NULL, &la, NULL, 10, &d) == 0);
	CHECK(calls_streams == 1);
	CHECK_STR(json_string_value(json_object_get(d, "first")), "hello");
	CHECK(json_is_true(json_object_get(d, "b_missing")));
	json_decref(d);

	/* Registering the same old struct again finds the same adapter (and
	 * is refused as the duplicate kind it is). */
	CHECK(tether_backend_register((const struct tether_backend *)&old) == TETHER_EREFUSED);
	CHECK(tether_backend_find("oldthree") == b);

	/* Versions before 3 are not adapted. */
	static struct tt_v3_backend two;
	two = old;
	two.abi = 2;
	two.kind = "oldtwo";
	CHECK(tether_backend_register((const struct tether_backend *)&two) == TETHER_ERROR);
	CHECK(strstr(tether_error_last(), "is version 2, older than the oldest this tether reads (3)") != NULL);
}

int main(void)
{
	test_short_size();
	test_other_structs();
	test_versions_refused();
	test_opts();
	test_v3_adapter();
	(void)calls_many;
	CHECK_DONE();
}
