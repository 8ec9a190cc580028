#include "core/lock.h"

#include "core/cancel.h"

#include <tether/backend.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int try_lock(int fd)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	return fcntl(fd, F_SETLK, &fl);
}

static void describe_holder(int fd, char *buf, size_t n)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
		snprintf(buf, n, "process %ld", (long)fl.l_pid);
	else
		snprintf(buf, n, "another process");
}

int tt_lock_take(const char *path, const char *what, int timeout_ms, struct tt_lock *out)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return tether_error_set(TETHER_EIO, "cannot open the %s %s: %s", what, path, strerror(errno));
	return tt_lock_hold(fd, path, what, timeout_ms, out);
}

int tt_lock_hold(int fd, const char *path, const char *what, int timeout_ms, struct tt_lock *out)
{
	const char *env = getenv("TETHER_LOCK_TIMEOUT_MS");
	if (env && *env)
		timeout_ms = atoi(env);
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	long waited_ms = 0;
	while (try_lock(fd) != 0) {
		if (errno != EACCES && errno != EAGAIN && errno != EINTR) {
			int rc = tether_error_set(TETHER_EIO, "cannot lock %s: %s", path, strerror(errno));
			close(fd);
			return rc;
		}
		if (tt_cancelled()) {
			/* Asked to stop while waiting (Ctrl-C on a long wait). */
			close(fd);
			return tt_cancel_error("waiting for the lock");
		}
		if (waited_ms >= timeout_ms) {
			char holder[64];
			describe_holder(fd, holder, sizeof holder);
			close(fd);
			tether_error_set(TETHER_ELOCK, "the %s %s is held by %s; gave up after %.1f s", what, path, holder,
			                 timeout_ms / 1000.0);
			tether_error_set_hint("wait for the other tether command to finish, then run this one again");
			return TETHER_ELOCK;
		}
		struct timespec pause = {0, 20 * 1000 * 1000};
		nanosleep(&pause, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
	}
	out->fd = fd;
	return 0;
}

void tt_lock_release(struct tt_lock *l)
{
	if (l->fd >= 0) {
		close(l->fd); /* closing drops every fcntl lock this process held on it */
		l->fd = -1;
	}
}
