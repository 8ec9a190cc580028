/* The dataset's own files, opened from verified directory descriptors
 * without following a symbolic link (see safefs.h for the rules). */
#include "util/safefs.h"

#include "util/fsutil.h"
#include "util/tempname.h"

#include <tether/backend.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deeper than any key a user would choose, shallow enough that a walk
 * never runs out of descriptors. */
#define MAX_DEPTH 64

static const char *kind_of(mode_t m)
{
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISREG(m))
		return "a regular file";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	return "not a regular file";
}

static int refuse(const char *display, mode_t m, int want_dir)
{
	if (S_ISLNK(m))
		return tether_error_set(TETHER_EREFUSED,
		                        "%s is a symbolic link: tether never follows a link inside the dataset",
		                        display);
	return tether_error_set(TETHER_EREFUSED, "%s is %s, not %s", display, kind_of(m),
	                        want_dir ? "a directory" : "a regular file");
}

/* After an open failed: say why, naming a link or a wrong kind of file
 * rather than the bare errno (ELOOP, ENOTDIR). */
static int explain(int dirfd, const char *name, const char *display, int err, int want_dir)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (S_ISLNK(st.st_mode) || (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))))
		return refuse(display, st.st_mode, want_dir);
	if (err == ENOENT)
		return tether_error_set(TETHER_ENOTFOUND, "%s: %s", display, strerror(err));
	return tether_error_set(TETHER_EIO, "%s: %s", display, strerror(err));
}

int tt_safe_openat_dir(int dirfd, const char *name, const char *display, int *fd)
{
	int f = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (f < 0)
		return explain(dirfd, name, display, errno, 1);
	*fd = f;
	return 0;
}

/* A regular file by name: checked before it is opened (a device is never
 * opened), opened without blocking (a FIFO swapped in meanwhile), checked
 * again on the descriptor, then made blocking. */
/* The regular file `name` under dirfd, opened without following a link
 * and without blocking on a FIFO swapped in after the check; *size its
 * size when opened (NULL: not wanted). */
static int open_regular_at(int dirfd, const char *name, const char *display, int flags, int *fd, off_t *size)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode))
			return refuse(display, st.st_mode, 0);
	} else if (errno != ENOENT || !(flags & O_CREAT)) {
		return explain(dirfd, name, display, errno, 0);
	}
	int f = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
	if (f < 0)
		return explain(dirfd, name, display, errno, 0);
	if (fstat(f, &st) != 0) {
		int e = errno;
		close(f);
		return tether_error_set(TETHER_EIO, "%s: %s", display, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(f);
		return refuse(display, st.st_mode, 0);
	}
	/* Blocking again. The status flags are the ones it was opened with,
	 * so they are set without asking for them first (F_SETFL takes only
	 * the status flags of `flags`: O_APPEND here, never O_NONBLOCK). */
	if (fcntl(f, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		int e = errno;
		close(f);
		return tether_error_set(TETHER_EIO, "%s: %s", display, strerror(e));
	}
	if (size)
		*size = st.st_size;
	*fd = f;
	return 0;
}

static int bad_component(const char *c, size_t n)
{
	return n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.');
}

/* The directory `name` under dirfd, made first when it is missing and
 * `create` says so. */
static int open_dir_at(int dirfd, const char *name, const char *display, int create, int *fd)
{
	int rc = tt_safe_openat_dir(dirfd, name, display, fd);
	if (rc == TETHER_ENOTFOUND && create) {
		tether_error_clear();
		if (mkdirat(dirfd, name, 0777) != 0 && errno != EEXIST)
			rc = tether_error_set(TETHER_EIO, "cannot create %s: %s", display, strerror(errno));
		else
			rc = tt_safe_openat_dir(dirfd, name, display, fd);
	}
	return rc;
}

/* The directory that holds a path's last component: fd, a copy of the
 * path (buf) and, in it, that component (leaf; "" when the path is the
 * root itself). parent_close releases it, whatever open_parent returned. */
struct parent {
	int fd;
	char *buf;
	const char *leaf;
};

static void parent_close(struct parent *p)
{
	if (p->fd >= 0)
		close(p->fd);
	free(p->buf);
}

/* Reach path's parent from root one verified component at a time.
 * ENOTFOUND when a directory on the way is missing (and not created). */
static int open_parent(const char *root, const char *path, int create, struct parent *p)
{
	p->fd = -1;
	p->buf = NULL;
	p->leaf = "";
	size_t rl = strlen(root);
	while (rl > 1 && root[rl - 1] == '/')
		rl--;
	if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
		return tether_error_set(TETHER_ERROR, "%s is not inside the dataset %s", path, root);
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tether_error_set(errno == ENOENT ? TETHER_ENOTFOUND : TETHER_EIO, "%s: %s", root,
		                        strerror(errno));
	char *b = strdup(path);
	if (!b)
		abort();
	char *s = b + rl;
	while (*s == '/')
		s++;
	if (!*s) {
		*p = (struct parent){fd, b, s};
		return 0;
	}
	for (;;) {
		char *slash = strchr(s, '/');
		size_t n = slash ? (size_t)(slash - s) : strlen(s);
		if (bad_component(s, n)) {
			close(fd);
			int rc = tether_error_set(TETHER_ERROR, "%s: not a plain path inside the dataset", path);
			free(b);
			return rc;
		}
		if (!slash)
			break;
		*slash = '\0';
		int sub = -1;
		int rc = open_dir_at(fd, s, b, create, &sub);
		*slash = '/';
		close(fd);
		if (rc) {
			free(b);
			return rc;
		}
		fd = sub;
		s = slash + 1;
	}
	*p = (struct parent){fd, b, s};
	return 0;
}

int tt_safe_readat(int dirfd, const char *name, const char *display, char **data, size_t *len)
{
	int fd = -1;
	off_t size = 0;
	int rc = open_regular_at(dirfd, name, display, O_RDONLY, &fd, &size);
	if (rc)
		return rc;
	rc = tt_read_fd_sized(fd, display, size, data, len);
	close(fd);
	return rc;
}

int tt_safe_read(const char *root, const char *path, char **data, size_t *len)
{
	struct parent p;
	int rc = open_parent(root, path, 0, &p);
	if (!rc)
		rc = *p.leaf ? tt_safe_readat(p.fd, p.leaf, path, data, len) : refuse(path, S_IFDIR, 0);
	parent_close(&p);
	return rc;
}

static int write_atomic_at(int dirfd, const char *leaf, const char *display, const void *data, size_t len)
{
	struct stat st;
	if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return refuse(display, st.st_mode, 0);
	/* The same temporary name as tt_write_file_atomic, so whatever
	 * recognises a leftover one recognises both. */
	char *tmp = tt_strdupf("%s" TT_TEMP_SUFFIX_FMT, leaf, (long)getpid());
	unlinkat(dirfd, tmp, 0); /* a leftover of a dead process with our pid */
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	int rc = 0;
	if (fd < 0) {
		rc = tether_error_set(TETHER_EIO, "cannot write %s: %s", display, strerror(errno));
	} else if (tt_write_all(fd, data, len) != 0 || fsync(fd) != 0) {
		rc = tether_error_set(TETHER_EIO, "cannot write %s: %s", display, strerror(errno));
		close(fd);
		unlinkat(dirfd, tmp, 0);
	} else {
		close(fd);
		if (renameat(dirfd, tmp, dirfd, leaf) != 0) {
			rc = tether_error_set(TETHER_EIO, "cannot write %s: %s", display, strerror(errno));
			unlinkat(dirfd, tmp, 0);
		}
	}
	free(tmp);
	return rc;
}

int tt_safe_write_atomic(const char *root, const char *path, const void *data, size_t len)
{
	struct parent p;
	int rc = open_parent(root, path, 1, &p);
	if (!rc)
		rc = *p.leaf ? write_atomic_at(p.fd, p.leaf, path, data, len) : refuse(path, S_IFDIR, 0);
	parent_close(&p);
	return rc;
}

int tt_safe_remove(const char *root, const char *path)
{
	struct parent p;
	int rc = open_parent(root, path, 0, &p);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0; /* its directory is gone, and it with it */
	}
	struct stat st;
	if (!rc && !*p.leaf)
		rc = refuse(path, S_IFDIR, 0);
	else if (!rc && fstatat(p.fd, p.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* Unlinking a link removes the link, never its target. */
		if (S_ISDIR(st.st_mode))
			rc = refuse(path, st.st_mode, 0);
		else if (unlinkat(p.fd, p.leaf, 0) != 0 && errno != ENOENT)
			rc = tether_error_set(TETHER_EIO, "cannot remove %s: %s", path, strerror(errno));
	}
	parent_close(&p);
	return rc;
}

int tt_safe_exists(const char *root, const char *path)
{
	struct parent p;
	int rc = open_parent(root, path, 0, &p);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0;
	}
	struct stat st;
	if (!rc && !*p.leaf)
		rc = refuse(path, S_IFDIR, 0);
	else if (!rc && fstatat(p.fd, p.leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
		rc = S_ISREG(st.st_mode) ? 1 : refuse(path, st.st_mode, 0);
	else if (!rc && errno != ENOENT)
		rc = tether_error_set(TETHER_EIO, "%s: %s", path, strerror(errno));
	parent_close(&p);
	return rc;
}

int tt_safe_open_file(const char *root, const char *path, int flags, int *fd)
{
	struct parent p;
	int rc = open_parent(root, path, (flags & O_CREAT) != 0, &p);
	if (!rc)
		rc = *p.leaf ? open_regular_at(p.fd, p.leaf, path, flags, fd, NULL) : refuse(path, S_IFDIR, 0);
	parent_close(&p);
	return rc;
}

int tt_safe_open_dir(const char *root, const char *path, int create, int *fd)
{
	struct parent p;
	int rc = open_parent(root, path, create, &p);
	if (!rc && !*p.leaf) {
		*fd = p.fd; /* the root itself: handed over, not closed */
		p.fd = -1;
	} else if (!rc) {
		rc = open_dir_at(p.fd, p.leaf, path, create, fd);
	}
	parent_close(&p);
	return rc;
}

/* Every entry under dirfd, at any depth: a real directory or a regular
 * file. Takes ownership of dirfd. */
static int check_tree(int dirfd, const char *display, int depth)
{
	if (depth > MAX_DEPTH) {
		close(dirfd);
		return tether_error_set(TETHER_EREFUSED, "%s: directories nested more than %d deep", display,
		                        MAX_DEPTH);
	}
	DIR *d = fdopendir(dirfd);
	if (!d) {
		int e = errno;
		close(dirfd);
		return tether_error_set(TETHER_EIO, "%s: %s", display, strerror(e));
	}
	int rc = 0;
	struct dirent *e;
	while (!rc && (errno = 0, e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *path = tt_path_join(display, e->d_name);
		mode_t m = 0;
		switch (e->d_type) {
		case DT_DIR: m = S_IFDIR; break;
		case DT_REG: m = S_IFREG; break;
		case DT_LNK: m = S_IFLNK; break;
		default: {
			struct stat st;
			if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				m = st.st_mode;
			else if (errno != ENOENT) /* removed meanwhile: nothing to check */
				rc = tether_error_set(TETHER_EIO, "%s: %s", path, strerror(errno));
			else
				m = S_IFREG;
		}
		}
		if (!rc && S_ISDIR(m)) {
			int sub = -1;
			rc = tt_safe_openat_dir(dirfd, e->d_name, path, &sub);
			if (!rc)
				rc = check_tree(sub, path, depth + 1);
		} else if (!rc && !S_ISREG(m)) {
			rc = refuse(path, m, 0);
		}
		free(path);
	}
	if (!rc && errno)
		rc = tether_error_set(TETHER_EIO, "%s: %s", display, strerror(errno));
	closedir(d);
	return rc;
}

/* What tether keeps at the top of .tether/: a known name of the wrong
 * kind (a directory where workspace.toml belongs) is refused up front, not
 * when some command first reads it. */
static const struct {
	const char *name;
	int dir;
} top_entries[] = {
	{".gitignore", 0}, {"workspace.toml", 0}, {"secrets.toml", 0}, {"lock", 0},
	{"objects", 1},    {"listings", 1},       {"cache", 1},        {"journal", 1},
};

static int check_top(int dirfd, const char *dir)
{
	for (size_t i = 0; i < sizeof top_entries / sizeof top_entries[0]; i++) {
		struct stat st;
		if (fstatat(dirfd, top_entries[i].name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (top_entries[i].dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode))
			continue;
		char *path = tt_path_join(dir, top_entries[i].name);
		int rc = refuse(path, st.st_mode, top_entries[i].dir);
		free(path);
		return rc;
	}
	return 0;
}

int tt_safe_check_dataset(const char *root)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tether_error_set(errno == ENOENT ? TETHER_ENOTFOUND : TETHER_EIO, "%s: %s", root,
		                        strerror(errno));
	char *config = tt_path_join(root, "tether.toml");
	char *dir = tt_path_join(root, ".tether");
	struct stat st;
	int rc = 0;
	if (fstatat(fd, "tether.toml", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		rc = refuse(config, st.st_mode, 0);
	if (!rc && fstatat(fd, ".tether", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		int sub = -1;
		rc = tt_safe_openat_dir(fd, ".tether", dir, &sub);
		if (!rc)
			rc = check_top(sub, dir);
		if (!rc)
			rc = check_tree(sub, dir, 0);
		else if (sub >= 0)
			close(sub);
	}
	close(fd);
	free(config);
	free(dir);
	return rc;
}
