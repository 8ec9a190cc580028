/* The dataset's own files (tether.toml and everything under .tether/),
 * opened without ever following a symbolic link.
 *
 * A clone is untrusted input: a committed symlink at .tether, or anywhere
 * under it, must not make tether read, write or delete a file outside the
 * dataset, and a committed FIFO must not block it. So every function here
 * takes the dataset root (absolute, already resolved: it holds no link) and
 * a path under it, opens the root once with O_DIRECTORY, and each component
 * below it with openat(O_DIRECTORY | O_NOFOLLOW) from the descriptor of the
 * one before. The last component must be a regular file: it is checked with
 * fstatat(AT_SYMLINK_NOFOLLOW) before it is opened (a device is never opened),
 * opened O_NOFOLLOW | O_NONBLOCK (a FIFO swapped in meanwhile does not block),
 * checked again with fstat, and only then made blocking.
 *
 * A symbolic link, or anything that is not a directory where one is
 * expected or not a regular file where a file is, is refused with
 * TETHER_EREFUSED (exit 3) and one message naming the path:
 *   "<path> is a symbolic link: tether never follows a link inside the dataset"
 *   "<path> is a FIFO, not a regular file"
 * Absent files are TETHER_ENOTFOUND, other failures TETHER_EIO.
 *
 * Paths must lie under root ("root/x/y"); ".", ".." and empty components
 * are refused, so a path built from a key cannot climb out either.
 */
#ifndef TETHER_UTIL_SAFEFS_H
#define TETHER_UTIL_SAFEFS_H

#include <stddef.h>

/* Refuse a hostile layout before anything else runs: tether.toml must be a
 * regular file, and .tether (when present) a real directory whose every
 * entry, at any depth, is a real directory or a regular file. Called when
 * the dataset is opened, before any VCS or store is contacted. */
int tt_safe_check_dataset(const char *root);

/* Read a whole regular file. *data is NUL-terminated; *len excludes it. */
int tt_safe_read(const char *root, const char *path, char **data, size_t *len);
/* Write a regular file atomically (a temporary file beside it, fsync,
 * renameat). Missing directories between root and the file are created. */
int tt_safe_write_atomic(const char *root, const char *path, const void *data, size_t len);
/* Remove a file if present (never a directory); 0 when it is gone. */
int tt_safe_remove(const char *root, const char *path);
/* 1 when a regular file is at path, 0 when nothing is; anything else there
 * (a link, a FIFO, a directory) is refused. */
int tt_safe_exists(const char *root, const char *path);
/* Open a regular file (flags: O_RDONLY, O_RDWR, O_CREAT ...; O_CLOEXEC is
 * added), creating missing directories when O_CREAT is given. */
int tt_safe_open_file(const char *root, const char *path, int flags, int *fd);
/* Open the directory at path (root itself when path == root). With create,
 * missing components are made. */
int tt_safe_open_dir(const char *root, const char *path, int create, int *fd);

/* For walks that already hold a verified directory descriptor: a
 * subdirectory, or a regular file's bytes, by name. `display` is the path
 * named in errors. */
int tt_safe_openat_dir(int dirfd, const char *name, const char *display, int *fd);
int tt_safe_readat(int dirfd, const char *name, const char *display, char **data, size_t *len);

#endif
