/* The AWS credential chain (creds.h): which source answers, decided once
 * when the provider is made, then its credentials, fetched again before
 * they expire. The order and the rules are AWS's own tools' (botocore's
 * and the AWS CLI's), so a user's setup that works for `aws s3 ls` works
 * for tether; where they would run a program (credential_process) tether
 * refuses instead. */
#include "store/s3/creds_impl.h"

#include "store/s3/awsfiles.h"
#include "util/fsutil.h"

#include <tether/backend.h> /* tether_error_set */

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct tt_aws_provider {
	pthread_mutex_t lock; /* one refresh at a time; guards src->cached */
	struct tt_http *http;
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

void tt_aws_creds_clear(struct tt_aws_creds *c)
{
	if (!c)
		return;
	free(c->access_key_id);
	if (c->secret_access_key) {
		explicit_bzero(c->secret_access_key, strlen(c->secret_access_key));
		free(c->secret_access_key);
	}
	if (c->session_token) {
		explicit_bzero(c->session_token, strlen(c->session_token));
		free(c->session_token);
	}
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
	free(s);
}

/* A source of fixed keys, named name. */
static int static_source(const char *name, const char *key_id, const char *secret, const char *token,
                         struct tt_aws_source **out)
{
	struct tt_aws_source *s = calloc(1, sizeof *s);
	if (!s)
		return tether_error_set(TETHER_EIO, "out of memory");
	s->kind = TT_AWS_STATIC;
	s->name = strdup(name);
	struct tt_aws_creds given = {(char *)key_id, (char *)secret, (char *)token, 0, NULL};
	if (!s->name || tt_aws_creds_copy(&given, &s->cached) != 0) {
		source_free(s);
		return tether_error_set(TETHER_EIO, "out of memory");
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

/* 5. The shared files' profile. A named profile that is in neither file is
 * an error, as for AWS's tools; the default one may be missing. */
static int from_profile(const struct tt_aws_files *f, const char *profile, int named, struct tried *tried,
                        struct tt_aws_source **out)
{
	if (!tt_aws_files_has_profile(f, profile)) {
		if (named)
			return tether_error_set(TETHER_EAUTH, "AWS profile '%s' is in neither %s nor %s", profile,
			                        f->credentials_path, f->config_path);
		tried_add(tried, "profile '%s' (not in %s nor %s)", profile, f->credentials_path, f->config_path);
		return 0;
	}
	const char *idfile, *secretfile;
	const char *id = tt_aws_files_get(f, profile, "aws_access_key_id", &idfile);
	const char *secret = tt_aws_files_get(f, profile, "aws_secret_access_key", &secretfile);
	char where[1200];
	snprintf(where, sizeof where, "profile '%s' in %s", profile, id ? idfile : secret ? secretfile : "");
	int rc = key_pair(where, "aws_access_key_id", id, "aws_secret_access_key", secret);
	if (rc != 0)
		return rc;
	if (id) {
		char name[512];
		snprintf(name, sizeof name, "profile %s", profile);
		return static_source(name, id, secret, tt_aws_files_get(f, profile, "aws_session_token", NULL), out);
	}
	if ((rc = refuse_unsupported(f, profile)) != 0)
		return rc;
	tried_add(tried, "profile '%s' (no keys in %s nor %s)", profile, f->credentials_path, f->config_path);
	return 0;
}

/* The chain, first match wins (creds.h). */
static int resolve(const json_t *options, struct tt_aws_source **out)
{
	struct tried tried = {.len = 0};
	*out = NULL;
	int rc = from_options(options, out);
	if (rc != 0 || *out)
		return rc;
	tried_add(&tried, "store options (no access_key_id)");

	int named;
	const char *profile = tt_aws_profile_name(options, &named);
	/* A profile named in the options is the user's choice for this store:
	 * the environment's keys do not override it (as AWS's tools skip them
	 * for an explicit --profile). */
	if (!opt(options, "profile")) {
		if ((rc = from_environment(out)) != 0 || *out)
			return rc;
		tried_add(&tried, "environment (no AWS_ACCESS_KEY_ID)");
	}

	struct tt_aws_files files;
	if ((rc = tt_aws_files_load(&files)) != 0)
		return rc;
	rc = from_profile(&files, profile, named, &tried, out);
	tt_aws_files_clear(&files);
	if (rc != 0 || *out)
		return rc;
	return tether_error_set(TETHER_EAUTH, "no AWS credentials found: tried %s", tried.text);
}

int tt_aws_provider_new(const json_t *options, struct tt_http *http, struct tt_aws_provider **out)
{
	*out = NULL;
	struct tt_aws_provider *p = calloc(1, sizeof *p);
	if (!p)
		return tether_error_set(TETHER_EIO, "out of memory");
	p->http = http;
	int rc = resolve(options, &p->src);
	if (rc != 0) {
		free(p);
		return rc;
	}
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;
}

int tt_aws_provider_get(struct tt_aws_provider *p, struct tt_aws_creds *out)
{
	pthread_mutex_lock(&p->lock);
	int rc = tt_aws_creds_copy(&p->src->cached, out);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void tt_aws_provider_free(struct tt_aws_provider *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	source_free(p->src);
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
	const char *v = tt_aws_files_get(&files, tt_aws_profile_name(options, NULL), setting, NULL);
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
