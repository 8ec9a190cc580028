/* Shell helpers shared by the unit tests that drive real git and jj. */
#include "shell.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

void shell_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, size, fmt, ap);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "command too long: %s\n", fmt);
		exit(2);
	}
}

/* Run a shell command; its exit status. */
int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int status;

	va_start(ap, fmt);
	shell_vformat(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	status = system(cmd);
	if (status != 0)
		fprintf(stderr, "  (command exited %d: %s)\n", status, cmd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A shell command's standard output, without its final newline. */
char *out(const char *fmt, ...)
{
	char cmd[8192];
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	va_list ap;
	FILE *p;

	va_start(ap, fmt);
	shell_vformat(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p)
		return strdup("");
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			if (!buf)
				exit(2);
		}
		n = fread(buf + len, 1, 4096, p);
		len += n;
	} while (n > 0);
	pclose(p);
	if (len && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	return buf;
}

/* Write `content` to dir/rel, making the directories on the way. */
void put(const char *dir, const char *rel, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, rel);
	sh("mkdir -p \"$(dirname '%s')\"", path);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		exit(2);
	}
	fputs(content, f);
	fclose(f);
}

char *path_in(const char *dir, const char *rel)
{
	static char path[4][PATH_MAX];
	static int turn;
	char *p = path[turn++ % 4];

	if (snprintf(p, PATH_MAX, "%s/%s", dir, rel) >= PATH_MAX)
		exit(2);
	return p;
}

char *git_repo_at(const char *parent, const char *name)
{
	char *dir = malloc(PATH_MAX);
	if (!dir)
		exit(2);
	snprintf(dir, PATH_MAX, "%s/%s", parent, name);
	sh("git init -q -b main '%s' && git -C '%s' config user.name 'Test User' && "
	   "git -C '%s' config user.email test@example.com",
	   dir, dir, dir);
	return dir;
}

int git_next_date(void)
{
	static int minutes;
	return 1700000000 + ++minutes * 60;
}

void git_commit_all(const char *repo, const char *message)
{
	int t = git_next_date();
	sh("cd '%s' && git add -A && GIT_AUTHOR_DATE='@%d +0000' GIT_COMMITTER_DATE='@%d +0000' "
	   "git commit -q -m '%s'",
	   repo, t, t, message);
}
