/* PEM -> DER -> Nettle RSA key. PKCS#8 wraps the PKCS#1 key Nettle reads
 * (rsa_keypair_from_der) in a PrivateKeyInfo:
 *   SEQUENCE { INTEGER version, SEQUENCE { OID algorithm, params },
 *              OCTET STRING privateKey, [0] attributes OPTIONAL }
 * so the wrapper is walked with Nettle's asn1 iterator, the algorithm
 * checked to be rsaEncryption, and the octet string handed on. */
#include "store/gcs/rsa_key.h"

#include <nettle/asn1.h>
#include <nettle/base64.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keys larger than this are refused: a hostile key file must not make
 * tether do arbitrarily long arithmetic. Google issues 2048-bit keys. */
#define MAX_KEY_BITS 8192
/* Below this an RS256 signature's padding does not fit. */
#define MIN_KEY_BITS 1024

/* The DER content of OID 1.2.840.113549.1.1.1, rsaEncryption. */
static const uint8_t RSA_ENCRYPTION_OID[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01};

enum pem_kind { PEM_PKCS8, PEM_PKCS1 };

static int fail(char *why, size_t n, const char *msg)
{
	snprintf(why, n, "%s", msg);
	return -1;
}

/* The base64 body between "-----BEGIN <label>-----" and its END line. */
static int pem_body(const char *pem, const char **body, size_t *len, enum pem_kind *kind, char *why, size_t n)
{
	static const struct {
		const char *label;
		enum pem_kind kind;
	} LABELS[] = {{"PRIVATE KEY", PEM_PKCS8}, {"RSA PRIVATE KEY", PEM_PKCS1}};
	if (strstr(pem, "-----BEGIN ENCRYPTED PRIVATE KEY-----") || strstr(pem, "Proc-Type: 4,ENCRYPTED"))
		return fail(why, n, "encrypted private keys are not supported");
	for (size_t i = 0; i < sizeof LABELS / sizeof LABELS[0]; i++) {
		char begin[64], end[64];
		snprintf(begin, sizeof begin, "-----BEGIN %s-----", LABELS[i].label);
		snprintf(end, sizeof end, "-----END %s-----", LABELS[i].label);
		const char *b = strstr(pem, begin);
		if (!b)
			continue;
		b += strlen(begin);
		const char *e = strstr(b, end);
		if (!e)
			return fail(why, n, "the PEM private key has no END line");
		*body = b;
		*len = (size_t)(e - b);
		*kind = LABELS[i].kind;
		return 0;
	}
	return fail(why, n, "no PEM private key (\"-----BEGIN PRIVATE KEY-----\")");
}

/* Nettle's decoder skips the line breaks and spaces between the lines. */
static int base64_to_der(const char *body, size_t len, uint8_t **der, size_t *der_len, char *why, size_t n)
{
	uint8_t *out = malloc(BASE64_DECODE_LENGTH(len) + 1);
	if (!out)
		return fail(why, n, "out of memory");
	struct base64_decode_ctx ctx;
	base64_decode_init(&ctx);
	size_t got = BASE64_DECODE_LENGTH(len) + 1;
	if (!base64_decode_update(&ctx, &got, out, len, body) || !base64_decode_final(&ctx) || got == 0) {
		free(out);
		return fail(why, n, "the PEM private key is not valid base64");
	}
	*der = out;
	*der_len = got;
	return 0;
}

/* The PKCS#1 RSAPrivateKey inside a PKCS#8 PrivateKeyInfo. */
static int unwrap_pkcs8(const uint8_t *der, size_t len, const uint8_t **inner, size_t *inner_len, char *why,
                        size_t n)
{
	struct asn1_der_iterator i, alg;
	uint32_t version;
	if (asn1_der_iterator_first(&i, len, der) != ASN1_ITERATOR_CONSTRUCTED || i.type != ASN1_SEQUENCE ||
	    asn1_der_decode_constructed_last(&i) != ASN1_ITERATOR_PRIMITIVE || i.type != ASN1_INTEGER ||
	    !asn1_der_get_uint32(&i, &version) || version > 1)
		return fail(why, n, "the private key is not a PKCS#8 PrivateKeyInfo");
	if (asn1_der_iterator_next(&i) != ASN1_ITERATOR_CONSTRUCTED || i.type != ASN1_SEQUENCE ||
	    asn1_der_decode_constructed(&i, &alg) != ASN1_ITERATOR_PRIMITIVE || alg.type != ASN1_IDENTIFIER)
		return fail(why, n, "the private key has no algorithm identifier");
	if (alg.length != sizeof RSA_ENCRYPTION_OID || memcmp(alg.data, RSA_ENCRYPTION_OID, alg.length) != 0)
		return fail(why, n, "the private key is not an RSA key (RS256 needs one)");
	if (asn1_der_iterator_next(&i) != ASN1_ITERATOR_PRIMITIVE || i.type != ASN1_OCTETSTRING)
		return fail(why, n, "the private key has no key octets");
	*inner = i.data;
	*inner_len = i.length;
	return 0;
}

int tt_rsa_key_from_pem(const char *pem, struct tt_rsa_key *key, char *why, size_t n)
{
	rsa_public_key_init(&key->pub);
	rsa_private_key_init(&key->priv);
	const char *body;
	size_t body_len, der_len;
	enum pem_kind kind;
	uint8_t *der;
	if (pem_body(pem, &body, &body_len, &kind, why, n) || base64_to_der(body, body_len, &der, &der_len, why, n))
		return -1;
	const uint8_t *rsa = der;
	size_t rsa_len = der_len;
	int rc = kind == PEM_PKCS8 ? unwrap_pkcs8(der, der_len, &rsa, &rsa_len, why, n) : 0;
	/* rsa_keypair_from_der also checks the key's parts and prepares it. */
	if (rc == 0 && !rsa_keypair_from_der(&key->pub, &key->priv, MAX_KEY_BITS, rsa_len, rsa))
		rc = fail(why, n, "the RSA private key is malformed (or larger than 8192 bits)");
	if (rc == 0 && key->pub.size * 8 < MIN_KEY_BITS)
		rc = fail(why, n, "the RSA private key is shorter than 1024 bits");
	/* The DER held the secret key: wipe it before it goes back to malloc. */
	volatile uint8_t *wipe = der;
	for (size_t k = 0; k < der_len; k++)
		wipe[k] = 0;
	free(der);
	return rc;
}

void tt_rsa_key_clear(struct tt_rsa_key *key)
{
	rsa_public_key_clear(&key->pub);
	rsa_private_key_clear(&key->priv);
}
