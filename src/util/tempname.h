/* The names of tether's temporary files, in one place.
 *
 * tt_write_file_atomic writes <path>.tmp.<pid> and renames it over <path>.
 * A process killed between the two leaves that file behind. Such a file is
 * never a manifest, a listing or any other committed file: those end in
 * ".toml", ".jsonl" or ".gitignore", never in a digit. So the VCS layer
 * never commits a name matching TT_TEMP_GLOB (git.c with fnmatch, jj.c as a
 * fileset), and a commit removes the ones whose process is gone
 * (core/tempfiles.c). Header-only: the VCS modules, which cannot see
 * libtether's internal symbols, include it too. */
#ifndef TETHER_UTIL_TEMPNAME_H
#define TETHER_UTIL_TEMPNAME_H

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

/* The suffix tt_write_file_atomic appends: printf'd with the pid (long). */
#define TT_TEMP_SUFFIX_FMT ".tmp.%ld"

/* A file name (one path component) that is one of tether's temporaries,
 * or could be: ".tmp." somewhere, and a digit last. Broader than what
 * tt_write_file_atomic writes, so that a VCS glob can say it exactly. */
#define TT_TEMP_GLOB "*.tmp.*[0-9]"

static inline int tt_is_temp_name(const char *name)
{
	return fnmatch(TT_TEMP_GLOB, name, 0) == 0;
}

/* Exactly what tt_write_file_atomic writes: "<something>.tmp.<pid>". The
 * pid goes to *pid. */
static inline int tt_temp_name_pid(const char *name, long *pid)
{
	const char *at = NULL;
	for (const char *p = strstr(name, ".tmp."); p; p = strstr(p + 1, ".tmp."))
		at = p;
	if (!at || at == name || at[5] < '1' || at[5] > '9' || strspn(at + 5, "0123456789") != strlen(at + 5))
		return 0;
	errno = 0;
	long v = strtol(at + 5, NULL, 10);
	if (errno)
		return 0;
	*pid = v;
	return 1;
}

#endif
