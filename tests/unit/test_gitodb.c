/* Tests for the native git reader (src/vcs/gitodb.c, gitpack.c,
 * gitrefs.c), linked in directly.
 *
 * Repositories are made by real git (loose objects; packs from
 * `git gc --aggressive` and `git repack -adf --depth=50` with OFS and with
 * REF deltas; a thin pack fixed with `index-pack --fix-thin`), and every
 * object the reader returns must be byte-identical to what
 * `git cat-file --batch` prints. Refs (packed with peeled tags, symbolic
 * chains, a worktree) must resolve as `git rev-parse` does. Damage (a
 * flipped byte, a truncated idx, offsets past the pack, delta cycles, a
 * symbolic ref loop, a packed-refs line that is not a ref, sizes no data
 * could hold) must be refused with an error that says what is wrong. */
#include "check.h"
#include "shell.h"

#include "vcs/gitodb.h"
#include "vcs/gitpack.h"
#include "vcs/gitrefs.h"
#include "vcs/gitstream.h"

#include <tether.h>
#include <tether/backend.h>

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TETHER_SOURCE_ROOT
#error "TETHER_SOURCE_ROOT must be defined"
#endif
#define CRAFT "python3 " TETHER_SOURCE_ROOT "/tests/unit/gitpack_craft.py"

static char scratch[PATH_MAX / 2];
static char *mkrepo(const char *name)
{
	return git_repo_at(scratch, name);
}

/* Six commits over files that change a little each time, so packs delta. */
static void fill_history(const char *repo)
{
	for (int i = 0; i < 6; i++) {
		sh("cd '%s' && seq 1 300 | sed 's/^%d$/changed %d/' >a.txt && printf 'line %d\\n' >>b.txt && "
		   "head -c 3000 /dev/urandom >bin-%d && mkdir -p d/e && seq %d 200 >d/e/f.txt",
		   repo, i * 40 + 7, i, i, i, i);
		git_commit_all(repo, "work");
	}
	sh("cd '%s' && git tag -a v1 -m 'tag one' && git tag light HEAD~2", repo);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, got;
	if (!f)
		return NULL;
	do {
		if (n + 65536 > cap && !(buf = realloc(buf, cap = 2 * cap + 65536)))
			exit(2);
		got = fread(buf + n, 1, 65536, f);
		n += got;
	} while (got);
	fclose(f);
	*len = n;
	return buf;
}

static struct tt_godb *open_db(const char *repo)
{
	char objects[PATH_MAX];
	struct tt_godb *db = NULL;
	snprintf(objects, sizeof objects, "%s/.git/objects", repo);
	int rc = tt_godb_open(objects, &db);
	if (rc != 0)
		fprintf(stderr, "  tt_godb_open %s: %s\n", objects, tether_error_last());
	return rc == 0 ? db : NULL;
}

/* Object id read through a stream, `chunk` bytes a read: 0 with the whole
 * content (malloc'd) when every read, the last one included, succeeded. */
static int stream_all(struct tt_godb *db, const unsigned char id[20], size_t chunk, enum tt_gobj_type *t,
                      unsigned char **data, size_t *len)
{
	struct tt_gstream *s = NULL;
	size_t size = 0, have = 0, got = 1;
	int rc = tt_gstream_open(db, id, t, &size, &s);
	unsigned char *buf = rc ? NULL : malloc(size + chunk);
	while (!rc && got) {
		rc = tt_gstream_read(s, buf + have, chunk, &got);
		have += got;
		if (have > size)
			rc = -99;
	}
	tt_gstream_close(s);
	if (rc || have != size) {
		free(buf);
		return rc ? rc : -98;
	}
	*data = buf;
	*len = have;
	return 0;
}

/* Every object of the repository, read natively and compared byte for byte
 * with `git cat-file --batch`, whole and streamed in pieces of odd sizes.
 * Returns how many objects matched. */
static int same_as_cat_file(const char *repo, const char *objects_dir)
{
	char batch[PATH_MAX];
	size_t len = 0;
	snprintf(batch, sizeof batch, "%s/../cat-file.out", repo);
	if (sh("git -C '%s' cat-file --batch-all-objects --batch >'%s'", repo, batch) != 0)
		return -1;
	char *text = read_all(batch, &len), *p = text, *end = text + len;
	struct tt_godb *db = NULL;
	int matched = 0, mismatched = 0;
	if (!text || tt_godb_open(objects_dir, &db) != 0) {
		free(text);
		return -1;
	}
	while (p < end) {
		char hex[41], type[16];
		size_t size;
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl || sscanf(p, "%40s %15s %zu", hex, type, &size) != 3)
			break;
		const char *content = nl + 1;
		unsigned char id[20];
		enum tt_gobj_type t;
		unsigned char *data = NULL;
		size_t dlen = 0;
		tt_goid_from_hex(hex, id);
		int same = tt_godb_read(db, id, &t, &data, &dlen) == 0 && strcmp(tt_gobj_type_name(t), type) == 0 &&
		           dlen == size && memcmp(data, content, size) == 0;
		static const size_t chunks[] = {1, 7, 4096, 1 << 20};
		for (size_t c = 0; same && c < sizeof chunks / sizeof *chunks; c++) {
			unsigned char *streamed = NULL;
			size_t slen = 0;
			same = stream_all(db, id, chunks[c], &t, &streamed, &slen) == 0 &&
			       strcmp(tt_gobj_type_name(t), type) == 0 && slen == size && memcmp(streamed, content, size) == 0;
			free(streamed);
		}
		if (same) {
			matched++;
		} else {
			fprintf(stderr, "  %s %s differs: %s\n", hex, type, tether_error_last());
			mismatched++;
		}
		free(data);
		p = (char *)content + size + 1;
	}
	tt_godb_free(db);
	free(text);
	return mismatched ? -1 : matched;
}

static int count_objects(const char *repo)
{
	char *n = out("git -C '%s' cat-file --batch-all-objects --batch-check | wc -l", repo);
	int v = atoi(n);
	free(n);
	return v;
}

static int same_repo(const char *repo)
{
	char objects[PATH_MAX];
	snprintf(objects, sizeof objects, "%s/.git/objects", repo);
	return same_as_cat_file(repo, objects);
}

/* The deepest delta chain git reports for the repository's packs. */
static int max_depth(const char *repo)
{
	char *s = out("for i in '%s'/.git/objects/pack/*.idx; do git verify-pack -v \"$i\"; done | "
	              "awk 'NF == 7 && $6 > m { m = $6 } END { print m + 0 }'",
	              repo);
	int d = atoi(s);
	free(s);
	return d;
}

static void test_loose_and_packed(void)
{
	char *repo = mkrepo("objects");
	fill_history(repo);
	int n = count_objects(repo);
	CHECK(n > 20);
	CHECK(same_repo(repo) == n); /* all loose */

	sh("git -C '%s' gc -q --aggressive", repo);
	CHECK(max_depth(repo) >= 2); /* deltas chain */
	CHECK(same_repo(repo) == n);

	sh("git -C '%s' repack -q -adf --depth=50 --window=50", repo);
	CHECK(same_repo(repo) == n);

	/* REF_DELTA entries (what git writes without delta-base-offset) */
	sh("git -C '%s' -c repack.useDeltaBaseOffset=false repack -q -adf --depth=50", repo);
	char *refs = out("for i in '%s'/.git/objects/pack/*.idx; do git verify-pack -v \"$i\"; done | "
	                 "awk 'NF == 7' | wc -l",
	                 repo);
	CHECK(atoi(refs) > 0);
	free(refs);
	CHECK(same_repo(repo) == n);

	/* loose and packed at once */
	sh("cd '%s' && echo new >new.txt", repo);
	git_commit_all(repo, "one more, loose");
	CHECK(same_repo(repo) == count_objects(repo));
	free(repo);
}

/* A thin pack (its deltas lean on objects it does not carry) completed by
 * `index-pack --fix-thin`: the REF deltas now name bases appended to it. */
static void test_thin_pack_fixed(void)
{
	char *repo = mkrepo("thin-src");
	fill_history(repo);
	char *dst = mkrepo("thin-dst");
	CHECK(sh("cd '%s' && git rev-list --objects HEAD~3 | git pack-objects -q '%s/old' >/dev/null && "
	         "cp '%s'/old-*.pack '%s'/old-*.idx '%s/.git/objects/pack/' && "
	         "printf 'HEAD\\n^HEAD~3\\n' | git pack-objects -q --revs --thin --stdout >'%s/thin.pack' && "
	         "git -C '%s' index-pack --fix-thin --stdin <'%s/thin.pack' >/dev/null",
	         repo, scratch, scratch, scratch, dst, scratch, dst, scratch) == 0);
	CHECK(sh("git -C '%s' cat-file -e $(git -C '%s' rev-parse HEAD)", dst, repo) == 0);
	CHECK(max_depth(dst) >= 1);
	int n = count_objects(dst);
	/* the old pack keeps git pack-objects' name: any *.idx is a pack index
	 * to git and libgit2, not only pack-*.idx */
	CHECK(sh("ls '%s'/.git/objects/pack/old-*.idx >/dev/null", dst) == 0);
	CHECK(same_repo(dst) == n);
	free(repo);
	free(dst);
}

static char *error_of_read(const char *repo, const char *hex)
{
	struct tt_godb *db = open_db(repo);
	unsigned char id[20];
	enum tt_gobj_type t;
	unsigned char *data = NULL;
	size_t len;
	if (!db)
		return strdup(tether_error_last());
	tt_goid_from_hex(hex, id);
	int rc = tt_godb_read(db, id, &t, &data, &len);
	free(data);
	tt_godb_free(db);
	return strdup(rc < 0 ? tether_error_last() : "(no error)");
}

static int contains(const char *s, const char *part)
{
	int ok = s && strstr(s, part) != NULL;
	if (!ok)
		fprintf(stderr, "  '%s' does not contain '%s'\n", s ? s : "(null)", part);
	return ok;
}

/* One blob packed uncompressed; the pack is then patched by `script` (a
 * python program with the pack's path as `p` and its bytes as `b`, a
 * bytearray it may change). Returns the repository; *blob its id. */
static char *damaged_pack(const char *name, const char *script, char **blob)
{
	char *repo = mkrepo(name);
	sh("cd '%s' && printf 'MARKER-%s-0123456789\\n' >m.txt", repo, name);
	git_commit_all(repo, "m");
	*blob = out("git -C '%s' rev-parse HEAD:m.txt", repo);
	sh("git -C '%s' -c pack.compression=0 gc -q", repo);
	sh("cd '%s'/.git/objects/pack && python3 -c 'import glob, zlib\n"
	   "p = glob.glob(\"*.pack\")[0]\nb = bytearray(open(p, \"rb\").read())\n%s\n"
	   "open(p, \"wb\").write(b)'",
	   repo, script);
	return repo;
}

static void test_pack_damage(void)
{
	char *blob, *err, *repo;

	/* a flipped byte in the content, zlib's own checksum patched to match,
	 * so only the SHA-1 can tell */
	repo = damaged_pack("flip",
	                    "i = b.index(b\"MARKER-flip\")\nb[i] ^= 0x20\n"
	                    "s = i - 5\nn = b[s + 1] | b[s + 2] << 8\n"
	                    "b[s + 5 + n:s + 9 + n] = zlib.adler32(bytes(b[s + 5:s + 5 + n])).to_bytes(4, \"big\")",
	                    &blob);
	err = error_of_read(repo, blob);
	CHECK(contains(err, blob) && contains(err, "is damaged: its content hashes to"));
	free(err);
	free(blob);
	free(repo);

	/* a flipped byte zlib notices */
	repo = damaged_pack("zflip", "i = b.index(b\"MARKER-zflip\")\nb[i] ^= 0x20", &blob);
	err = error_of_read(repo, blob);
	CHECK(contains(err, "damaged git pack") && contains(err, "does not inflate"));
	free(err);
	free(blob);
	free(repo);

	/* a truncated idx: refused when the database opens, naming the pack */
	repo = damaged_pack("trunc", "", &blob);
	sh("cd '%s'/.git/objects/pack && for i in *.idx; do chmod u+w $i; truncate -s 1100 $i; done", repo);
	err = error_of_read(repo, blob);
	CHECK(contains(err, "damaged git pack") && contains(err, ".pack: bad index header"));
	free(err);
	free(blob);
	free(repo);

	/* every idx offset pointing past the end of the pack */
	repo = damaged_pack("offsets", "", &blob);
	sh("cd '%s'/.git/objects/pack && chmod u+w *.idx && python3 -c 'import glob\n"
	   "p = glob.glob(\"*.idx\")[0]\nb = bytearray(open(p, \"rb\").read())\n"
	   "n = int.from_bytes(b[8 + 255 * 4:8 + 256 * 4], \"big\")\no = 8 + 1024 + 24 * n\n"
	   "b[o:o + 4 * n] = (0x7ffffff0).to_bytes(4, \"big\") * n\nopen(p, \"wb\").write(b)'",
	   repo);
	err = error_of_read(repo, blob);
	CHECK(contains(err, "damaged git pack") && contains(err, "object offset out of range"));
	free(err);
	free(blob);
	free(repo);
}

/* The zlib stream a database keeps (gitpack.c) is reset between reads:
 * a read that zlib refuses leaves nothing behind for the next one. */
static void test_kept_stream_after_damage(void)
{
	char *blob, *repo = damaged_pack("zkeep", "i = b.index(b\"MARKER-zkeep\")\nb[i] ^= 0x20", &blob);
	char *commit = out("git -C '%s' rev-parse HEAD", repo);
	char *text = out("git -C '%s' cat-file commit HEAD", repo);
	struct tt_godb *db = open_db(repo);
	unsigned char id[20];
	enum tt_gobj_type t;
	unsigned char *data = NULL;
	size_t len = 0;
	CHECK(db != NULL);
	for (int round = 0; db && round < 3; round++) {
		tt_goid_from_hex(blob, id);
		CHECK(tt_godb_read(db, id, &t, &data, &len) < 0 && contains(tether_error_last(), "does not inflate"));
		free(data);
		data = NULL;
		tt_goid_from_hex(commit, id);
		/* out() drops the trailing newline git's commit text ends with */
		CHECK(tt_godb_read(db, id, &t, &data, &len) == 0 && t == TT_GOBJ_COMMIT && len == strlen(text) + 1 &&
		      memcmp(data, text, len - 1) == 0);
		free(data);
		data = NULL;
	}
	tt_godb_free(db);
	free(text);
	free(commit);
	free(blob);
	free(repo);
}

/* Every object of a packed repository, as `git cat-file --batch` prints. */
struct expected {
	unsigned char (*ids)[20];
	char **content;
	size_t *sizes;
	size_t n;
	struct tt_godb *db;
	int mismatched;
};

static void *read_every_object(void *arg)
{
	struct expected *e = arg;
	for (int round = 0; round < 4; round++)
		for (size_t i = 0; i < e->n; i++) {
			enum tt_gobj_type t;
			unsigned char *data = NULL;
			size_t len = 0;
			if (tt_godb_read(e->db, e->ids[i], &t, &data, &len) != 0 || len != e->sizes[i] ||
			    memcmp(data, e->content[i], len) != 0)
				__atomic_add_fetch(&e->mismatched, 1, __ATOMIC_RELAXED);
			free(data);
		}
	return NULL;
}

/* Two threads reading one database at once: one finds the kept stream
 * taken and inflates on a stream of its own; both read what git reads. */
static void test_two_readers(void)
{
	char *repo = mkrepo("two-readers");
	fill_history(repo);
	sh("git -C '%s' gc -q --aggressive", repo);
	char batch[PATH_MAX];
	size_t len = 0;
	snprintf(batch, sizeof batch, "%s/../two-readers.out", repo);
	CHECK(sh("git -C '%s' cat-file --batch-all-objects --batch >'%s'", repo, batch) == 0);
	char *text = read_all(batch, &len), *p = text, *end = text + len;
	struct expected e = {0};
	size_t cap = 0;
	while (text && p < end) {
		char hex[41], type[16];
		size_t size;
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl || sscanf(p, "%40s %15s %zu", hex, type, &size) != 3)
			break;
		if (e.n == cap) {
			cap = cap ? 2 * cap : 64;
			e.ids = realloc(e.ids, cap * sizeof *e.ids);
			e.content = realloc(e.content, cap * sizeof *e.content);
			e.sizes = realloc(e.sizes, cap * sizeof *e.sizes);
		}
		tt_goid_from_hex(hex, e.ids[e.n]);
		e.content[e.n] = nl + 1;
		e.sizes[e.n] = size;
		e.n++;
		p = nl + 1 + size + 1;
	}
	CHECK(e.n > 20);
	e.db = open_db(repo);
	CHECK(e.db != NULL);
	pthread_t other;
	int started = e.db && pthread_create(&other, NULL, read_every_object, &e) == 0;
	CHECK(started);
	if (e.db)
		read_every_object(&e);
	if (started)
		pthread_join(other, NULL);
	CHECK(e.mismatched == 0);
	tt_godb_free(e.db);
	free(e.ids);
	free(e.content);
	free(e.sizes);
	free(text);
	free(repo);
}

/* A pack written by gitpack_craft.py into a fresh repository. */
static char *crafted(const char *name, const char *kind, const char *kind2)
{
	char *repo = mkrepo(name);
	sh(CRAFT " %s '%s/.git/objects/pack/pack-a'", kind, repo);
	if (kind2)
		sh(CRAFT " %s '%s/.git/objects/pack/pack-b'", kind2, repo);
	return repo;
}

#define HEX_X "1111111111111111111111111111111111111111"
#define HEX_Y "2222222222222222222222222222222222222222"

static void test_delta_cycles_and_bombs(void)
{
	char *repo, *err;

	repo = crafted("ofs-self", "ofs-self", NULL);
	err = error_of_read(repo, HEX_X);
	CHECK(contains(err, "delta base out of range"));
	free(err);
	free(repo);

	repo = crafted("ref-self", "ref-self", NULL);
	err = error_of_read(repo, HEX_X);
	CHECK(contains(err, "delta chain too deep"));
	free(err);
	free(repo);

	/* X in one pack deltas on Y in the other, and Y on X: the depth bound
	 * must hold across packs too (it was reset there: unbounded recursion) */
	repo = crafted("cross", "cross-a", "cross-b");
	err = error_of_read(repo, HEX_X);
	CHECK(contains(err, "delta chain too deep"));
	free(err);
	free(repo);

	/* a header declaring a terabyte over a few bytes of zlib: refused before
	 * any allocation of that size */
	repo = crafted("bomb", "bomb", NULL);
	err = error_of_read(repo, HEX_X);
	CHECK(contains(err, "damaged git pack") && contains(err, "larger than its data can hold"));
	free(err);
	free(repo);

	repo = crafted("delta-bomb", "delta-bomb", NULL);
	err = error_of_read(repo, HEX_Y);
	CHECK(contains(err, "malformed git delta") && contains(err, "larger than"));
	free(err);
	free(repo);

	/* the same for a loose object */
	repo = mkrepo("loose-bomb");
	sh("cd '%s'/.git/objects && mkdir -p 11 && python3 -c 'import zlib, sys\n"
	   "sys.stdout.buffer.write(zlib.compress(b\"blob 1099511627776\\0tiny\"))' >11/%s",
	   repo, &HEX_X[2]);
	err = error_of_read(repo, HEX_X);
	CHECK(contains(err, "damaged git object") && contains(err, "larger than its data can hold"));
	free(err);
	free(repo);
}

/* What streaming `hex` says: the error of the read that failed. */
static char *error_of_stream(const char *repo, const char *hex, size_t chunk)
{
	struct tt_godb *db = open_db(repo);
	unsigned char id[20], *data = NULL;
	enum tt_gobj_type t;
	size_t len;
	tt_goid_from_hex(hex, id);
	int rc = db ? stream_all(db, id, chunk, &t, &data, &len) : -1;
	free(data);
	tt_godb_free(db);
	return strdup(rc < 0 ? tether_error_last() : "(no error)");
}

/* A damaged loose object: every read before the end may hand bytes over,
 * the one that reaches the end fails; nothing damaged reads to its end. */
static void test_stream_damage(void)
{
	char *repo = mkrepo("streambad");
	sh("cd '%s' && seq 1 20000 >big.txt", repo);
	git_commit_all(repo, "big");
	char *hex = out("git -C '%s' rev-parse HEAD:big.txt", repo), path[PATH_MAX];
	snprintf(path, sizeof path, "%s/.git/objects/%.2s/%s", repo, hex, hex + 2);
	sh("cp '%s' '%s/good.obj' && chmod u+w '%s'", path, scratch, path);
	char *err = error_of_stream(repo, hex, 4096);
	CHECK_STR(err, "(no error)");
	free(err);
	/* the same bytes with one changed, deflated again: it no longer
	 * hashes to its id */
	sh("chmod u+w '%s' && python3 -c 'import zlib, sys\np = sys.argv[1]\n"
	   "b = bytearray(zlib.decompress(open(p, \"rb\").read()))\nb[-3] ^= 1\n"
	   "open(p, \"wb\").write(zlib.compress(bytes(b)))' '%s'",
	   path, path);
	err = error_of_stream(repo, hex, 4096);
	CHECK(contains(err, "is damaged: its content hashes to"));
	free(err);
	/* cut short; a size larger than the data; trailing data; not zlib */
	static const char *const scripts[] = {
	    "d = open(p, \"rb\").read()\nopen(p, \"wb\").write(d[: len(d) // 2])",
	    ("b = zlib.decompress(open(p, \"rb\").read())\nh, _, c = b.partition(b\"\\0\")\n"
	     "open(p, \"wb\").write(zlib.compress(b\"blob %d\\0\" % (len(c) + 5) + c))"),
	    "b = zlib.decompress(open(p, \"rb\").read())\nopen(p, \"wb\").write(zlib.compress(b + b\"extra\"))",
	    "open(p, \"wb\").write(b\"this is not zlib at all\")",
	};
	static const char *const says[] = {"ends before its data does", "shorter than its header says",
	                                   "longer than its header says", "not a zlib stream"};
	for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
		sh("cp '%s/good.obj' '%s' && python3 -c 'import zlib, sys\np = sys.argv[1]\n%s' '%s'", scratch, path,
		   scripts[i], path);
		err = error_of_stream(repo, hex, i == 1 ? 1 << 20 : 4096);
		CHECK(contains(err, says[i]));
		free(err);
	}
	free(hex);
	free(repo);
}

/* Resolve `name` in the checkout at `dir`: 0/1 as tt_gref_resolve, the id
 * in hex, the first symbolic target. */
static int resolve(const char *dir, const char *name, char hex[41], char **symref)
{
	struct tt_grepo r;
	unsigned char id[20];
	int rc = tt_grepo_find(dir, &r);
	if (rc != 0) {
		fprintf(stderr, "  tt_grepo_find %s: %d\n", dir, rc);
		return -100;
	}
	rc = tt_gref_resolve(&r, name, id, symref);
	if (rc == 0)
		tt_goid_hex(id, hex);
	tt_grepo_clear(&r);
	return rc;
}

static int resolves_as_git(const char *dir, const char *name)
{
	char hex[41] = "", *want = out("git -C '%s' rev-parse --verify -q '%s'", dir, name);
	int rc = resolve(dir, name, hex, NULL);
	int ok = rc == 0 && strcmp(hex, want) == 0;
	if (!ok)
		fprintf(stderr, "  %s in %s: rc %d, %s, git says %s\n", name, dir, rc, hex, want);
	free(want);
	return ok;
}

static void test_refs(void)
{
	char *repo = mkrepo("refs"), hex[41], *sym = NULL;
	fill_history(repo);
	sh("cd '%s' && git branch side HEAD~1 && git tag -a v0 -m old HEAD~4 && git pack-refs --all && "
	   "git branch loose HEAD~3",
	   repo);
	CHECK(sh("grep -q '^\\^' '%s/.git/packed-refs'", repo) == 0); /* peeled tags */
	CHECK(resolves_as_git(repo, "refs/tags/v1"));                /* the tag object, not its peel */
	CHECK(resolves_as_git(repo, "refs/tags/v0"));
	CHECK(resolves_as_git(repo, "refs/tags/light"));
	CHECK(resolves_as_git(repo, "refs/heads/side"));
	CHECK(resolves_as_git(repo, "refs/heads/loose"));
	CHECK(resolve(repo, "refs/heads/absent", hex, NULL) == 1);

	/* HEAD -> alias -> alias2 -> main */
	sh("cd '%s' && git symbolic-ref refs/heads/alias2 refs/heads/main && "
	   "git symbolic-ref refs/heads/alias refs/heads/alias2 && git symbolic-ref HEAD refs/heads/alias",
	   repo);
	CHECK(resolves_as_git(repo, "HEAD"));
	CHECK(resolve(repo, "HEAD", hex, &sym) == 0);
	CHECK_STR(sym, "refs/heads/alias");
	free(sym);
	sh("git -C '%s' symbolic-ref HEAD refs/heads/main", repo);

	/* a worktree: its own HEAD, the common refs and objects */
	sh("cd '%s' && git worktree add -q -b feature '%s/wt' HEAD~2 && cd '%s/wt' && echo w >w.txt && "
	   "git add w.txt && git commit -q -m wt",
	   repo, scratch, scratch);
	char wt[PATH_MAX];
	snprintf(wt, sizeof wt, "%s/wt", scratch);
	CHECK(resolves_as_git(wt, "HEAD"));
	CHECK(resolves_as_git(wt, "refs/heads/main"));
	CHECK(resolves_as_git(wt, "refs/tags/v1"));
	struct tt_grepo r;
	CHECK(tt_grepo_find(wt, &r) == 0);
	CHECK(r.commondir && strstr(r.commondir, "/refs/.git") != NULL);
	CHECK(r.gitdir && strstr(r.gitdir, "/refs/.git/worktrees/wt") != NULL);
	tt_grepo_clear(&r);
	char objects[PATH_MAX];
	snprintf(objects, sizeof objects, "%s/.git/objects", repo);
	CHECK(same_as_cat_file(wt, objects) == count_objects(wt));
	free(repo);
}

static void test_ref_damage(void)
{
	char *repo = mkrepo("refloop"), hex[41], *sym = NULL;
	fill_history(repo);
	/* a symbolic ref loop: a clear error, not "no such ref" */
	put(repo, ".git/refs/heads/a", "ref: refs/heads/b\n");
	put(repo, ".git/refs/heads/b", "ref: refs/heads/a\n");
	CHECK(resolve(repo, "refs/heads/a", hex, &sym) < 0);
	CHECK(contains(tether_error_last(), "symbolic ref loop") &&
	      contains(tether_error_last(), "refs/heads/a"));
	CHECK(sym == NULL);
	/* a long chain that is not a loop still resolves */
	put(repo, ".git/refs/heads/c1", "ref: refs/heads/c2\n");
	put(repo, ".git/refs/heads/c2", "ref: refs/heads/c3\n");
	put(repo, ".git/refs/heads/c3", "ref: refs/heads/main\n");
	CHECK(resolves_as_git(repo, "refs/heads/c1"));
	free(repo);

	/* packed-refs: a line that is not a ref is damage, whichever ref is
	 * looked up (git and libgit2 refuse the whole file too) */
	repo = mkrepo("packedbad");
	fill_history(repo);
	char *id = out("git -C '%s' rev-parse HEAD", repo);
	sh("cd '%s' && git branch side && git pack-refs --all && printf 'this is not a ref\\n' >>.git/packed-refs",
	   repo);
	CHECK(resolve(repo, "refs/heads/side", hex, NULL) < 0);
	CHECK(contains(tether_error_last(), "packed-refs") && contains(tether_error_last(), "line"));
	CHECK(resolve(repo, "refs/heads/absent", hex, NULL) < 0);
	/* a peeled line with nothing before it, a ref without a name */
	char text[256];
	snprintf(text, sizeof text, "# pack-refs with: peeled\n^%s\n%s refs/heads/side\n", id, id);
	put(repo, ".git/packed-refs", text);
	CHECK(resolve(repo, "refs/heads/side", hex, NULL) < 0);
	snprintf(text, sizeof text, "%s \n", id);
	put(repo, ".git/packed-refs", text);
	CHECK(resolve(repo, "refs/heads/side", hex, NULL) < 0);
	/* and a well-formed one with CRLF endings and a peel still reads */
	snprintf(text, sizeof text, "# pack-refs with: peeled\r\n%s refs/heads/side\r\n^%s\r\n", id, id);
	put(repo, ".git/packed-refs", text);
	CHECK(resolve(repo, "refs/heads/side", hex, NULL) == 0 && strcmp(hex, id) == 0);
	free(id);
	free(repo);
}

/* tt_gref_each's listing, one "name id peeled|-" line per ref. */
struct listing {
	char text[1 << 14];
	size_t len;
	int stop_after;
};

static int list_line(void *ud, const char *name, const unsigned char id[20], const unsigned char *peeled,
                     int symbolic)
{
	struct listing *l = ud;
	char a[41], b[41] = "-";
	(void)symbolic;
	tt_goid_hex(id, a);
	if (peeled)
		tt_goid_hex(peeled, b);
	l->len += (size_t)snprintf(l->text + l->len, sizeof l->text - l->len, "%s %s %s\n", name, a, b);
	return l->stop_after && --l->stop_after == 0 ? 7 : 0;
}

static int each_ref(const char *dir, const char *prefix, struct listing *l)
{
	struct tt_grepo r;
	if (tt_grepo_find(dir, &r) != 0)
		return -100;
	int rc = tt_gref_each(&r, prefix, list_line, l);
	tt_grepo_clear(&r);
	return rc;
}

/* The names and ids git lists; a peel only where packed-refs records one
 * (git for-each-ref peels every tag, so its peel column is checked only
 * for the packed tags). */
static int lists_as_git(const char *dir, const char *prefix)
{
	const char *pattern = strcmp(prefix, "refs/tags/tether.") == 0 ? "refs/tags/tether.*" : prefix;
	struct listing l = {0};
	int rc = each_ref(dir, prefix, &l);
	char *want = out("git -C '%s' for-each-ref --format='%%(refname) %%(objectname)' '%s' | sort", dir, pattern);
	char *got = out("printf '%%s' '%s' | cut -d' ' -f1,2 | sort", l.text);
	int ok = rc == 0 && strcmp(want, got) == 0;
	if (!ok)
		fprintf(stderr, "  refs %s in %s: rc %d\n got:\n%s\n git:\n%s\n", prefix, dir, rc, got, want);
	free(want);
	free(got);
	return ok;
}

static void test_each_ref(void)
{
	char *repo = mkrepo("eachref");
	fill_history(repo);
	sh("cd '%s' && git tag -a tether.a -m a HEAD~1 && git tag tether.b HEAD~2 && git tag other HEAD && "
	   "git branch side HEAD~3 && git pack-refs --all && git tag tether.c HEAD~4 && "
	   "git branch -f side HEAD~5 && git branch deep/x/y HEAD && git symbolic-ref refs/heads/alias refs/heads/main",
	   repo);
	CHECK(lists_as_git(repo, "refs/"));
	CHECK(lists_as_git(repo, "refs/tags/tether."));
	CHECK(lists_as_git(repo, "refs/heads/"));
	struct listing l = {0};
	CHECK(each_ref(repo, "refs/tags/tether.", &l) == 0);
	/* byte order; the packed annotated tag comes with its peel, the loose
	 * side branch hides the packed one (HEAD~5, not HEAD~3) */
	char *a = out("git -C '%s' rev-parse tether.a tether.a^{} tether.b tether.c", repo);
	char want[256];
	char ta[41], tp[41], tb[41], tc[41];
	CHECK(sscanf(a, "%40s %40s %40s %40s", ta, tp, tb, tc) == 4);
	snprintf(want, sizeof want, "refs/tags/tether.a %s %s\nrefs/tags/tether.b %s -\nrefs/tags/tether.c %s -\n", ta,
	         tp, tb, tc);
	CHECK_STR(l.text, want);
	free(a);
	/* a lock file of a writer at work is no ref; a stop from the callback
	 * is returned */
	sh("cd '%s' && cp .git/refs/tags/tether.c .git/refs/tags/tether.d.lock", repo);
	CHECK(lists_as_git(repo, "refs/tags/"));
	struct listing two = {.stop_after = 2};
	CHECK(each_ref(repo, "refs/", &two) == 7);
	/* damage: a loose ref that is not an id, a packed-refs line that is no ref */
	put(repo, ".git/refs/tags/tether.e", "not an id\n");
	struct listing bad = {0};
	CHECK(each_ref(repo, "refs/tags/", &bad) < 0 && contains(tether_error_last(), "damaged git ref refs/tags/tether.e"));
	CHECK(each_ref(repo, "refs/heads/", &bad) == 0); /* not under the prefix: not read */
	sh("rm '%s/.git/refs/tags/tether.e' && printf 'junk\n' >>'%s/.git/packed-refs'", repo, repo);
	CHECK(each_ref(repo, "refs/tags/", &bad) < 0 && contains(tether_error_last(), "packed-refs"));
	/* a worktree lists the common refs */
	sh("git -C '%s' checkout -q main~0 2>/dev/null; sed -i '$d' '%s/.git/packed-refs' && "
	   "git -C '%s' worktree add -q -b wtb '%s/wt2' HEAD~1",
	   repo, repo, repo, scratch);
	char wt[PATH_MAX];
	snprintf(wt, sizeof wt, "%s/wt2", scratch);
	CHECK(lists_as_git(wt, "refs/"));
	free(repo);
}

int main(void)
{
	char tmpl[] = "/tmp/tether-gitodb-XXXXXX";
	char real[PATH_MAX];
	if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof scratch)
		return 2;
	memcpy(scratch, real, strlen(real) + 1);
	if (0)
		return 2;
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("HOME", scratch, 1);
	unsetenv("GIT_DIR");
	test_loose_and_packed();
	test_thin_pack_fixed();
	test_pack_damage();
	test_kept_stream_after_damage();
	test_two_readers();
	test_delta_cycles_and_bombs();
	test_refs();
	test_ref_damage();
	test_each_ref();
	test_stream_damage();
	sh("rm -rf '%s'", scratch);
	CHECK_DONE();
}
