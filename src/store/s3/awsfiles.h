/* The shared files of AWS's tools, `credentials` and `config`, read as
 * those tools read them (INI: `[section]` headers, `name = value` or
 * `name: value` settings, `#` and `;` comment lines, names of settings
 * case-insensitive, values taken as written, no inline comments). In
 * `credentials` a section `[NAME]` is the profile NAME; in `config` the
 * profiles are `[default]` and `[profile NAME]`, and `[services NAME]`
 * holds per-service settings; other sections are ignored, as AWS's tools
 * ignore them. A setting with an empty value followed by indented
 * `name = value` lines is a nested section (`s3 =` then `  endpoint_url =
 * ...`); its settings are kept as "s3.endpoint_url".
 *
 * A line that is none of these is refused with TETHER_ECONFIG,
 * "FILE:LINE: message". A missing file is an empty one. */
#ifndef TETHER_STORE_S3_AWSFILES_H
#define TETHER_STORE_S3_AWSFILES_H

#include <jansson.h>
#include <stddef.h>

/* Parse one file's text. config: 1 for the config file's section names.
 * *profiles: {"NAME": {"setting": "value"}}; *services (config only, may
 * be NULL): {"NAME": {"s3.endpoint_url": "value"}}. path names the file in
 * errors. */
int tt_aws_ini_parse(const char *text, size_t len, const char *path, int config, json_t **profiles,
                     json_t **services);

struct tt_aws_files {
	char *credentials_path; /* AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials */
	char *config_path;      /* AWS_CONFIG_FILE, else ~/.aws/config */
	json_t *credentials;    /* profiles of the credentials file */
	json_t *config;         /* profiles of the config file */
	json_t *services;       /* [services NAME] sections of the config file */
};

/* Read both files (each may be missing). *f is zeroed first. */
int tt_aws_files_load(struct tt_aws_files *f);
void tt_aws_files_clear(struct tt_aws_files *f);

/* The profile's value for setting (lowercase), the credentials file's
 * before the config file's, or NULL; *file (may be NULL) gets the path of
 * the file that set it. */
const char *tt_aws_files_get(const struct tt_aws_files *f, const char *profile, const char *setting,
                             const char **file);
/* Is there a profile of that name in either file? */
int tt_aws_files_has_profile(const struct tt_aws_files *f, const char *profile);

/* The profile to use: options.profile, else AWS_PROFILE, else
 * AWS_DEFAULT_PROFILE, else "default". *explicit_name (may be NULL): 1
 * when it was named rather than defaulted. Borrowed from options or the
 * environment. */
const char *tt_aws_profile_name(const json_t *options, int *explicit_name);

#endif
