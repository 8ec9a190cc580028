/* A Google JSON credentials file, as `gcloud` and the IAM console write
 * them: "type" service_account (client_email, private_key, token_uri,
 * private_key_id) or authorized_user (client_id, client_secret,
 * refresh_token, optionally token_uri). Its text is a secret: messages
 * name the file and the field, never a value. */
#ifndef TT_STORE_GCS_KEYFILE_H
#define TT_STORE_GCS_KEYFILE_H

#include "store/gcs/rsa_key.h"

#include <jansson.h>

enum tt_gcs_key_type { TT_GCS_SERVICE_ACCOUNT, TT_GCS_AUTHORIZED_USER };

struct tt_gcs_keyfile {
	enum tt_gcs_key_type type;
	char *where;     /* "GOOGLE_APPLICATION_CREDENTIALS file /path", for messages */
	char *token_uri; /* where tokens are asked for */
	/* service_account */
	char *client_email;
	char *private_key_id; /* NULL when the file has none */
	struct tt_rsa_key key;
	int has_key;
	/* authorized_user */
	char *client_id;
	char *client_secret;
	char *refresh_token;
};

/* Google's token endpoint, for an authorized_user file without token_uri. */
#define TT_GCS_DEFAULT_TOKEN_URI "https://oauth2.googleapis.com/token"

/* Parse the JSON text of a key; `where` names it in messages. 0, or
 * TETHER_EAUTH (a key tether cannot use: wrong type, a field missing, a
 * bad private key) / TETHER_ECONFIG (not JSON: line and column) with the
 * message set. out is cleared by tt_gcs_keyfile_clear either way. */
int tt_gcs_keyfile_parse(const char *text, const char *where, struct tt_gcs_keyfile *out);
/* Read and parse the file at path; what ("GOOGLE_APPLICATION_CREDENTIALS
 * file", "the service_account_path file") names it with its path. */
int tt_gcs_keyfile_read(const char *path, const char *what, struct tt_gcs_keyfile *out);
void tt_gcs_keyfile_clear(struct tt_gcs_keyfile *k);

#endif
