/* AWS credentials and region, resolved as AWS's own tools resolve them,
 * for the S3 store (and anything else that signs AWS requests). Never from
 * a committed file: the options handed in come from .tether/secrets.toml
 * and the environment only (the engine refuses secrets in committed files).
 *
 * The chain, first match wins:
 *   1. literal keys in the options (access_key_id, secret_access_key,
 *      session_token);
 *   2. role_arn in the options: STS AssumeRole signed with the credentials
 *      the rest of the chain finds (1, then 3-7);
 *   3. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 *      AWS_SESSION_TOKEN;
 *   4. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 *      (AWS_ROLE_SESSION_NAME), or a profile's web_identity_token_file +
 *      role_arn, through STS AssumeRoleWithWebIdentity (unsigned);
 *   5. the shared files' profile (options.profile, else AWS_PROFILE, else
 *      AWS_DEFAULT_PROFILE, else "default"): AWS_SHARED_CREDENTIALS_FILE
 *      (~/.aws/credentials) and AWS_CONFIG_FILE (~/.aws/config, "[profile
 *      NAME]" sections): its role_arn (over source_profile,
 *      credential_source or web_identity_token_file), else its keys. A
 *      profile whose credentials would come from credential_process is
 *      refused, naming it and its file: tether never runs a program named
 *      in configuration (nor logs in by SSO, nor asks for an MFA code);
 *   6. the ECS container endpoint: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
 *      (against 169.254.170.2) or AWS_CONTAINER_CREDENTIALS_FULL_URI, with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE);
 *   7. EC2 instance metadata, IMDSv2 (a PUT for a session token, then the
 *      role's credentials), unless AWS_EC2_METADATA_DISABLED=true;
 *      AWS_EC2_METADATA_SERVICE_ENDPOINT overrides the address. IMDSv1's
 *      tokenless requests are never made.
 * A profile named in the options skips 3 and 4 (as an explicit --profile
 * does for AWS's tools). Nothing found: TETHER_EAUTH, naming what was
 * tried. A service's refusal names the source, the endpoint and its
 * status and code, never a secret.
 *
 * Temporary credentials (2, 4, 6, 7) carry an expiry and are fetched again
 * when less than five minutes remain, so a long command does not fail
 * mid-write (a failed refresh keeps credentials still good for a minute).
 * The ECS and EC2 services are asked on a client of the provider's own,
 * plain http, 1 s connect, 2 attempts (AWS_METADATA_SERVICE_TIMEOUT,
 * AWS_METADATA_SERVICE_NUM_ATTEMPTS). STS's endpoint is
 * AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else the profile's, else
 * https://sts.REGION.amazonaws.com. */
#ifndef TETHER_STORE_S3_CREDS_H
#define TETHER_STORE_S3_CREDS_H

#include <jansson.h>
#include <stdint.h>

struct tt_http;

struct tt_aws_creds {
	char *access_key_id;
	char *secret_access_key;
	char *session_token; /* NULL when none */
	int64_t expires_at;  /* unix seconds; 0: does not expire */
	const char *source;  /* "options", "environment", "web identity", "profile NAME", ... (static or owned by the provider) */
};

struct tt_aws_provider;

/* Resolve the chain's source now (the first that has something), reading
 * files and the environment; a temporary source is asked for keys at
 * once. options: the store options (may be NULL). http: a client for the
 * STS requests (borrowed; outlives the provider), or NULL: the provider
 * makes its own (allow_http, connect_timeout and timeout from the
 * options). */
int tt_aws_provider_new(const json_t *options, struct tt_http *http, struct tt_aws_provider **out);
/* The current credentials, refreshed first when they expire within five
 * minutes; a copy the caller frees with tt_aws_creds_clear. Thread-safe. */
int tt_aws_provider_get(struct tt_aws_provider *p, struct tt_aws_creds *out);
void tt_aws_provider_free(struct tt_aws_provider *p);
void tt_aws_creds_clear(struct tt_aws_creds *c);

/* The region: options.region, AWS_REGION, AWS_DEFAULT_REGION, the profile's
 * region in the config file, else "us-east-1". malloc'd. */
char *tt_aws_region(const json_t *options);
/* The endpoint for a service ("s3", "sts") as AWS's tools find it:
 * options.endpoint_url (for s3), AWS_ENDPOINT_URL_<SERVICE>,
 * AWS_ENDPOINT_URL, the profile's services section ("[services NAME]",
 * "<service> =" then an indented endpoint_url), the profile's
 * endpoint_url; all but the options' skipped under
 * AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true. NULL when none (the caller
 * then uses AWS's own). The region's and the endpoint's settings come from
 * the config file only, as for AWS's tools. malloc'd. */
char *tt_aws_endpoint(const json_t *options, const char *service);

#endif
