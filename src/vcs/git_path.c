/* See git_path.h. */
#include "vcs/git_path.h"

#include <tether/backend.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int tt_git_path_normalize(const char *in, char **out)
{
	if (!in)
		return tether_error_set(TETHER_EUSAGE, "no path given");
	if (in[0] == '/')
		return tether_error_set(TETHER_EUSAGE,
		                        "'%s' is absolute; paths are relative to the checkout top", in);

	char *res = malloc(strlen(in) + 1);
	size_t len = 0;
	const char *p = in;

	if (!res)
		return tether_error_set(TETHER_ERROR, "out of memory");
	while (*p) {
		size_t n = strcspn(p, "/");
		int dot = n == 1 && p[0] == '.';
		int dotdot = n == 2 && p[0] == '.' && p[1] == '.';
		int dotgit = n == 4 && strncasecmp(p, ".git", 4) == 0;

		if (dotdot || dotgit) {
			free(res);
			return tether_error_set(TETHER_EUSAGE, "'%s': paths may not contain '%.*s'", in,
			                        (int)n, p);
		}
		if (n > 0 && !dot) {
			if (len)
				res[len++] = '/';
			memcpy(res + len, p, n);
			len += n;
		}
		p += n;
		if (*p == '/')
			p++;
	}
	res[len] = '\0';
	*out = res;
	return 0;
}

int path_buf_push(struct path_buf *pb, const char *name)
{
	size_t n = strlen(name);
	size_t need = pb->len + (pb->len ? 1 : 0) + n + 1;

	if (need > pb->cap) {
		size_t cap = pb->cap ? pb->cap : 256;
		char *s;

		while (cap < need)
			cap *= 2;
		s = realloc(pb->s, cap);
		if (!s)
			return tether_error_set(TETHER_ERROR, "out of memory");
		pb->s = s;
		pb->cap = cap;
	}
	if (pb->len)
		pb->s[pb->len++] = '/';
	memcpy(pb->s + pb->len, name, n + 1);
	pb->len += n;
	return 0;
}

void path_buf_pop_to(struct path_buf *pb, size_t mark)
{
	pb->len = mark;
	if (pb->s)
		pb->s[mark] = '\0';
}
