#include "vcs/probe.h"

#include <tether/backend.h>

#include "util/fsutil.h"

#include <stdlib.h>
#include <string.h>

static int is_hex40(const char *s)
{
	for (int i = 0; i < 40; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static char *read_trimmed(const char *path)
{
	char *data;
	size_t len;
	if (tt_read_file(path, &data, &len) != 0)
		return NULL;
	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		data[--len] = '\0';
	return data;
}

/* The git directory for dir: dir/.git, or where a worktree's .git file
 * points. NULL when dir has neither. */
static char *git_dir_at(const char *dir)
{
	char *dotgit = tt_path_join(dir, ".git");
	char *head = tt_path_join(dotgit, "HEAD");
	int is_dir = tt_exists(head);
	free(head);
	if (is_dir)
		return dotgit;
	char *link = tt_exists(dotgit) ? read_trimmed(dotgit) : NULL;
	free(dotgit);
	if (!link || strncmp(link, "gitdir: ", 8) != 0) {
		free(link);
		return NULL;
	}
	char *target = link[8] == '/' ? strdup(link + 8) : tt_path_join(dir, link + 8);
	free(link);
	return target;
}

/* The git directory of the checkout enclosing start, or NULL. In a jj
 * workspace (a .jj nearer than any .git), only a colocated one has a git
 * HEAD worth reading: jj keeps it detached at @- (or on an unborn branch,
 * or on refs/jj/root, while @- is the root commit), which is exactly what
 * the jj module resolves "HEAD" to. A workspace without .git beside its
 * .jj (not colocated, or one added with `jj workspace add`) has no such
 * file -- a .git further up belongs to another checkout -- and the probe
 * gives up. */
static char *find_git_dir(const char *start)
{
	char *cur = strdup(start);
	for (;;) {
		char *gd = git_dir_at(cur);
		char *dotjj = tt_path_join(cur, ".jj");
		int jj = tt_exists(dotjj);
		free(dotjj);
		char *slash = strrchr(cur, '/');
		if (gd || jj || !slash || slash == cur) {
			free(cur);
			return gd;
		}
		*slash = '\0';
	}
}

/* A worktree's refs live in the common directory. */
static char *common_dir(const char *git_dir)
{
	char *file = tt_path_join(git_dir, "commondir");
	char *rel = tt_exists(file) ? read_trimmed(file) : NULL;
	free(file);
	if (!rel)
		return strdup(git_dir);
	char *cd = rel[0] == '/' ? strdup(rel) : tt_path_join(git_dir, rel);
	free(rel);
	return cd;
}

static int packed_ref(const char *common, const char *ref, char id[41])
{
	char *path = tt_path_join(common, "packed-refs");
	char *data;
	size_t len;
	int rc = tt_read_file(path, &data, &len);
	free(path);
	if (rc)
		return TETHER_ENOTFOUND;
	size_t rl = strlen(ref);
	rc = TETHER_ENOTFOUND;
	for (char *line = data; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strlen(line) == 41 + rl && line[40] == ' ' && strcmp(line + 41, ref) == 0 && is_hex40(line)) {
			memcpy(id, line, 40);
			id[40] = '\0';
			rc = 0;
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(data);
	return rc;
}

static int resolve_ref(const char *git_dir, const char *ref, char id[41])
{
	if (strncmp(ref, "refs/", 5) != 0 || strstr(ref, ".."))
		return TETHER_ERROR;
	char *common = common_dir(git_dir);
	char *loose_path = tt_path_join(common, ref);
	char *loose = read_trimmed(loose_path);
	free(loose_path);
	int rc;
	if (loose && strlen(loose) == 40 && is_hex40(loose)) {
		memcpy(id, loose, 41);
		rc = 0;
	} else if (loose) {
		rc = TETHER_ERROR; /* a symbolic ref or a format we do not read */
	} else {
		rc = packed_ref(common, ref, id);
	}
	free(loose);
	free(common);
	return rc;
}

int tt_vcs_probe_head(const char *start_dir, char id[41])
{
	char *git_dir = find_git_dir(start_dir);
	if (!git_dir)
		return TETHER_ERROR;
	char *head_path = tt_path_join(git_dir, "HEAD");
	char *head = read_trimmed(head_path);
	free(head_path);
	int rc = TETHER_ERROR;
	if (head && strlen(head) == 40 && is_hex40(head)) {
		memcpy(id, head, 41);
		rc = 0;
	} else if (head && strncmp(head, "ref: ", 5) == 0) {
		rc = resolve_ref(git_dir, head + 5, id);
	}
	free(head);
	free(git_dir);
	tether_error_clear();
	return rc;
}
