/* Directory exports (CSV, JSON Lines, Parquet): written whole beside the
 * target, then renamed into place, so a reader never sees half of one. */
#include "sql/sql.h"

#include <tether/backend.h>

#include "util/fsutil.h"
#include "util/tempname.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tt_sql_io_error(const char *path, const char *what)
{
	return tether_error_set(TETHER_EIO, "%s: %s: %s", path, what, strerror(errno ? errno : EIO));
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *p = tt_path_join(dir, e->d_name);
		unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Is `path` an earlier export of these tables (or an empty directory)? */
static int is_earlier_export(const char *path, const struct tt_export_table *tables, size_t n, const char *ext)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *e;
	int ok = 1;
	while (ok && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int mine = 0;
		for (size_t i = 0; i < n && !mine; i++) {
			size_t tl = strlen(tables[i].name);
			mine = strncmp(e->d_name, tables[i].name, tl) == 0 && strcmp(e->d_name + tl, ext) == 0;
		}
		ok = mine;
	}
	closedir(d);
	return ok;
}

int tt_sql_dir_begin(struct tt_sql_dir *d, const char *path, const struct tt_export_table *tables, size_t n,
                     const char *ext)
{
	struct stat st;
	memset(d, 0, sizeof *d);
	if (lstat(path, &st) == 0 && (!S_ISDIR(st.st_mode) || !is_earlier_export(path, tables, n, ext)))
		return tether_error_set(TETHER_EREFUSED,
		                        "%s exists and is not an earlier export (a directory of only <table>%s files): "
		                        "not replaced",
		                        path, ext);
	d->path = strdup(path);
	d->tmp = tt_strdupf("%s" TT_TEMP_SUFFIX_FMT, path, (long)getpid());
	remove_tree(d->tmp); /* a killed run's, of this pid */
	if (mkdir(d->tmp, 0777) != 0) {
		int rc = tt_sql_io_error(d->tmp, "cannot create the directory");
		free(d->path);
		free(d->tmp);
		memset(d, 0, sizeof *d);
		return rc;
	}
	return 0;
}

char *tt_sql_dir_file(const struct tt_sql_dir *d, const char *table, const char *ext)
{
	return tt_strdupf("%s/%s%s", d->tmp, table, ext);
}

int tt_sql_dir_end(struct tt_sql_dir *d, int rc)
{
	if (!rc) {
		char *old = tt_strdupf("%s.old" TT_TEMP_SUFFIX_FMT, d->path, (long)getpid());
		int had = rename(d->path, old) == 0;
		if (!had && errno != ENOENT)
			rc = tt_sql_io_error(d->path, "cannot move the earlier export aside");
		if (!rc && rename(d->tmp, d->path) != 0) {
			rc = tt_sql_io_error(d->path, "cannot put the export in place");
			if (had)
				(void)rename(old, d->path);
		}
		if (!rc && had)
			remove_tree(old);
		free(old);
	}
	if (rc)
		remove_tree(d->tmp);
	free(d->path);
	free(d->tmp);
	memset(d, 0, sizeof *d);
	return rc;
}
