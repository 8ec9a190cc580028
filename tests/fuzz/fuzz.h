/* The libFuzzer entry point every target defines; replay.c calls it too. */
#ifndef TETHER_FUZZ_H
#define TETHER_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: abort, so libFuzzer and the replay test both see it. */
#define FUZZ_ASSERT(cond)                                                               \
	do {                                                                                \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                    \
		}                                                                               \
	} while (0)

#endif
