/* The GCS store's service-account signing (src/store/gcs/rsa_key.c, jwt.c):
 * keys generated here by `openssl genpkey` (never a committed key), parsed
 * from PKCS#8 and PKCS#1 PEM, and the RS256 JWT checked by `openssl dgst
 * -verify` against the public key openssl derives itself, so the signature
 * is judged by an implementation other than the one that made it. Hostile
 * and wrong keys are refused with a reason, never parsed half-way. */
#include "check.h"
#include "shell.h"

#include "store/gcs/jwt.h"
#include "store/gcs/rsa_key.h"

#include <jansson.h>
#include <nettle/base64.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/tether-gcs-jwt-XXXXXX";

static char *slurp(const char *rel)
{
	FILE *f = fopen(path_in(dir, rel), "rb");
	if (!f)
		return NULL;
	char *buf = calloc(1, 65536);
	size_t n = buf ? fread(buf, 1, 65535, f) : 0;
	(void)n;
	fclose(f);
	return buf;
}

static void spit(const char *rel, const void *data, size_t len)
{
	FILE *f = fopen(path_in(dir, rel), "wb");
	if (!f || fwrite(data, 1, len, f) != len) {
		fprintf(stderr, "cannot write %s\n", rel);
		exit(2);
	}
	fclose(f);
}

static uint8_t *unbase64url(const char *s, size_t len, size_t *out_len)
{
	uint8_t *out = malloc(BASE64_DECODE_LENGTH(len) + 4);
	struct base64_decode_ctx ctx;
	base64url_decode_init(&ctx);
	/* Nettle's decoder wants the padding JWTs leave off. */
	char padded[8192];
	if (len + 3 > sizeof padded)
		return NULL;
	memcpy(padded, s, len);
	while (len % 4)
		padded[len++] = '=';
	*out_len = 0;
	if (!base64_decode_update(&ctx, out_len, out, len, padded) || !base64_decode_final(&ctx)) {
		free(out);
		return NULL;
	}
	out[*out_len] = 0;
	return out;
}

static int parse(const char *rel, struct tt_rsa_key *key, char *why, size_t n)
{
	char *pem = slurp(rel);
	if (!pem) {
		snprintf(why, n, "cannot read %s", rel);
		return -2;
	}
	int rc = tt_rsa_key_from_pem(pem, key, why, n);
	free(pem);
	return rc;
}

static void refused(const char *rel, const char *reason)
{
	struct tt_rsa_key key;
	char why[256] = "";
	CHECK(parse(rel, &key, why, sizeof why) == -1);
	CHECK(strstr(why, reason) != NULL);
	if (!strstr(why, reason))
		fprintf(stderr, "  %s: got \"%s\", want \"%s\"\n", rel, why, reason);
	tt_rsa_key_clear(&key);
}

static void test_pem_forms(void)
{
	struct tt_rsa_key k8, k1;
	char why[256] = "";
	CHECK(parse("key.pem", &k8, why, sizeof why) == 0);
	CHECK(parse("key-pkcs1.pem", &k1, why, sizeof why) == 0);
	CHECK(k8.pub.size == 256);
	CHECK(mpz_cmp(k8.pub.n, k1.pub.n) == 0);
	CHECK(mpz_cmp(k8.priv.p, k1.priv.p) == 0);
	tt_rsa_key_clear(&k8);
	tt_rsa_key_clear(&k1);

	/* The private_key of a key file, as JSON decodes it: CRLF lines, and
	 * text before and after the PEM block. */
	sh("{ echo 'junk before'; sed 's/$/\\r/' '%s'; echo 'junk after'; } > '%s'", path_in(dir, "key.pem"),
	   path_in(dir, "key-crlf.pem"));
	CHECK(parse("key-crlf.pem", &k8, why, sizeof why) == 0);
	tt_rsa_key_clear(&k8);
}

static void test_pem_refused(void)
{
	refused("ec.pem", "not an RSA key");
	refused("enc.pem", "encrypted private keys are not supported");
	refused("small.pem", "shorter than 1024 bits");
	refused("pub.pem", "no PEM private key");
	spit("empty.pem", "", 0);
	refused("empty.pem", "no PEM private key");
	sh("head -n 5 '%s' > '%s'", path_in(dir, "key.pem"), path_in(dir, "cut.pem"));
	refused("cut.pem", "no END line");
	const char *bad64 = "-----BEGIN PRIVATE KEY-----\nMIIE!!!!vQIBADANBg\n-----END PRIVATE KEY-----\n";
	spit("bad64.pem", bad64, strlen(bad64));
	refused("bad64.pem", "not valid base64");
	/* Valid base64 of bytes that are not DER. */
	const char *notder = "-----BEGIN PRIVATE KEY-----\naGVsbG8gd29ybGQsIG5vdCBhIGtleQ==\n-----END PRIVATE KEY-----\n";
	spit("notder.pem", notder, strlen(notder));
	refused("notder.pem", "not a PKCS#8 PrivateKeyInfo");
	/* A PKCS#8 key whose inner RSA key was cut short (the DER's last
	 * bytes gone, the outer lengths then lying). */
	sh("openssl pkey -in '%s' -outform DER | head -c 600 | openssl base64 | "
	   "{ echo '-----BEGIN PRIVATE KEY-----'; cat; echo '-----END PRIVATE KEY-----'; } > '%s'",
	   path_in(dir, "key.pem"), path_in(dir, "short.pem"));
	refused("short.pem", "PKCS#8");
	const char *pkcs1_junk = "-----BEGIN RSA PRIVATE KEY-----\nMAMCAQA=\n-----END RSA PRIVATE KEY-----\n";
	spit("pkcs1junk.pem", pkcs1_junk, strlen(pkcs1_junk));
	refused("pkcs1junk.pem", "malformed");
}

static void test_jwt(void)
{
	struct tt_rsa_key key;
	char why[256] = "";
	if (parse("key.pem", &key, why, sizeof why) != 0) {
		CHECK(!"key.pem parses");
		return;
	}
	struct tt_jwt_claims c = {
		.key_id = "0123abcd",
		.issuer = "tether-test@example.iam.gserviceaccount.com",
		.scope = "https://www.googleapis.com/auth/devstorage.read_write",
		.audience = "http://127.0.0.1:1/token?a=\"q\"",
		.issued_at = 1700000000,
	};
	char *jwt = NULL;
	CHECK(tt_jwt_sign_rs256(&key, &c, &jwt, why, sizeof why) == 0);
	if (!jwt) {
		tt_rsa_key_clear(&key);
		return;
	}
	CHECK(strspn(jwt, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") == strlen(jwt));
	char *dot1 = strchr(jwt, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	CHECK(dot1 && dot2 && !strchr(dot2 + 1, '.'));
	if (!dot1 || !dot2) {
		free(jwt);
		tt_rsa_key_clear(&key);
		return;
	}
	size_t hl, bl, sl;
	uint8_t *h = unbase64url(jwt, (size_t)(dot1 - jwt), &hl);
	uint8_t *b = unbase64url(dot1 + 1, (size_t)(dot2 - dot1 - 1), &bl);
	uint8_t *sig = unbase64url(dot2 + 1, strlen(dot2 + 1), &sl);
	json_t *hj = h ? json_loads((char *)h, 0, NULL) : NULL, *bj = b ? json_loads((char *)b, 0, NULL) : NULL;
	CHECK_STR(json_string_value(json_object_get(hj, "alg")), "RS256");
	CHECK_STR(json_string_value(json_object_get(hj, "typ")), "JWT");
	CHECK_STR(json_string_value(json_object_get(hj, "kid")), "0123abcd");
	CHECK_STR(json_string_value(json_object_get(bj, "iss")), c.issuer);
	CHECK_STR(json_string_value(json_object_get(bj, "scope")), c.scope);
	CHECK_STR(json_string_value(json_object_get(bj, "aud")), c.audience);
	CHECK(json_integer_value(json_object_get(bj, "iat")) == 1700000000);
	CHECK(json_integer_value(json_object_get(bj, "exp")) == 1700003600);
	CHECK(sl == 256);

	/* openssl's verdict on the signature, with the public key it derives
	 * from the key file itself. */
	spit("input.txt", jwt, (size_t)(dot2 - jwt));
	spit("sig.bin", sig, sl);
	CHECK(sh("openssl dgst -sha256 -verify '%s' -signature '%s' '%s' >/dev/null", path_in(dir, "pub.pem"),
	         path_in(dir, "sig.bin"), path_in(dir, "input.txt")) == 0);
	/* ...which can say no: one byte of the signed text changed. */
	jwt[3] = jwt[3] == 'A' ? 'B' : 'A';
	spit("input2.txt", jwt, (size_t)(dot2 - jwt));
	CHECK(sh("openssl dgst -sha256 -verify '%s' -signature '%s' '%s' >/dev/null 2>&1", path_in(dir, "pub.pem"),
	         path_in(dir, "sig.bin"), path_in(dir, "input2.txt")) != 0);

	struct tt_jwt_claims missing = c;
	missing.issuer = NULL;
	char *none = NULL;
	CHECK(tt_jwt_sign_rs256(&key, &missing, &none, why, sizeof why) == -1 && !none);

	json_decref(hj);
	json_decref(bj);
	free(h);
	free(b);
	free(sig);
	free(jwt);
	tt_rsa_key_clear(&key);
}

static void test_base64url(void)
{
	char *s = tt_base64url((const uint8_t *)"\xfb\xff\xfe", 3);
	CHECK_STR(s, "-__-");
	free(s);
	s = tt_base64url((const uint8_t *)"ab", 2);
	CHECK_STR(s, "YWI");
	free(s);
	s = tt_base64url((const uint8_t *)"", 0);
	CHECK_STR(s, "");
	free(s);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	if (sh("cd '%s' && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem 2>/dev/null && "
	       "openssl pkey -in key.pem -pubout -out pub.pem && "
	       "openssl pkey -in key.pem -traditional -out key-pkcs1.pem && "
	       "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec.pem && "
	       "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -aes256 -pass pass:x -out enc.pem "
	       "2>/dev/null && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:512 -out small.pem 2>/dev/null",
	       dir) != 0) {
		fprintf(stderr, "openssl could not make the test keys\n");
		return 2;
	}
	test_pem_forms();
	test_pem_refused();
	test_jwt();
	test_base64url();
	sh("rm -rf '%s'", dir);
	CHECK_DONE();
}
