/* Advisory locks (fcntl) with a bounded wait. The lock file holds the pid
 * and command of its holder, so a timeout can say who has it. */
#ifndef TETHER_CORE_LOCK_H
#define TETHER_CORE_LOCK_H

struct tt_lock {
	int fd;
};

/* Take the lock at `path`, waiting up to timeout_ms (TETHER_LOCK_TIMEOUT_MS
 * overrides, for tests). TETHER_ELOCK naming the lock and its holder when
 * the wait runs out. */
int tt_lock_take(const char *path, const char *what, int timeout_ms, struct tt_lock *out);
/* The same on a lock file already open (the checkout lock, opened through
 * safefs so a committed symlink cannot redirect it); takes ownership of fd. */
int tt_lock_hold(int fd, const char *path, const char *what, int timeout_ms, struct tt_lock *out);
void tt_lock_release(struct tt_lock *l);

#endif
