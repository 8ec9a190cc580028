/* See fuzz_tmpdir.h. /dev/shm when there is one, so the per-input writes
 * stay in memory. */
#define _XOPEN_SOURCE 700
#include "fuzz_tmpdir.h"

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[PATH_MAX];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

void fuzz_clear(void)
{
	if (dir[0])
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_all(void)
{
	fuzz_clear();
	rmdir(dir);
}

const char *fuzz_tmpdir(void)
{
	if (dir[0])
		return dir;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/tether-fuzz-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror(dir);
		abort();
	}
	atexit(remove_all);
	return dir;
}

void fuzz_write(const char *d, const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", d, rel);
	for (char *s = path + strlen(d) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(path, 0700);
		*s = '/';
	}
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		abort();
	}
	if (len && fwrite(data, 1, len, f) != len)
		abort();
	fclose(f);
}

size_t fuzz_split(const unsigned char *data, size_t size, const char *sep, size_t max, size_t *off,
                  size_t *len)
{
	size_t n = 0, start = 0, sl = strlen(sep);
	for (size_t i = 0; n + 1 < max && i + sl <= size; i++)
		if (memcmp(data + i, sep, sl) == 0) {
			off[n] = start;
			len[n++] = i - start;
			start = i + sl;
			i += sl - 1;
		}
	off[n] = start;
	len[n++] = size - start;
	return n;
}
