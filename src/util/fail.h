/* The errors every part of tether reports the same way, said once: out of
 * memory, and a system call that failed on a path. Part of tether-modutil
 * (meson.build), so modules use these rather than a copy of their own. */
#ifndef TETHER_UTIL_FAIL_H
#define TETHER_UTIL_FAIL_H

/* TETHER_ERROR "out of memory"; returns that code. */
int tt_fail_oom(void);

/* TETHER_EIO "<what> '<path>': <strerror(errno)>"; returns that code. */
int tt_fail_errno(const char *what, const char *path);

#endif
