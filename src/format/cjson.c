#include "format/cjson.h"

#include <tether/backend.h>

#include <stdlib.h>
#include <string.h>

char *tt_cjson(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

int tt_cjson_sha256(const json_t *v, char hex[65])
{
	char *s = tt_cjson(v);
	if (!s)
		return tether_error_set(TETHER_ERROR, "value has no canonical JSON form");
	tether_sha256_hex(s, strlen(s), hex);
	free(s);
	return 0;
}
