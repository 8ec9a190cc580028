/* The local-filesystem byte store.
 *
 * Writes go to a staging file beside the target, named "<name>#<digits>"
 * as Icechunk's own local storage names its staging files (so its listings
 * skip ours), then are fsynced and moved into place: rename() to
 * overwrite, link() to create only if absent (EEXIST means someone else
 * won). A conditional overwrite compares the target's version and renames
 * while holding an flock on the target's directory: that orders tether
 * processes against each other, though not against writers that do not
 * take the lock (Icechunk's local storage takes none and compares nothing).
 *
 * The staging file's data is fsynced before it is moved into place, so a
 * crash of the machine can leave the old object or the new one, never a
 * torn or empty one. The directory is not fsynced after the move: a power
 * cut right after it may bring the old object back, which for the files
 * tether writes is an earlier consistent state (a pin `verify` then
 * reports missing and `repair` re-creates), and it halves what a pin costs.
 * Icechunk's own local storage fsyncs nothing.
 *
 * The version token is device, inode, modification time and size: a
 * rename always brings a new inode, so an overwrite always changes it. */
#include "store/store_impl.h"

#include "util/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct local {
	char *root;
};

static const char *root_of(const void *s)
{
	return ((const struct local *)s)->root;
}

static char *path_of(const void *s, const char *key)
{
	return tt_path_join(root_of(s), key);
}

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

static int fail_errno(const char *what, const char *path, int e)
{
	return tether_error_set(e == ENOENT ? TETHER_ENOTFOUND : TETHER_EIO, "%s %s: %s", what, path,
	                        strerror(e));
}

static void version_of(const struct stat *st, struct tether_store_version *v)
{
	if (v)
		snprintf(v->token, sizeof v->token, "%llx-%llx-%lld.%09ld-%lld", (unsigned long long)st->st_dev,
		         (unsigned long long)st->st_ino, (long long)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec,
		         (long long)st->st_size);
}

static int local_get(void *s, const char *key, uint64_t offset, uint64_t length, uint8_t **data,
                     size_t *len, struct tether_store_version *version)
{
	char *path = path_of(s, key);
	if (!path)
		return oom();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int rc = errno == ENOENT || errno == ENOTDIR
		                 ? tether_error_set(TETHER_ENOTFOUND, "%s does not exist", path)
		                 : fail_errno("cannot read", path, errno);
		free(path);
		return rc;
	}
	struct stat st;
	int rc = 0;
	uint8_t *buf = NULL;
	size_t n = 0, want = 0;
	if (fstat(fd, &st) != 0) {
		rc = fail_errno("cannot stat", path, errno);
	} else if (!S_ISREG(st.st_mode)) {
		rc = tether_error_set(TETHER_EIO, "%s is not a regular file", path);
	} else {
		uint64_t size = (uint64_t)st.st_size;
		uint64_t from = offset < size ? offset : size;
		uint64_t avail = size - from;
		want = (size_t)(length < avail ? length : avail);
		if (!(buf = malloc(want ? want : 1)))
			rc = oom();
		while (rc == 0 && n < want) {
			ssize_t r = pread(fd, buf + n, want - n, (off_t)(from + n));
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				rc = fail_errno("cannot read", path, errno);
			else if (r == 0)
				rc = tether_error_set(TETHER_EIO, "%s shrank while it was read", path);
			else
				n += (size_t)r;
		}
	}
	close(fd);
	free(path);
	if (rc) {
		free(buf);
		return rc;
	}
	version_of(&st, version);
	*data = buf;
	*len = n;
	return 0;
}

static int local_head(void *s, const char *key, int *exists, struct tether_store_version *version,
                      uint64_t *size)
{
	char *path = path_of(s, key);
	if (!path)
		return oom();
	struct stat st;
	int rc = 0;
	if (stat(path, &st) != 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			rc = fail_errno("cannot stat", path, errno);
	} else if (S_ISREG(st.st_mode)) {
		*exists = 1;
		version_of(&st, version);
		if (size)
			*size = (uint64_t)st.st_size;
	}
	free(path);
	return rc;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The directory part of path (malloc'd). */
static char *dir_of(const char *path)
{
	char *d = strdup(path);
	char *slash = d ? strrchr(d, '/') : NULL;
	if (slash)
		*(slash == d ? slash + 1 : slash) = '\0';
	return d;
}

/* Staging file beside path, written and synced; *staging is malloc'd. */
static int write_staging(const char *path, const void *data, size_t len, char **staging)
{
	static atomic_uint seq;
	char *dir = dir_of(path);
	int rc = dir ? tt_mkdirs(dir, 0777) : oom();
	free(dir);
	if (rc)
		return rc;
	for (int attempt = 0; attempt < 100; attempt++) {
		char *tmp = tt_strdupf("%s#%ld%u", path, (long)getpid(), atomic_fetch_add(&seq, 1) + 1);
		if (!tmp)
			return oom();
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno == EEXIST) {
			free(tmp);
			continue;
		}
		if (fd < 0) {
			rc = fail_errno("cannot write", tmp, errno);
			free(tmp);
			return rc;
		}
		if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
			rc = fail_errno("cannot write", tmp, errno);
			close(fd);
			unlink(tmp);
			free(tmp);
			return rc;
		}
		if (close(fd) != 0) {
			rc = fail_errno("cannot write", tmp, errno);
			unlink(tmp);
			free(tmp);
			return rc;
		}
		*staging = tmp;
		return 0;
	}
	return tether_error_set(TETHER_EIO, "cannot find a free staging name beside %s", path);
}

/* The flock that orders tether's conditional writes in one directory. */
static int lock_dir(const char *path, int *fd_out)
{
	char *dir = dir_of(path);
	if (!dir)
		return oom();
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;
	if (fd < 0)
		rc = fail_errno("cannot open", dir, errno);
	else {
		while (flock(fd, LOCK_EX) != 0) {
			if (errno != EINTR) {
				rc = fail_errno("cannot lock", dir, errno);
				close(fd);
				fd = -1;
				break;
			}
		}
	}
	free(dir);
	*fd_out = fd;
	return rc;
}

static void unlock_dir(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the flock */
}

/* Is path at version `want` ("" = absent)? */
static int matches(const char *path, const struct tether_store_version *want, int *ok)
{
	struct stat st;
	struct tether_store_version now = {{0}};
	if (stat(path, &st) == 0)
		version_of(&st, &now);
	else if (errno != ENOENT)
		return fail_errno("cannot stat", path, errno);
	*ok = strcmp(now.token, want->token) == 0;
	return 0;
}

static int local_put(void *s, const char *key, const void *data, size_t len,
                     enum tether_put_mode mode, const struct tether_store_version *expect,
                     struct tether_store_version *new_version)
{
	char *path = path_of(s, key), *staging = NULL;
	if (!path)
		return oom();
	int rc = write_staging(path, data, len, &staging), lockfd = -1;
	if (rc == 0 && mode != TETHER_PUT_OVERWRITE)
		rc = lock_dir(path, &lockfd);
	if (rc == 0 && mode == TETHER_PUT_IF_ABSENT) {
		if (link(staging, path) != 0)
			rc = errno == EEXIST ? tether_error_set(TETHER_EREFUSED, "%s already exists", path)
			                     : fail_errno("cannot create", path, errno);
		unlink(staging);
	} else if (rc == 0) {
		int ok = 1;
		if (mode == TETHER_PUT_IF_MATCH && (rc = matches(path, expect, &ok)) == 0 && !ok)
			rc = tether_error_set(TETHER_EREFUSED, "%s changed since it was read", path);
		if (rc == 0 && rename(staging, path) != 0)
			rc = fail_errno("cannot replace", path, errno);
		if (rc)
			unlink(staging);
	}
	struct stat st;
	if (rc == 0 && new_version) {
		if (stat(path, &st) == 0)
			version_of(&st, new_version);
		else
			new_version->token[0] = '\0';
	}
	unlock_dir(lockfd);
	free(staging);
	free(path);
	return rc;
}

/* Copy by bytes, for filesystems without hard links. */
static int copy_bytes(void *s, const char *from, const char *to)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int rc = local_get(s, from, 0, TETHER_STORE_TO_END, &data, &len, NULL);
	if (rc == 0)
		rc = local_put(s, to, data, len, TETHER_PUT_IF_ABSENT, NULL, NULL);
	free(data);
	return rc;
}

static int local_copy(void *s, const char *from, const char *to,
                      const struct tether_store_version *if_match)
{
	char *src = path_of(s, from), *dst = path_of(s, to), *dst_dir = dst ? dir_of(dst) : NULL;
	int rc = src && dst && dst_dir ? tt_mkdirs(dst_dir, 0777) : oom(), lockfd = -1, fallback = 0;
	if (rc == 0 && if_match)
		rc = lock_dir(src, &lockfd);
	if (rc == 0 && if_match) {
		int ok = 0;
		if ((rc = matches(src, if_match, &ok)) == 0 && !ok)
			rc = tether_error_set(TETHER_EREFUSED, "%s changed since it was read", src);
	}
	/* A hard link keeps the bytes: the source is only ever replaced by a
	 * rename, never written in place. */
	if (rc == 0 && link(src, dst) != 0) {
		if (errno == EEXIST)
			rc = tether_error_set(TETHER_EREFUSED, "%s already exists", dst);
		else if (errno == EPERM || errno == EXDEV || errno == ENOTSUP || errno == EMLINK)
			fallback = 1;
		else
			rc = fail_errno("cannot copy to", dst, errno);
	}
	if (rc == 0 && fallback)
		rc = copy_bytes(s, from, to);
	unlock_dir(lockfd);
	free(src);
	free(dst);
	free(dst_dir);
	return rc;
}

static int local_del(void *s, const char *key)
{
	char *path = path_of(s, key);
	if (!path)
		return oom();
	int rc = unlink(path) != 0 && errno != ENOENT ? fail_errno("cannot remove", path, errno) : 0;
	free(path);
	return rc;
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct listing {
	char **keys;
	size_t n, cap;
};

static int add_key(struct listing *l, char *key)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **k = realloc(l->keys, cap * sizeof *k);
		if (!k) {
			free(key);
			return oom();
		}
		l->keys = k;
		l->cap = cap;
	}
	l->keys[l->n++] = key;
	return 0;
}

/* Every regular file under dir (the key rel, "" at the root) whose key
 * sorts after `after` ("" for all): a page of a paged listing keeps only
 * those, so a directory of ten thousand files is not sorted whole again
 * for each page. */
static int walk(const char *dir, const char *rel, const char *after, struct listing *l, int depth)
{
	if (depth > 64)
		return tether_error_set(TETHER_EIO, "%s: directories nest too deeply", dir);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : fail_errno("cannot list", dir, errno);
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (errno = 0, e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    tether_store_is_staging_name(e->d_name))
			continue;
		/* The entry's type from readdir where the filesystem gives it
		 * (a stat per file is most of a listing's cost); lstat else.
		 * The path is made only for those, the key by hand: formatting
		 * two strings per entry showed in the listing of a long log. */
		int is_dir = e->d_type == DT_DIR, known = e->d_type != DT_UNKNOWN;
		size_t rl = strlen(rel), nl = strlen(e->d_name);
		char *key = malloc(rl + nl + 2);
		if (key) {
			memcpy(key, rel, rl);
			key[rl] = '/';
			memcpy(key + (rl ? rl + 1 : 0), e->d_name, nl + 1);
		}
		char *path = !known || is_dir ? tt_path_join(dir, e->d_name) : NULL;
		struct stat st;
		if (!key || ((!known || is_dir) && !path))
			rc = oom();
		else if (!known && lstat(path, &st) != 0)
			rc = errno == ENOENT ? 0 : fail_errno("cannot stat", path, errno);
		else if (known ? is_dir : S_ISDIR(st.st_mode))
			rc = walk(path, key, after, l, depth + 1);
		else if (strcmp(key, after) > 0) {
			rc = add_key(l, key);
			key = NULL;
		}
		free(key);
		free(path);
	}
	if (rc == 0 && errno != 0)
		rc = fail_errno("cannot list", dir, errno);
	closedir(d);
	return rc;
}

/* A page: every key under prefix is walked and sorted (a directory's
 * entries come in no order), then the ones after start_after handed out.
 * The stores tether keeps locally hold thousands of keys, not millions. */
static int local_list(void *s, const char *prefix, const char *start_after, size_t max_keys,
                      tether_store_key_fn emit, void *ud, int *more)
{
	char *dir = *prefix ? path_of(s, prefix) : strdup(root_of(s));
	struct listing l = {0};
	int rc = dir ? walk(dir, prefix, start_after, &l, 0) : oom();
	if (rc == 0 && l.n)
		qsort(l.keys, l.n, sizeof *l.keys, cmp_keys);
	size_t i = 0, emitted = 0;
	while (i < l.n && strcmp(l.keys[i], start_after) <= 0)
		i++;
	for (; rc == 0 && i < l.n && emitted < max_keys; i++, emitted++)
		rc = emit(ud, l.keys[i]);
	*more = rc == 0 && i < l.n;
	for (i = 0; i < l.n; i++)
		free(l.keys[i]);
	free(l.keys);
	free(dir);
	return rc;
}

static int local_root_exists(void *s, int *exists)
{
	struct stat st;
	if (lstat(root_of(s), &st) == 0) {
		*exists = 1;
		return 0;
	}
	return errno == ENOENT || errno == ENOTDIR ? 0 : fail_errno("cannot stat", root_of(s), errno);
}

static int local_make_root(void *s)
{
	return tt_mkdirs(root_of(s), 0777);
}

/* rmdir every directory under dir, deepest first; refuses a tree holding
 * anything but directories. */
static int remove_empty_tree(const char *dir, int depth)
{
	if (depth > 64)
		return tether_error_set(TETHER_EIO, "%s: directories nest too deeply", dir);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : fail_errno("cannot list", dir, errno);
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *path = tt_path_join(dir, e->d_name);
		struct stat st;
		if (!path)
			rc = oom();
		else if (lstat(path, &st) != 0)
			rc = errno == ENOENT ? 0 : fail_errno("cannot stat", path, errno);
		else if (!S_ISDIR(st.st_mode))
			rc = tether_error_set(TETHER_EREFUSED, "%s still holds %s: not removed", dir, e->d_name);
		else if ((rc = remove_empty_tree(path, depth + 1)) == 0 && rmdir(path) != 0 && errno != ENOENT)
			rc = fail_errno("cannot remove", path, errno);
		free(path);
	}
	closedir(d);
	return rc;
}

static int local_remove_root(void *s)
{
	int rc = remove_empty_tree(root_of(s), 0);
	if (rc)
		return rc;
	if (rmdir(root_of(s)) == 0 || errno == ENOENT)
		return 0;
	if (errno == ENOTEMPTY || errno == EEXIST)
		return tether_error_set(TETHER_EREFUSED, "%s is not empty: not removed", root_of(s));
	return fail_errno("cannot remove", root_of(s), errno);
}

static void local_close(void *s)
{
	struct local *l = s;
	if (l)
		free(l->root);
	free(l);
}

/* uri is canonical: a plain absolute path. */
static int local_open(const char *uri, const json_t *options, void **impl)
{
	(void)options;
	struct local *l = calloc(1, sizeof *l);
	if (!l || !(l->root = strdup(uri))) {
		free(l);
		return oom();
	}
	*impl = l;
	return 0;
}

const struct tether_store_ops tt_store_local_ops = {
	TETHER_STORE_OPS_INIT,
	.scheme = "file",
	.flags = 0,
	.open = local_open,
	.close = local_close,
	.get = local_get,
	.head = local_head,
	.put = local_put,
	.copy = local_copy,
	.del = local_del,
	.list = local_list,
	.root_exists = local_root_exists,
	.make_root = local_make_root,
	.remove_root = local_remove_root,
};
