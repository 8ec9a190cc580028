/* tether open: print an object's handle descriptor. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

enum { OPT_JSON, OPT_REV, OPT_FORMAT, OPT_ALLOW_DRIFT };

static const struct arg_option options[] = {
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the handle as JSON (same as --format json)" },
	[OPT_REV] = { "rev", 'r', ARG_VALUE, "REV", "read-only, at the state REV records (default: $TETHER_REV)" },
	[OPT_FORMAT] = { "format", 0, ARG_VALUE, "FMT", "text, json or env (TETHER_HANDLE_<FIELD>=value lines)" },
	[OPT_ALLOW_DRIFT] = { "allow-drift", 0, ARG_FLAG, NULL,
	                      "at REV, hand out an observed object whose bytes changed since, with a warning" },
};

static const char *const positionals[] = { "KEY", NULL };

/* Shell-safe single quoting: a handle's uri may hold anything. */
static void print_quoted(const char *s)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

static void print_env(const json_t *handle)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)handle, k, v) {
		if (json_is_object(v) || json_is_array(v) || json_is_null(v))
			continue;
		printf("TETHER_HANDLE_");
		for (const char *p = k; *p; p++)
			putchar(isalnum((unsigned char)*p) ? toupper((unsigned char)*p) : '_');
		putchar('=');
		char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY);
		print_quoted(text ? text : json_string_value(v));
		free(text);
		putchar('\n');
	}
}

/* "kind   git": one field a line, the values in one column however long
 * the longest field name a backend gives. */
static void print_text(const json_t *handle)
{
	const char *k;
	json_t *v;
	int width = 0;
	json_object_foreach((json_t *)handle, k, v) {
		if ((int)strlen(k) > width)
			width = (int)strlen(k);
	}
	json_object_foreach((json_t *)handle, k, v) {
		char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		printf("%-*s  %s\n", width, out_escape(k), text ? text : out_escape(json_string_value(v)));
		free(text);
	}
}

static int run_open(const struct args *a)
{
	const char *format = args_has(a, OPT_JSON) ? "json" : args_value(a, OPT_FORMAT);
	if (format && strcmp(format, "json") != 0 && strcmp(format, "env") != 0 && strcmp(format, "text") != 0)
		return out_usage("open", "--format must be text, json or env");
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	struct tether_open_opts opts = { TETHER_OPEN_OPTS_INIT, .key = a->pos[0], .rev = args_value(a, OPT_REV),
	                                 .allow_drift = args_has(a, OPT_ALLOW_DRIFT) };
	json_t *handle = NULL;
	int err = tether_open(repo, &opts, &handle);
	tether_repo_free(repo);
	if (err)
		return out_error(err);
	/* On stderr whatever the format; only JSON keeps them in the handle, so
	 * a text or env consumer reads the handle's fields alone. */
	out_warnings(handle);
	if (!(format && strcmp(format, "json") == 0))
		json_object_del(handle, "warnings");
	if (format && strcmp(format, "json") == 0)
		rc = out_json(handle);
	else if (format && strcmp(format, "env") == 0)
		print_env(handle);
	else
		print_text(handle);
	json_decref(handle);
	return rc;
}

const struct cli_command cmd_open = {
	.name = "open",
	.summary = "print an object's handle: where a native library reads or writes it",
	.usage = "open KEY [-r REV [--allow-drift]] [--json | --format text|json|env]",
	.description =
		"Print the handle of object KEY: its kind, uri, ref and state, and whether\n"
		"it is read-only. With -r REV (or $TETHER_REV), read-only at the state REV\n"
		"records (an observed object only while its bytes are still those: exit 3\n"
		"otherwise, or a warning with --allow-drift); otherwise writable on this\n"
		"workspace's working branch, forked on first use. A handle already opened\n"
		"keeps its branch: after `tether new`, open the object again.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .min_positionals = 1, .max_positionals = 1 },
	.run = run_open,
};
