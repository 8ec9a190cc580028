/* hashread: how fast can one thread SHA-256 whole files, by library and by
 * way of reading? An investigation tool for benchmark 3 (not run by
 * bench/run): it separates the hash's cost from the read's.
 *
 *   hashread nettle|openssl read|mmap CHUNK FILE...
 *
 * Hashes each FILE in CHUNK-byte steps with Nettle's sha256 or OpenSSL's
 * EVP sha256, reading with read() into one buffer (as tether's scanner
 * does) or through mmap(MADV_SEQUENTIAL). Prints MB/s over wall time and
 * MB per CPU-second (user + sys), MB = 10^6 bytes.
 *
 *   cc -O2 -o hashread bench/hashread.c -lnettle -lcrypto */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>
#include <openssl/evp.h>

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct hasher {
	int openssl;
	struct sha256_ctx nettle;
	EVP_MD_CTX *evp;
};

static void h_init(struct hasher *h)
{
	if (h->openssl)
		EVP_DigestInit_ex(h->evp, EVP_sha256(), NULL);
	else
		sha256_init(&h->nettle);
}

static void h_update(struct hasher *h, const unsigned char *p, size_t n)
{
	if (h->openssl)
		EVP_DigestUpdate(h->evp, p, n);
	else
		sha256_update(&h->nettle, n, p);
}

static void h_final(struct hasher *h, unsigned char out[32])
{
	unsigned int len = 32;
	if (h->openssl)
		EVP_DigestFinal_ex(h->evp, out, &len);
	else
		sha256_digest(&h->nettle, 32, out);
}

int main(int argc, char **argv)
{
	if (argc < 5 || (strcmp(argv[1], "nettle") && strcmp(argv[1], "openssl")) ||
	    (strcmp(argv[2], "read") && strcmp(argv[2], "mmap"))) {
		fprintf(stderr, "usage: hashread nettle|openssl read|mmap CHUNK FILE...\n");
		return 2;
	}
	struct hasher h = {.openssl = strcmp(argv[1], "openssl") == 0, .evp = EVP_MD_CTX_new()};
	int use_mmap = strcmp(argv[2], "mmap") == 0;
	size_t chunk = strtoul(argv[3], NULL, 10);
	unsigned char *buf = malloc(chunk ? chunk : 1);
	if (!chunk || !buf || !h.evp)
		return 1;
	double w0 = wall(), c0 = cpu();
	unsigned long long total = 0;
	for (int i = 4; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		unsigned char digest[32];
		h_init(&h);
		if (use_mmap && st.st_size > 0) {
			unsigned char *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (p == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
			madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
			for (size_t off = 0; off < (size_t)st.st_size; off += chunk) {
				size_t n = (size_t)st.st_size - off < chunk ? (size_t)st.st_size - off : chunk;
				h_update(&h, p + off, n);
			}
			munmap(p, (size_t)st.st_size);
		} else {
			ssize_t n;
			while ((n = read(fd, buf, chunk)) > 0)
				h_update(&h, buf, (size_t)n);
		}
		h_final(&h, digest);
		close(fd);
		total += (unsigned long long)st.st_size;
	}
	double w = wall() - w0, c = cpu() - c0;
	printf("%s %s chunk=%zu: %.0f MB/s, %.0f MB per CPU-second\n", argv[1], argv[2], chunk,
	       (double)total / w / 1e6, (double)total / c / 1e6);
	EVP_MD_CTX_free(h.evp);
	free(buf);
	return 0;
}
