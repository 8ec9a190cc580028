/* mktree: the benchmarks' fixture generator.
 *
 *   mktree ROOT NDIRS FILES_PER_DIR SIZE [MTIME [JOBS]]
 *
 * Creates ROOT (which must not exist) holding NDIRS directories
 * d0000/ ... each holding FILES_PER_DIR files f00000 ... of SIZE bytes, or,
 * with NDIRS = 0, FILES_PER_DIR files directly in ROOT. Small files hold a
 * line naming them, padded; files over 4 KiB hold xorshift64 bytes seeded
 * by the file's number, so no two files are alike and none compresses. Every
 * file's mtime is set to MTIME (seconds since the epoch; default one hour
 * ago) so that tether's hash cache, which distrusts times within two
 * seconds of a hash, trusts it once the ctime is two seconds old too.
 * JOBS processes (default: online CPUs) share the directories; files
 * directly in ROOT are written by one.
 *
 * Only POSIX; no allocation per file. Exits 0, or 1 with a message. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK ((size_t)1 << 20)

static unsigned char *chunk;

static void die(const char *what, const char *path)
{
	fprintf(stderr, "mktree: %s '%s': %s\n", what, path, strerror(errno));
	exit(1);
}

static void write_all(int fd, const unsigned char *p, size_t n, const char *path)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die("cannot write", path);
		p += w;
		n -= (size_t)w;
	}
}

static void fill_random(uint64_t *state, unsigned char *p, size_t n)
{
	uint64_t x = *state;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	*state = x;
}

static void make_file(int dirfd, const char *dirpath, unsigned long long fileno, const char *name,
                      uint64_t size, const struct timespec times[2])
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dirpath, name);
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		die("cannot create", path);
	if (size <= 4096) {
		unsigned char buf[4096];
		int n = snprintf((char *)buf, sizeof buf, "file %llu\n", fileno);
		if ((uint64_t)n > size)
			n = (int)size;
		memset(buf + n, '.', size - (uint64_t)n);
		if (size > 0)
			buf[size - 1] = '\n';
		write_all(fd, buf, size, path);
	} else {
		uint64_t state = 0x9e3779b97f4a7c15ULL ^ (fileno + 1) * 0xbf58476d1ce4e5b9ULL;
		for (uint64_t done = 0; done < size;) {
			size_t n = size - done < CHUNK ? (size_t)(size - done) : CHUNK;
			fill_random(&state, chunk, n);
			write_all(fd, chunk, n, path);
			done += n;
		}
	}
	if (futimens(fd, times) != 0)
		die("cannot set times of", path);
	if (close(fd) != 0)
		die("cannot close", path);
}

static void make_dir_files(const char *root, long d, long nfiles, uint64_t size,
                           const struct timespec times[2])
{
	char dirpath[4096];
	if (d < 0)
		snprintf(dirpath, sizeof dirpath, "%s", root);
	else
		snprintf(dirpath, sizeof dirpath, "%s/d%04ld", root, d);
	if (d >= 0 && mkdir(dirpath, 0755) != 0)
		die("cannot create directory", dirpath);
	int dirfd = open(dirpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		die("cannot open directory", dirpath);
	for (long f = 0; f < nfiles; f++) {
		char name[32];
		snprintf(name, sizeof name, "f%05ld", f);
		unsigned long long fileno = (unsigned long long)(d < 0 ? 0 : d) * (unsigned long long)nfiles +
		                            (unsigned long long)f;
		make_file(dirfd, dirpath, fileno, name, size, times);
	}
	/* Directories are not hashed, but keep their mtimes old as well. */
	if (d >= 0 && futimens(dirfd, times) != 0)
		die("cannot set times of", dirpath);
	close(dirfd);
}

int main(int argc, char **argv)
{
	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: mktree ROOT NDIRS FILES_PER_DIR SIZE [MTIME [JOBS]]\n");
		return 2;
	}
	const char *root = argv[1];
	long ndirs = strtol(argv[2], NULL, 10);
	long nfiles = strtol(argv[3], NULL, 10);
	uint64_t size = strtoull(argv[4], NULL, 10);
	time_t mtime = argc > 5 ? (time_t)strtoll(argv[5], NULL, 10) : time(NULL) - 3600;
	long jobs = argc > 6 ? strtol(argv[6], NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
	if (ndirs < 0 || nfiles < 0 || jobs < 1) {
		fprintf(stderr, "mktree: bad arguments\n");
		return 2;
	}
	chunk = malloc(CHUNK);
	if (!chunk) {
		fprintf(stderr, "mktree: out of memory\n");
		return 1;
	}
	struct timespec times[2] = {{.tv_sec = mtime}, {.tv_sec = mtime}};
	if (mkdir(root, 0755) != 0)
		die("cannot create directory", root);
	if (ndirs == 0) {
		/* Files directly in ROOT: one process (used for a few big files). */
		make_dir_files(root, -1, nfiles, size, times);
	} else {
		if (jobs > ndirs)
			jobs = ndirs;
		for (long j = 0; j < jobs; j++) {
			pid_t pid = fork();
			if (pid < 0)
				die("cannot fork for", root);
			if (pid == 0) {
				for (long d = j; d < ndirs; d += jobs)
					make_dir_files(root, d, nfiles, size, times);
				_exit(0);
			}
		}
		int failed = 0, status;
		while (wait(&status) > 0)
			failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		if (failed)
			return 1;
	}
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		futimens(fd, times);
		close(fd);
	}
	return 0;
}
