/* tether add KEY URI --kind K: register an object (write its manifest);
 * nothing is contacted until status or commit. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_KIND, OPT_FILE, OPT_WRITE, OPT_PIN, OPT_AT, OPT_REMOTE, OPT_REF, OPT_OPTION, OPT_JSON, OPT_CREATE, OPT_PICK };

static const struct arg_option options[] = {
	[OPT_KIND] = { "kind", 0, ARG_VALUE, "K", "the object's kind, from 'tether backends' (required)" },
	[OPT_FILE] = { "file", 0, ARG_VALUE, "POLICY",
	               "file backend: immutable (a change is drift) or mutable" },
	[OPT_WRITE] = { "write", 0, ARG_VALUE, "POLICY",
	                "fork (a branch per bookmark), track (write upstream) or none" },
	[OPT_PIN] = { "pin", 0, ARG_VALUE, "POLICY",
	              "native (a native ref per recorded state) or record (the state alone)" },
	[OPT_AT] = { "at", 0, ARG_VALUE, "ID", "start from this point of the object's history (HISTORY backends)" },
	[OPT_REMOTE] = { "remote", 0, ARG_VALUE, "NAME", "git backend: push pins to this configured remote" },
	[OPT_REF] = { "ref", 0, ARG_VALUE, "REF", "git backend: the ref to follow (default HEAD)" },
	[OPT_OPTION] = { "option", 0, ARG_LIST, "NAME=VALUE",
	                 "pass an option to the backend as a string (repeatable)" },
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_CREATE] = { "create", 0, ARG_FLAG, NULL, "create the store first, empty (backends with CREATE)" },
	[OPT_PICK] = { "pick", 0, ARG_FLAG, NULL,
	               "list the store's history and read the number of the entry to start from on stdin" },
};

/* The dedicated backend options, each passed on under its own name. A new
 * one is a line here and a line in options[]. */
static const int backend_options[] = { OPT_FILE, OPT_WRITE, OPT_PIN, OPT_AT, OPT_REMOTE, OPT_REF };

static const char *const positionals[] = { "KEY", "URI", NULL };

/* options[name] = value, refusing a name given twice (by --NAME and
 * --option NAME=..., say), since which one should win is anyone's guess. */
static int set_option(json_t *obj, const char *name, const char *value)
{
	if (json_object_get(obj, name))
		return out_usage("add", "backend option '%s' given twice for 'add'", name);
	json_t *v = json_string(value);
	if (!v || json_object_set_new(obj, name, v) != 0)
		return out_usage("add", "backend option '%s' is not valid UTF-8 for 'add'", name);
	return 0;
}

/* "NAME=VALUE" from --option into options[NAME]. */
static int set_passthrough(json_t *obj, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg)
		return out_usage("add", "option '--option' needs NAME=VALUE (got '%s') for 'add'", arg);
	char *name = strndup(arg, (size_t)(eq - arg));
	if (!name)
		return out_fail("out of memory");
	int rc = set_option(obj, name, eq + 1);
	free(name);
	return rc;
}

/* The options object tether_add receives: every backend option given. */
static int build_options(const struct args *a, json_t **out)
{
	json_t *obj = json_object();
	if (!obj)
		return out_fail("out of memory");
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof backend_options / sizeof backend_options[0]; i++) {
		int opt = backend_options[i];
		if (args_has(a, opt))
			rc = set_option(obj, options[opt].name, args_value(a, opt));
	}
	for (const char *const *v = args_values(a, OPT_OPTION); rc == 0 && *v; v++)
		rc = set_passthrough(obj, *v);
	if (rc) {
		json_decref(obj);
		return rc;
	}
	*out = obj;
	return 0;
}

enum { PICK_MAX = 50 };

/* --pick: number the history on stderr, read the choice from stdin, and
 * add with `at` set to it. */
static int pick_at(tether_repo *repo, struct tether_add_opts *opts, json_t *backend_opts)
{
	json_t *entries = NULL;
	int err = tether_add_history(repo, opts, PICK_MAX, &entries);
	if (err)
		return out_error(err);
	size_t i, n = json_array_size(entries);
	json_t *e;
	json_array_foreach(entries, i, e)
		fprintf(stderr, "%3zu  %.12s  %s\n", i + 1, out_str_or(e, "id", "?"), out_str_or(e, "message", ""));
	fprintf(stderr, "start from which entry [1-%zu]? ", n);
	char line[64];
	long choice = fgets(line, sizeof line, stdin) ? strtol(line, NULL, 10) : 0;
	int rc = 0;
	if (choice < 1 || (size_t)choice > n)
		rc = out_usage("add", "--pick: no valid choice read from stdin (a number from 1 to %zu)", n);
	else
		rc = set_option(backend_opts, "at", out_str_or(json_array_get(entries, (size_t)choice - 1), "id", ""));
	json_decref(entries);
	return rc;
}

static int add_object(const struct args *a, json_t *backend_opts, json_t **report)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	char *cwd = cli_cwd();
	if (!cwd) {
		tether_repo_free(repo);
		return tether_exit_code(TETHER_ERROR);
	}
	struct tether_add_opts opts = {
		TETHER_ADD_OPTS_INIT,
		.key = a->pos[0],
		.uri = a->pos[1],
		.kind = args_value(a, OPT_KIND),
		.cwd = cwd,
		.options = backend_opts,
		.create = args_has(a, OPT_CREATE),
	};
	if (args_has(a, OPT_PICK)) {
		rc = pick_at(repo, &opts, backend_opts);
		if (rc) {
			free(cwd);
			tether_repo_free(repo);
			return rc;
		}
	}
	int err = tether_add(repo, &opts, report);
	free(cwd);
	tether_repo_free(repo);
	return err ? out_error(err) : 0;
}

static int run_add(const struct args *a)
{
	if (!args_has(a, OPT_KIND))
		return out_usage("add", "missing option --kind K for 'add'");
	json_t *backend_opts = NULL;
	int rc = build_options(a, &backend_opts);
	if (rc)
		return rc;
	json_t *report = NULL;
	rc = add_object(a, backend_opts, &report);
	json_decref(backend_opts);
	if (rc) {
		json_decref(report);
		return rc;
	}
	if (args_has(a, OPT_JSON))
		rc = out_json(report);
	else
		printf("Added %s (kind %s, tier %s)\n", out_str_or(report, "key", a->pos[0]),
		       out_str_or(report, "kind", args_value(a, OPT_KIND)),
		       out_str_or(report, "tier", "unknown"));
	fflush(stdout); /* the result first, then what to watch out for */
	out_warnings(report);
	json_decref(report);
	return rc;
}

const struct cli_command cmd_add = {
	.name = "add",
	.summary = "register an object under a key",
	.usage = "add KEY URI --kind K [--file immutable|mutable] [--write fork|track|none] [--pin native|record]\n"
	         "           [--at ID | --pick] [--create] [--remote NAME] [--ref REF] [--option NAME=VALUE]... [--json]",
	.description =
		"Register the object at URI under KEY by writing .tether/objects/KEY.toml.\n"
		"Nothing is contacted yet: the first 'tether commit' records its state.\n"
		"Relative paths in URI are taken from the current directory.",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .min_positionals = 2,
	          .max_positionals = 2 },
	.run = run_add,
};
