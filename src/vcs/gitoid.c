/* Object ids and type names (gitodb.h), apart from the reader itself so
 * that the history walk (git_history.c), which every git module links,
 * can name objects without linking the native reader. */
#include "vcs/gitodb.h"

#include "util/hex.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = { NULL, "commit", "tree", "blob", "tag" };

const char *tt_gobj_type_name(enum tt_gobj_type type)
{
	return type >= TT_GOBJ_COMMIT && type <= TT_GOBJ_TAG ? type_names[type] : "unknown";
}

size_t tt_gobj_parse_header(const char *head, size_t n, enum tt_gobj_type *type, size_t *size)
{
	const char *nul = memchr(head, '\0', n), *space = nul ? memchr(head, ' ', (size_t)(nul - head)) : NULL;
	int t = 0;
	if (!space || space[1] < '0' || space[1] > '9')
		return 0;
	for (int i = TT_GOBJ_COMMIT; i <= TT_GOBJ_TAG; i++)
		if ((size_t)(space - head) == strlen(type_names[i]) && memcmp(head, type_names[i], (size_t)(space - head)) == 0)
			t = i;
	char *endp;
	errno = 0;
	unsigned long long s = strtoull(space + 1, &endp, 10);
	if (!t || endp != nul || errno || s > SIZE_MAX / 2)
		return 0;
	*type = (enum tt_gobj_type)t;
	*size = (size_t)s;
	return (size_t)(nul - head) + 1;
}

void tt_goid_hex(const unsigned char id[20], char hex[41])
{
	tt_hex(id, 20, hex);
}

int tt_goid_from_hex(const char *s, unsigned char id[20])
{
	for (int i = 0; i < 20; i++) {
		int hi = tt_hex_digit(s[2 * i]), lo = hi < 0 ? -1 : tt_hex_digit(s[2 * i + 1]);
		if (lo < 0)
			return -1;
		id[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}
