/* SHA-256 through Nettle (SHA-NI where the CPU has it), and hex. */
#ifndef TETHER_UTIL_HASH_H
#define TETHER_UTIL_HASH_H

#include <stddef.h>

#include <nettle/sha2.h>

#include "util/hex.h"

void tt_sha256(const void *data, size_t len, unsigned char out[32]);

#endif
