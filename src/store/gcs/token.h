/* The token endpoints: OAuth 2.0's (a service account's signed assertion,
 * RFC 7523, or an authorized user's refresh token) and the GCE metadata
 * server's. Each answers {"access_token", "expires_in", ...}. */
#ifndef TT_STORE_GCS_TOKEN_H
#define TT_STORE_GCS_TOKEN_H

#include "store/gcs/keyfile.h"
#include "store/http/http.h"

#include <stdint.h>

/* What a service account's token may do: read and write objects. */
#define TT_GCS_SCOPE "https://www.googleapis.com/auth/devstorage.read_write"

struct tt_gcs_token {
	char *access_token; /* malloc'd */
	int64_t expires_in; /* seconds from when it was asked for */
};

/* Exchange the key file's credential at its token_uri. TETHER_EAUTH when
 * the endpoint refuses it (400, 401, 403: naming the endpoint, the key
 * file and OAuth's error), ETRANSIENT when it is unreachable. */
int tt_gcs_token_from_key(struct tt_http *h, const struct tt_gcs_keyfile *k, struct tt_gcs_token *out);
/* The default service account's token from the metadata server at host
 * ("host[:port]"). */
int tt_gcs_token_from_metadata(struct tt_http *h, const char *host, struct tt_gcs_token *out);

#endif
