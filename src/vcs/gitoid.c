/* Object ids and type names (gitodb.h), apart from the reader itself so
 * that the history walk (git_history.c), which every git module links,
 * can name objects without linking the native reader. */
#include "vcs/gitodb.h"

#include "util/hex.h"

static const char *const type_names[] = { NULL, "commit", "tree", "blob", "tag" };

const char *tt_gobj_type_name(enum tt_gobj_type type)
{
	return type >= TT_GOBJ_COMMIT && type <= TT_GOBJ_TAG ? type_names[type] : "unknown";
}

void tt_goid_hex(const unsigned char id[20], char hex[41])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 20; i++) {
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[40] = '\0';
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
