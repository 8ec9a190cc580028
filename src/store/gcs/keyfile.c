/* Google JSON key files (keyfile.h). A token endpoint over plain http is
 * accepted only on the loopback interface (an emulator or a test's fake):
 * the signed assertion or refresh token sent there is a credential. */
#include "store/gcs/keyfile.h"

#include <tether/backend.h>

#include "util/fail.h"
#include "util/fsutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A key file is a few kilobytes; anything much larger is not one. */
#define MAX_KEYFILE_BYTES (1u << 20)

static int field(const json_t *root, const char *name, int required, const char *where, char **out)
{
	const json_t *v = json_object_get(root, name);
	if (!v && !required)
		return 0;
	const char *s = json_string_value(v);
	if (!s || !*s)
		return tether_error_set(TETHER_EAUTH, "%s: \"%s\" %s", where, name,
		                        v ? "must be a non-empty string" : "is missing");
	if (!(*out = strdup(s)))
		return tt_fail_oom();
	return 0;
}

/* Overwrite a secret's text before free() hands its memory back. */
static void wipe(char *s)
{
	volatile char *v = s;
	for (size_t i = 0; s && v[i]; i++)
		v[i] = 0;
}

static int host_is_loopback(const char *hostport)
{
	static const char *const LOOPBACK[] = {"127.0.0.1", "localhost", "[::1]"};
	for (size_t i = 0; i < sizeof LOOPBACK / sizeof LOOPBACK[0]; i++) {
		size_t n = strlen(LOOPBACK[i]);
		if (strncmp(hostport, LOOPBACK[i], n) == 0 && (hostport[n] == '\0' || hostport[n] == ':' ||
		                                                hostport[n] == '/'))
			return 1;
	}
	return 0;
}

static int check_token_uri(const char *uri, const char *where)
{
	if (strncmp(uri, "https://", 8) == 0 && uri[8])
		return 0;
	if (strncmp(uri, "http://", 7) == 0 && host_is_loopback(uri + 7))
		return 0;
	return tether_error_set(TETHER_EAUTH, "%s: token_uri %s must be an https:// URL (plain http only to "
	                        "127.0.0.1, localhost or [::1])", where, uri);
}

static int parse_service_account(const json_t *root, struct tt_gcs_keyfile *k)
{
	char *pem = NULL;
	int rc = field(root, "client_email", 1, k->where, &k->client_email);
	if (!rc)
		rc = field(root, "token_uri", 1, k->where, &k->token_uri);
	if (!rc)
		rc = field(root, "private_key_id", 0, k->where, &k->private_key_id);
	if (!rc)
		rc = field(root, "private_key", 1, k->where, &pem);
	if (!rc) {
		char why[160];
		k->has_key = 1;
		if (tt_rsa_key_from_pem(pem, &k->key, why, sizeof why) != 0)
			rc = tether_error_set(TETHER_EAUTH, "%s: private_key: %s", k->where, why);
		wipe(pem);
	}
	free(pem);
	return rc;
}

static int parse_authorized_user(const json_t *root, struct tt_gcs_keyfile *k)
{
	int rc = field(root, "client_id", 1, k->where, &k->client_id);
	if (!rc)
		rc = field(root, "client_secret", 1, k->where, &k->client_secret);
	if (!rc)
		rc = field(root, "refresh_token", 1, k->where, &k->refresh_token);
	if (!rc)
		rc = field(root, "token_uri", 0, k->where, &k->token_uri);
	if (!rc && !k->token_uri && !(k->token_uri = strdup(TT_GCS_DEFAULT_TOKEN_URI)))
		rc = tt_fail_oom();
	return rc;
}

int tt_gcs_keyfile_parse(const char *text, const char *where, struct tt_gcs_keyfile *k)
{
	memset(k, 0, sizeof *k);
	if (!(k->where = strdup(where)))
		return tt_fail_oom();
	json_error_t err;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		/* jansson's text may quote the input: only its position is said. */
		return tether_error_set(TETHER_ECONFIG, "%s:%d:%d: not a JSON key file", where, err.line, err.column);
	int rc = 0;
	const char *type = json_string_value(json_object_get(root, "type"));
	if (!json_is_object(root))
		rc = tether_error_set(TETHER_ECONFIG, "%s: not a JSON object", where);
	else if (type && strcmp(type, "service_account") == 0) {
		k->type = TT_GCS_SERVICE_ACCOUNT;
		rc = parse_service_account(root, k);
	} else if (type && strcmp(type, "authorized_user") == 0) {
		k->type = TT_GCS_AUTHORIZED_USER;
		rc = parse_authorized_user(root, k);
	} else
		rc = tether_error_set(TETHER_EAUTH, "%s: \"type\" is %s%s%s; tether reads \"service_account\" and "
		                      "\"authorized_user\" keys", where, type ? "\"" : "", type ? type : "missing",
		                      type ? "\"" : "");
	if (!rc)
		rc = check_token_uri(k->token_uri, where);
	json_decref(root);
	return rc;
}

int tt_gcs_keyfile_read(const char *path, const char *what, struct tt_gcs_keyfile *k)
{
	memset(k, 0, sizeof *k);
	char *where = tt_strdupf("%s %s", what, path);
	if (!where)
		return tt_fail_oom();
	errno = 0;
	char *text = tt_read_small(path, MAX_KEYFILE_BYTES);
	int rc;
	if (!text)
		rc = errno == ENOENT ? tether_error_set(TETHER_ENOTFOUND, "%s: no such file", where)
		                     : tether_error_set(TETHER_EAUTH, "%s: cannot be read (it must be a readable regular "
		                                        "file of at most 1 MiB)", where);
	else
		rc = tt_gcs_keyfile_parse(text, where, k);
	wipe(text);
	free(text);
	free(where);
	return rc;
}

void tt_gcs_keyfile_clear(struct tt_gcs_keyfile *k)
{
	if (k->has_key)
		tt_rsa_key_clear(&k->key);
	free(k->where);
	free(k->token_uri);
	free(k->client_email);
	free(k->private_key_id);
	free(k->client_id);
	free(k->client_secret);
	free(k->refresh_token);
	memset(k, 0, sizeof *k);
}
