/* Where a REST catalog's requests go and with which credentials: the
 * catalog's properties read and checked, the URLs of its endpoints, and the
 * text of its error answers. No I/O: catalog_rest.c makes the requests.
 *
 * Properties (pyiceberg's names). Committed (tether.toml, the locator):
 * only `type`, `warehouse`, `name`. From .tether/secrets.toml only:
 *   uri                the catalog's base URL (http:// needs allow_http)
 *   token              a bearer token, sent as it is
 *   credential         "client_id:client_secret" (or a secret alone) for
 *                      the OAuth2 client-credentials flow
 *   scope              the token's scope, default PRINCIPAL_ROLE:ALL
 *   oauth2-server-uri  the token endpoint, default {uri}/v1/oauth/tokens
 *   prefix             the path prefix, when the server's /v1/config
 *                      gives none
 *   warehouse          as committed; sent to /v1/config
 *   allow_http         true: plain http:// (a server on this machine)
 * Keys with a '.' (FileIO settings such as s3.endpoint) are left to the
 * file layer; any other key is refused, so a misspelt one is not silently
 * ignored. Credentials go only to `uri` and `oauth2-server-uri`, both from
 * the same secrets entry: nothing the server answers (its /v1/config
 * overrides) can send them elsewhere. */
#ifndef TETHER_ICEBERG_REST_ENDPOINT_H
#define TETHER_ICEBERG_REST_ENDPOINT_H

#include <jansson.h>
#include <stddef.h>

struct tt_http_response;

struct ib_rest_settings {
	char *catalog;    /* the catalog's name, for messages */
	char *base;       /* uri without a trailing '/' */
	char *prefix;     /* path segment(s) after /v1/, no leading or trailing '/'; NULL: none */
	char *warehouse;  /* NULL: none */
	char *token;      /* NULL: none */
	char *client_id;  /* NULL: the credential is a secret alone */
	char *client_secret; /* NULL: no client-credentials flow */
	char *scope;      /* never NULL once read */
	char *oauth2_uri; /* never NULL once read */
	int allow_http;
};

/* Read and check props (committed) and secrets (may be NULL). Returns 0 or
 * TETHER_ECONFIG naming the catalog and the key. */
int ib_rest_settings_read(const json_t *props, const json_t *secrets, const char *name,
                          struct ib_rest_settings *out);
void ib_rest_settings_free(struct ib_rest_settings *s);

/* Apply a /v1/config answer ({"defaults": {...}, "overrides": {...}}):
 * precedence defaults < the client's settings < overrides, as the REST spec
 * says, for `prefix` (and `warehouse`, which the client does not re-send).
 * Keys that would move credentials (uri, token, credential,
 * oauth2-server-uri) are ignored. A malformed answer is TETHER_EIO. */
int ib_rest_settings_apply_config(struct ib_rest_settings *s, const json_t *config);

/* "{base}/v1/config[?warehouse=...]", malloc'd. */
char *ib_rest_config_url(const struct ib_rest_settings *s);
/* "{base}/v1/{prefix/}namespaces/{ns}/tables/{table}", malloc'd in *url;
 * TETHER_EUSAGE for an empty namespace level or table name. */
int ib_rest_table_url(const struct ib_rest_settings *s, const char *ns, const char *table, char **url);
/* A namespace ("a.b.c", levels split at '.') as the REST path spells it:
 * each level percent-encoded, levels joined by the unit separator 0x1F,
 * itself percent-encoded ("a%1Fb%1Fc"). NULL on an empty level or no
 * memory (errno EINVAL or ENOMEM). */
char *ib_rest_namespace_path(const char *ns);
/* The namespace's levels as a JSON array of strings (new reference). */
json_t *ib_rest_namespace_levels(const char *ns);

/* The server's reason from an error answer, one line: "TYPE: message"
 * from the REST ErrorModel ({"error": {"message", "type", "code"}}),
 * else the start of the body; control characters replaced, at most 300
 * bytes. Writes into buf (size n). */
void ib_rest_error_text(const struct tt_http_response *resp, char *buf, size_t n);
/* The error's "type" ("CommitFailedException"), or "" when none. */
void ib_rest_error_type(const struct tt_http_response *resp, char *buf, size_t n);

#endif
