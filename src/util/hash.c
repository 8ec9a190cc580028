#include <tether/backend.h>

#include <nettle/sha2.h>

#include "util/hash.h"

void tt_sha256(const void *data, size_t len, unsigned char out[32])
{
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, 32, out);
}

void tether_sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char d[32];
	tt_sha256(data, len, d);
	tt_hex(d, 32, hex);
}
