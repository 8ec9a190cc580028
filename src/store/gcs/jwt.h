/* The JSON Web Token a service account signs to ask Google's token
 * endpoint for an access token (RFC 7523's jwt-bearer grant): RS256, that
 * is RSASSA-PKCS1-v1_5 over SHA-256 (RFC 7518 3.3), base64url without
 * padding (RFC 7515). */
#ifndef TT_STORE_GCS_JWT_H
#define TT_STORE_GCS_JWT_H

#include "store/gcs/rsa_key.h"

#include <stdint.h>

/* What the assertion claims (Google's service-account flow). */
struct tt_jwt_claims {
	const char *key_id;   /* "kid" (the key file's private_key_id); NULL: none */
	const char *issuer;   /* "iss": the service account's client_email */
	const char *scope;    /* "scope": what the token may do */
	const char *audience; /* "aud": the token endpoint (token_uri) */
	int64_t issued_at;    /* "iat", unix seconds; "exp" is an hour later */
};

/* header.claims.signature, malloc'd in *out. 0, or -1 with why in why[n]. */
int tt_jwt_sign_rs256(const struct tt_rsa_key *key, const struct tt_jwt_claims *claims, char **out, char *why,
                      size_t n);

/* s as base64url without padding, malloc'd (NULL: out of memory). */
char *tt_base64url(const uint8_t *s, size_t len);

#endif
