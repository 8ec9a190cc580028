/* Canonical JSON: sorted keys, no spaces, UTF-8 as-is. The byte form that
 * pin ids and listing names hash, so it must never change. */
#ifndef TETHER_FORMAT_CJSON_H
#define TETHER_FORMAT_CJSON_H

#include <jansson.h>

/* malloc'd canonical text of v, or NULL for a value that has none (NaN). */
char *tt_cjson(const json_t *v);
/* SHA-256 hex of tt_cjson(v). Returns 0 or TETHER_ERROR. */
int tt_cjson_sha256(const json_t *v, char hex[65]);

#endif
