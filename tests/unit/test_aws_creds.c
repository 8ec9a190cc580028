/* The AWS credential chain without the network: the shared files' reader
 * (profiles, comments, nested sections, malformed lines by FILE:LINE), the
 * static sources and their precedence (options > environment > files),
 * credential_process refused, the region and the endpoint. The sources
 * that fetch over HTTP are tested against fakes in
 * tests/e2e/test_aws_creds.py. */
#include "check.h"

#include "store/s3/awsfiles.h"
#include "store/s3/creds_impl.h"

#include <tether.h>
#include <tether/backend.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/tether-aws-creds-XXXXXX";
static char cred_path[128], config_path[128];

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static const char *setting(const json_t *profiles, const char *profile, const char *key)
{
	return json_string_value(json_object_get(json_object_get(profiles, profile), key));
}

static int parse(const char *text, int config, json_t **profiles, json_t **services)
{
	return tt_aws_ini_parse(text, strlen(text), "/home/u/.aws/config", config, profiles, services);
}

static void test_reader(void)
{
	json_t *p, *s;
	const char *creds = "# a comment\n"
	                    "; another\n"
	                    "\n"
	                    "[default]\r\n"
	                    "aws_access_key_id = AKIADEFAULT\r\n"
	                    "AWS_Secret_Access_Key\t=se=cret;not a comment  \t\n"
	                    "[dev]\n"
	                    "aws_access_key_id: AKIADEV\n"
	                    "[profile odd]\n"
	                    "region = x\n"
	                    "[dev]\n"
	                    "aws_session_token = tok\n";
	CHECK(tt_aws_ini_parse(creds, strlen(creds), "creds", 0, &p, NULL) == 0);
	CHECK_STR(setting(p, "default", "aws_access_key_id"), "AKIADEFAULT");
	CHECK_STR(setting(p, "default", "aws_secret_access_key"), "se=cret;not a comment");
	CHECK_STR(setting(p, "dev", "aws_access_key_id"), "AKIADEV");
	CHECK_STR(setting(p, "dev", "aws_session_token"), "tok"); /* a repeated section adds */
	CHECK_STR(setting(p, "profile odd", "region"), "x");      /* credentials: names as written */
	json_decref(p);

	const char *config = "[default]\n"
	                     "region = eu-west-1\n"
	                     "s3 =\n"
	                     "    addressing_style = path\n"
	                     "\n"
	                     "    max_concurrent_requests = 4\n"
	                     "output = json\n"
	                     "[profile   dev]\n"
	                     "services = local\n"
	                     "[dev]\n"
	                     "region = ignored\n"
	                     "[sso-session corp]\n"
	                     "sso_region = x\n"
	                     "[services local]\n"
	                     "s3 =\n"
	                     "  endpoint_url = http://127.0.0.1:9000\n";
	CHECK(parse(config, 1, &p, &s) == 0);
	CHECK_STR(setting(p, "default", "region"), "eu-west-1");
	CHECK_STR(setting(p, "default", "s3"), "");
	CHECK_STR(setting(p, "default", "s3.addressing_style"), "path");
	CHECK_STR(setting(p, "default", "s3.max_concurrent_requests"), "4");
	CHECK_STR(setting(p, "default", "output"), "json");
	CHECK_STR(setting(p, "dev", "services"), "local");
	CHECK(setting(p, "dev", "region") == NULL); /* [dev] in config is not a profile */
	CHECK(json_object_get(p, "sso-session corp") == NULL);
	CHECK_STR(setting(s, "local", "s3.endpoint_url"), "http://127.0.0.1:9000");
	json_decref(p);
	json_decref(s);

	/* Malformed lines: one error naming the file and the line. */
	const struct {
		const char *text, *msg;
	} bad[] = {
	    {"[default]\nregion = x\njust words\n", "/home/u/.aws/config:3: expected 'name = value'"},
	    {"[default\n", "/home/u/.aws/config:1: a section header must end with ']'"},
	    {"[default] x\n", "/home/u/.aws/config:1: a section header must end with ']'"},
	    {"# c\n[ ]\n", "/home/u/.aws/config:2: a section header names nothing"},
	    {"region = x\n", "/home/u/.aws/config:1: a setting before any '[section]' header"},
	    {"[default]\n = x\n", "/home/u/.aws/config:2: a setting with no name"},
	    {"[default]\nregion = x\n  more = y\n", "/home/u/.aws/config:3: an indented line continues the value of 'region'"},
	    {"[default]\n[a]b]\n", "/home/u/.aws/config:2: a section name must not contain"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = s = (json_t *)1;
		CHECK(parse(bad[i].text, 1, &p, &s) == TETHER_ECONFIG);
		CHECK(p == NULL && s == NULL);
		CHECK(strstr(tether_error_last(), bad[i].msg) == tether_error_last());
		if (strstr(tether_error_last(), bad[i].msg) != tether_error_last())
			fprintf(stderr, "  got: %s\n", tether_error_last());
	}
	CHECK(tt_aws_ini_parse("[a]\nk = v\0x\n", 10, "f", 0, &p, NULL) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "f: contains a NUL byte") != NULL);
	/* Indented settings at the top of a section are settings, as written. */
	CHECK(parse("[default]\n  region = x\n  output = y\n", 1, &p, &s) == 0);
	CHECK_STR(setting(p, "default", "output"), "y");
	json_decref(p);
	json_decref(s);
}

static void clear_env(void)
{
	const char *names[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
	                       "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
	                       "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
	                       "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	                       "AWS_CONTAINER_CREDENTIALS_FULL_URI"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		unsetenv(names[i]);
	setenv("AWS_SHARED_CREDENTIALS_FILE", cred_path, 1);
	setenv("AWS_CONFIG_FILE", config_path, 1);
	/* Never ask 169.254.169.254 from a test. */
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

/* The chain's answer for options (JSON or NULL): its source and key id,
 * or the error's code. */
static int chain(const char *options_json, char *source, size_t n, char *key_id, size_t kn)
{
	json_t *o = options_json ? json_loads(options_json, 0, NULL) : NULL;
	struct tt_aws_provider *p;
	int rc = tt_aws_provider_new(o, NULL, &p);
	json_decref(o);
	source[0] = key_id[0] = '\0';
	if (rc != 0)
		return rc;
	struct tt_aws_creds c;
	rc = tt_aws_provider_get(p, &c);
	if (rc == 0) {
		snprintf(source, n, "%s", c.source);
		snprintf(key_id, kn, "%s%s%s", c.access_key_id, c.session_token ? "+" : "",
		         c.session_token ? c.session_token : "");
		tt_aws_creds_clear(&c);
	}
	tt_aws_provider_free(p);
	return rc;
}

#define CHAIN(opts, want_source, want_key)                                  \
	do {                                                                    \
		char src_[128], key_[128];                                          \
		int rc_ = chain(opts, src_, sizeof src_, key_, sizeof key_);        \
		CHECK(rc_ == 0);                                                    \
		if (rc_ != 0)                                                       \
			fprintf(stderr, "  %s\n", tether_error_last());                 \
		CHECK_STR(src_, want_source);                                       \
		CHECK_STR(key_, want_key);                                          \
	} while (0)

#define CHAIN_FAILS(opts, code, msg)                                        \
	do {                                                                    \
		char src_[128], key_[128];                                          \
		CHECK(chain(opts, src_, sizeof src_, key_, sizeof key_) == (code)); \
		CHECK(strstr(tether_error_last(), msg) != NULL);                    \
		if (!strstr(tether_error_last(), msg))                              \
			fprintf(stderr, "  got: %s\n", tether_error_last());            \
	} while (0)

static void test_chain(void)
{
	write_text(cred_path, "[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = s1\n"
	                      "[dev]\naws_access_key_id = AKIADEV\naws_secret_access_key = s2\n"
	                      "aws_session_token = devtoken\n"
	                      "[half]\naws_access_key_id = AKIAHALF\n"
	                      "[proc]\ncredential_process = /bin/sh -c 'echo pwned'\n");
	write_text(config_path, "[profile cfg]\naws_access_key_id = AKIACFG\naws_secret_access_key = s3\n"
	                        "[profile dev]\naws_access_key_id = AKIAIGNORED\n"
	                        "[profile sso]\nsso_session = corp\n"
	                        "[profile empty]\nregion = eu-north-1\n");
	clear_env();

	CHAIN(NULL, "profile default", "AKIAFILE");
	setenv("AWS_PROFILE", "dev", 1);
	CHAIN(NULL, "profile dev", "AKIADEV+devtoken"); /* credentials before config */
	setenv("AWS_PROFILE", "cfg", 1);
	CHAIN(NULL, "profile cfg", "AKIACFG");
	unsetenv("AWS_PROFILE");
	setenv("AWS_DEFAULT_PROFILE", "cfg", 1);
	CHAIN(NULL, "profile cfg", "AKIACFG");
	unsetenv("AWS_DEFAULT_PROFILE");

	/* The environment before the files, the options before both. */
	setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "s4", 1);
	CHAIN(NULL, "environment", "AKIAENV");
	setenv("AWS_SESSION_TOKEN", "envtoken", 1);
	setenv("AWS_PROFILE", "dev", 1);
	CHAIN(NULL, "environment", "AKIAENV+envtoken");
	CHAIN("{\"access_key_id\": \"AKIAOPT\", \"secret_access_key\": \"s5\"}", "options", "AKIAOPT");
	CHAIN("{\"access_key_id\": \"AKIAOPT\", \"secret_access_key\": \"s5\", \"session_token\": \"t\"}", "options",
	      "AKIAOPT+t");
	/* A profile named in the options passes the environment over. */
	CHAIN("{\"profile\": \"cfg\"}", "profile cfg", "AKIACFG");
	unsetenv("AWS_PROFILE");

	/* Half a key pair is an error, wherever it is. */
	CHAIN_FAILS("{\"access_key_id\": \"AKIAOPT\"}", TETHER_EAUTH, "sets access_key_id without secret_access_key");
	unsetenv("AWS_ACCESS_KEY_ID");
	CHAIN_FAILS(NULL, TETHER_EAUTH, "the environment sets AWS_SECRET_ACCESS_KEY without AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	char want[512];
	snprintf(want, sizeof want, "profile 'half' in %s sets aws_access_key_id without aws_secret_access_key",
	         cred_path);
	CHAIN_FAILS("{\"profile\": \"half\"}", TETHER_EAUTH, want);

	/* Programs named in the files are not run; SSO is refused, named. */
	snprintf(want, sizeof want, "profile 'proc' in %s sets credential_process: tether does not run programs",
	         cred_path);
	CHAIN_FAILS("{\"profile\": \"proc\"}", TETHER_EAUTH, want);
	snprintf(want, sizeof want, "profile 'sso' in %s sets sso_session", config_path);
	setenv("AWS_PROFILE", "sso", 1);
	CHAIN_FAILS(NULL, TETHER_EAUTH, want);

	/* A named profile that is nowhere. */
	setenv("AWS_PROFILE", "nope", 1);
	snprintf(want, sizeof want, "AWS profile 'nope' is in neither %s nor %s", cred_path, config_path);
	CHAIN_FAILS(NULL, TETHER_EAUTH, want);
	unsetenv("AWS_PROFILE");

	/* Nothing anywhere: what was tried. */
	CHAIN_FAILS("{\"profile\": \"empty\"}", TETHER_EAUTH, "no AWS credentials found: tried store options");
	CHECK(strstr(tether_error_last(), "profile 'empty' (no keys nor role in") != NULL);
	unlink(cred_path);
	CHAIN_FAILS(NULL, TETHER_EAUTH, "environment (no AWS_ACCESS_KEY_ID)");
	CHECK(strstr(tether_error_last(), "profile 'default' (not in") != NULL);
	CHECK(strstr(tether_error_last(), "web identity (no AWS_WEB_IDENTITY_TOKEN_FILE)") != NULL);
	CHECK(strstr(tether_error_last(), "ECS container endpoint (no AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") != NULL);
	CHECK(strstr(tether_error_last(), "EC2 instance metadata (AWS_EC2_METADATA_DISABLED=true)") != NULL);

	/* A malformed file stops the chain with its line. */
	write_text(cred_path, "[default]\naws_access_key_id\n");
	snprintf(want, sizeof want, "%s:2: expected 'name = value'", cred_path);
	CHAIN_FAILS(NULL, TETHER_ECONFIG, want);
	unlink(cred_path);
	unlink(config_path);
}

/* Roles in profiles that cannot be assumed are refused before any
 * request, naming the profile and the file. */
static void test_profile_roles(void)
{
	clear_env();
	write_text(config_path, "[profile bare]\nrole_arn = arn:aws:iam::1:role/r\n"
	                        "[profile mfa]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = bare\n"
	                        "mfa_serial = arn:aws:iam::1:mfa/u\n"
	                        "[profile loop1]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = loop2\n"
	                        "[profile loop2]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = loop1\n"
	                        "[profile odd]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Somewhere\n"
	                        "[profile envsrc]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Environment\n"
	                        "[profile ecssrc]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = EcsContainer\n"
	                        "[profile self]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = self\n"
	                        "[profile nokeys]\nregion = x\n"
	                        "[profile src-nokeys]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = nokeys\n");
	char want[512];
	snprintf(want, sizeof want, "profile 'bare' in %s sets role_arn without source_profile", config_path);
	CHAIN_FAILS("{\"profile\": \"bare\"}", TETHER_EAUTH, want);
	snprintf(want, sizeof want, "profile 'mfa' in %s sets mfa_serial", config_path);
	CHAIN_FAILS("{\"profile\": \"mfa\"}", TETHER_EAUTH, want);
	CHAIN_FAILS("{\"profile\": \"loop1\"}", TETHER_EAUTH, "source_profile chain is longer than 8 (a cycle?)");
	CHAIN_FAILS("{\"profile\": \"odd\"}", TETHER_EAUTH, "credential_source 'Somewhere' is not one of");
	CHAIN_FAILS("{\"profile\": \"envsrc\"}", TETHER_EAUTH,
	            "credential_source Environment, but AWS_ACCESS_KEY_ID is not set");
	CHAIN_FAILS("{\"profile\": \"ecssrc\"}", TETHER_EAUTH, "credential_source EcsContainer, but neither");
	CHAIN_FAILS("{\"profile\": \"self\"}", TETHER_EAUTH, "is its own source_profile but has no keys");
	CHAIN_FAILS("{\"profile\": \"src-nokeys\"}", TETHER_EAUTH, "its source_profile 'nokeys' has no credentials");
	/* Half a web identity, and an ECS URL that could reach another host. */
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent", 1);
	CHAIN_FAILS(NULL, TETHER_EAUTH, "the environment sets AWS_WEB_IDENTITY_TOKEN_FILE without AWS_ROLE_ARN");
	/* The token is read before any request: a missing or empty one stops
	 * there, named. */
	setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
	CHAIN_FAILS(NULL, TETHER_EAUTH, "web identity: cannot read the token file /nonexistent: No such file");
	char empty[160];
	snprintf(empty, sizeof empty, "%s/empty-token", dir);
	write_text(empty, " \n");
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", empty, 1);
	snprintf(want, sizeof want, "web identity: the token file %s is empty", empty);
	CHAIN_FAILS(NULL, TETHER_EAUTH, want);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", dir, 1); /* a directory */
	CHAIN_FAILS(NULL, TETHER_EAUTH, "not a regular file of at most 65536 bytes");
	unlink(empty);
	unsetenv("AWS_ROLE_ARN");
	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.0.0.1/creds", 1);
	CHAIN_FAILS(NULL, TETHER_EAUTH, "AWS_CONTAINER_CREDENTIALS_FULL_URI http://10.0.0.1/creds: plain http is allowed");
	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	unlink(config_path);

	CHECK(tt_aws_ecs_url_allowed("https://anywhere.example/x"));
	CHECK(tt_aws_ecs_url_allowed("http://127.0.0.1:8080/creds"));
	CHECK(tt_aws_ecs_url_allowed("http://127.1.2.3/creds"));
	CHECK(tt_aws_ecs_url_allowed("http://localhost/creds"));
	CHECK(tt_aws_ecs_url_allowed("http://[::1]:80/creds"));
	CHECK(tt_aws_ecs_url_allowed("http://169.254.170.2/v2/credentials"));
	CHECK(tt_aws_ecs_url_allowed("http://169.254.170.23/v1/credentials"));
	CHECK(tt_aws_ecs_url_allowed("http://[fd00:ec2::23]/v1/credentials"));
	CHECK(!tt_aws_ecs_url_allowed("http://10.0.0.1/creds"));
	CHECK(!tt_aws_ecs_url_allowed("http://0127.0.0.1/creds")); /* octal to curl: 87.0.0.1 */
	CHECK(!tt_aws_ecs_url_allowed("http://127.0.0.1.evil.example/creds"));
	CHECK(!tt_aws_ecs_url_allowed("http://127.0.0.1@evil.example/creds"));
	CHECK(!tt_aws_ecs_url_allowed("http://128.0.0.1/creds"));
	CHECK(!tt_aws_ecs_url_allowed("ftp://127.0.0.1/creds"));
	CHECK(!tt_aws_ecs_url_allowed("http://127.0.0.256/creds"));
}

static void check_owned(char *got, const char *want)
{
	CHECK_STR(got, want);
	free(got);
}

static void test_region_endpoint(void)
{
	clear_env();
	write_text(config_path, "[default]\nregion = eu-west-3\nendpoint_url = http://default.example\n"
	                        "[profile local]\nregion = local-1\nservices = here\n"
	                        "endpoint_url = http://profile.example\n"
	                        "[services here]\ns3 =\n  endpoint_url = http://127.0.0.1:8333\n");
	json_t *none = json_object();
	json_t *o = json_pack("{s:s, s:s}", "region", "ap-south-2", "endpoint_url", "http://options.example");
	json_t *local = json_pack("{s:s}", "profile", "local");

	write_text(cred_path, "[default]\nregion = from-credentials\n[local]\nregion = nor-this\n");
	check_owned(tt_aws_region(none), "eu-west-3"); /* settings come from the config file */
	check_owned(tt_aws_region(local), "local-1");
	setenv("AWS_DEFAULT_REGION", "us-west-1", 1);
	check_owned(tt_aws_region(none), "us-west-1");
	setenv("AWS_REGION", "us-west-2", 1);
	check_owned(tt_aws_region(NULL), "us-west-2");
	check_owned(tt_aws_region(o), "ap-south-2");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");

	check_owned(tt_aws_endpoint(o, "s3"), "http://options.example");
	check_owned(tt_aws_endpoint(o, "sts"), "http://default.example"); /* endpoint_url is S3's */
	check_owned(tt_aws_endpoint(local, "s3"), "http://127.0.0.1:8333");
	check_owned(tt_aws_endpoint(local, "sts"), "http://profile.example");
	setenv("AWS_ENDPOINT_URL", "http://all.example", 1);
	check_owned(tt_aws_endpoint(local, "s3"), "http://all.example");
	setenv("AWS_ENDPOINT_URL_STS", "http://sts.example", 1);
	check_owned(tt_aws_endpoint(local, "sts"), "http://sts.example");
	check_owned(tt_aws_endpoint(NULL, "s3"), "http://all.example");
	setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
	CHECK(tt_aws_endpoint(local, "s3") == NULL);
	check_owned(tt_aws_endpoint(o, "s3"), "http://options.example");
	clear_env();

	/* No files: AWS's defaults. */
	unlink(config_path);
	unlink(cred_path);
	check_owned(tt_aws_region(none), "us-east-1");
	CHECK(tt_aws_endpoint(none, "s3") == NULL);
	json_decref(none);
	json_decref(o);
	json_decref(local);
}

static void test_time(void)
{
	CHECK(tt_aws_parse_time("1970-01-01T00:00:00Z") == 0);
	CHECK(tt_aws_parse_time("2026-12-07T18:00:00Z") == 1796666400);
	CHECK(tt_aws_parse_time("2026-12-07T18:00:00.123Z") == 1796666400);
	CHECK(tt_aws_parse_time("2026-12-07T18:00:00+00:00") == 1796666400);
	CHECK(tt_aws_parse_time("2026-12-07T18:00:00") == -1);
	CHECK(tt_aws_parse_time("2026-12-07T18:00:00+01:00") == -1);
	CHECK(tt_aws_parse_time("2026-13-07T18:00:00Z") == -1);
	CHECK(tt_aws_parse_time("2026-12-07 18:00:00Z") == -1);
	CHECK(tt_aws_parse_time("") == -1);
	CHECK(tt_aws_parse_time(NULL) == -1);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(cred_path, sizeof cred_path, "%s/credentials", dir);
	snprintf(config_path, sizeof config_path, "%s/config", dir);
	test_reader();
	test_chain();
	test_profile_roles();
	test_region_endpoint();
	test_time();
	rmdir(dir);
	CHECK_DONE();
}
