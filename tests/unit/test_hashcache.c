/* The hash cache: its file format and its use by the scanner (what is read
 * again, what is trusted, when the file is rewritten). */
#include "check.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include <tether/backend.h>

#include "core/hashcache.h"
#include "core/scan.h"
#include "util/hash.h"

#define SEC 1000000000LL

static char tmp[64];       /* everything of this test lives under it */
static char root[128];     /* the scanned tree */
static char cache_dir[128];

/* ---- helpers ---- */

static void make_tmp(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/tt-hashcache-XXXXXX");
	CHECK(mkdtemp(tmp) != NULL);
	snprintf(root, sizeof root, "%s/tree", tmp);
	snprintf(cache_dir, sizeof cache_dir, "%s/cache", tmp);
	CHECK(mkdir(root, 0755) == 0);
}

static void remove_tmp(void)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	CHECK(system(cmd) == 0);
}

static void path_in(char *out, size_t size, const char *rel)
{
	snprintf(out, size, "%s/%s", root, rel);
}

static void put_file(const char *rel, const char *content)
{
	char p[512];
	path_in(p, sizeof p, rel);
	FILE *f = fopen(p, "wb");
	CHECK(f != NULL);
	if (f) {
		fputs(content, f);
		fclose(f);
	}
}

static struct stat stat_of(const char *p)
{
	struct stat st;
	memset(&st, 0, sizeof st);
	CHECK(stat(p, &st) == 0);
	return st;
}

static int64_t real_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

/* A clock ten seconds ahead: whatever was just written looks settled. */
static int64_t clock_ahead(void)
{
	return real_now() + 10 * SEC;
}

static void set_times_past(const char *rel, int64_t seconds_ago)
{
	char p[512];
	path_in(p, sizeof p, rel);
	struct timespec times[2];
	clock_gettime(CLOCK_REALTIME, &times[0]);
	times[0].tv_sec -= seconds_ago;
	times[1] = times[0];
	CHECK(utimensat(AT_FDCWD, p, times, 0) == 0);
}

static char *the_cache_file(void)
{
	char *real = realpath(root, NULL);
	char *file = tt_hashcache_file(cache_dir, real);
	free(real);
	return file;
}

static size_t count_files_in(const char *dir)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static uint64_t scan_hashed(struct tt_scan_opts *opts, struct tt_scan_result *keep)
{
	struct tt_scan_result r;
	int rc = tt_scan_tree(root, opts, &r);
	CHECK(rc == 0);
	if (rc != 0)
		return UINT64_MAX;
	uint64_t hashed = r.files_hashed;
	if (keep)
		*keep = r;
	else
		tt_scan_result_free(&r);
	return hashed;
}

static void check_sha_of(const struct tt_scan_result *r, const char *path, const char *content)
{
	unsigned char want[32];
	tt_sha256(content, strlen(content), want);
	for (size_t i = 0; i < r->count; i++) {
		if (strcmp(r->entries[i].path, path) == 0) {
			CHECK(memcmp(r->entries[i].sha256, want, 32) == 0);
			CHECK(r->entries[i].size == strlen(content));
			return;
		}
	}
	CHECK(!"entry not found");
}

/* ---- the format ---- */

struct items {
	char (*paths)[48];
	size_t n;
};

static int64_t stamp(size_t i, int field)
{
	return (int64_t)(1000 + i) * SEC + field;
}

static int get_item(void *ctx, size_t i, struct tt_hashcache_item *it)
{
	const struct items *items = ctx;
	if (i % 10 == 9)
		return 0; /* left out */
	it->path = items->paths[i];
	it->path_len = strlen(items->paths[i]);
	it->st.size = i;
	it->st.mtime_ns = stamp(i, 1);
	it->st.ctime_ns = stamp(i, 2);
	it->st.inode = 7 * i;
	it->hashed_ns = stamp(i, 3) + 5 * SEC;
	tt_sha256(it->path, it->path_len, it->sha256);
	return 1;
}

static void flip_byte(const char *file, off_t at)
{
	int fd = open(file, O_RDWR);
	unsigned char b = 0;
	CHECK(pread(fd, &b, 1, at) == 1);
	b ^= 0x40;
	CHECK(pwrite(fd, &b, 1, at) == 1);
	close(fd);
}

/* The checksum as hashcache.h specifies it, written again from the text
 * (not shared with hashcache.c), to forge files that pass it. */
static uint64_t spec_step(uint64_t lane, uint64_t w)
{
	lane = (lane ^ w) * 0x9e3779b97f4a7c15ULL;
	return lane ^ (lane >> 29);
}

static uint64_t spec_checksum(const unsigned char *file, size_t size)
{
	uint64_t lane[4];
	for (int i = 0; i < 4; i++)
		lane[i] = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
	size_t total = 32 + (size - 64);
	size_t k = 0;
	for (size_t at = 0; at < total; at += 8, k++) {
		unsigned char word[8] = {0};
		for (size_t j = 0; j < 8 && at + j < total; j++) {
			size_t pos = at + j;
			word[j] = file[pos < 32 ? pos : pos + 32]; /* the header's first 32 bytes, then the body */
		}
		uint64_t w;
		memcpy(&w, word, 8);
		lane[k % 4] = spec_step(lane[k % 4], w);
	}
	uint64_t h = spec_step(0, total);
	for (int i = 0; i < 4; i++)
		h = spec_step(h, lane[i]);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static unsigned char *slurp(const char *file, size_t *size)
{
	struct stat st = stat_of(file);
	unsigned char *data = malloc((size_t)st.st_size);
	int fd = open(file, O_RDONLY);
	CHECK(data && fd >= 0 && read(fd, data, (size_t)st.st_size) == st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return data;
}

static void spill(const char *file, const unsigned char *data, size_t size)
{
	int fd = open(file, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0 && write(fd, data, size) == (ssize_t)size);
	close(fd);
}

/* A file whose checksum holds but whose paths are not laid out one after
 * the other in record order is never trusted: records pointing at each
 * other's paths would give one file another's hash. */
static void test_forged_layout(const char *file)
{
	struct items items = {.n = 3};
	items.paths = calloc(items.n, sizeof *items.paths);
	for (size_t i = 0; i < items.n; i++)
		snprintf(items.paths[i], sizeof items.paths[i], "d/%c", (int)('a' + i));
	CHECK(tt_hashcache_write(file, items.n, get_item, &items) == 0);
	size_t size;
	unsigned char *data = slurp(file, &size);
	uint64_t stored;
	memcpy(&stored, data + 32, 8);
	CHECK(spec_checksum(data, size) == stored); /* the test's checksum is the file's */
	struct tt_hashcache *c = tt_hashcache_load(file);
	CHECK(tt_hashcache_count(c) == 3);
	tt_hashcache_free(c);

	/* Swap the path fields of records 0 and 1 ("d/a" <-> "d/b"). */
	unsigned char *r0 = data + 64 + 40, *r1 = data + 64 + 80 + 40, tmp8[8];
	memcpy(tmp8, r0, 8);
	memcpy(r0, r1, 8);
	memcpy(r1, tmp8, 8);
	uint64_t sum = spec_checksum(data, size);
	memcpy(data + 32, &sum, 8);
	spill(file, data, size);
	c = tt_hashcache_load(file);
	CHECK(c != NULL && tt_hashcache_count(c) == 0);
	CHECK(tt_hashcache_find(c, "d/a", 3) == NULL);
	tt_hashcache_free(c);

	/* A NUL inside a path ("d/a" becomes "d\0a"), checksum fixed. */
	CHECK(tt_hashcache_write(file, items.n, get_item, &items) == 0);
	free(data);
	data = slurp(file, &size);
	data[64 + 3 * 80 + 1] = '\0';
	sum = spec_checksum(data, size);
	memcpy(data + 32, &sum, 8);
	spill(file, data, size);
	c = tt_hashcache_load(file);
	CHECK(c != NULL && tt_hashcache_count(c) == 0);
	tt_hashcache_free(c);
	free(data);
	free(items.paths);
	CHECK(unlink(file) == 0);
}

static void test_format(void)
{
	struct items items = {.n = 1000};
	items.paths = calloc(items.n, sizeof *items.paths);
	for (size_t i = 0; i < items.n; i++)
		snprintf(items.paths[i], sizeof items.paths[i], "dir%03zu/file %04zu", i / 100, i);

	/* The cache directory does not exist yet: the write creates it. */
	char file[256];
	snprintf(file, sizeof file, "%s/format.bin", cache_dir);
	CHECK(tt_hashcache_write(file, items.n, get_item, &items) == 0);
	CHECK(count_files_in(cache_dir) == 1); /* no temporary left behind */
	struct stat st = stat_of(file);
	off_t pool = 0;
	for (size_t i = 0; i < items.n; i++)
		pool += i % 10 == 9 ? 0 : (off_t)strlen(items.paths[i]) + 1;
	CHECK(st.st_size == 64 + 900 * 80 + pool);

	struct tt_hashcache *c = tt_hashcache_load(file);
	CHECK(c != NULL);
	CHECK(tt_hashcache_count(c) == 900);
	for (size_t i = 0; i < items.n; i++) {
		const char *p = items.paths[i];
		const struct tt_hashcache_rec *rec = tt_hashcache_find(c, p, strlen(p));
		if (i % 10 == 9) {
			CHECK(rec == NULL);
			continue;
		}
		CHECK(rec != NULL);
		if (!rec)
			continue;
		unsigned char sha[32];
		tt_sha256(p, strlen(p), sha);
		CHECK(rec->size == i && rec->inode == 7 * i);
		CHECK(rec->mtime_ns == stamp(i, 1) && rec->ctime_ns == stamp(i, 2));
		CHECK(rec->hashed_ns == stamp(i, 3) + 5 * SEC);
		CHECK(memcmp(rec->sha256, sha, 32) == 0);
		struct tt_hashcache_stat now = {i, stamp(i, 1), stamp(i, 2), 7 * i};
		CHECK(tt_hashcache_matches(rec, &now));
		now.inode++;
		CHECK(!tt_hashcache_matches(rec, &now));
	}
	/* A directory's records: its files only, sorted by name. */
	const struct tt_hashcache_rec *first = NULL;
	CHECK(tt_hashcache_dir(c, "dir003", 6, &first) == 90);
	CHECK(first != NULL && strcmp(tt_hashcache_rec_path(c, first), "dir003/file 0300") == 0);
	for (size_t i = 1; first && i < 90; i++)
		CHECK(strcmp(tt_hashcache_rec_path(c, &first[i - 1]), tt_hashcache_rec_path(c, &first[i])) < 0);
	CHECK(tt_hashcache_dir(c, "dir00", 5, &first) == 0 && first == NULL);
	CHECK(tt_hashcache_dir(c, "", 0, &first) == 0);
	CHECK(tt_hashcache_find(c, "dir000/file", 11) == NULL);
	CHECK(tt_hashcache_find(c, "dir000/file 000", 15) == NULL);
	CHECK(tt_hashcache_find(c, "dir000/file 00000", 17) == NULL);
	CHECK(tt_hashcache_find(c, "dir100/file 0000", 16) == NULL);
	CHECK(tt_hashcache_find(c, "", 0) == NULL);
	tt_hashcache_free(c);

	/* Damaged files are empty caches, never trusted. */
	off_t size = st.st_size;
	const off_t spots[] = {0, 9, 20, 40, 64, 64 + 80 * 450 + 7, size - 1};
	for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
		flip_byte(file, spots[k]);
		c = tt_hashcache_load(file);
		CHECK(c != NULL && tt_hashcache_count(c) == 0);
		CHECK(tt_hashcache_find(c, items.paths[0], strlen(items.paths[0])) == NULL);
		tt_hashcache_free(c);
		flip_byte(file, spots[k]);
	}
	c = tt_hashcache_load(file);
	CHECK(tt_hashcache_count(c) == 900); /* the flips were undone */
	tt_hashcache_free(c);
	/* What a crash can leave of a cache written without fsync: blocks
	 * never written read back as zeros, the size already right. */
	static const unsigned char zeros[4096];
	const off_t pages[] = {0, 4096, 8 * 4096, (size - 1) / 4096 * 4096};
	for (size_t k = 0; k < sizeof pages / sizeof pages[0]; k++) {
		int fd = open(file, O_RDWR);
		size_t len = size - pages[k] < 4096 ? (size_t)(size - pages[k]) : 4096;
		CHECK(pwrite(fd, zeros, len, pages[k]) == (ssize_t)len);
		close(fd);
		c = tt_hashcache_load(file);
		CHECK(c != NULL && tt_hashcache_count(c) == 0);
		tt_hashcache_free(c);
		CHECK(tt_hashcache_write(file, items.n, get_item, &items) == 0);
	}
	c = tt_hashcache_load(file);
	CHECK(tt_hashcache_count(c) == 900);
	tt_hashcache_free(c);
	const off_t lengths[] = {size - 1, size / 2, 64, 10, 0};
	for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
		CHECK(truncate(file, lengths[k]) == 0);
		c = tt_hashcache_load(file);
		CHECK(c != NULL && tt_hashcache_count(c) == 0);
		tt_hashcache_free(c);
	}
	c = tt_hashcache_load("/nonexistent/cache.bin");
	CHECK(c != NULL && tt_hashcache_count(c) == 0);
	tt_hashcache_free(c);
	CHECK(tt_hashcache_count(NULL) == 0 && tt_hashcache_find(NULL, "a", 1) == NULL);

	/* One directory in two runs is a broken writer: ignored. */
	items.n = 30;
	for (size_t i = 0; i < items.n; i++)
		snprintf(items.paths[i], sizeof items.paths[i], "%s/f%02zu", i < 10 || i >= 20 ? "a" : "b", i);
	CHECK(tt_hashcache_write(file, items.n, get_item, &items) == 0);
	c = tt_hashcache_load(file);
	CHECK(c != NULL && tt_hashcache_count(c) == 0);
	tt_hashcache_free(c);
	for (size_t i = 0; i < items.n; i++)
		snprintf(items.paths[i], sizeof items.paths[i], "%s/f%02zu", i < 20 ? "a" : "b", i);
	CHECK(tt_hashcache_write(file, items.n, get_item, &items) == 0);
	c = tt_hashcache_load(file);
	CHECK(tt_hashcache_count(c) == 27);
	CHECK(tt_hashcache_dir(c, "a", 1, &first) == 18);
	CHECK(tt_hashcache_dir(c, "b", 1, &first) == 9);
	CHECK(tt_hashcache_find(c, "b/f25", 5) != NULL && tt_hashcache_find(c, "b/f29", 5) == NULL);
	tt_hashcache_free(c);

	test_forged_layout(file);

	/* Empty is a valid cache. */
	CHECK(tt_hashcache_write(file, 0, get_item, &items) == 0);
	c = tt_hashcache_load(file);
	CHECK(c != NULL && tt_hashcache_count(c) == 0);
	tt_hashcache_free(c);
	CHECK(stat_of(file).st_size == 64);
	CHECK(unlink(file) == 0);
	free(items.paths);

	/* Settled means more than two seconds, for mtime and ctime both. */
	int64_t t = 5000 * SEC;
	CHECK(tt_hashcache_settled(t - 2 * SEC - 1, t - 2 * SEC - 1, t));
	CHECK(!tt_hashcache_settled(t - 2 * SEC, t - 3 * SEC, t));
	CHECK(!tt_hashcache_settled(t - 3 * SEC, t - 2 * SEC, t));
	CHECK(!tt_hashcache_settled(t + SEC, t - 3 * SEC, t));
	CHECK(!tt_hashcache_settled(0, 0, INT64_MIN));

	/* The name: sha256 of the key, 16 hex. */
	char *name = tt_hashcache_file("/c", "/some/root");
	unsigned char d[32];
	char hex[65];
	tt_sha256("/some/root", 10, d);
	tt_hex(d, 8, hex);
	char want[128];
	snprintf(want, sizeof want, "/c/hashes-%s.bin", hex);
	CHECK_STR(name, want);
	free(name);
}

/* ---- the scanner through the cache ---- */

static void build_tree(void)
{
	char rel[64], p[512];
	for (int d = 0; d < 3; d++) {
		snprintf(rel, sizeof rel, "d%d", d);
		path_in(p, sizeof p, rel);
		CHECK(mkdir(p, 0755) == 0);
		for (int f = 0; f < 6; f++) {
			snprintf(rel, sizeof rel, "d%d/f%d", d, f);
			put_file(rel, rel);
		}
	}
	put_file("top-a", "aaaa");
	put_file("top-b", "bbbb");
	path_in(p, sizeof p, "link");
	CHECK(symlink("top-a", p) == 0);
}

static void test_scan_with_cache(void)
{
	tt_hashcache_set_clock(clock_ahead);
	build_tree();
	struct tt_scan_opts opts = {.cache_dir = cache_dir};
	char *cache_file = the_cache_file();

	struct tt_scan_result first;
	CHECK(scan_hashed(&opts, &first) == 21);
	struct stat c1 = stat_of(cache_file);

	/* Nothing changed: nothing read, the cache file left alone. */
	struct tt_scan_result second;
	CHECK(scan_hashed(&opts, &second) == 0);
	CHECK(second.count == first.count && second.total_size == first.total_size);
	for (size_t i = 0; i < first.count && i < second.count; i++) {
		CHECK_STR(first.entries[i].path, second.entries[i].path);
		CHECK(memcmp(first.entries[i].sha256, second.entries[i].sha256, 32) == 0);
	}
	tt_scan_result_free(&first);
	tt_scan_result_free(&second);
	struct stat c2 = stat_of(cache_file);
	CHECK(c2.st_ino == c1.st_ino);
	CHECK(c2.st_mtim.tv_sec == c1.st_mtim.tv_sec && c2.st_mtim.tv_nsec == c1.st_mtim.tv_nsec);
	opts.threads = 1;
	CHECK(scan_hashed(&opts, NULL) == 0);
	opts.threads = 0;

	/* Same size, mtime put back: ctime still tells. */
	char p[512];
	path_in(p, sizeof p, "d1/f3");
	struct stat before = stat_of(p);
	put_file("d1/f3", "D1/F3");
	struct timespec times[2] = {before.st_atim, before.st_mtim};
	CHECK(utimensat(AT_FDCWD, p, times, 0) == 0);
	struct stat after = stat_of(p);
	CHECK(after.st_size == before.st_size);
	CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
	      after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
	struct tt_scan_result third;
	CHECK(scan_hashed(&opts, &third) == 1);
	check_sha_of(&third, "d1/f3", "D1/F3");
	tt_scan_result_free(&third);
	struct stat c3 = stat_of(cache_file);
	CHECK(c3.st_ino != c2.st_ino); /* rewritten */
	CHECK(scan_hashed(&opts, NULL) == 0);

	/* A link's target changes: the link is read again with it. */
	put_file("top-a", "AAAA");
	struct tt_scan_result fourth;
	CHECK(scan_hashed(&opts, &fourth) == 2);
	check_sha_of(&fourth, "link", "AAAA");
	check_sha_of(&fourth, "top-a", "AAAA");
	tt_scan_result_free(&fourth);

	/* A removed file changes the cache without anything to read. */
	c3 = stat_of(cache_file);
	path_in(p, sizeof p, "d2/f0");
	CHECK(unlink(p) == 0);
	CHECK(scan_hashed(&opts, NULL) == 0);
	struct stat c4 = stat_of(cache_file);
	CHECK(c4.st_ino != c3.st_ino);
	struct tt_hashcache *c = tt_hashcache_load(cache_file);
	CHECK(tt_hashcache_count(c) == 20);
	CHECK(tt_hashcache_find(c, "d2/f0", 5) == NULL);
	CHECK(tt_hashcache_find(c, "d2/f1", 5) != NULL);
	CHECK(tt_hashcache_find(c, "link", 4) != NULL);
	tt_hashcache_free(c);
	CHECK(scan_hashed(&opts, NULL) == 0);
	CHECK(stat_of(cache_file).st_ino == c4.st_ino);

	/* A damaged cache is ignored and replaced. */
	flip_byte(cache_file, 100);
	struct tt_scan_result fifth;
	CHECK(scan_hashed(&opts, &fifth) == 20);
	check_sha_of(&fifth, "d1/f3", "D1/F3");
	tt_scan_result_free(&fifth);
	CHECK(scan_hashed(&opts, NULL) == 0);
	CHECK(truncate(cache_file, stat_of(cache_file).st_size - 3) == 0);
	CHECK(scan_hashed(&opts, NULL) == 20);
	CHECK(scan_hashed(&opts, NULL) == 0);

	/* One file through its own cache, apart from the tree's. */
	path_in(p, sizeof p, "top-b");
	uint64_t size = 0;
	unsigned char sha[32], want[32];
	tt_sha256("bbbb", 4, want);
	CHECK(tt_scan_file(p, &opts, &size, sha) == 0);
	CHECK(size == 4 && memcmp(sha, want, 32) == 0);
	CHECK(count_files_in(cache_dir) == 2);
	struct stat tree_cache = stat_of(cache_file);
	char *real = realpath(p, NULL);
	char key[600];
	snprintf(key, sizeof key, "file:%s", real);
	free(real);
	char *one_file = tt_hashcache_file(cache_dir, key);
	struct stat f1 = stat_of(one_file);
	CHECK(tt_scan_file(p, &opts, &size, sha) == 0);
	CHECK(size == 4 && memcmp(sha, want, 32) == 0);
	CHECK(stat_of(one_file).st_ino == f1.st_ino); /* a hit writes nothing */
	put_file("top-b", "bbbbb");
	tt_sha256("bbbbb", 5, want);
	CHECK(tt_scan_file(p, &opts, &size, sha) == 0);
	CHECK(size == 5 && memcmp(sha, want, 32) == 0);
	CHECK(stat_of(cache_file).st_ino == tree_cache.st_ino);
	free(one_file);

	free(cache_file);
	tt_hashcache_set_clock(NULL);
}

/* With the real clock: what was written just now is read again, and what
 * has settled for two seconds is not. */
static void test_real_clock(void)
{
	tt_hashcache_set_clock(NULL);
	struct tt_scan_opts opts = {.cache_dir = cache_dir};
	put_file("settled", "s");
	set_times_past("settled", 3600);
	usleep(2200 * 1000); /* its ctime too */
	CHECK(scan_hashed(&opts, NULL) == 1);
	char *cache_file = the_cache_file();
	struct stat c0 = stat_of(cache_file);
	put_file("fresh-1", "one");
	put_file("fresh-2", "two");
	CHECK(scan_hashed(&opts, NULL) == 2);
	CHECK(scan_hashed(&opts, NULL) == 2); /* still within two seconds */
	/* Hashing them again adds nothing the cache could keep: it is not
	 * rewritten (a status right after an edit writes no file). */
	struct stat c1 = stat_of(cache_file);
	CHECK(c1.st_ino == c0.st_ino);
	CHECK(c1.st_mtim.tv_sec == c0.st_mtim.tv_sec && c1.st_mtim.tv_nsec == c0.st_mtim.tv_nsec);

	/* One file: a hash too recent to trust writes no cache file; a
	 * record of an older state is removed. */
	char p[512], key[600];
	path_in(p, sizeof p, "single");
	put_file("single", "1");
	char *real = realpath(p, NULL);
	snprintf(key, sizeof key, "file:%s", real);
	free(real);
	char *one_file = tt_hashcache_file(cache_dir, key);
	uint64_t size = 0;
	unsigned char sha[32], want[32];
	CHECK(tt_scan_file(p, &opts, &size, sha) == 0);
	CHECK(tt_scan_file(p, &opts, &size, sha) == 0);
	tt_sha256("1", 1, want);
	CHECK(size == 1 && memcmp(sha, want, 32) == 0);
	CHECK(access(one_file, F_OK) != 0);
	tt_hashcache_set_clock(clock_ahead);
	CHECK(tt_scan_file(p, &opts, &size, sha) == 0);
	CHECK(access(one_file, F_OK) == 0); /* settled by that clock: kept */
	tt_hashcache_set_clock(NULL);
	put_file("single", "22");
	CHECK(tt_scan_file(p, &opts, &size, sha) == 0);
	tt_sha256("22", 2, want);
	CHECK(size == 2 && memcmp(sha, want, 32) == 0);
	CHECK(access(one_file, F_OK) != 0); /* the old record is gone */
	free(one_file);
	free(cache_file);
	path_in(p, sizeof p, "single");
	CHECK(unlink(p) == 0);

	/* Old mtimes alone do not do it (utimensat just set ctime); ctime
	 * must age too. */
	set_times_past("fresh-1", 3600);
	set_times_past("fresh-2", 3600);
	CHECK(scan_hashed(&opts, NULL) == 2);
	usleep(2200 * 1000);
	CHECK(scan_hashed(&opts, NULL) == 2); /* nothing unsettled was cached */
	CHECK(scan_hashed(&opts, NULL) == 0);
}

int main(void)
{
	make_tmp();
	test_format();
	test_scan_with_cache();
	remove_tmp();

	make_tmp();
	test_real_clock();
	remove_tmp();
	CHECK_DONE();
}
