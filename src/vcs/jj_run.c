/* Spawning jj: posix_spawn, two pipes drained together with poll (a jj
 * that fills one pipe while we block on the other would never finish),
 * and waitpid. */
#define _GNU_SOURCE /* pipe2: close-on-exec from the start, for threaded callers */
#include "vcs/jj_run.h"

#include <tether/backend.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Global options every call gets, after -R <root>: output meant for a
 * program, not a terminal. */
static const char *const fixed_args[] = { "--no-pager", "--color=never" };
#define N_FIXED (sizeof fixed_args / sizeof fixed_args[0])

struct sink {
	char *buf;
	size_t len, cap;
};

static int sink_read(struct sink *s, int fd, int *eof)
{
	char chunk[16384];
	ssize_t n = read(fd, chunk, sizeof chunk);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (n == 0) {
		*eof = 1;
		return 0;
	}
	if (s->len + (size_t)n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		char *b;

		while (cap < s->len + (size_t)n + 1)
			cap *= 2;
		if (!(b = realloc(s->buf, cap)))
			return -1;
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, chunk, (size_t)n);
	s->len += (size_t)n;
	return 0;
}

static char *sink_take(struct sink *s, size_t *len)
{
	char *b = s->buf ? s->buf : malloc(1);

	if (b)
		b[s->len] = '\0';
	if (len)
		*len = s->len;
	s->buf = NULL;
	return b;
}

/* Read both pipes to their end; closes them. */
static int drain(int out_fd, int err_fd, struct sink *out, struct sink *err)
{
	struct pollfd p[2] = { { out_fd, POLLIN, 0 }, { err_fd, POLLIN, 0 } };
	struct sink *sinks[2] = { out, err };
	int open_fds = 2, rc = 0;

	while (open_fds > 0 && rc == 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		for (int i = 0; i < 2 && rc == 0; i++) {
			int eof = 0;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			rc = sink_read(sinks[i], p[i].fd, &eof);
			if (eof) {
				close(p[i].fd);
				p[i].fd = -1;
				open_fds--;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	return rc;
}

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* argv: jj -R root --no-pager --color=never args... NULL */
static const char **build_argv(const char *jj, const char *root, const char *const *args)
{
	size_t n = 0, k = 0;
	const char **argv;

	while (args[n])
		n++;
	argv = calloc(n + N_FIXED + 4, sizeof *argv);
	if (!argv)
		return NULL;
	argv[k++] = jj;
	argv[k++] = "-R";
	argv[k++] = root;
	for (size_t i = 0; i < N_FIXED; i++)
		argv[k++] = fixed_args[i];
	for (size_t i = 0; i < n; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	return argv;
}

static int no_jj(const char *jj, int err)
{
	int rc = tether_error_set(TETHER_ECONFIG, "cannot run jj (%s): %s", jj, strerror(err));

	tether_error_set_hint("install jj and put it on PATH, or set TETHER_JJ to its path");
	return rc;
}

static int spawn_jj(const char *jj, const char *const *argv, int out_w, int err_w, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int rc;

	if (posix_spawn_file_actions_init(&fa) != 0)
		return ENOMEM;
	rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (rc == 0)
		rc = posix_spawn_file_actions_adddup2(&fa, out_w, 1);
	if (rc == 0)
		rc = posix_spawn_file_actions_adddup2(&fa, err_w, 2);
	/* A path (TETHER_JJ, or anything with a '/') is run as is; a bare
	 * name is looked up on PATH. */
	if (rc == 0)
		rc = (strchr(jj, '/') ? posix_spawn : posix_spawnp)(pid, jj, &fa, NULL,
		                                                     (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
}

int tt_jj_run(const char *root, const char *const *args, struct tt_jj_result *res)
{
	const char *jj = getenv("TETHER_JJ");
	int out_p[2] = { -1, -1 }, err_p[2] = { -1, -1 };
	struct sink out = { 0 }, err = { 0 };
	const char **argv;
	pid_t pid;
	int rc;

	memset(res, 0, sizeof *res);
	if (!jj || !*jj)
		jj = "jj";
	if (!(argv = build_argv(jj, root, args)))
		return tether_error_set(TETHER_ERROR, "out of memory");
	/* Close-on-exec: the child gets only its dup2'd copies, and no other
	 * thread's spawned process inherits our ends. */
	if (pipe2(out_p, O_CLOEXEC) < 0 || pipe2(err_p, O_CLOEXEC) < 0) {
		rc = tether_error_set(TETHER_EIO, "cannot create a pipe for jj: %s", strerror(errno));
		close_pair(out_p);
		close_pair(err_p);
		free(argv);
		return rc;
	}
	rc = spawn_jj(jj, argv, out_p[1], err_p[1], &pid);
	free(argv);
	close(out_p[1]);
	close(err_p[1]);
	if (rc != 0) {
		close(out_p[0]);
		close(err_p[0]);
		return no_jj(jj, rc);
	}
	int drained = drain(out_p[0], err_p[0], &out, &err);
	res->status = wait_child(pid);
	res->out = sink_take(&out, &res->out_len);
	res->err = sink_take(&err, NULL);
	if (drained < 0 || res->status < 0 || !res->out || !res->err) {
		tt_jj_result_free(res);
		return tether_error_set(TETHER_EIO, "cannot read what jj printed");
	}
	return 0;
}

void tt_jj_result_free(struct tt_jj_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
}

static void append(char *buf, size_t n, const char *s, size_t len)
{
	size_t have = strlen(buf);

	if (have + 1 >= n)
		return;
	if (len > n - have - 1)
		len = n - have - 1;
	memcpy(buf + have, s, len);
	buf[have + len] = '\0';
}

static const char *line_starting(const char *text, const char *prefix)
{
	size_t pl = strlen(prefix);

	for (const char *l = text; l && *l;) {
		if (strncmp(l, prefix, pl) == 0)
			return l;
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return NULL;
}

static size_t line_len(const char *l)
{
	return strcspn(l, "\n");
}

/* "Caused by:" and its numbered causes ("1: ...") after an error line. */
static void append_causes(char *buf, size_t n, const char *after)
{
	const char *l = after;

	if (strncmp(l, "Caused by:", 10) != 0)
		return;
	for (l += 10; *l == ' '; l++)
		;
	for (;;) {
		size_t len = line_len(l);

		if (len && !isspace((unsigned char)l[0]) && l[0] != '|') {
			append(buf, n, "; ", 2);
			append(buf, n, l, len);
		}
		if (!l[len])
			return;
		l += len + 1;
		if (!isdigit((unsigned char)l[0]))
			return;
	}
}

int tt_jj_message(const struct tt_jj_result *res, const char *prefix, char *buf, size_t n)
{
	const char *err = res->err ? res->err : "";
	const char *l = line_starting(err, prefix);
	int is_error = strcmp(prefix, "Error: ") == 0;

	buf[0] = '\0';
	if (l) {
		l += strlen(prefix);
		append(buf, n, l, line_len(l));
		if (is_error && l[line_len(l)])
			append_causes(buf, n, l + line_len(l) + 1);
		return 1;
	}
	if (!is_error)
		return 0;
	while (*err && isspace((unsigned char)*err))
		err++;
	if (*err)
		append(buf, n, err, line_len(err));
	else
		snprintf(buf, n, "jj exited with status %d", res->status);
	return 1;
}
