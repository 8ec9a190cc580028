/* A REST catalog's credentials on the wire: a bearer token from
 * secrets.toml as it is, or one fetched with the OAuth2 client-credentials
 * flow (POST {oauth2-server-uri} grant_type=client_credentials, client_id,
 * client_secret, scope), cached, fetched again when it expires (or within
 * a tenth of its life, at most a minute, of expiring) and once when the
 * catalog answers 401. Tokens go only to the settings' own hosts. */
#ifndef TETHER_ICEBERG_REST_OAUTH2_H
#define TETHER_ICEBERG_REST_OAUTH2_H

#include <stddef.h>

struct ib_rest_settings;
struct tt_http;
struct ib_rest_auth;

/* s and http must outlive the result. *out is NULL-free even with no
 * credentials (then requests carry no Authorization header). */
int ib_rest_auth_new(const struct ib_rest_settings *s, struct tt_http *http, struct ib_rest_auth **out);
void ib_rest_auth_free(struct ib_rest_auth *a);

/* The Authorization header's value ("Bearer ..."), malloc'd, or NULL in
 * *out for none. renew: the catalog refused the last token; fetch a new
 * one (client credentials only). Errors: TETHER_EAUTH (the token endpoint
 * refused the credential), TETHER_ETRANSIENT, TETHER_EIO. */
int ib_rest_auth_header(struct ib_rest_auth *a, int renew, char **out);
/* Can a refused token be replaced (the client-credentials flow)? */
int ib_rest_auth_renewable(const struct ib_rest_auth *a);

/* An OAuth2 token answer: access_token (printable ASCII without spaces,
 * at most 8 KiB) and expires_in (seconds, optional: -1 when absent).
 * Returns 0, or -1 when the answer is malformed. */
int ib_rest_token_parse(const char *body, size_t len, char **token, long long *expires_in);

#endif
