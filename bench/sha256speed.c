/* sha256speed: Nettle's SHA-256 throughput on one thread, for context
 * beside `openssl speed`: the library tether hashes with, measured the way
 * `openssl speed -bytes 16384` measures OpenSSL: one buffer hashed over and
 * over (no I/O, no cache misses), divided by the CPU time used (openssl
 * speed divides by user CPU time unless given -elapsed), so other work on
 * the machine does not lower the figure.
 *
 *   sha256speed [BYTES [SECONDS]]    (default 16384 bytes, 3 CPU-seconds)
 *
 * Prints one line: "<bytes> <MB/s>", MB = 10^6 bytes. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nettle/sha2.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 10) : 16384;
	double seconds = argc > 2 ? strtod(argv[2], NULL) : 3.0;
	if (bytes == 0 || seconds <= 0) {
		fprintf(stderr, "usage: sha256speed [BYTES [SECONDS]]\n");
		return 2;
	}
	unsigned char *buf = malloc(bytes);
	if (!buf)
		return 1;
	memset(buf, 0x5a, bytes);
	unsigned char digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	unsigned long long n = 0;
	double start = now(), end;
	do {
		for (int i = 0; i < 64; i++) {
			sha256_init(&ctx);
			sha256_update(&ctx, bytes, buf);
			sha256_digest(&ctx, sizeof digest, digest);
			buf[0] ^= digest[0]; /* keep the work observable */
		}
		n += 64;
	} while ((end = now()) - start < seconds);
	printf("%zu %.1f\n", bytes, (double)n * (double)bytes / (end - start) / 1e6);
	free(buf);
	return 0;
}
