/* include/tether/listing.h as a module calls it: a listing written from
 * entries found elsewhere is byte for byte the scanner's listing of the
 * same files; the writer refuses entries out of order; the hash cache
 * keeps what it found and what was recorded, and matches by stamp. */
#include <tether/backend.h>
#include <tether/listing.h>

#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

/* The tree: the names a listing escapes (a quote, a control byte, a byte
 * that is not UTF-8, non-ASCII UTF-8), nesting where '/' sorts against
 * '-', and a symlink to a directory (recorded by its target). */
static const struct {
	const char *path;
	const char *content; /* NULL: a symlink to "sub" */
} files[] = {
	{"a-b", "dash\n"},
	{"a/b", "slash\n"},
	{"a/deeper/c.txt", "c\n"},
	{"quote\"d", "q\n"},
	{"tab\tname", "t\n"},
	{"caf\xc3\xa9", "utf8\n"},
	{"bad\xff", "not utf8\n"},
	{"sub/x", "x\n"},
	{"to-sub", NULL},
};
#define NFILES (sizeof files / sizeof files[0])

static void put(const char *rel, const char *content)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	}
	if (!content) {
		CHECK(symlink("sub", path) == 0);
		return;
	}
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	fputs(content, f);
	fclose(f);
}

static int by_path(const void *x, const void *y)
{
	const char *a = *(const char *const *)x, *b = *(const char *const *)y;
	return strcmp(a, b); /* no NUL in a name: strcmp is bytewise */
}

static void hex_to_bytes(const char *hex, unsigned char out[32])
{
	for (int i = 0; i < 32; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (unsigned char)v;
	}
}

static void test_writer_equals_scan(void)
{
	struct tether_scan_opts opts = {TETHER_SCAN_OPTS_INIT};
	opts.threads = 2;
	struct tether_listing_summary scan;
	CHECK(tether_scan_tree(root, &opts, 1, &scan) == 0);

	/* Enumerated as another store would: names sorted, contents hashed. */
	const char *order[NFILES];
	for (size_t i = 0; i < NFILES; i++)
		order[i] = files[i].path;
	qsort(order, NFILES, sizeof order[0], by_path);
	struct tether_listing_writer *w = tether_listing_writer_new(1);
	CHECK(w != NULL);
	for (size_t i = 0; i < NFILES; i++) {
		const char *content = NULL;
		for (size_t j = 0; j < NFILES; j++)
			if (files[j].path == order[i])
				content = files[j].content;
		struct tether_listing_entry e = {.path = order[i], .path_len = strlen(order[i])};
		if (content) {
			char hex[65];
			tether_sha256_hex(content, strlen(content), hex);
			hex_to_bytes(hex, e.sha256);
			e.size = strlen(content);
		} else {
			e.link_target = "sub";
		}
		CHECK(tether_listing_writer_add(w, &e) == 0);
	}
	struct tether_listing_summary mine;
	CHECK(tether_listing_writer_finish(w, &mine) == 0);
	CHECK(mine.count == scan.count);
	CHECK(mine.total_size == scan.total_size);
	CHECK_STR(mine.digest, scan.digest);
	CHECK(mine.listing_len == scan.listing_len && mine.listing && scan.listing &&
	      memcmp(mine.listing, scan.listing, scan.listing_len) == 0);
	if (mine.listing && scan.listing && strcmp(mine.listing, scan.listing) != 0)
		fprintf(stderr, "writer:\n%s\nscan:\n%s\n", mine.listing, scan.listing);

	/* Out of order, or twice: refused, naming the path. */
	struct tether_listing_entry again = {.path = "to-sub", .path_len = 6, .link_target = "sub"};
	CHECK(tether_listing_writer_add(w, &again) == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "to-sub") != NULL);
	struct tether_listing_entry before = {.path = "a", .path_len = 1};
	CHECK(tether_listing_writer_add(w, &before) == TETHER_EUSAGE);
	tether_listing_writer_free(w);

	/* Without the text: the same digest. */
	w = tether_listing_writer_new(0);
	struct tether_listing_summary empty;
	CHECK(tether_listing_writer_finish(w, &empty) == 0);
	CHECK(empty.listing == NULL && empty.count == 0);
	char none[65];
	tether_sha256_hex("", 0, none);
	CHECK_STR(empty.digest, none);
	tether_listing_writer_free(w);

	tether_listing_summary_free(&scan);
	tether_listing_summary_free(&mine);

	/* A newer layout than this tether knows is refused, not misread. */
	struct tether_scan_opts newer = {TETHER_SCAN_OPTS_INIT};
	newer.version = TETHER_SCAN_OPTS_VERSION + 1;
	CHECK(tether_scan_tree(root, &newer, 0, &scan) == TETHER_EUSAGE);
}

/* Entries named by a store's token: the token is "k", escaped as names
 * are, with the size; the order rule holds; an empty token is refused. */
static void test_writer_tokens(void)
{
	struct tether_listing_writer *w = tether_listing_writer_new(1);
	CHECK(w != NULL);
	if (!w)
		return;
	CHECK(tether_listing_writer_add_token(w, "a.csv", 5, 18, "\"6c94fe\"") == 0);
	CHECK(tether_listing_writer_add_token(w, "sub/c.csv", 9, 2, "\"d41d8-2\"") == 0);
	CHECK(tether_listing_writer_add_token(w, "b.csv", 5, 1, "\"x\"") == TETHER_EUSAGE);
	CHECK(tether_listing_writer_add_token(w, "z.csv", 5, 1, "") == TETHER_EUSAGE);
	struct tether_listing_summary sum;
	CHECK(tether_listing_writer_finish(w, &sum) == 0);
	CHECK_STR(sum.listing, "{\"k\":\"\\\"6c94fe\\\"\",\"p\":\"a.csv\",\"s\":18}\n"
	                       "{\"k\":\"\\\"d41d8-2\\\"\",\"p\":\"sub/c.csv\",\"s\":2}\n");
	CHECK(sum.count == 2 && sum.total_size == 20);
	char hex[65];
	tether_sha256_hex(sum.listing, sum.listing_len, hex);
	CHECK_STR(sum.digest, hex);
	tether_listing_summary_free(&sum);
	tether_listing_writer_free(w);
}

static void test_hashcache(void)
{
	char cache_dir[128];
	snprintf(cache_dir, sizeof cache_dir, "%s/.cache", root);
	mkdir(cache_dir, 0755);
	unsigned char sha[32], got[32];
	memset(sha, 0xab, sizeof sha);
	int64_t now = tether_hashcache_now_ns();
	/* Settled: last modified a minute before the hash was taken. */
	struct tether_file_stamp st = {42, now - 60000000000LL, now - 60000000000LL, 7};
	struct tether_hashcache *c = tether_hashcache_open(cache_dir, "s3://bucket/prefix");
	CHECK(c != NULL);
	CHECK(tether_hashcache_lookup(c, "k/one", 5, &st, got) == 0);
	CHECK(tether_hashcache_record(c, "k/one", 5, &st, now, sha) == 0);
	struct tether_file_stamp fresh = {9, now, now, 8}; /* modified as it was hashed: never trusted */
	CHECK(tether_hashcache_record(c, "k/two", 5, &fresh, now, sha) == 0);
	CHECK(tether_hashcache_save(c) == 0);
	tether_hashcache_close(c);

	c = tether_hashcache_open(cache_dir, "s3://bucket/prefix");
	memset(got, 0, sizeof got);
	CHECK(tether_hashcache_lookup(c, "k/one", 5, &st, got) == 1);
	CHECK(memcmp(got, sha, 32) == 0);
	CHECK(tether_hashcache_lookup(c, "k/two", 5, &fresh, got) == 0);
	struct tether_file_stamp changed = st;
	changed.inode = 8; /* a new version of the object */
	CHECK(tether_hashcache_lookup(c, "k/one", 5, &changed, got) == 0);
	/* Saved again with nothing recorded: what lookup found is kept. */
	CHECK(tether_hashcache_save(c) == 0);
	tether_hashcache_close(c);
	c = tether_hashcache_open(cache_dir, "s3://bucket/prefix");
	CHECK(tether_hashcache_lookup(c, "k/one", 5, &st, got) == 1);
	tether_hashcache_close(c);
	/* Another key is another cache. */
	c = tether_hashcache_open(cache_dir, "s3://bucket/other");
	CHECK(tether_hashcache_lookup(c, "k/one", 5, &st, got) == 0);
	tether_hashcache_close(c);
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/tether-listing-api-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	for (size_t i = 0; i < NFILES; i++)
		put(files[i].path, files[i].content);
	test_writer_equals_scan();
	test_writer_tokens();
	test_hashcache();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
	CHECK_DONE();
}
