/* Small filesystem helpers: whole-file reads, atomic writes, paths. */
#ifndef TETHER_UTIL_FSUTIL_H
#define TETHER_UTIL_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Read a whole file. TETHER_ENOTFOUND when it does not exist (message names
 * the path). *data is NUL-terminated; *len excludes the NUL. */
int tt_read_file(const char *path, char **data, size_t *len);
/* The same from an open descriptor, to its end; `display` names it in errors. */
int tt_read_fd(int fd, const char *display, char **data, size_t *len);
/* The same when the caller knows the size from its own stat: one buffer of
 * that size (the read still goes on to the end, should the file grow). */
int tt_read_fd_sized(int fd, const char *display, off_t size, char **data, size_t *len);
/* A small regular file's bytes, NUL-terminated (malloc'd), or NULL with
 * errno set, and no message: not there, not a regular file (opened
 * O_NONBLOCK, so a FIFO never blocks), larger than max bytes, or
 * unreadable. For pointer files of a clone (.git, HEAD, commondir), which
 * are untrusted and small. */
char *tt_read_small(const char *path, size_t max);
/* Write a file atomically: a temporary file in the same directory, fsync,
 * rename. The parent directories are created. */
int tt_write_file_atomic(const char *path, const void *data, size_t len);
/* The same without the fsync, for a cache a reader checks and can rebuild:
 * after a crash it is the old file, the new one, or a torn one the reader
 * refuses, never a mix of the two. */
int tt_write_cache_file(const char *path, const void *data, size_t len);
/* write() all of buf, through EINTR and short writes: 0, or -1 with errno. */
int tt_write_all(int fd, const void *buf, size_t len);
/* mkdir -p. */
int tt_mkdirs(const char *path, int mode);
/* Join two path parts with one '/'. Returns a malloc'd string. */
char *tt_path_join(const char *a, const char *b);
/* A malloc'd printf. */
char *tt_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Normalise an absolute path lexically: no ".", "..", doubled or trailing
 * slashes. Returns a malloc'd string. */
char *tt_path_normalize(const char *path);
/* Make `path` absolute against cwd, expanding a leading "~", folding a
 * "file://" prefix, then normalising it and resolving symlinks of the part
 * that exists. Returns a malloc'd string. */
char *tt_path_resolve(const char *path, const char *cwd);
/* 1 if path exists (lstat), else 0. */
int tt_exists(const char *path);
/* Remove a file if present; 0 when it is gone afterwards. */
int tt_remove_if_exists(const char *path);

#endif
