/* Shell helpers for the unit tests that set up real repositories with the
 * git and jj command lines, and read back what those tools see. */
#ifndef TETHER_TEST_SHELL_H
#define TETHER_TEST_SHELL_H

#include <stdarg.h>
#include <stddef.h>

/* printf into buf; a command too long for it ends the test (exit 2). */
void shell_vformat(char *buf, size_t size, const char *fmt, va_list ap);
/* Run a shell command; its exit status (a failure is noted on stderr). */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A shell command's standard output without its final newline (malloc'd). */
char *out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write `content` to dir/rel, making the directories on the way. */
void put(const char *dir, const char *rel, const char *content);
/* dir/rel in one of four rotating static buffers. */
char *path_in(const char *dir, const char *rel);

/* A fresh git repository parent/name (malloc'd) on branch main, with an
 * identity. */
char *git_repo_at(const char *parent, const char *name);
/* Commit dates for tests, one minute apart and increasing (seconds since
 * the epoch), so the order of commits never rests on the clock. */
int git_next_date(void);
/* `git add -A && git commit -m message`, dated git_next_date(). */
void git_commit_all(const char *repo, const char *message);

#endif
