/* Credentials for Cloud Storage, found as Google's client libraries find
 * Application Default Credentials, and never in a committed file (the
 * store options come from .tether/secrets.toml):
 *   1. the store option service_account_key (a JSON key's text) or
 *      service_account_path (a JSON key file);
 *   2. GOOGLE_APPLICATION_CREDENTIALS, a JSON key file;
 *   3. gcloud's application_default_credentials.json (in $CLOUDSDK_CONFIG,
 *      else ~/.config/gcloud);
 *   4. the GCE metadata server (GCE_METADATA_HOST, else
 *      metadata.google.internal; header Metadata-Flavor: Google), unless
 *      NO_GCE_CHECK=true; asked with short timeouts, so a machine without
 *      one fails in seconds, naming everything tried.
 * A key file is a service_account (a JWT signed with its RSA key,
 * exchanged at its token_uri) or an authorized_user (its refresh token
 * exchanged at token_uri, else Google's). With STORAGE_EMULATOR_HOST only
 * the options are read, as Google's clients do: an emulator needs none.
 *
 * Tokens are cached and fetched again when less than five minutes of
 * their life remain, so a long command does not fail mid-write. */
#ifndef TT_STORE_GCS_AUTH_H
#define TT_STORE_GCS_AUTH_H

#include "store/http/http.h"

#include <jansson.h>

struct tt_gcs_auth;

/* Find the source (reading files, contacting nothing). *out NULL: no
 * credentials are to be sent (an emulator). http: the store's client
 * options, for the token endpoint's timeouts. */
int tt_gcs_auth_new(const json_t *options, int emulator, const struct tt_http_options *http,
                    struct tt_gcs_auth **out);
/* A current access token (malloc'd in *token), fetched first when none is
 * cached, when the cached one expires within five minutes, or when renew
 * is set (the server refused it). Thread-safe. */
int tt_gcs_auth_token(struct tt_gcs_auth *a, int renew, char **token);
/* Where the credentials come from, for messages ("service account
 * x@y from GOOGLE_APPLICATION_CREDENTIALS file /k.json"). */
const char *tt_gcs_auth_source(const struct tt_gcs_auth *a);
void tt_gcs_auth_free(struct tt_gcs_auth *a);

#endif
