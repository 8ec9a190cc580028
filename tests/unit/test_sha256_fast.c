/* Large files hashed by libcrypto (util/sha256_fast.h) give the digest
 * Nettle gives, at every size around the thresholds, through
 * tt_filehash_at and through the stream API in uneven pieces; libcrypto
 * is not loaded until the large bytes add up to the load threshold; a
 * file written mid-read is still re-read; and with TETHER_NO_LIBCRYPTO=1
 * (the program runs itself again with it) nothing loads libcrypto and
 * the digests are the same. */
#include "check.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/filehash.h"
#include "util/hash.h"
#include "util/sha256_fast.h"

static char root[64];

/* Whether libcrypto is mapped into this process, by /proc/self/maps:
 * what the start-up promise is about, whatever tether believes. */
static int libcrypto_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	if (!f)
		return -1;
	char line[4096];
	int found = 0;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "libcrypto"))
			found = 1;
	fclose(f);
	return found;
}

/* Bytes that are not a repeating pattern, so a misplaced block changes
 * the digest. */
static unsigned char *pseudo_random(size_t n, uint64_t seed)
{
	unsigned char *data = malloc(n ? n : 1);
	CHECK(data != NULL);
	if (!data)
		return NULL;
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		data[i] = (unsigned char)(x >> 24);
	}
	return data;
}

static int64_t later_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + 10000000000LL;
}

/* Write n bytes to root/name, hash the file with tt_filehash_at and check
 * the digest against Nettle's of the same bytes. */
static void check_file(const char *name, size_t n, uint64_t seed)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", root, name);
	unsigned char *data = pseudo_random(n, seed);
	if (!data)
		return;
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK(fwrite(data, 1, n, f) == n);
		CHECK(fclose(f) == 0);
	}
	unsigned char want[32];
	tt_sha256(data, n, want);
	free(data);
	unsigned char *buf = malloc(TT_FILEHASH_BUFFER_SIZE);
	CHECK(buf != NULL);
	struct tt_filehash h;
	if (buf) {
		int rc = tt_filehash_at(AT_FDCWD, path, 1, buf, NULL, &h);
		CHECK(rc == 0);
		if (rc == 0) {
			CHECK(h.size == n);
			if (memcmp(h.sha256, want, 32) != 0)
				fprintf(stderr, "%s: %zu bytes: digest differs from Nettle's\n", path, n);
			CHECK(memcmp(h.sha256, want, 32) == 0);
		}
	}
	free(buf);
	unlink(path);
}

/* Every size where a threshold or a block boundary could be mishandled. */
static void check_sizes(void)
{
	const size_t min = (size_t)TT_SHA256_FAST_MIN_BYTES;
	const size_t sizes[] = {0, 1, 55, 64, min - 1, min, min + 1, TT_FILEHASH_BUFFER_SIZE + 1,
	                        (3u << 20) + 17};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char name[32];
		snprintf(name, sizeof name, "size-%zu", sizes[i]);
		check_file(name, sizes[i], i + 1);
	}
}

/* The stream API fed in pieces that straddle 64-byte blocks. */
static void check_pieces(void)
{
	const size_t n = (size_t)TT_SHA256_FAST_MIN_BYTES * 3 + 5;
	unsigned char *data = pseudo_random(n, 99);
	if (!data)
		return;
	unsigned char want[32], got[32];
	tt_sha256(data, n, want);
	const size_t steps[] = {1, 63, 64, 65, 1000, 100000};
	struct tt_sha256_stream s;
	tt_sha256_begin(&s, n);
	size_t at = 0;
	for (size_t k = 0; at < n; k++) {
		size_t step = steps[k % (sizeof steps / sizeof steps[0])];
		if (step > n - at)
			step = n - at;
		tt_sha256_update(&s, data + at, step);
		at += step;
	}
	CHECK(tt_sha256_end(&s, got) == 0);
	CHECK(memcmp(got, want, 32) == 0);
	/* Abandoned, as on a read error: released, nothing written. */
	tt_sha256_begin(&s, n);
	tt_sha256_update(&s, data, 10);
	memset(got, 0xee, sizeof got);
	CHECK(tt_sha256_end(&s, NULL) == 0);
	CHECK(got[0] == 0xee);
	free(data);
}

/* A write between the first buffer and the rest, with the file large
 * enough for libcrypto: read again, and the hash is of the state after. */
static int hook_calls;
static char hooked[128];

static void hook(const char *name)
{
	(void)name;
	if (++hook_calls != 1)
		return;
	int fd = open(hooked, O_WRONLY);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(pwrite(fd, "B", 1, 0) == 1);
		close(fd);
	}
}

static void check_written_mid_read(void)
{
	const size_t n = 8 * TT_FILEHASH_BUFFER_SIZE;
	snprintf(hooked, sizeof hooked, "%s/hooked", root);
	unsigned char *data = pseudo_random(n, 7);
	if (!data)
		return;
	data[0] = 'A';
	FILE *f = fopen(hooked, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK(fwrite(data, 1, n, f) == n);
		CHECK(fclose(f) == 0);
	}
	data[0] = 'B';
	unsigned char after[32];
	tt_sha256(data, n, after);
	free(data);
	unsigned char *buf = malloc(TT_FILEHASH_BUFFER_SIZE);
	CHECK(buf != NULL);
	if (buf) {
		hook_calls = 0;
		tt_filehash_set_hook(hook);
		struct tt_filehash h;
		CHECK(tt_filehash_at(AT_FDCWD, hooked, 1, buf, NULL, &h) == 0);
		tt_filehash_set_hook(NULL);
		CHECK(h.reads == 2);
		CHECK(memcmp(h.sha256, after, 32) == 0);
	}
	free(buf);
	unlink(hooked);
}

/* The checks, in one process; fallback says TETHER_NO_LIBCRYPTO=1 is set. */
static void run_checks(int fallback)
{
	tt_hashcache_set_clock(later_clock);
	snprintf(root, sizeof root, "/tmp/tt-sha256fast-XXXXXX");
	CHECK(mkdtemp(root) != NULL);

	/* A few small and middling files, far under the load threshold:
	 * hashed by Nettle, and libcrypto stays out of the process. */
	CHECK(libcrypto_mapped() == 0);
	check_sizes();
	CHECK(!tt_sha256_libcrypto_loaded());
	CHECK(libcrypto_mapped() == 0);

	/* One file of the load threshold: loads libcrypto (when it is
	 * installed and not refused) and is hashed by it. */
	check_file("load", (size_t)TT_SHA256_LOAD_AFTER_BYTES, 42);
	int loaded = tt_sha256_libcrypto_loaded();
	CHECK(libcrypto_mapped() == loaded);
	if (fallback) {
		CHECK(!loaded);
	} else {
		/* Whether this machine has it at all, asked only now. */
		void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
		CHECK(loaded == (lib != NULL));
		if (!lib)
			fprintf(stderr, "libcrypto.so.3 is not installed: only Nettle was checked\n");
		else
			dlclose(lib);
	}

	/* Now every size again, the ones above TT_SHA256_FAST_MIN_BYTES
	 * through libcrypto. */
	check_sizes();
	check_pieces();
	check_written_mid_read();
	CHECK(rmdir(root) == 0);
	tt_hashcache_set_clock(NULL);
}

int main(int argc, char **argv)
{
	int fallback = argc > 1 && strcmp(argv[1], "fallback") == 0;
	if (fallback && !getenv("TETHER_NO_LIBCRYPTO")) {
		fprintf(stderr, "the fallback run needs TETHER_NO_LIBCRYPTO=1\n");
		return 1;
	}
	run_checks(fallback);
	if (!fallback) {
		/* The same checks in a fresh process that refuses libcrypto. */
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			setenv("TETHER_NO_LIBCRYPTO", "1", 1);
			execl("/proc/self/exe", argv[0], "fallback", (char *)NULL);
			_exit(127);
		}
		int status = 0;
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK_DONE();
}
