/* The AWS credential chain (creds.h): which source answers, decided once
 * when the provider is made, then its credentials, fetched again before
 * they expire. The order and the rules are AWS's own tools' (botocore's
 * and the AWS CLI's), so a user's setup that works for `aws s3 ls` works
 * for tether; where they would run a program (credential_process) tether
 * refuses instead. */
#include "store/s3/creds_impl.h"

#include "store/http/http.h"
#include "store/s3/awsfiles.h"
#include "util/fsutil.h"

#include <tether/backend.h> /* tether_error_set */

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct tt_aws_provider {
	pthread_mutex_t lock;        /* one fetch at a time; guards every source's cached */
	struct tt_http *http;        /* STS: the caller's client, or own_http */
	struct tt_http *own_http;    /* made when the caller gave none */
	struct tt_http *meta_http;   /* ECS and IMDS: short timeouts, plain http */
	struct tt_aws_source *src;
};

/* What the chain tried, for the message when nothing answers. */
struct tried {
	char text[1024];
	size_t len;
};

static void tried_add(struct tried *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tried_add(struct tried *t, const char *fmt, ...)
{
	if (t->len >= sizeof t->text - 1)
		return;
	if (t->len)
		t->len += (size_t)snprintf(t->text + t->len, sizeof t->text - t->len, "; ");
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->text + t->len, sizeof t->text - t->len, fmt, ap);
	va_end(ap);
	t->len += n > 0 ? (size_t)n : 0;
	if (t->len > sizeof t->text - 1)
		t->len = sizeof t->text - 1;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static const char *opt(const json_t *options, const char *name)
{
	const char *v = json_string_value(json_object_get(options, name));
	return v && *v ? v : NULL;
}

void tt_aws_free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

char *tt_aws_read_token(const char *what, const char *path, size_t max)
{
	char *token = tt_read_small(path, max);
	if (!token) {
		if (errno == EIO)
			tether_error_set(TETHER_EAUTH, "%s: cannot read the token file %s: not a regular file of at most %zu "
			                 "bytes", what, path, max);
		else
			tether_error_set(TETHER_EAUTH, "%s: cannot read the token file %s: %s", what, path, strerror(errno));
		return NULL;
	}
	size_t n = strlen(token);
	while (n && isspace((unsigned char)token[n - 1]))
		token[--n] = '\0';
	if (n == 0) {
		free(token);
		tether_error_set(TETHER_EAUTH, "%s: the token file %s is empty", what, path);
		return NULL;
	}
	return token;
}

void tt_aws_creds_clear(struct tt_aws_creds *c)
{
	if (!c)
		return;
	free(c->access_key_id);
	tt_aws_free_secret(c->secret_access_key);
	tt_aws_free_secret(c->session_token);
	memset(c, 0, sizeof *c);
}

int tt_aws_creds_copy(const struct tt_aws_creds *a, struct tt_aws_creds *out)
{
	memset(out, 0, sizeof *out);
	out->access_key_id = strdup(a->access_key_id);
	out->secret_access_key = strdup(a->secret_access_key);
	out->session_token = a->session_token ? strdup(a->session_token) : NULL;
	out->expires_at = a->expires_at;
	out->source = a->source;
	if (!out->access_key_id || !out->secret_access_key || (a->session_token && !out->session_token)) {
		tt_aws_creds_clear(out);
		return tether_error_set(TETHER_EIO, "out of memory");
	}
	return 0;
}

int64_t tt_aws_parse_time(const char *s)
{
	struct tm tm = {0};
	int n = 0;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
	                 &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
		return -1;
	const char *p = s + n;
	if (*p == '.') /* fractions of a second: dropped */
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0)
		return -1;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
	    tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	return t == (time_t)-1 ? -1 : (int64_t)t;
}

static void source_free(struct tt_aws_source *s)
{
	if (!s)
		return;
	tt_aws_creds_clear(&s->cached);
	free(s->name);
	free(s->role_arn);
	free(s->session_name);
	free(s->external_id);
	free(s->duration);
	free(s->token_file);
	free(s->sts_endpoint);
	free(s->region);
	source_free(s->base);
	free(s->url);
	tt_aws_free_secret(s->auth_token);
	free(s->auth_token_file);
	free(s);
}

int tt_aws_creds_from(const char *what, const char *key_id, const char *secret, const char *token,
                      const char *expiration, struct tt_aws_creds *out)
{
	memset(out, 0, sizeof *out);
	if (!key_id || !*key_id || !secret || !*secret)
		return tether_error_set(TETHER_EAUTH, "%s: the answer has no %s", what,
		                        !key_id || !*key_id ? "AccessKeyId" : "SecretAccessKey");
	int64_t expires = 0;
	if (expiration && (expires = tt_aws_parse_time(expiration)) <= 0) {
		char shown[64];
		tt_aws_server_words(shown, sizeof shown, expiration, NULL);
		return tether_error_set(TETHER_EAUTH, "%s: the answer's Expiration '%.40s' is not an ISO 8601 UTC time",
		                        what, shown + 1);
	}
	struct tt_aws_creds given = {(char *)key_id, (char *)secret, (char *)(token && *token ? token : NULL),
	                             expires, NULL};
	return tt_aws_creds_copy(&given, out);
}

static struct tt_aws_source *new_source(enum tt_aws_source_kind kind, const char *name)
{
	struct tt_aws_source *s = calloc(1, sizeof *s);
	if (s && !(s->name = strdup(name))) {
		free(s);
		s = NULL;
	}
	if (s)
		s->kind = kind;
	else
		tether_error_set(TETHER_EIO, "out of memory");
	return s;
}

/* A source of fixed keys, named name. */
static int static_source(const char *name, const char *key_id, const char *secret, const char *token,
                         struct tt_aws_source **out)
{
	struct tt_aws_source *s = new_source(TT_AWS_STATIC, name);
	if (!s)
		return TETHER_EIO;
	struct tt_aws_creds given = {(char *)key_id, (char *)secret, (char *)token, 0, NULL};
	if (tt_aws_creds_copy(&given, &s->cached) != 0) {
		source_free(s);
		return TETHER_EIO;
	}
	s->cached.source = s->name;
	*out = s;
	return 0;
}

/* A key pair named by two settings: both, or neither. */
static int key_pair(const char *where, const char *id_name, const char *id, const char *secret_name,
                    const char *secret)
{
	if (!id != !secret)
		return tether_error_set(TETHER_EAUTH, "%s sets %s without %s", where, id ? id_name : secret_name,
		                        id ? secret_name : id_name);
	return 0;
}

/* What resolving the chain needs: the options, the shared files (read
 * once), and the provider, whose clients the temporary sources use. */
struct chain {
	const json_t *options;
	struct tt_aws_provider *p;
	struct tt_aws_files files;
	int have_files;
	struct tried tried;
};

static int chain_files(struct chain *c)
{
	if (c->have_files)
		return 0;
	int rc = tt_aws_files_load(&c->files);
	c->have_files = rc == 0;
	return rc;
}

static char *default_session_name(void)
{
	return tt_strdupf("tether-%lld", (long long)time(NULL));
}

/* A source that asks STS: its endpoint and region, from the options and
 * the environment as AWS's tools find them. */
static struct tt_aws_source *sts_source(struct chain *c, enum tt_aws_source_kind kind, const char *name,
                                        const char *role_arn, const char *session_name)
{
	struct tt_aws_source *s = new_source(kind, name);
	if (!s)
		return NULL;
	s->role_arn = strdup(role_arn);
	s->session_name = session_name ? strdup(session_name) : default_session_name();
	s->region = tt_aws_region(c->options);
	s->sts_endpoint = tt_aws_endpoint(c->options, "sts");
	if (!s->sts_endpoint && s->region)
		s->sts_endpoint = tt_strdupf("https://sts.%s.amazonaws.com", s->region);
	if (!s->role_arn || !s->session_name || !s->region || !s->sts_endpoint) {
		source_free(s);
		tether_error_set(TETHER_EIO, "out of memory");
		return NULL;
	}
	return s;
}

static int web_identity_source(struct chain *c, const char *name, const char *token_file, const char *role_arn,
                               const char *session_name, struct tt_aws_source **out)
{
	struct tt_aws_source *s = sts_source(c, TT_AWS_WEB_IDENTITY, name, role_arn, session_name);
	if (!s || !(s->token_file = strdup(token_file))) {
		source_free(s);
		return tether_error_set(TETHER_EIO, "out of memory");
	}
	*out = s;
	return 0;
}

/* An AssumeRole source over base (taken). */
static int assume_role_source(struct chain *c, const char *name, const char *role_arn, const char *session_name,
                              const char *external_id, const char *duration, struct tt_aws_source *base,
                              struct tt_aws_source **out)
{
	struct tt_aws_source *s = sts_source(c, TT_AWS_ASSUME_ROLE, name, role_arn, session_name);
	if (!s) {
		source_free(base);
		return TETHER_EIO;
	}
	s->base = base;
	if ((external_id && !(s->external_id = strdup(external_id))) || (duration && !(s->duration = strdup(duration)))) {
		source_free(s);
		return tether_error_set(TETHER_EIO, "out of memory");
	}
	*out = s;
	return 0;
}

/* The client for the metadata services: a machine without them must not
 * hang a command, so a second's connect, AWS_METADATA_SERVICE_TIMEOUT
 * (seconds) and _NUM_ATTEMPTS as AWS's tools read them. */
static int meta_client(struct tt_aws_provider *p)
{
	if (p->meta_http)
		return 0;
	const char *t = env("AWS_METADATA_SERVICE_TIMEOUT"), *n = env("AWS_METADATA_SERVICE_NUM_ATTEMPTS");
	long seconds = t ? strtol(t, NULL, 10) : 1, attempts = n ? strtol(n, NULL, 10) : 2;
	if (seconds < 1 || seconds > 60)
		seconds = 1;
	if (attempts < 1 || attempts > 10)
		attempts = 2;
	struct tt_http_options o = {
	    .connect_timeout_ms = seconds * 1000,
	    .timeout_ms = seconds * 2000,
	    .max_attempts = (int)attempts,
	    .allow_http = 1, /* the services are plain http on the host's own network */
	};
	return tt_http_new(&o, &p->meta_http);
}

/* 6. The ECS container endpoint, when the platform names one. */
static int from_ecs(struct chain *c, struct tt_aws_source **out)
{
	const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	if (!rel && !full) {
		tried_add(&c->tried, "ECS container endpoint (no AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor _FULL_URI)");
		return 0;
	}
	if (!rel && !tt_aws_ecs_url_allowed(full))
		return tether_error_set(TETHER_EAUTH,
		                        "AWS_CONTAINER_CREDENTIALS_FULL_URI %s: plain http is allowed only to a loopback "
		                        "address or the container agent's (169.254.170.2, 169.254.170.23)",
		                        full);
	int rc = meta_client(c->p);
	if (rc != 0)
		return rc;
	struct tt_aws_source *s = new_source(TT_AWS_ECS, "ECS container endpoint");
	if (!s)
		return TETHER_EIO;
	s->url = rel ? tt_strdupf("http://169.254.170.2%s%s", rel[0] == '/' ? "" : "/", rel) : strdup(full);
	const char *tok = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	const char *tokfile = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	if (!s->url || (tokfile && !(s->auth_token_file = strdup(tokfile))) ||
	    (!tokfile && tok && !(s->auth_token = strdup(tok)))) {
		source_free(s);
		return tether_error_set(TETHER_EIO, "out of memory");
	}
	*out = s;
	return 0;
}

/* 7. EC2 instance metadata, unless disabled. */
static int imds_source(struct chain *c, struct tt_aws_source **out)
{
	int rc = meta_client(c->p);
	if (rc != 0)
		return rc;
	struct tt_aws_source *s = new_source(TT_AWS_IMDS, "EC2 instance metadata");
	if (!s)
		return TETHER_EIO;
	const char *ep = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	const char *mode = env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
	if (!ep)
		ep = mode && strcasecmp(mode, "IPv6") == 0 ? "http://[fd00:ec2::254]" : "http://169.254.169.254";
	size_t n = strlen(ep);
	while (n && ep[n - 1] == '/')
		n--;
	if (!(s->url = strndup(ep, n))) {
		source_free(s);
		return tether_error_set(TETHER_EIO, "out of memory");
	}
	*out = s;
	return 0;
}

static int imds_disabled(void)
{
	const char *v = env("AWS_EC2_METADATA_DISABLED");
	return v && strcasecmp(v, "true") == 0;
}

static int fetch(struct tt_aws_provider *p, struct tt_aws_source *s, struct tt_aws_creds *out);

/* s's credentials now: the cached ones while more than five minutes
 * remain, else fetched again. A failed refresh of credentials still good
 * for a minute keeps them (the next get tries again), so a metadata
 * service's hiccup does not fail a command. Called with p->lock held. */
static int current(struct tt_aws_provider *p, struct tt_aws_source *s, struct tt_aws_creds *out)
{
	int64_t now = (int64_t)time(NULL);
	struct tt_aws_creds *have = &s->cached;
	if (have->access_key_id && (have->expires_at == 0 || now < have->expires_at - TT_AWS_REFRESH_BEFORE))
		return tt_aws_creds_copy(have, out);
	struct tt_aws_creds fresh;
	int rc = fetch(p, s, &fresh);
	if (rc != 0) {
		if (have->access_key_id && now < have->expires_at - 60) {
			tether_error_clear();
			return tt_aws_creds_copy(have, out);
		}
		return rc;
	}
	tt_aws_creds_clear(have);
	*have = fresh;
	return tt_aws_creds_copy(have, out);
}

static int fetch(struct tt_aws_provider *p, struct tt_aws_source *s, struct tt_aws_creds *out)
{
	struct tt_aws_creds base;
	int rc;
	switch (s->kind) {
	case TT_AWS_STATIC:
		return tt_aws_creds_copy(&s->cached, out);
	case TT_AWS_ASSUME_ROLE:
		if ((rc = current(p, s->base, &base)) != 0)
			return rc;
		rc = tt_aws_sts_assume_role(p->http, s, &base, out);
		tt_aws_creds_clear(&base);
		return rc;
	case TT_AWS_WEB_IDENTITY:
		return tt_aws_sts_web_identity(p->http, s, out);
	case TT_AWS_ECS:
		return tt_aws_ecs_fetch(p->meta_http, s, out);
	case TT_AWS_IMDS:
		return tt_aws_imds_fetch(p->meta_http, s, out);
	}
	return tether_error_set(TETHER_EIO, "unknown credential source");
}

/* 1. Literal keys in the options (.tether/secrets.toml). */
static int from_options(const json_t *options, struct tt_aws_source **out)
{
	const char *id = opt(options, "access_key_id"), *secret = opt(options, "secret_access_key");
	int rc = key_pair("the store options (.tether/secrets.toml)", "access_key_id", id, "secret_access_key",
	                  secret);
	if (rc != 0 || !id)
		return rc;
	return static_source("options", id, secret, opt(options, "session_token"), out);
}

/* 3. The environment. */
static int from_environment(struct tt_aws_source **out)
{
	const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
	int rc = key_pair("the environment", "AWS_ACCESS_KEY_ID", id, "AWS_SECRET_ACCESS_KEY", secret);
	if (rc != 0 || !id)
		return rc;
	return static_source("environment", id, secret, env("AWS_SESSION_TOKEN"), out);
}

/* 4. Web identity from the environment. */
static int from_web_identity_env(struct chain *c, struct tt_aws_source **out)
{
	const char *file = env("AWS_WEB_IDENTITY_TOKEN_FILE"), *role = env("AWS_ROLE_ARN");
	int rc = key_pair("the environment", "AWS_WEB_IDENTITY_TOKEN_FILE", file, "AWS_ROLE_ARN", role);
	if (rc != 0 || !file)
		return rc;
	return web_identity_source(c, "web identity", file, role, env("AWS_ROLE_SESSION_NAME"), out);
}

/* Settings AWS's tools would answer with a program or a login flow tether
 * does not do: refused, naming the profile and the file, rather than
 * passed over for a source further down the chain the user did not mean. */
static int refuse_unsupported(const struct tt_aws_files *f, const char *profile)
{
	const char *file;
	if (tt_aws_files_get(f, profile, "credential_process", &file))
		return tether_error_set(TETHER_EAUTH,
		                        "profile '%s' in %s sets credential_process: tether does not run programs named "
		                        "in AWS's config files; give it keys, a role, or another profile",
		                        profile, file);
	const char *sso[] = {"sso_session", "sso_start_url"};
	for (size_t i = 0; i < sizeof sso / sizeof sso[0]; i++)
		if (tt_aws_files_get(f, profile, sso[i], &file))
			return tether_error_set(TETHER_EAUTH,
			                        "profile '%s' in %s sets %s: AWS IAM Identity Center (SSO) logins are not "
			                        "supported by tether; give it keys, a role, or another profile",
			                        profile, file, sso[i]);
	return 0;
}

static int from_profile(struct chain *c, const char *profile, int named, int depth, struct tt_aws_source **out);

/* The credentials a profile's role_arn is assumed with: its
 * source_profile's (its own keys when it names itself), or its
 * credential_source's. */
static int role_base(struct chain *c, const char *profile, int depth, const char *file,
                     struct tt_aws_source **base)
{
	const struct tt_aws_files *f = &c->files;
	const char *sp = tt_aws_files_get(f, profile, "source_profile", NULL);
	const char *cs = tt_aws_files_get(f, profile, "credential_source", NULL);
	int rc = 0;
	*base = NULL;
	if (sp && strcmp(sp, profile) == 0) {
		const char *id = tt_aws_files_get(f, profile, "aws_access_key_id", NULL);
		const char *secret = tt_aws_files_get(f, profile, "aws_secret_access_key", NULL);
		if (id && secret) {
			char name[300];
			snprintf(name, sizeof name, "profile %s", profile);
			return static_source(name, id, secret, tt_aws_files_get(f, profile, "aws_session_token", NULL), base);
		}
		return tether_error_set(TETHER_EAUTH, "profile '%s' in %s is its own source_profile but has no keys",
		                        profile, file);
	}
	if (sp) {
		if (depth >= 8)
			return tether_error_set(TETHER_EAUTH,
			                        "profile '%s' in %s: its source_profile chain is longer than 8 (a cycle?)",
			                        profile, file);
		if ((rc = from_profile(c, sp, 1, depth + 1, base)) != 0)
			return rc;
		if (!*base)
			return tether_error_set(TETHER_EAUTH, "profile '%s' in %s: its source_profile '%s' has no credentials",
			                        profile, file, sp);
		return 0;
	}
	if (cs && strcmp(cs, "Environment") == 0) {
		if ((rc = from_environment(base)) == 0 && !*base)
			rc = tether_error_set(TETHER_EAUTH,
			                      "profile '%s' in %s: credential_source Environment, but AWS_ACCESS_KEY_ID is "
			                      "not set",
			                      profile, file);
		return rc;
	}
	if (cs && strcmp(cs, "EcsContainer") == 0) {
		if ((rc = from_ecs(c, base)) == 0 && !*base)
			rc = tether_error_set(TETHER_EAUTH,
			                      "profile '%s' in %s: credential_source EcsContainer, but neither "
			                      "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor _FULL_URI is set",
			                      profile, file);
		return rc;
	}
	if (cs && strcmp(cs, "Ec2InstanceMetadata") == 0)
		return imds_source(c, base);
	if (cs)
		return tether_error_set(TETHER_EAUTH,
		                        "profile '%s' in %s: credential_source '%s' is not one of Environment, "
		                        "Ec2InstanceMetadata, EcsContainer",
		                        profile, file, cs);
	return tether_error_set(TETHER_EAUTH,
	                        "profile '%s' in %s sets role_arn without source_profile, credential_source or "
	                        "web_identity_token_file",
	                        profile, file);
}

/* 5. The shared files' profile: a role (web identity, or AssumeRole over
 * a source), else keys. A named profile that is in neither file is an
 * error, as for AWS's tools; the default one may be missing. */
static int from_profile(struct chain *c, const char *profile, int named, int depth, struct tt_aws_source **out)
{
	int rc = chain_files(c);
	if (rc != 0)
		return rc;
	const struct tt_aws_files *f = &c->files;
	if (!tt_aws_files_has_profile(f, profile)) {
		if (named)
			return tether_error_set(TETHER_EAUTH, "AWS profile '%s' is in neither %s nor %s", profile,
			                        f->credentials_path, f->config_path);
		tried_add(&c->tried, "profile '%s' (not in %s nor %s)", profile, f->credentials_path, f->config_path);
		return 0;
	}
	char name[300];
	const char *file;
	const char *role = tt_aws_files_get(f, profile, "role_arn", &file);
	if (role) {
		if (tt_aws_files_get(f, profile, "mfa_serial", NULL))
			return tether_error_set(TETHER_EAUTH,
			                        "profile '%s' in %s sets mfa_serial: tether does not ask for MFA codes; "
			                        "use credentials that need none",
			                        profile, file);
		const char *session = tt_aws_files_get(f, profile, "role_session_name", NULL);
		const char *wit = tt_aws_files_get(f, profile, "web_identity_token_file", NULL);
		if (wit) {
			snprintf(name, sizeof name, "profile %s (web identity)", profile);
			return web_identity_source(c, name, wit, role, session, out);
		}
		struct tt_aws_source *base;
		if ((rc = role_base(c, profile, depth, file, &base)) != 0)
			return rc;
		snprintf(name, sizeof name, "profile %s (AssumeRole)", profile);
		return assume_role_source(c, name, role, session, tt_aws_files_get(f, profile, "external_id", NULL),
		                          tt_aws_files_get(f, profile, "duration_seconds", NULL), base, out);
	}
	const char *idfile, *secretfile;
	const char *id = tt_aws_files_get(f, profile, "aws_access_key_id", &idfile);
	const char *secret = tt_aws_files_get(f, profile, "aws_secret_access_key", &secretfile);
	char where[1200];
	snprintf(where, sizeof where, "profile '%s' in %s", profile, id ? idfile : secret ? secretfile : "");
	if ((rc = key_pair(where, "aws_access_key_id", id, "aws_secret_access_key", secret)) != 0)
		return rc;
	if (id) {
		snprintf(name, sizeof name, "profile %s", profile);
		return static_source(name, id, secret, tt_aws_files_get(f, profile, "aws_session_token", NULL), out);
	}
	if ((rc = refuse_unsupported(f, profile)) != 0)
		return rc;
	tried_add(&c->tried, "profile '%s' (no keys nor role in %s nor %s)", profile, f->credentials_path,
	          f->config_path);
	return 0;
}

/* 7. IMDS, last: a machine that is not on EC2 has none, and that is not
 * an error but one more thing tried. */
static int from_imds(struct chain *c, struct tt_aws_source **out)
{
	if (imds_disabled()) {
		tried_add(&c->tried, "EC2 instance metadata (AWS_EC2_METADATA_DISABLED=true)");
		return 0;
	}
	struct tt_aws_source *s;
	int rc = imds_source(c, &s);
	if (rc != 0)
		return rc;
	struct tt_aws_creds first;
	if ((rc = current(c->p, s, &first)) != 0) {
		tried_add(&c->tried, "%s", tether_error_last());
		tether_error_clear();
		source_free(s);
		return 0;
	}
	tt_aws_creds_clear(&first);
	*out = s;
	return 0;
}

/* The chain after the options' keys and role (3-7). */
static int resolve_rest(struct chain *c, struct tt_aws_source **out)
{
	int named, rc;
	const char *profile = tt_aws_profile_name(c->options, &named);
	/* A profile named in the options is the user's choice for this store:
	 * the environment's keys and web identity do not override it (as AWS's
	 * tools skip them for an explicit --profile). */
	if (!opt(c->options, "profile")) {
		if ((rc = from_environment(out)) != 0 || *out)
			return rc;
		tried_add(&c->tried, "environment (no AWS_ACCESS_KEY_ID)");
		if ((rc = from_web_identity_env(c, out)) != 0 || *out)
			return rc;
		tried_add(&c->tried, "web identity (no AWS_WEB_IDENTITY_TOKEN_FILE)");
	}
	if ((rc = from_profile(c, profile, named, 0, out)) != 0 || *out)
		return rc;
	if ((rc = from_ecs(c, out)) != 0 || *out)
		return rc;
	return from_imds(c, out);
}

/* The chain, first match wins (creds.h). */
static int resolve(struct chain *c, struct tt_aws_source **out)
{
	*out = NULL;
	int rc;
	const char *role = opt(c->options, "role_arn");
	if (role) {
		/* The role is assumed with what the rest of the chain finds,
		 * the options' own keys first. */
		struct tt_aws_source *base = NULL;
		if ((rc = from_options(c->options, &base)) == 0 && !base)
			rc = resolve_rest(c, &base);
		if (rc == 0 && !base)
			rc = tether_error_set(TETHER_EAUTH, "role_arn %s: no AWS credentials to assume it with: tried %s",
			                      role, c->tried.text);
		if (rc != 0)
			return rc;
		return assume_role_source(c, "role_arn (AssumeRole)", role, NULL, NULL, NULL, base, out);
	}
	if ((rc = from_options(c->options, out)) != 0 || *out)
		return rc;
	tried_add(&c->tried, "store options (no access_key_id)");
	if ((rc = resolve_rest(c, out)) != 0 || *out)
		return rc;
	return tether_error_set(TETHER_EAUTH, "no AWS credentials found: tried %s", c->tried.text);
}

int tt_aws_provider_new(const json_t *options, struct tt_http *http, struct tt_aws_provider **out)
{
	*out = NULL;
	struct tt_aws_provider *p = calloc(1, sizeof *p);
	if (!p)
		return tether_error_set(TETHER_EIO, "out of memory");
	pthread_mutex_init(&p->lock, NULL);
	p->http = http;
	int rc = 0;
	if (!http) {
		/* The store options' timeouts (seconds), as the store's own client
		 * would take them. */
		struct tt_http_options o = {
		    .connect_timeout_ms = (long)(json_number_value(json_object_get(options, "connect_timeout")) * 1000),
		    .timeout_ms = (long)(json_number_value(json_object_get(options, "timeout")) * 1000),
		    .allow_http = json_is_true(json_object_get(options, "allow_http")),
		};
		rc = tt_http_new(&o, &p->own_http);
		p->http = p->own_http;
	}
	struct chain c = {.options = options, .p = p};
	if (rc == 0)
		rc = resolve(&c, &p->src);
	if (c.have_files)
		tt_aws_files_clear(&c.files);
	/* A temporary source is asked at once (IMDS was, to know it is
	 * there): a wrong role or an unreachable endpoint is reported by the
	 * command that opens the store. */
	struct tt_aws_creds first;
	if (rc == 0 && !p->src->cached.access_key_id && (rc = current(p, p->src, &first)) == 0)
		tt_aws_creds_clear(&first);
	if (rc != 0) {
		tt_aws_provider_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int tt_aws_provider_get(struct tt_aws_provider *p, struct tt_aws_creds *out)
{
	pthread_mutex_lock(&p->lock);
	int rc = current(p, p->src, out);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void tt_aws_provider_free(struct tt_aws_provider *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	source_free(p->src);
	tt_http_free(p->meta_http);
	tt_http_free(p->own_http);
	free(p);
}

/* The settings of the profile the options name (or the environment, or
 * "default"), from the config file; NULL when there is none. Errors in
 * the files are not this function's to report (the chain reports them):
 * the region and the endpoint then come from elsewhere. */
static char *profile_setting(const json_t *options, const char *setting)
{
	struct tt_aws_files files;
	if (tt_aws_files_load(&files) != 0) {
		tether_error_clear();
		return NULL;
	}
	/* The config file only: AWS's tools read settings other than keys
	 * from it, never from the credentials file. */
	const char *v =
	    json_string_value(json_object_get(json_object_get(files.config, tt_aws_profile_name(options, NULL)), setting));
	char *copy = v && *v ? strdup(v) : NULL;
	tt_aws_files_clear(&files);
	return copy;
}

char *tt_aws_region(const json_t *options)
{
	const char *v = opt(options, "region");
	if (!v)
		v = env("AWS_REGION");
	if (!v)
		v = env("AWS_DEFAULT_REGION");
	if (v)
		return strdup(v);
	char *r = profile_setting(options, "region");
	return r ? r : strdup("us-east-1");
}

char *tt_aws_endpoint(const json_t *options, const char *service)
{
	const char *v = strcmp(service, "s3") == 0 ? opt(options, "endpoint_url") : NULL;
	if (v)
		return strdup(v);
	/* AWS's tools skip the environment's and the files' endpoints when
	 * told to. */
	const char *ignore = env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
	if (ignore && strcasecmp(ignore, "true") == 0)
		return NULL;
	/* AWS_ENDPOINT_URL_<SERVICE>: the service id in capitals, '-' and ' '
	 * as '_'. */
	char name[96];
	size_t n = (size_t)snprintf(name, sizeof name, "AWS_ENDPOINT_URL_");
	for (const char *c = service; *c && n < sizeof name - 1; c++)
		name[n++] = *c == '-' || *c == ' ' ? '_' : (char)toupper((unsigned char)*c);
	name[n] = '\0';
	if ((v = env(name)) || (v = env("AWS_ENDPOINT_URL")))
		return strdup(v);
	/* The profile's: its services section's "<service>.endpoint_url",
	 * then its own endpoint_url. */
	char *services = profile_setting(options, "services");
	if (services) {
		struct tt_aws_files files;
		char *found = NULL;
		if (tt_aws_files_load(&files) == 0) {
			char key[128];
			snprintf(key, sizeof key, "%s.endpoint_url", service);
			const char *s =
			    json_string_value(json_object_get(json_object_get(files.services, services), key));
			found = s && *s ? strdup(s) : NULL;
			tt_aws_files_clear(&files);
		} else {
			tether_error_clear();
		}
		free(services);
		if (found)
			return found;
	}
	return profile_setting(options, "endpoint_url");
}
