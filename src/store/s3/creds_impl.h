/* Inside the AWS credential chain (creds.h): a source of credentials, and
 * the pieces that fetch temporary ones, one file each: creds_sts.c (STS
 * AssumeRole and AssumeRoleWithWebIdentity), creds_metadata.c (the ECS
 * container endpoint and EC2 instance metadata), over creds_http.c (one
 * request, retried, its failure named). */
#ifndef TETHER_STORE_S3_CREDS_IMPL_H
#define TETHER_STORE_S3_CREDS_IMPL_H

#include "store/s3/creds.h"

#include <stddef.h>

/* Less than this many seconds left: fetch again (creds.h). */
#define TT_AWS_REFRESH_BEFORE 300

enum tt_aws_source_kind {
	TT_AWS_STATIC,       /* keys as given: options, environment, a profile */
	TT_AWS_ASSUME_ROLE,  /* STS AssumeRole, signed with base's credentials */
	TT_AWS_WEB_IDENTITY, /* STS AssumeRoleWithWebIdentity with a token file */
	TT_AWS_ECS,          /* the container credentials endpoint */
	TT_AWS_IMDS,         /* EC2 instance metadata, IMDSv2 */
};

struct tt_aws_source {
	enum tt_aws_source_kind kind;
	char *name;                 /* what creds.source says: "environment", "profile dev", ... */
	struct tt_aws_creds cached; /* the last credentials fetched (or the static ones) */
	/* STS: */
	char *role_arn;
	char *session_name;
	char *external_id;          /* AssumeRole's ExternalId; NULL: none */
	char *duration;             /* AssumeRole's DurationSeconds; NULL: STS's default */
	char *token_file;           /* web identity: read at each fetch (it rotates) */
	char *sts_endpoint;         /* https://sts.REGION.amazonaws.com, or as configured */
	char *region;
	struct tt_aws_source *base; /* AssumeRole: the source whose credentials sign it */
	/* ECS (the credentials' URL) and IMDS (the service's address): */
	char *url;
	char *auth_token;           /* ECS: AWS_CONTAINER_AUTHORIZATION_TOKEN */
	char *auth_token_file;      /* ECS: ..._TOKEN_FILE, read at each fetch (it rotates) */
};

struct tt_http;
struct tt_http_request;
struct tt_http_response;

/* One request, attempted again while tt_http_retryable says so, up to the
 * client's max_attempts. 0 when a response arrived (whatever its status;
 * resp filled); else the error, its message prefixed with what ("ECS
 * container endpoint"). */
int tt_aws_http_call(struct tt_http *h, const struct tt_http_request *req, const char *what,
                     struct tt_http_response *resp);

/* " CODE: MESSAGE" of a service's error answer into out (n bytes), ""
 * when code is NULL; what the server wrote, cut short, and with control
 * characters shown as '?' (a hostile server must not drive the
 * terminal through an error message). */
void tt_aws_server_words(char *out, size_t n, const char *code, const char *msg);

/* Fetch s's credentials into *out (zeroed first); creds_sts.c. base: the
 * credentials that sign an AssumeRole. */
int tt_aws_sts_assume_role(struct tt_http *h, const struct tt_aws_source *s, const struct tt_aws_creds *base,
                           struct tt_aws_creds *out);
int tt_aws_sts_web_identity(struct tt_http *h, const struct tt_aws_source *s, struct tt_aws_creds *out);
/* creds_metadata.c, on a client with short timeouts. */
int tt_aws_ecs_fetch(struct tt_http *h, const struct tt_aws_source *s, struct tt_aws_creds *out);
int tt_aws_imds_fetch(struct tt_http *h, const struct tt_aws_source *s, struct tt_aws_creds *out);
/* Is url one the ECS full-URI variable may name? https to any host; plain
 * http only to a loopback address or the container agent's
 * (169.254.170.2, 169.254.170.23, fd00:ec2::23), as AWS's SDKs allow. */
int tt_aws_ecs_url_allowed(const char *url);

/* Parse an ISO 8601 UTC time ("2026-12-07T18:00:00Z", fractions and a
 * "+00:00" offset allowed) as unix seconds; -1 when it is not one. */
int64_t tt_aws_parse_time(const char *s);

/* Fill *out from the strings of an answer (copied); expiration may be
 * NULL (no expiry). TETHER_EAUTH naming what when one is missing or the
 * expiration is not a time. */
int tt_aws_creds_from(const char *what, const char *key_id, const char *secret, const char *token,
                      const char *expiration, struct tt_aws_creds *out);

/* Free a string that held a secret, wiping it first. NULL is fine. */
void tt_aws_free_secret(char *s);
/* A token file's contents without trailing whitespace (malloc'd; free it
 * with tt_aws_free_secret), read anew at each fetch because platforms
 * rotate them; NULL with TETHER_EAUTH "WHAT: cannot read the token file
 * PATH: why" when it is missing, not a regular file of at most max
 * bytes, or empty. */
char *tt_aws_read_token(const char *what, const char *path, size_t max);

/* Copy a's strings into *out (zeroed first). */
int tt_aws_creds_copy(const struct tt_aws_creds *a, struct tt_aws_creds *out);

#endif
