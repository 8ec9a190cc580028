/* Stale temporary files under the committed directories.
 *
 * tt_write_file_atomic writes <path>.tmp.<pid> and renames it; a process
 * killed in between leaves the temporary behind. The VCS never commits one
 * (util/tempname.h); this removes those whose process is gone, so they do
 * not pile up. A temporary whose pid is alive is left alone: it may be
 * being written (or the pid was reused, and then it is removed once that
 * process is gone too). The walk opens every directory relative to its
 * parent without following symbolic links, and removes regular files only. */
#include "core/tempfiles.h"

#include "util/tempname.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process that wrote it is gone. Our own pid is not writing while we
 * sweep, so a file named with it is an earlier process's. */
static int owner_gone(long pid)
{
	if (pid == (long)getpid())
		return 1;
	if ((long)(pid_t)pid != pid)
		return 1; /* no process can have that id */
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static void sweep_dir(int fd, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		struct stat st;
		long pid;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
		    fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 64) {
			int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				sweep_dir(sub, depth + 1);
		} else if (S_ISREG(st.st_mode) && tt_temp_name_pid(name, &pid) && owner_gone(pid)) {
			unlinkat(dirfd(d), name, 0); /* gone already is as good */
		}
	}
	closedir(d);
}

void tt_sweep_stale_temps(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		sweep_dir(fd, 0);
}
