/* The `file` backend: a local file or directory, or an object or prefix
 * in an object store (file_remote.c). Observed tier: its state can be
 * detected, not recovered (a single object in a versioned bucket, with
 * --file versioned, is Addressable by its version id). A file's state is
 * its size and sha256; a directory's is count, size and the digest of its
 * listing (the per-file sha256s), and the listing itself goes to the
 * engine to store. An object's is size and ETag (and version id); a
 * prefix's is a directory's with each key's ETag for its sha256. */
#include <tether/backend.h>
#include <tether/store.h>

#include "backends/file_remote.h"

#include "core/listing_read.h"
#include "core/scan.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/plural.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define OWNER_MARKER ".tether-owner"

static int file_make_locator(const struct tether_bctx *ctx, const char *uri, const json_t *options,
                             const char *cwd, json_t **locator)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)options, k, v) {
		if (strcmp(k, "file") != 0 && strcmp(k, "region") != 0)
			return tether_error_set(TETHER_EUSAGE, "unknown option '--%s' for kind file", k);
	}
	if (!uri || !*uri)
		return tether_error_set(TETHER_EUSAGE, "kind file needs a path: tether add KEY PATH --kind file");
	const char *region = json_string_value(json_object_get(options, "region"));
	if (json_object_get(options, "region") && (!region || !*region))
		return tether_error_set(TETHER_EUSAGE, "--region takes a region's name (us-east-1, say)");
	if (fr_is_remote(uri))
		return fr_make_locator(ctx, uri, region, locator);
	if (json_object_get(options, "region"))
		return tether_error_set(TETHER_EUSAGE, "--region is for an object store's URI, and %s is a local path", uri);
	char *path = tt_path_resolve(uri, cwd);
	struct stat st;
	if (stat(path, &st) != 0) {
		int rc = tether_error_set(TETHER_ENOTFOUND, "path does not exist: %s", uri);
		free(path);
		return rc;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		int rc = tether_error_set(TETHER_EUSAGE, "%s is neither a regular file nor a directory", uri);
		free(path);
		return rc;
	}
	/* A directory holding the dataset would change with every commit. */
	size_t pl = strlen(path);
	const char *root = ctx->dataset_root;
	if (root && strncmp(root, path, pl) == 0 && (root[pl] == '\0' || root[pl] == '/' || pl == 1)) {
		int rc = tether_error_set(TETHER_EUSAGE, "%s contains the dataset itself (%s)", uri, root);
		free(path);
		return rc;
	}
	/* A manifest is TOML, which is UTF-8: a path that is not cannot be
	 * written down (names inside a directory can: see listing_read.h). */
	char *bytes_hex;
	char *shown = tt_listing_display_name(path, strlen(path), &bytes_hex);
	if (bytes_hex) {
		int rc = tether_error_set(TETHER_EUSAGE, "path '%s' is not valid UTF-8: a manifest cannot record it "
		                          "(register a directory above it, or rename it)", shown ? shown : uri);
		free(shown);
		free(bytes_hex);
		free(path);
		return rc;
	}
	free(shown);
	*locator = json_pack("{s:s}", "uri", path);
	free(path);
	if (!*locator)
		return tether_error_set(TETHER_ERROR, "%s: out of memory", uri);
	return 0;
}

static int file_make_policy(const struct tether_bctx *ctx, const json_t *options, json_t **policy)
{
	const char *mode = json_string_value(json_object_get(options, "file"));
	if (!mode)
		mode = json_string_value(json_object_get(ctx->defaults, "file"));
	if (!mode)
		mode = "immutable";
	if (strcmp(mode, "immutable") != 0 && strcmp(mode, "mutable") != 0 && strcmp(mode, "versioned") != 0)
		return tether_error_set(TETHER_EUSAGE, "--file must be immutable, mutable or versioned, not '%s'", mode);
	*policy = json_pack("{s:s}", "file", mode);
	return 0;
}

/* A remote object: REMOTE_FINGERPRINT, and ADDRESSABLE when versioned. */
static int file_effective_capabilities(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                                       unsigned *caps)
{
	(void)ctx;
	return fr_caps(locator, policy, caps);
}

static int file_identity(const struct tether_bctx *ctx, const json_t *locator, json_t **identity)
{
	(void)ctx;
	const char *uri = json_string_value(json_object_get(locator, "uri"));
	if (!uri)
		return tether_error_set(TETHER_ECONFIG, "file locator has no uri");
	*identity = json_pack("{s:s}", "uri", uri);
	return 0;
}

static void scan_options(const struct tether_bctx *ctx, struct tt_scan_opts *o)
{
	memset(o, 0, sizeof *o);
	o->threads = ctx->threads;
	o->progress = ctx->progress;
	o->progress_fn = ctx->progress_fn;
	o->progress_ud = ctx->progress_ud;
	o->cache_dir = ctx->cache_dir;
	o->skip_name = OWNER_MARKER;
}

static int fingerprint_dir(const struct tether_bctx *ctx, const char *path, struct tether_fingerprint *out)
{
	struct tt_scan_opts o;
	scan_options(ctx, &o);
	struct tt_scan_summary r;
	int rc = tt_scan_tree_summary(path, &o, !ctx->state_only, &r);
	if (rc)
		return rc;
	out->state = json_pack("{s:s, s:I, s:I, s:s}", "type", "dir", "count", (json_int_t)r.count, "size",
	                       (json_int_t)r.total_size, "digest", r.digest);
	out->listing = r.listing;
	out->listing_len = r.listing_len;
	return 0;
}

static int file_fingerprint(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                            struct tether_fingerprint *out)
{
	(void)policy;
	memset(out, 0, sizeof *out);
	const char *path = json_string_value(json_object_get(locator, "uri"));
	if (!path)
		return tether_error_set(TETHER_ECONFIG, "file locator has no uri");
	if (fr_is_remote(path))
		return fr_fingerprint(ctx, locator, out);
	struct stat st;
	if (stat(path, &st) != 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return tether_error_set(TETHER_EIO, "%s: %s", path, strerror(errno));
		out->state = json_pack("{s:s}", "type", "missing");
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return fingerprint_dir(ctx, path, out);
	if (!S_ISREG(st.st_mode))
		return tether_error_set(TETHER_EIO, "%s is neither a regular file nor a directory", path);
	struct tt_scan_opts o;
	scan_options(ctx, &o);
	uint64_t size;
	unsigned char sha[32];
	int rc = tt_scan_file(path, &o, &size, sha);
	if (rc)
		return rc;
	char hex[65];
	tt_hex(sha, 32, hex);
	out->state = json_pack("{s:s, s:I, s:s}", "type", "file", "size", (json_int_t)size, "sha256", hex);
	return 0;
}

static json_int_t int_field(const json_t *state, const char *k)
{
	return json_integer_value(json_object_get(state, k));
}

static const char *str_field(const json_t *state, const char *k)
{
	const char *s = json_string_value(json_object_get(state, k));
	return s ? s : "?";
}

/* An object's change: what differs of its ETag, version and size. */
static char *describe_object_change(const json_t *a, const json_t *b)
{
	char etag[300] = "", version[2200] = "", size[80] = "";
	if (strcmp(str_field(a, "etag"), str_field(b, "etag")) != 0)
		snprintf(etag, sizeof etag, "etag %s → %s", str_field(a, "etag"), str_field(b, "etag"));
	const char *va = json_string_value(json_object_get(a, "version_id"));
	const char *vb = json_string_value(json_object_get(b, "version_id"));
	if ((va || vb) && (!va || !vb || strcmp(va, vb) != 0))
		snprintf(version, sizeof version, "%sversion %s → %s", *etag ? ", " : "", va ? va : "none",
		         vb ? vb : "none");
	if (int_field(a, "size") != int_field(b, "size"))
		snprintf(size, sizeof size, "%ssize %" JSON_INTEGER_FORMAT " → %" JSON_INTEGER_FORMAT,
		         *etag || *version ? ", " : "", int_field(a, "size"), int_field(b, "size"));
	return *etag || *version || *size ? tt_strdupf("%s%s%s", etag, version, size) : strdup("unchanged");
}

/* One line saying how two states differ, for drift and verify messages. */
static char *describe_change(const json_t *a, const json_t *b)
{
	const char *ta = str_field(a, "type"), *tb = str_field(b, "type");
	if (strcmp(tb, "missing") == 0)
		return strdup(strcmp(ta, "object") == 0 ? "the object no longer exists" : "the path no longer exists");
	if (strcmp(ta, tb) != 0)
		return tt_strdupf("it was a %s and is now a %s", ta, tb);
	if (strcmp(ta, "object") == 0)
		return describe_object_change(a, b);
	const char *noun = strcmp(ta, "prefix") == 0 ? "object" : "file";
	const char *nouns = strcmp(ta, "prefix") == 0 ? "objects" : "files";
	if (strcmp(ta, "file") == 0)
		return tt_strdupf("sha256 %.12s… → %.12s…, size %" JSON_INTEGER_FORMAT " → %" JSON_INTEGER_FORMAT,
		                  str_field(a, "sha256"), str_field(b, "sha256"), int_field(a, "size"),
		                  int_field(b, "size"));
	/* The noun agrees with the count it follows: "2 → 1 file". */
	return tt_strdupf("digest %.12s… → %.12s…, %" JSON_INTEGER_FORMAT " → %" JSON_INTEGER_FORMAT
	                  " %s, %" JSON_INTEGER_FORMAT " → %" JSON_INTEGER_FORMAT " %s",
	                  str_field(a, "digest"), str_field(b, "digest"), int_field(a, "count"),
	                  int_field(b, "count"), tt_plural(int_field(b, "count"), noun, nouns), int_field(a, "size"),
	                  int_field(b, "size"), tt_plural(int_field(b, "size"), "byte", "bytes"));
}

static int file_check_drift(const struct tether_bctx *ctx, const json_t *locator, const json_t *policy,
                            const json_t *recorded, const json_t *current, int *refused, char **why)
{
	(void)ctx;
	(void)locator;
	const char *mode = json_string_value(json_object_get(policy, "file"));
	*refused = 0;
	*why = NULL;
	if (!recorded || json_equal(recorded, current))
		return 0;
	char *change = describe_change(recorded, current);
	/* A versioned object's earlier states stay readable: a change is
	 * recorded, as a mutable one's. */
	if (!mode || (strcmp(mode, "mutable") != 0 && strcmp(mode, "versioned") != 0)) {
		*refused = 1;
		*why = tt_strdupf("immutable data changed: %s", change);
		free(change);
	} else {
		*why = change;
	}
	return 0;
}

static int file_verify(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                       const json_t *pin_ref, int *ok, char **detail)
{
	(void)pin_ref;
	if (fr_is_remote(json_string_value(json_object_get(locator, "uri"))))
		return fr_verify(ctx, locator, state, ok, detail);
	struct tether_bctx only_state = *ctx;
	only_state.state_only = 1; /* the listing is not compared */
	struct tether_fingerprint fp = {TETHER_FINGERPRINT_INIT};
	int rc = file_fingerprint(&only_state, locator, NULL, &fp);
	if (rc)
		return rc;
	*ok = json_equal(fp.state, state);
	*detail = NULL;
	if (!*ok) {
		char *change = describe_change(state, fp.state);
		*detail = tt_strdupf("changed since recorded: %s", change);
		free(change);
	}
	json_decref(fp.state);
	free(fp.listing);
	return 0;
}

static int file_open(const struct tether_bctx *ctx, const json_t *locator, const json_t *state,
                     const json_t *pin_ref, const json_t *working_ref, int read_only, json_t **handle)
{
	(void)pin_ref;
	(void)working_ref;
	(void)read_only;
	if (fr_is_remote(json_string_value(json_object_get(locator, "uri"))))
		return fr_open(ctx, locator, state, handle);
	*handle = json_pack("{s:s, s:O, s:O?, s:b}", "kind", "file", "uri", json_object_get(locator, "uri"),
	                    "state", state, "read_only", 1);
	return 0;
}

struct diff_acc {
	json_t *entries;
	size_t max;
	json_int_t added, removed, modified, size_delta;
};

/* One entry of a content diff. A name that is not valid UTF-8 is shown
 * with \xHH for its stray bytes, and "path_bytes" gives all its bytes in
 * hex, since that display could be a real name too. */
static json_t *diff_entry(const char *change, const char *path, size_t path_len, json_int_t size,
                          json_int_t delta)
{
	char *bytes_hex;
	char *shown = tt_listing_display_name(path, path_len, &bytes_hex);
	json_t *e = shown ? json_pack("{s:s, s:s, s:I, s:I}", "path", shown, "change", change, "size", size,
	                              "size_delta", delta)
	                  : NULL;
	if (e && bytes_hex)
		json_object_set_new(e, "path_bytes", json_string(bytes_hex));
	free(shown);
	free(bytes_hex);
	return e;
}

static void diff_emit_n(struct diff_acc *acc, const char *change, const char *path, size_t path_len,
                        json_int_t size, json_int_t delta)
{
	if (strcmp(change, "added") == 0)
		acc->added++;
	else if (strcmp(change, "removed") == 0)
		acc->removed++;
	else
		acc->modified++;
	acc->size_delta += delta;
	if (json_array_size(acc->entries) < acc->max)
		json_array_append_new(acc->entries, diff_entry(change, path, path_len, size, delta));
}

static void diff_emit(struct diff_acc *acc, const char *change, const char *path, json_int_t size,
                      json_int_t delta)
{
	diff_emit_n(acc, change, path, strlen(path), size, delta);
}

static json_t *diff_result(struct diff_acc *acc, const char *summary)
{
	size_t total = (size_t)(acc->added + acc->removed + acc->modified);
	return json_pack("{s:s, s:s, s:o, s:{s:I, s:I, s:I, s:I}, s:b}", "unit", "files", "summary", summary,
	                 "entries", acc->entries, "totals", "added", acc->added, "removed", acc->removed,
	                 "modified", acc->modified, "size_delta", acc->size_delta, "truncated",
	                 total > json_array_size(acc->entries));
}

/* Step a reader; a line it refuses is an error naming the side and line. */
static int listing_step(struct tt_listing_reader *r, const char *side, const struct tt_listing_line **line)
{
	int rc = tt_listing_reader_next(r, line);
	if (rc >= 0)
		return 0;
	size_t n = tt_listing_reader_lineno(r);
	if (rc == TT_LISTING_NOMEM)
		return tether_error_set(TETHER_ERROR, "listing of %s: out of memory at line %zu", side, n);
	if (rc == TT_LISTING_SOURCE)
		return tt_listing_reader_source_rc(r); /* its message names the listing */
	if (rc == TT_LISTING_UNORDERED)
		return tether_error_set(TETHER_ECONFIG, "listing of %s, line %zu: path out of order or repeated "
		                        "(a listing is sorted by path, each path once)", side, n);
	return tether_error_set(TETHER_ECONFIG, "listing of %s, line %zu is malformed", side, n);
}

static int cmp_paths(const struct tt_listing_line *x, const struct tt_listing_line *y)
{
	size_t m = x->path_len < y->path_len ? x->path_len : y->path_len;
	int c = memcmp(x->path, y->path, m);
	return c ? c : (x->path_len > y->path_len) - (x->path_len < y->path_len);
}

/* Two sorted listings merged in one pass: each line is decoded into the
 * reader's buffers and dropped, so memory does not grow with the listing,
 * and only the differences become entries. */
static int diff_listings(struct tt_listing_reader *ra, struct tt_listing_reader *rb, size_t max, json_t **diff)
{
	struct diff_acc acc = {.entries = json_array(), .max = max};
	const struct tt_listing_line *a = NULL, *b = NULL;
	int rc = !acc.entries ? tether_error_set(TETHER_ERROR, "listing diff: out of memory") : 0;
	if (!rc)
		rc = listing_step(ra, "the 'from' side", &a);
	if (!rc)
		rc = listing_step(rb, "the 'to' side", &b);
	while (!rc && (a || b)) {
		int c = !a ? 1 : !b ? -1 : cmp_paths(a, b);
		if (c < 0) {
			diff_emit_n(&acc, "removed", a->path, a->path_len, a->size, -a->size);
			rc = listing_step(ra, "the 'from' side", &a);
		} else if (c > 0) {
			diff_emit_n(&acc, "added", b->path, b->path_len, b->size, b->size);
			rc = listing_step(rb, "the 'to' side", &b);
		} else {
			if (a->size != b->size || a->token_len != b->token_len ||
			    memcmp(a->token, b->token, a->token_len) != 0)
				diff_emit_n(&acc, "modified", b->path, b->path_len, b->size, b->size - a->size);
			rc = listing_step(ra, "the 'from' side", &a);
			if (!rc)
				rc = listing_step(rb, "the 'to' side", &b);
		}
	}
	if (rc) {
		json_decref(acc.entries);
		return rc;
	}
	char summary[160];
	snprintf(summary, sizeof summary, "%" JSON_INTEGER_FORMAT " added, %" JSON_INTEGER_FORMAT
	         " removed, %" JSON_INTEGER_FORMAT " modified", acc.added, acc.removed, acc.modified);
	*diff = diff_result(&acc, summary);
	return 0;
}

/* Two directory states with both listings: merged; anything else: what
 * the states themselves say. */
static int diff_states(const json_t *locator, const json_t *a, const json_t *b, struct tt_listing_reader *ra,
                       struct tt_listing_reader *rb, size_t max_entries, json_t **diff);

static int file_diff(const struct tether_bctx *ctx, const json_t *locator, const json_t *a, const json_t *b,
                     const char *listing_a, size_t len_a, const char *listing_b, size_t len_b,
                     size_t max_entries, json_t **diff)
{
	(void)ctx;
	struct tt_listing_reader *ra = listing_a ? tt_listing_reader_new(listing_a, len_a) : NULL;
	struct tt_listing_reader *rb = listing_b ? tt_listing_reader_new(listing_b, len_b) : NULL;
	int rc = (listing_a && !ra) || (listing_b && !rb) ? tether_error_set(TETHER_ERROR, "listing diff: out of memory")
	                                                  : diff_states(locator, a, b, ra, rb, max_entries, diff);
	tt_listing_reader_free(ra);
	tt_listing_reader_free(rb);
	return rc;
}

static int file_diff_streams(const struct tether_bctx *ctx, const json_t *locator, const json_t *a,
                             const json_t *b, const struct tether_listing_source *listing_a,
                             const struct tether_listing_source *listing_b, size_t max_entries, json_t **diff)
{
	(void)ctx;
	struct tt_listing_reader *ra = listing_a ? tt_listing_reader_from(listing_a->read, listing_a->ud) : NULL;
	struct tt_listing_reader *rb = listing_b ? tt_listing_reader_from(listing_b->read, listing_b->ud) : NULL;
	int rc = (listing_a && !ra) || (listing_b && !rb) ? tether_error_set(TETHER_ERROR, "listing diff: out of memory")
	                                                  : diff_states(locator, a, b, ra, rb, max_entries, diff);
	tt_listing_reader_free(ra);
	tt_listing_reader_free(rb);
	return rc;
}

static int diff_states(const json_t *locator, const json_t *a, const json_t *b, struct tt_listing_reader *ra,
                       struct tt_listing_reader *rb, size_t max_entries, json_t **diff)
{
	const char *ta = str_field(a, "type"), *tb = str_field(b, "type");
	int listed = (strcmp(ta, "dir") == 0 || strcmp(ta, "prefix") == 0) && strcmp(ta, tb) == 0;
	if (listed && ra && rb)
		return diff_listings(ra, rb, max_entries, diff);
	struct diff_acc acc = {.entries = json_array(), .max = max_entries};
	char *summary = describe_change(a, b);
	const char *uri = json_string_value(json_object_get(locator, "uri"));
	const char *base = uri && strrchr(uri, '/') ? strrchr(uri, '/') + 1 : "";
	/* A single object is one entry, as a single file is. */
	int is_file_a = strcmp(ta, "file") == 0 || strcmp(ta, "object") == 0;
	int is_file_b = strcmp(tb, "file") == 0 || strcmp(tb, "object") == 0;
	if (is_file_a && is_file_b) {
		diff_emit(&acc, "modified", base, int_field(b, "size"), int_field(b, "size") - int_field(a, "size"));
	} else if (is_file_a && strcmp(tb, "missing") == 0) {
		diff_emit(&acc, "removed", base, int_field(a, "size"), -int_field(a, "size"));
	} else if (strcmp(ta, "missing") == 0 && is_file_b) {
		diff_emit(&acc, "added", base, int_field(b, "size"), int_field(b, "size"));
	} else {
		/* No listings (a commit from before they existed, or one removed
		 * by hand), or a change of type: per-file counts are unknown, so
		 * say what is known and report no totals rather than zeros. */
		char *fallback = tt_strdupf("%s (no stored listing: summary only)", summary);
		*diff = json_pack("{s:s, s:s, s:o, s:n, s:b}", "unit", "files", "summary", fallback, "entries",
		                  acc.entries, "totals", "truncated", 0);
		free(fallback);
		free(summary);
		return 0;
	}
	*diff = diff_result(&acc, summary);
	free(summary);
	return 0;
}

/* [backends.file] of tether.toml: the committed store options of remote
 * objects (only those tether_store_check_committed_options lets through). */
static const char *const file_config_keys[] = {"storage_options", NULL};

/* --file immutable|mutable|versioned: the policy, settable in [defaults]
 * too. The manifest's [policy] file = ... is checked against the same
 * values. */
static const char *const file_modes[] = {"immutable", "mutable", "versioned", NULL};
static const struct tether_add_option file_add_options[] = {
	{TETHER_ADD_OPTION_INIT, .name = "file", .value_name = "POLICY",
	 .help = "a change of the data is drift (immutable) or is recorded (mutable; versioned: and a single "
	         "object in a versioned bucket is read back by version id)",
	 .choices = file_modes, .default_value = "immutable", .field = TETHER_ADD_POLICY, .flags = TETHER_ADD_DEFAULTS},
	{TETHER_ADD_OPTION_INIT, .name = "region", .value_name = "REGION",
	 .help = "the object store's region, over the store's own (object-store URIs only)",
	 .field = TETHER_ADD_LOCATOR},
	{0},
};

/* Where a remote object's bytes are, not what they are. */
static const char *const file_volatile_keys[] = {"version_id", NULL};

static int is_hex64(const json_t *v)
{
	const char *s = json_string_value(v);
	if (!s || strlen(s) != 64)
		return 0;
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static const char *json_type_word(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "a table";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a float";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* A store's token (an ETag, a version id): printable ASCII, as the store
 * layer lets through. */
static int is_token(const json_t *v, size_t max)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	if (!n || n >= max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

/* The keys fingerprint writes for each type, and nothing else: a file is
 * {type, size, sha256}, a directory {type, count, size, digest}, a path
 * that is gone {type = "missing"}; an object {type, size, etag[,
 * version_id]}, a prefix {type, count, size, digest}. */
static int file_check_state(const json_t *state, const char **bad)
{
	static const char *const file_keys[] = {"type", "size", "sha256", NULL};
	static const char *const dir_keys[] = {"type", "count", "size", "digest", NULL};
	static const char *const object_keys[] = {"type", "size", "etag", "version_id", NULL};
	static const char *const missing_keys[] = {"type", NULL};
	*bad = "type";
	const char *type = json_string_value(json_object_get(state, "type"));
	const char *const *keys = !type                            ? NULL
	                          : strcmp(type, "file") == 0      ? file_keys
	                          : strcmp(type, "dir") == 0       ? dir_keys
	                          : strcmp(type, "prefix") == 0    ? dir_keys
	                          : strcmp(type, "object") == 0    ? object_keys
	                          : strcmp(type, "missing") == 0   ? missing_keys
	                                                           : NULL;
	if (!keys)
		return tether_error_set(TETHER_ECONFIG, "type must be \"file\", \"dir\", \"object\", \"prefix\" or "
		                        "\"missing\"%s", type ? "" : " (a string)");
	for (size_t i = 1; keys[i]; i++) {
		json_t *v = json_object_get(state, keys[i]);
		*bad = keys[i];
		int optional = strcmp(keys[i], "version_id") == 0;
		if (!v && optional)
			continue;
		if (!v)
			return tether_error_set(TETHER_ECONFIG, "a %s state needs '%s'", type, keys[i]);
		if (strcmp(keys[i], "etag") == 0 || optional) {
			if (!is_token(v, optional ? TETHER_STORE_VERSION_ID_MAX : TETHER_STORE_VERSION_MAX))
				return tether_error_set(TETHER_ECONFIG, "%s must be a non-empty string of printable ASCII, "
				                        "as a store gives it, not %s", keys[i],
				                        json_is_string(v) ? "that string" : json_type_word(v));
			continue;
		}
		int digest = strcmp(keys[i], "sha256") == 0 || strcmp(keys[i], "digest") == 0;
		if (digest && !is_hex64(v))
			return tether_error_set(TETHER_ECONFIG, "%s must be a sha256 hex digest (64 lower-case hex digits), not %s",
			                        keys[i], json_is_string(v) ? "that string" : json_type_word(v));
		if (!digest && (!json_is_integer(v) || json_integer_value(v) < 0))
			return tether_error_set(TETHER_ECONFIG, "%s must be a non-negative integer, not %s", keys[i],
			                        json_is_integer(v) ? "a negative one" : json_type_word(v));
	}
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)state, k, v) {
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], k) != 0)
			i++;
		if (!keys[i]) {
			*bad = k;
			return tether_error_set(TETHER_ECONFIG, "'%s' is not a key of a %s state", k, type);
		}
	}
	return 0;
}

const struct tether_backend tt_backend_file = {
	TETHER_BACKEND_INIT,
	.kind = "file",
	.maturity = "stable",
	.summary = "local files and directories, objects and prefixes in object stores (observed: drift is detected, "
	           "not recoverable)",
	.caps = TETHER_CAP_FINGERPRINT | TETHER_CAP_CHEAP_FINGERPRINT | TETHER_CAP_DIFF,
	.volatile_keys = file_volatile_keys,
	.make_locator = file_make_locator,
	.make_policy = file_make_policy,
	.effective_capabilities = file_effective_capabilities,
	.identity = file_identity,
	.fingerprint = file_fingerprint,
	.check_drift = file_check_drift,
	.verify = file_verify,
	.open = file_open,
	.diff = file_diff,
	.diff_streams = file_diff_streams,
	.check_state = file_check_state,
	.add_options = file_add_options,
	.drift_hint = "restore the recorded data, or re-add the object with --file mutable",
	.config_keys = file_config_keys,
	/* A remote object's [objects."<key>"] in secrets.toml: store options. */
	.secret_keys = tether_store_option_names,
};
