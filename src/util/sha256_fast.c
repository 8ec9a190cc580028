/* SHA-256 by libcrypto when it is there and worth loading, by Nettle
 * otherwise (the rule is in sha256_fast.h). */
#include "util/sha256_fast.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The five EVP calls, declared here rather than through <openssl/evp.h>
 * so that building tether needs no OpenSSL headers and nothing links
 * libcrypto: its contexts are opaque pointers. */
typedef void *(*evp_ctx_new_fn)(void);
typedef void (*evp_ctx_free_fn)(void *ctx);
typedef const void *(*evp_sha256_fn)(void);
typedef int (*evp_init_fn)(void *ctx, const void *md, void *engine);
typedef int (*evp_update_fn)(void *ctx, const void *data, size_t n);
typedef int (*evp_final_fn)(void *ctx, unsigned char *digest, unsigned int *len);

static struct {
	evp_ctx_new_fn ctx_new;
	evp_ctx_free_fn ctx_free;
	evp_init_fn init;
	evp_update_fn update;
	evp_final_fn final;
	const void *md;
} evp;
/* Set at the end of load_libcrypto, after evp: pthread_once orders both
 * before its return in every thread; atomic so that
 * tt_sha256_libcrypto_loaded can read it without loading anything. */
static atomic_int evp_ready;
static pthread_once_t evp_once = PTHREAD_ONCE_INIT;

static void load_libcrypto(void)
{
	const char *no = getenv("TETHER_NO_LIBCRYPTO");
	if (no && *no && strcmp(no, "0") != 0)
		return;
	/* The ABI of OpenSSL 3, the only soname these declarations are for.
	 * Never closed: it stays for the process, like the hash it serves. */
	void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return;
	evp.ctx_new = (evp_ctx_new_fn)dlsym(lib, "EVP_MD_CTX_new");
	evp.ctx_free = (evp_ctx_free_fn)dlsym(lib, "EVP_MD_CTX_free");
	evp.init = (evp_init_fn)dlsym(lib, "EVP_DigestInit_ex");
	evp.update = (evp_update_fn)dlsym(lib, "EVP_DigestUpdate");
	evp.final = (evp_final_fn)dlsym(lib, "EVP_DigestFinal_ex");
	evp_sha256_fn sha256 = (evp_sha256_fn)dlsym(lib, "EVP_sha256");
	if (!evp.ctx_new || !evp.ctx_free || !evp.init || !evp.update || !evp.final || !sha256)
		return;
	evp.md = sha256();
	/* One digest of known bytes before trusting it with a file's: a
	 * libcrypto that loads but cannot hash (a provider configuration that
	 * leaves out SHA-256, say) is left unused. */
	static const unsigned char abc_sha256[32] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	void *ctx = evp.md ? evp.ctx_new() : NULL;
	if (!ctx)
		return;
	unsigned char got[32];
	unsigned int len = 0;
	int ok = evp.init(ctx, evp.md, NULL) == 1 && evp.update(ctx, "abc", 3) == 1 &&
	         evp.final(ctx, got, &len) == 1 && len == 32 && memcmp(got, abc_sha256, 32) == 0;
	evp.ctx_free(ctx);
	atomic_store_explicit(&evp_ready, ok, memory_order_release);
}

void tt_sha256_begin(struct tt_sha256_stream *s, uint64_t expected_bytes)
{
	s->evp = NULL;
	s->failed = 0;
	/* The bytes of the streams that would use libcrypto, begun so far:
	 * once they reach TT_SHA256_LOAD_AFTER_BYTES, it is loaded. */
	static atomic_uint_fast64_t large_bytes;
	if (expected_bytes >= TT_SHA256_FAST_MIN_BYTES &&
	    (atomic_load_explicit(&evp_ready, memory_order_relaxed) ||
	     atomic_fetch_add_explicit(&large_bytes, expected_bytes, memory_order_relaxed) + expected_bytes >=
	         TT_SHA256_LOAD_AFTER_BYTES)) {
		pthread_once(&evp_once, load_libcrypto);
		if (atomic_load_explicit(&evp_ready, memory_order_relaxed)) {
			s->evp = evp.ctx_new();
			if (s->evp && evp.init(s->evp, evp.md, NULL) != 1) {
				evp.ctx_free(s->evp);
				s->evp = NULL;
			}
		}
	}
	/* Out of memory in libcrypto, or no libcrypto: Nettle. */
	if (!s->evp)
		sha256_init(&s->nettle);
}

void tt_sha256_update(struct tt_sha256_stream *s, const void *data, size_t n)
{
	if (!s->evp)
		sha256_update(&s->nettle, n, data);
	else if (!s->failed && evp.update(s->evp, data, n) != 1)
		s->failed = 1;
}

int tt_sha256_end(struct tt_sha256_stream *s, unsigned char digest[32])
{
	if (!s->evp) {
		if (digest)
			sha256_digest(&s->nettle, 32, digest);
		return 0;
	}
	int rc = s->failed ? -1 : 0;
	if (digest && rc == 0) {
		unsigned char out[64]; /* EVP_MAX_MD_SIZE */
		unsigned int len = 0;
		if (evp.final(s->evp, out, &len) == 1 && len == 32)
			memcpy(digest, out, 32);
		else
			rc = -1;
	}
	evp.ctx_free(s->evp);
	s->evp = NULL;
	return rc;
}

int tt_sha256_libcrypto_loaded(void)
{
	return atomic_load_explicit(&evp_ready, memory_order_acquire);
}
