/* SHA-256 through Nettle (SHA-NI where the CPU has it), and hex. */
#ifndef TETHER_UTIL_HASH_H
#define TETHER_UTIL_HASH_H

#include <stddef.h>

#include <nettle/sha2.h>

void tt_sha256(const void *data, size_t len, unsigned char out[32]);
/* Lower-case hex of n bytes into out (2n + 1 chars). */
void tt_hex(const unsigned char *bytes, size_t n, char *out);

#endif
