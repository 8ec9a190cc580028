/* AWS's shared credentials and config files (awsfiles.h). The rules follow
 * what AWS's tools accept (they read the files with Python's configparser:
 * `=` or `:` between name and value, names folded to lowercase, no inline
 * comments), and refuse the rest by file and line, so a typo is not
 * silently a missing profile. */
#include "store/s3/awsfiles.h"

#include "util/fsutil.h"

#include <tether/backend.h> /* tether_error_set */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

/* Far above any real file; a larger one is not AWS's. */
#define AWS_FILE_MAX (1u << 20)

static int is_blank(int c)
{
	return c == ' ' || c == '\t';
}

/* Trim [*s, *e) of blanks on both sides. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && is_blank((unsigned char)**s))
		(*s)++;
	while (*e > *s && is_blank((unsigned char)(*e)[-1]))
		(*e)--;
}

static char *dup_range(const char *s, const char *e)
{
	return strndup(s, (size_t)(e - s));
}

static int bad_line(const char *path, int line, const char *what, const char *name)
{
	return tether_error_set(TETHER_ECONFIG, "%s:%d: %s%s%s", path, line, what, name ? name : "",
	                        name ? "' (only a setting with an empty value may be followed by indented "
	                               "settings, its nested section)"
	                             : "");
}

/* The table a section header names, in the file's kind: the profile's, a
 * services section's, or NULL for a section AWS's tools ignore here. */
static json_t *section_table(const char *name, int config, json_t *profiles, json_t *services)
{
	const char *key = name;
	json_t *into = profiles;
	if (config) {
		if (strncmp(name, "profile", 7) == 0 && is_blank((unsigned char)name[7])) {
			key = name + 8;
		} else if (strncmp(name, "services", 8) == 0 && is_blank((unsigned char)name[8]) && services) {
			key = name + 9;
			into = services;
		} else if (strcmp(name, "default") != 0) {
			return NULL; /* sso-session and the like: not credentials tether reads */
		}
		while (is_blank((unsigned char)*key))
			key++;
	}
	json_t *t = json_object_get(into, key);
	if (!t) {
		t = json_object();
		/* A repeated section adds to the first, later settings winning. */
		if (!t || json_object_set_new(into, key, t) != 0)
			return NULL;
	}
	return t;
}

static int parse_header(const char *s, const char *e, const char *path, int line, char **name)
{
	/* s points at '['; e past the last non-blank. */
	if (e[-1] != ']' || e - s < 2)
		return bad_line(path, line, "a section header must end with ']' and have nothing after it", NULL);
	const char *ns = s + 1, *ne = e - 1;
	trim(&ns, &ne);
	if (ns == ne)
		return bad_line(path, line, "a section header names nothing: '[]'", NULL);
	if (memchr(ns, '[', (size_t)(ne - ns)) || memchr(ns, ']', (size_t)(ne - ns)))
		return bad_line(path, line, "a section name must not contain '[' or ']'", NULL);
	*name = dup_range(ns, ne);
	return *name ? 0 : tether_error_set(TETHER_EIO, "out of memory");
}

/* Count the blanks before the first other character. */
static size_t indent_of(const char *s, const char *e)
{
	size_t n = 0;
	while (s + n < e && is_blank((unsigned char)s[n]))
		n++;
	return n;
}

int tt_aws_ini_parse(const char *text, size_t len, const char *path, int config, json_t **profiles,
                     json_t **services)
{
	int rc = 0;
	*profiles = json_object();
	if (services)
		*services = config ? json_object() : NULL;
	if (!*profiles || (services && config && !*services)) {
		rc = tether_error_set(TETHER_EIO, "out of memory");
		goto fail;
	}
	if (memchr(text, '\0', len)) {
		rc = tether_error_set(TETHER_ECONFIG, "%s: contains a NUL byte: not a text file", path);
		goto fail;
	}

	json_t *table = NULL;  /* the current section's settings; NULL: an ignored section */
	int in_section = 0;
	char last[128] = "";   /* the last setting at the section's level, "" when none */
	size_t last_indent = 0; /* its indentation */
	int last_empty = 0;    /* its value was empty: deeper lines are its nested section */
	int line = 0;
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *s = p, *e = nl ? nl : end;
		p = nl ? nl + 1 : end;
		line++;
		if (e > s && e[-1] == '\r')
			e--;
		size_t indent = indent_of(s, e);
		trim(&s, &e);
		if (s == e || *s == '#' || *s == ';')
			continue;
		/* Deeper than the last setting: it continues that setting. */
		int nested = last[0] && indent > last_indent;
		if (nested && !last_empty) {
			rc = bad_line(path, line, "an indented line continues the value of '", last);
			goto fail;
		}
		if (*s == '[' && !nested) {
			char *name;
			if ((rc = parse_header(s, e, path, line, &name)) != 0)
				goto fail;
			table = section_table(name, config, *profiles, services ? *services : NULL);
			free(name);
			in_section = 1;
			last[0] = '\0';
			continue;
		}
		const char *eq = s;
		while (eq < e && *eq != '=' && *eq != ':')
			eq++;
		if (eq == e) {
			rc = bad_line(path, line, "expected 'name = value', a '[section]' header or a comment", NULL);
			goto fail;
		}
		if (!in_section) {
			rc = bad_line(path, line, "a setting before any '[section]' header", NULL);
			goto fail;
		}
		const char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;
		trim(&ks, &ke);
		trim(&vs, &ve);
		if (ks == ke) {
			rc = bad_line(path, line, "a setting with no name before its '='", NULL);
			goto fail;
		}
		if ((size_t)(ke - ks) >= sizeof last) {
			rc = bad_line(path, line, "a setting's name longer than 127 characters", NULL);
			goto fail;
		}
		char name[sizeof last];
		size_t k = 0;
		for (const char *c = ks; c < ke; c++)
			name[k++] = (char)tolower((unsigned char)*c);
		name[k] = '\0';
		char key[2 * sizeof last];
		snprintf(key, sizeof key, nested ? "%s.%s" : "%s%s", nested ? last : "", name);
		if (table) {
			json_t *v = json_stringn(vs, (size_t)(ve - vs));
			if (!v) {
				rc = bad_line(path, line, "the value is not UTF-8", NULL);
				goto fail;
			}
			if (json_object_set_new(table, key, v) != 0) {
				rc = tether_error_set(TETHER_EIO, "out of memory");
				goto fail;
			}
		}
		if (!nested) {
			memcpy(last, name, k + 1);
			last_indent = indent;
			last_empty = vs == ve;
		}
	}
	return 0;
fail:
	json_decref(*profiles);
	*profiles = NULL;
	if (services) {
		json_decref(*services);
		*services = NULL;
	}
	return rc;
}

static int load_one(const char *path, int config, json_t **profiles, json_t **services)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
		/* No file: no profiles, as for AWS's tools. */
		*profiles = json_object();
		if (services)
			*services = json_object();
		return *profiles && (!services || *services) ? 0 : tether_error_set(TETHER_EIO, "out of memory");
	}
	if (fd < 0)
		return tether_error_set(TETHER_ECONFIG, "%s: %s", path, strerror(errno));
	struct stat st;
	int rc;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > AWS_FILE_MAX) {
		rc = tether_error_set(TETHER_ECONFIG, "%s: not a regular file of at most %u bytes", path, AWS_FILE_MAX);
	} else {
		char *text;
		size_t len;
		rc = tt_read_fd(fd, path, &text, &len);
		if (rc == 0) {
			rc = tt_aws_ini_parse(text, len, path, config, profiles, services);
			free(text);
		}
	}
	close(fd);
	return rc;
}

/* The path from an environment variable, else ~/.aws/NAME. */
static char *file_path(const char *env, const char *name)
{
	const char *v = getenv(env);
	if (v && *v) {
		if (v[0] == '~' && (v[1] == '/' || v[1] == '\0')) {
			const char *home = getenv("HOME");
			return tt_strdupf("%s%s", home ? home : "", v + 1);
		}
		return strdup(v);
	}
	const char *home = getenv("HOME");
	return tt_strdupf("%s/.aws/%s", home && *home ? home : ".", name);
}

int tt_aws_files_load(struct tt_aws_files *f)
{
	memset(f, 0, sizeof *f);
	f->credentials_path = file_path("AWS_SHARED_CREDENTIALS_FILE", "credentials");
	f->config_path = file_path("AWS_CONFIG_FILE", "config");
	if (!f->credentials_path || !f->config_path)
		return tt_aws_files_clear(f), tether_error_set(TETHER_EIO, "out of memory");
	int rc = load_one(f->credentials_path, 0, &f->credentials, NULL);
	if (rc == 0)
		rc = load_one(f->config_path, 1, &f->config, &f->services);
	if (rc != 0)
		tt_aws_files_clear(f);
	return rc;
}

void tt_aws_files_clear(struct tt_aws_files *f)
{
	free(f->credentials_path);
	free(f->config_path);
	json_decref(f->credentials);
	json_decref(f->config);
	json_decref(f->services);
	memset(f, 0, sizeof *f);
}

const char *tt_aws_files_get(const struct tt_aws_files *f, const char *profile, const char *setting,
                             const char **file)
{
	const char *v = json_string_value(json_object_get(json_object_get(f->credentials, profile), setting));
	if (v) {
		if (file)
			*file = f->credentials_path;
		return v;
	}
	v = json_string_value(json_object_get(json_object_get(f->config, profile), setting));
	if (v && file)
		*file = f->config_path;
	return v;
}

int tt_aws_files_has_profile(const struct tt_aws_files *f, const char *profile)
{
	return json_object_get(f->credentials, profile) || json_object_get(f->config, profile);
}

const char *tt_aws_profile_name(const json_t *options, int *explicit_name)
{
	const char *names[] = {
		json_string_value(json_object_get(options, "profile")),
		getenv("AWS_PROFILE"),
		getenv("AWS_DEFAULT_PROFILE"),
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i] && *names[i]) {
			if (explicit_name)
				*explicit_name = 1;
			return names[i];
		}
	if (explicit_name)
		*explicit_name = 0;
	return "default";
}
