/* An RSA private key from the PEM text a Google service-account key
 * carries ("private_key": PKCS#8, "-----BEGIN PRIVATE KEY-----"), or the
 * older PKCS#1 form ("-----BEGIN RSA PRIVATE KEY-----"), parsed with
 * Nettle's DER reader. The key text is a secret: no message quotes it. */
#ifndef TT_STORE_GCS_RSA_KEY_H
#define TT_STORE_GCS_RSA_KEY_H

#include <nettle/rsa.h>

#include <stddef.h>

struct tt_rsa_key {
	struct rsa_public_key pub;
	struct rsa_private_key priv;
};

/* Parse pem into key (initialised here; tt_rsa_key_clear frees it, also
 * after a failure). 0, or -1 with why ("no PEM private key", "encrypted
 * keys are not supported", "not an RSA key", ...) in why[n]. */
int tt_rsa_key_from_pem(const char *pem, struct tt_rsa_key *key, char *why, size_t n);
void tt_rsa_key_clear(struct tt_rsa_key *key);

#endif
