/* A file written while it is hashed: the hash is of a state the file had
 * (the one after the write), never a mix; a file written during every
 * read is refused, naming it. Writes land mid-read through the hook
 * tt_filehash_set_hook, between the first buffer and the rest. */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tether/backend.h>

#include "core/filehash.h"
#include "core/scan.h"
#include "util/hash.h"

/* Eight buffers: the write at the start lands in bytes already read, the
 * one at the end in bytes not read yet. */
#define FILE_SIZE (8 * TT_FILEHASH_BUFFER_SIZE)

static char root[64];
static char target[4096];      /* the file the hook writes into */
static char replacement[4096]; /* what the hook renames over it, in rename mode */
static char moved_from[4096];  /* in mode 4, renamed to moved_to once */
static char moved_to[4096];
static int hook_mode;          /* 0 none, 1 write once, 2 write every time, 3 rename once,
                                  4 move a file between directories once, 5 add a file every time */
static int hook_calls;

static unsigned char *content(unsigned char fill)
{
	unsigned char *data = malloc(FILE_SIZE);
	CHECK(data != NULL);
	if (data)
		memset(data, fill, FILE_SIZE);
	return data;
}

static void write_at(const char *path, off_t offset, unsigned char byte)
{
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(pwrite(fd, &byte, 1, offset) == 1);
	close(fd);
}

static void put_bytes(const char *path, const unsigned char *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK(fwrite(data, 1, n, f) == n);
		fclose(f);
	}
}

/* Two writes at distant offsets, as an application updating a big file
 * in place does; each call writes a different byte, so every read sees a
 * new state. */
static void hook(const char *name)
{
	(void)name;
	hook_calls++;
	if (hook_mode == 1 && hook_calls == 1) {
		write_at(target, 0, 'B');
		write_at(target, FILE_SIZE - 1, 'B');
	} else if (hook_mode == 2) {
		write_at(target, 0, (unsigned char)('a' + hook_calls % 26));
		write_at(target, FILE_SIZE - 1, (unsigned char)('a' + hook_calls % 26));
	} else if (hook_mode == 3 && hook_calls == 1) {
		CHECK(rename(replacement, target) == 0);
	} else if (hook_mode == 4 && hook_calls == 1) {
		CHECK(rename(moved_from, moved_to) == 0);
	} else if (hook_mode == 5) {
		char p[4200];
		snprintf(p, sizeof p, "%s/z/new-%d", root, hook_calls);
		FILE *f = fopen(p, "w");
		CHECK(f != NULL);
		if (f)
			fclose(f);
	}
}

/* The hash clock ten seconds ahead: the files written here look settled,
 * so only the stat comparison decides (no confirming second read). */
static int64_t later_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + 10000000000LL;
}

static void sha_hex_of(const unsigned char *data, size_t n, char hex[65])
{
	unsigned char sha[32];
	tt_sha256(data, n, sha);
	tt_hex(sha, 32, hex);
}

/* The content before and after the hook's first write. */
static void before_after(char before[65], char after[65])
{
	unsigned char *data = content('A');
	if (!data)
		return;
	sha_hex_of(data, FILE_SIZE, before);
	data[0] = 'B';
	data[FILE_SIZE - 1] = 'B';
	sha_hex_of(data, FILE_SIZE, after);
	data[0] = 'A';
	data[FILE_SIZE - 1] = 'A';
	put_bytes(target, data, FILE_SIZE);
	free(data);
}

static void test_file_written_mid_read(void)
{
	snprintf(target, sizeof target, "%s/big", root);
	char before[65], after[65], got[65];
	before_after(before, after);
	unsigned char *buf = malloc(TT_FILEHASH_BUFFER_SIZE);
	CHECK(buf != NULL);

	/* Settled and left alone: one read. */
	tt_hashcache_set_clock(later_clock);
	hook_mode = 0;
	struct tt_filehash h;
	CHECK(tt_filehash_at(AT_FDCWD, target, 1, buf, NULL, &h) == 0);
	tt_hex(h.sha256, 32, got);
	CHECK_STR(got, before);
	CHECK(h.reads == 1);
	CHECK(h.size == FILE_SIZE);

	/* Written mid-read: read again, and the hash is the after state. */
	hook_mode = 1;
	hook_calls = 0;
	CHECK(tt_filehash_at(AT_FDCWD, target, 1, buf, NULL, &h) == 0);
	tt_hex(h.sha256, 32, got);
	CHECK_STR(got, after);
	CHECK(h.reads == 2);
	CHECK(hook_calls == 2);

	/* Through tt_scan_file, the one-file object's path. */
	before_after(before, after);
	hook_calls = 0;
	uint64_t size = 0;
	unsigned char sha[32];
	CHECK(tt_scan_file(target, NULL, &size, sha) == 0);
	tt_hex(sha, 32, got);
	CHECK_STR(got, after);
	CHECK(size == FILE_SIZE);

	/* Through tt_scan_tree, a directory object's path. */
	before_after(before, after);
	hook_calls = 0;
	struct tt_scan_result r;
	CHECK(tt_scan_tree(root, NULL, &r) == 0);
	CHECK(r.count == 1);
	if (r.count == 1) {
		tt_hex(r.entries[0].sha256, 32, got);
		CHECK_STR(got, after);
	}
	tt_scan_result_free(&r);

	/* Not settled (just written, real clock): a write within the file
	 * system's timestamp granularity could leave the stat as it was, so
	 * the first read is trusted only once a second one agrees. */
	tt_hashcache_set_clock(NULL);
	hook_mode = 0;
	before_after(before, after);
	CHECK(tt_filehash_at(AT_FDCWD, target, 1, buf, NULL, &h) == 0);
	tt_hex(h.sha256, 32, got);
	CHECK_STR(got, before);
	CHECK(h.reads == 2);
	free(buf);
}

static void test_renamed_over_mid_read(void)
{
	snprintf(target, sizeof target, "%s/big", root);
	snprintf(replacement, sizeof replacement, "%s/.incoming", root);
	char before[65], after[65], got[65];
	before_after(before, after);
	unsigned char *data = content('C');
	char other[65] = "";
	if (data) {
		sha_hex_of(data, FILE_SIZE, other);
		put_bytes(replacement, data, FILE_SIZE);
		free(data);
	}
	/* The descriptor's file never changes: only the path's stat shows it. */
	tt_hashcache_set_clock(later_clock);
	hook_mode = 3;
	hook_calls = 0;
	uint64_t size = 0;
	unsigned char sha[32];
	CHECK(tt_scan_file(target, NULL, &size, sha) == 0);
	tt_hex(sha, 32, got);
	CHECK_STR(got, other);
	tt_hashcache_set_clock(NULL);
}

static void test_always_changing_is_refused(void)
{
	snprintf(target, sizeof target, "%s/big", root);
	char before[65], after[65];
	before_after(before, after);
	tt_hashcache_set_clock(later_clock);
	hook_mode = 2;

	hook_calls = 0;
	uint64_t size = 0;
	unsigned char sha[32];
	CHECK(tt_scan_file(target, NULL, &size, sha) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), target) != NULL);
	CHECK(strstr(tether_error_last(), "kept changing") != NULL);
	CHECK(hook_calls == TT_FILEHASH_ATTEMPTS);

	hook_calls = 0;
	struct tt_scan_result r;
	CHECK(tt_scan_tree(root, NULL, &r) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), target) != NULL);
	CHECK(r.count == 0 && r.entries == NULL);
	CHECK(hook_calls == TT_FILEHASH_ATTEMPTS);
	tt_hashcache_set_clock(NULL);
}

static int has_entry(const struct tt_scan_result *r, const char *path)
{
	for (size_t i = 0; i < r->count; i++) {
		if (strcmp(r->entries[i].path, path) == 0)
			return 1;
	}
	return 0;
}

/* A file moved from a directory the walk has not read yet into one it has
 * read already (while it hashes a big file there) would be in neither: the
 * tree is walked again, and lists the file where it now is. One thread, so
 * the order is known: z is read, its big file hashed, then a is read. */
static void test_tree_changed_mid_walk(void)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/a", root);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof p, "%s/z", root);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(target, sizeof target, "%s/z/big", root);
	char before[65], after[65];
	before_after(before, after);
	snprintf(moved_from, sizeof moved_from, "%s/a/small", root);
	snprintf(moved_to, sizeof moved_to, "%s/z/small", root);
	put_bytes(moved_from, (const unsigned char *)"x", 1);

	tt_hashcache_set_clock(later_clock);
	struct tt_scan_opts opts = {.threads = 1};
	hook_mode = 4;
	hook_calls = 0;
	struct tt_scan_result r;
	CHECK(tt_scan_tree(root, &opts, &r) == 0);
	CHECK(r.count == 2);
	CHECK(has_entry(&r, "z/big") && has_entry(&r, "z/small") && !has_entry(&r, "a/small"));
	CHECK(hook_calls == 2); /* the big file was read in both walks */
	tt_scan_result_free(&r);

	/* Entries added during every walk: refused, naming the tree. */
	hook_mode = 5;
	hook_calls = 0;
	CHECK(tt_scan_tree(root, &opts, &r) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), root) != NULL);
	CHECK(strstr(tether_error_last(), "kept changing while it was scanned") != NULL);
	CHECK(r.count == 0 && r.entries == NULL);
	CHECK(hook_calls == TT_FILEHASH_ATTEMPTS);
	tt_hashcache_set_clock(NULL);
}

static void fresh_root(void)
{
	if (root[0]) {
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
		CHECK(system(cmd) == 0);
	}
	snprintf(root, sizeof root, "/tmp/tt-filehash-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
}

int main(void)
{
	tt_filehash_set_hook(hook);
	fresh_root();
	test_file_written_mid_read();
	fresh_root();
	test_renamed_over_mid_read();
	fresh_root();
	test_always_changing_is_refused();
	fresh_root();
	test_tree_changed_mid_walk();
	tt_filehash_set_hook(NULL);
	fresh_root();
	rmdir(root);
	CHECK_DONE();
}
