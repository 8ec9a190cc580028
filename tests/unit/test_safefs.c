/* safefs: dataset files are never reached through a symbolic link, and a
 * FIFO, a directory or a socket where a file belongs is refused at once. */
#include "check.h"

#include "util/fsutil.h"
#include "util/safefs.h"

#include <tether/backend.h>

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char *at(const char *root, const char *rel)
{
	return tt_path_join(root, rel);
}

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(path);
		close(fd);
	}
}

int main(void)
{
	char tmpl[] = "/tmp/tt-safefs-XXXXXX";
	char *made = mkdtemp(tmpl);
	CHECK(made != NULL);
	char real[PATH_MAX];
	CHECK(realpath(made, real) != NULL);
	char *root = at(real, "ds"), *outside = at(real, "outside");
	mkdir(root, 0777);
	mkdir(outside, 0777);
	char *secret = at(outside, "secret");
	put(secret, "SECRET");

	/* Writes create the directories on the way and read back. */
	char *m = at(root, ".tether/objects/a/b.toml");
	CHECK(tt_safe_write_atomic(root, m, "x = 1\n", 6) == 0);
	char *data;
	size_t len;
	CHECK(tt_safe_read(root, m, &data, &len) == 0 && len == 6 && strcmp(data, "x = 1\n") == 0);
	free(data);
	CHECK(tt_safe_exists(root, m) == 1);
	char *none = at(root, ".tether/objects/none.toml");
	CHECK(tt_safe_exists(root, none) == 0);
	CHECK(tt_safe_read(root, none, &data, &len) == TETHER_ENOTFOUND);
	CHECK(tt_safe_check_dataset(root) == 0);

	/* A link anywhere on the way is refused, and the target is untouched. */
	char *link = at(root, ".tether/listings");
	CHECK(symlink(outside, link) == 0);
	char *through = at(root, ".tether/listings/secret");
	CHECK(tt_safe_read(root, through, &data, &len) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "/.tether/listings is a symbolic link") != NULL);
	CHECK(tt_safe_write_atomic(root, through, "y", 1) == TETHER_EREFUSED);
	CHECK(tt_safe_remove(root, through) == TETHER_EREFUSED);
	int fd = -1;
	CHECK(tt_safe_open_file(root, through, O_RDWR | O_CREAT, &fd) == TETHER_EREFUSED && fd == -1);
	CHECK(tt_safe_check_dataset(root) == TETHER_EREFUSED);
	CHECK(tt_safe_read(real, secret, &data, &len) == 0 && strcmp(data, "SECRET") == 0);
	free(data);
	unlink(link);

	/* A link as the file itself. */
	char *lock = at(root, ".tether/lock");
	CHECK(symlink(secret, lock) == 0);
	CHECK(tt_safe_open_file(root, lock, O_RDWR | O_CREAT, &fd) == TETHER_EREFUSED);
	CHECK(tt_safe_exists(root, lock) == TETHER_EREFUSED);
	CHECK(tt_safe_check_dataset(root) == TETHER_EREFUSED);
	unlink(lock);

	/* A FIFO returns at once, refused; a directory where a file belongs. */
	char *fifo = at(root, ".tether/objects/f.toml");
	CHECK(mkfifo(fifo, 0666) == 0);
	CHECK(tt_safe_read(root, fifo, &data, &len) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "f.toml is a FIFO, not a regular file") != NULL);
	CHECK(tt_safe_check_dataset(root) == TETHER_EREFUSED);
	unlink(fifo);
	char *ws = at(root, ".tether/workspace.toml");
	mkdir(ws, 0777);
	CHECK(tt_safe_read(root, ws, &data, &len) == TETHER_EREFUSED);
	CHECK(tt_safe_check_dataset(root) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "workspace.toml is a directory, not a regular file") != NULL);
	rmdir(ws);
	CHECK(tt_safe_check_dataset(root) == 0);

	/* Paths that climb out, or are not under root at all. */
	char *climb = at(root, ".tether/../../outside/secret");
	CHECK(tt_safe_read(root, climb, &data, &len) == TETHER_ERROR);
	CHECK(tt_safe_read(root, secret, &data, &len) == TETHER_ERROR);

	/* Removing: a missing file or directory is fine; a directory is not. */
	CHECK(tt_safe_remove(root, none) == 0);
	char *gone = at(root, ".tether/nodir/x");
	CHECK(tt_safe_remove(root, gone) == 0);
	CHECK(tt_safe_remove(root, m) == 0 && tt_safe_exists(root, m) == 0);
	char *dir = at(root, ".tether/objects/a");
	CHECK(tt_safe_remove(root, dir) == TETHER_EREFUSED);

	free(root), free(outside), free(secret), free(m), free(none), free(link), free(through);
	free(lock), free(fifo), free(ws), free(climb), free(gone), free(dir);
	char *rm = tt_strdupf("rm -rf '%s'", real);
	CHECK(system(rm) == 0);
	free(rm);
	CHECK_DONE();
}
