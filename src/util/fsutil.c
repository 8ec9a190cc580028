#include "util/fsutil.h"
#include "util/tempname.h"

#include <tether/backend.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tt_read_fd(int fd, const char *display, char **data, size_t *len)
{
	struct stat st;
	return tt_read_fd_sized(fd, display, fstat(fd, &st) == 0 ? st.st_size : 0, data, len);
}

int tt_read_fd_sized(int fd, const char *display, off_t size, char **data, size_t *len)
{
	size_t cap = size > 0 ? (size_t)size + 1 : 4096, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return tether_error_set(TETHER_EIO, "%s: out of memory", display);
	for (;;) {
		if (n + 1 >= cap) {
			char *bigger = realloc(buf, cap * 2);
			if (!bigger) {
				free(buf);
				return tether_error_set(TETHER_EIO, "%s: out of memory", display);
			}
			buf = bigger;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			return tether_error_set(TETHER_EIO, "%s: %s", display, strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

char *tt_read_small(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max &&
	    (buf = malloc((size_t)st.st_size + 1))) {
		ssize_t n = read(fd, buf, (size_t)st.st_size);
		if (n != st.st_size) {
			free(buf);
			buf = NULL;
			errno = EIO;
		} else {
			buf[n] = '\0';
		}
	} else if (!buf) {
		errno = EIO;
	}
	close(fd);
	return buf;
}

int tt_read_file(const char *path, char **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tether_error_set(errno == ENOENT ? TETHER_ENOTFOUND : TETHER_EIO, "%s: %s",
		                        path, strerror(errno));
	int rc = tt_read_fd(fd, path, data, len);
	close(fd);
	return rc;
}

int tt_mkdirs(const char *path, int mode)
{
	char *p = strdup(path);
	if (!p)
		return tether_error_set(TETHER_EIO, "out of memory");
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
			int e = errno;
			int rc = tether_error_set(TETHER_EIO, "cannot create %s: %s", p, strerror(e));
			free(p);
			return rc;
		}
		*s = '/';
	}
	int rc = 0;
	if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST)
		rc = tether_error_set(TETHER_EIO, "cannot create %s: %s", p, strerror(errno));
	free(p);
	return rc;
}

int tt_write_all(int fd, const void *buf, size_t len)
{
	const char *data = buf;
	while (len > 0) {
		ssize_t w = write(fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

static int write_replace(const char *path, const void *data, size_t len, int durable)
{
	char *dir = strdup(path);
	if (!dir)
		return tether_error_set(TETHER_EIO, "out of memory");
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		int rc = tt_mkdirs(dir, 0777);
		if (rc) {
			free(dir);
			return rc;
		}
	}
	free(dir);
	char *tmp = tt_strdupf("%s" TT_TEMP_SUFFIX_FMT, path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		int rc = tether_error_set(TETHER_EIO, "cannot write %s: %s", path, strerror(errno));
		free(tmp);
		return rc;
	}
	if (tt_write_all(fd, data, len) != 0 || (durable && fsync(fd) != 0)) {
		int rc = tether_error_set(TETHER_EIO, "cannot write %s: %s", path, strerror(errno));
		close(fd);
		unlink(tmp);
		free(tmp);
		return rc;
	}
	close(fd);
	if (rename(tmp, path) != 0) {
		int rc = tether_error_set(TETHER_EIO, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return rc;
	}
	free(tmp);
	return 0;
}

int tt_write_file_atomic(const char *path, const void *data, size_t len)
{
	return write_replace(path, data, len, 1);
}

int tt_write_cache_file(const char *path, const void *data, size_t len)
{
	return write_replace(path, data, len, 0);
}

char *tt_path_join(const char *a, const char *b)
{
	size_t la = strlen(a);
	while (la > 1 && a[la - 1] == '/')
		la--;
	while (*b == '/')
		b++;
	return tt_strdupf("%.*s/%s", (int)la, a, b);
}

char *tt_strdupf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		abort(); /* out of memory on a path-sized string: nothing sensible remains */
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

char *tt_path_normalize(const char *path)
{
	size_t n = strlen(path);
	char *out = malloc(n + 2);
	if (!out)
		abort();
	size_t o = 0;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		const char *seg = p;
		while (*p && *p != '/')
			p++;
		size_t sl = (size_t)(p - seg);
		if (sl == 0 || (sl == 1 && seg[0] == '.'))
			continue;
		if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			continue;
		}
		out[o++] = '/';
		memcpy(out + o, seg, sl);
		o += sl;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

/* realpath() the longest existing prefix, then append the rest, so a path
 * that does not exist yet still resolves through symlinked parents. */
static char *resolve_existing_prefix(const char *abs)
{
	char *path = tt_path_normalize(abs);
	size_t n = strlen(path);
	for (size_t cut = n; cut > 0; cut--) {
		if (cut != n && path[cut] != '/')
			continue;
		char saved = path[cut];
		path[cut] = '\0';
		char real[PATH_MAX];
		char *r = realpath(path, real);
		path[cut] = saved;
		if (r) {
			char *joined = saved ? tt_strdupf("%s%s", strcmp(real, "/") == 0 ? "" : real, path + cut)
			                     : strdup(real);
			free(path);
			char *norm = tt_path_normalize(joined);
			free(joined);
			return norm;
		}
	}
	return path;
}

char *tt_path_resolve(const char *path, const char *cwd)
{
	if (strncmp(path, "file://", 7) == 0)
		path += 7;
	char *abs;
	if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
		const char *home = getenv("HOME");
		abs = tt_strdupf("%s%s", home ? home : "/", path + 1);
	} else if (path[0] == '/') {
		abs = strdup(path);
	} else {
		abs = tt_strdupf("%s/%s", cwd, path);
	}
	char *resolved = resolve_existing_prefix(abs);
	free(abs);
	return resolved;
}

int tt_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int tt_remove_if_exists(const char *path)
{
	if (unlink(path) == 0 || errno == ENOENT)
		return 0;
	return tether_error_set(TETHER_EIO, "cannot remove %s: %s", path, strerror(errno));
}
