/* jansson's hash tables are seeded against hash flooding. Left to itself,
 * jansson seeds on the first object it makes by opening /dev/urandom (an
 * open, a read and a close in every tether command, before any work).
 * The kernel already hands every process 16 random bytes (AT_RANDOM in
 * the auxiliary vector, which glibc also draws its stack canary from), so
 * libtether seeds jansson from those when it is loaded, at no cost. */
#include <jansson.h>

#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

__attribute__((constructor)) static void seed_jansson(void)
{
	const unsigned char *random = (const unsigned char *)(uintptr_t)getauxval(AT_RANDOM);
	uint32_t seed = 0, part;
	if (!random)
		return; /* jansson seeds itself */
	for (int i = 0; i < 16; i += 4) {
		memcpy(&part, random + i, sizeof part);
		seed ^= part * 0x9e3779b1u + (seed << 6) + (seed >> 2);
	}
	/* 0 asks jansson to find its own seed */
	json_object_seed(seed ? seed : 1);
}
