/* RS256 JWTs with Nettle: the JSON parts made with jansson (so every
 * string is escaped as JSON requires), base64url-encoded, signed with the
 * blinded (_tr) RSA operation, whose timing does not depend on the key. */
#include "store/gcs/jwt.h"

#include <jansson.h>
#include <nettle/base64.h>
#include <nettle/bignum.h>
#include <nettle/sha2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long an assertion is good for: Google accepts at most an hour. */
#define ASSERTION_LIFETIME 3600

char *tt_base64url(const uint8_t *s, size_t len)
{
	char *out = malloc(BASE64_ENCODE_LENGTH(len) + BASE64_ENCODE_FINAL_LENGTH + 1);
	if (!out)
		return NULL;
	struct base64_encode_ctx ctx;
	base64url_encode_init(&ctx);
	size_t n = base64_encode_update(&ctx, out, len, s);
	n += base64_encode_final(&ctx, out + n);
	while (n && out[n - 1] == '=')
		n--;
	out[n] = '\0';
	return out;
}

/* The blinding factor's randomness, from the kernel (getentropy gives at
 * most 256 bytes a call). Nettle's callback cannot fail, so a failure is
 * remembered and the signature thrown away. */
struct entropy {
	int failed;
};

static void random_bytes(void *ctx, size_t len, uint8_t *dst)
{
	struct entropy *e = ctx;
	while (len) {
		size_t chunk = len < 256 ? len : 256;
		if (getentropy(dst, chunk) != 0) {
			e->failed = 1;
			memset(dst, 0, len);
			return;
		}
		dst += chunk;
		len -= chunk;
	}
}

static char *json_part(json_t *obj)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(obj);
	if (!text)
		return NULL;
	char *out = tt_base64url((const uint8_t *)text, strlen(text));
	free(text);
	return out;
}

/* "b64(header).b64(claims)", the text the signature covers. */
static char *signing_input(const struct tt_jwt_claims *c)
{
	json_t *header = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	if (header && c->key_id && json_object_set_new(header, "kid", json_string(c->key_id)) != 0) {
		json_decref(header);
		header = NULL;
	}
	json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", c->issuer, "scope", c->scope, "aud",
	                           c->audience, "iat", (json_int_t)c->issued_at, "exp",
	                           (json_int_t)(c->issued_at + ASSERTION_LIFETIME));
	char *h = json_part(header), *b = json_part(claims), *out = NULL;
	if (h && b) {
		size_t n = strlen(h) + strlen(b) + 2;
		if ((out = malloc(n)))
			snprintf(out, n, "%s.%s", h, b);
	}
	free(h);
	free(b);
	return out;
}

int tt_jwt_sign_rs256(const struct tt_rsa_key *key, const struct tt_jwt_claims *claims, char **out, char *why,
                      size_t n)
{
	*out = NULL;
	if (!claims->issuer || !claims->scope || !claims->audience) {
		snprintf(why, n, "a JWT needs an issuer, a scope and an audience");
		return -1;
	}
	char *input = signing_input(claims);
	if (!input) {
		snprintf(why, n, "out of memory");
		return -1;
	}
	uint8_t digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx sha;
	sha256_init(&sha);
	sha256_update(&sha, strlen(input), (const uint8_t *)input);
	sha256_digest(&sha, sizeof digest, digest);

	mpz_t s;
	mpz_init(s);
	struct entropy e = {0};
	int ok = rsa_sha256_sign_digest_tr(&key->pub, &key->priv, &e, random_bytes, digest, s) && !e.failed;
	/* The signature is exactly the modulus's length, big-endian. */
	uint8_t *sig = ok ? malloc(key->pub.size) : NULL;
	char *sig64 = NULL;
	if (sig) {
		nettle_mpz_get_str_256(key->pub.size, sig, s);
		sig64 = tt_base64url(sig, key->pub.size);
	}
	mpz_clear(s);
	free(sig);
	if (!sig64) {
		snprintf(why, n, "%s", ok ? "out of memory" : "RSA signing failed (no randomness, or a bad key)");
		free(input);
		return -1;
	}
	size_t len = strlen(input) + strlen(sig64) + 2;
	if ((*out = malloc(len)))
		snprintf(*out, len, "%s.%s", input, sig64);
	else
		snprintf(why, n, "out of memory");
	free(input);
	free(sig64);
	return *out ? 0 : -1;
}
