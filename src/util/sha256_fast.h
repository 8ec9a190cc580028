/* SHA-256 of a stream of bytes, by OpenSSL's libcrypto when the caller has
 * enough bytes to pay for loading it, else by Nettle. The digest is the
 * same either way; only the speed differs (libcrypto's SHA-NI code hashes
 * several blocks per call, Nettle 3.8 calls its compression function once
 * per 64-byte block through the PLT: about 7 % more CPU per byte here).
 *
 * libcrypto.so.3 is an optional run-time dependency: it is opened with
 * dlopen, once per process (never at start-up, never for a few small
 * files), and when it is missing, fails to load or is refused by
 * TETHER_NO_LIBCRYPTO=1 (read once, at the first large file), Nettle
 * hashes everything, silently.
 * Thread-safe: every stream owns its own state. */
#ifndef TETHER_UTIL_SHA256_FAST_H
#define TETHER_UTIL_SHA256_FAST_H

#include <stddef.h>
#include <stdint.h>

#include <nettle/sha2.h>

/* Measured here (docs/PERFORMANCE.md, "Benchmark 3 with libcrypto"):
 * loading libcrypto and its first digest cost 2-7 ms once; then it hashes
 * about 0.1 ms per MiB faster than Nettle, and costs 0.5 us more per
 * stream. So a stream uses libcrypto only from TT_SHA256_FAST_MIN_BYTES
 * up, and libcrypto is loaded only once such streams begun in this
 * process add up to TT_SHA256_LOAD_AFTER_BYTES: enough to win back the
 * load. A status of small files never loads it. */
#define TT_SHA256_FAST_MIN_BYTES ((uint64_t)64 << 10)
#define TT_SHA256_LOAD_AFTER_BYTES ((uint64_t)32 << 20)

struct tt_sha256_stream {
	void *evp;                 /* libcrypto's EVP_MD_CTX, or NULL: Nettle hashes */
	int failed;                /* libcrypto reported an error mid-stream */
	struct sha256_ctx nettle;
};

/* Start a stream of about expected_bytes bytes (the file's size): by
 * libcrypto when it is worth it (above) and loads, by Nettle otherwise.
 * Never fails. */
void tt_sha256_begin(struct tt_sha256_stream *s, uint64_t expected_bytes);
void tt_sha256_update(struct tt_sha256_stream *s, const void *data, size_t n);
/* Write the digest (when digest is not NULL) and release the stream;
 * every begun stream ends here, also one abandoned on a read error.
 * Returns 0, or -1 when libcrypto failed mid-stream (the digest is then
 * not written). */
int tt_sha256_end(struct tt_sha256_stream *s, unsigned char digest[32]);

/* For tests: 1 when libcrypto has been loaded in this process and is
 * used for large streams, 0 when it is not (yet, or at all). */
int tt_sha256_libcrypto_loaded(void);

#endif
