#include "store_listed.h"

#include <stdlib.h>
#include <string.h>

char *listed(tether_store *s, const char *prefix, const char *after, size_t page)
{
	tether_store_iter *it = NULL;
	if (tether_store_list(s, prefix, after, page, &it) != 0)
		return NULL;
	size_t len = 0, cap = 64;
	char *out = calloc(1, cap);
	const char *key = NULL;
	int rc = 0;
	while (out && (rc = tether_store_next(it, &key)) == 0 && key) {
		size_t n = strlen(key) + (len ? 1 : 0);
		if (len + n + 1 > cap) {
			char *grown = realloc(out, cap = 2 * (len + n + 1));
			if (!grown) {
				free(out);
				out = NULL;
				break;
			}
			out = grown;
		}
		if (len)
			out[len++] = ' ';
		memcpy(out + len, key, strlen(key) + 1);
		len += strlen(key);
	}
	tether_store_iter_free(it);
	if (out && rc) {
		free(out);
		return NULL;
	}
	return out;
}
