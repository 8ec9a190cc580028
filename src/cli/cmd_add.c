/* tether add KEY [URI] --kind K: register an object (write its manifest);
 * the store is opened to check it, and its state is recorded by the next
 * commit. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_KIND, OPT_WRITE, OPT_PIN, OPT_AT, OPT_OPTION, OPT_JSON, OPT_CREATE, OPT_PICK, NGENERIC };

/* The options every kind takes. Each kind's own (--file, --ref, ...) come
 * from its backend's declaration (tether_add_options) and follow these in
 * the table the command line is parsed with. */
static const struct arg_option options[NGENERIC] = {
	[OPT_KIND] = { "kind", 0, ARG_VALUE, "K", "the object's kind, from 'tether backends' (required)" },
	[OPT_WRITE] = { "write", 0, ARG_VALUE, "POLICY",
	                "fork (a branch per bookmark), track (write upstream) or none" },
	[OPT_PIN] = { "pin", 0, ARG_VALUE, "POLICY",
	              "native (a native ref per recorded state) or record (the state alone)" },
	[OPT_AT] = { "at", 0, ARG_VALUE, "ID", "start from this point of the object's history (HISTORY backends)" },
	[OPT_OPTION] = { "option", 0, ARG_LIST, "NAME=VALUE",
	                 "pass an option to the backend as a string (repeatable)" },
	[OPT_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
	[OPT_CREATE] = { "create", 0, ARG_FLAG, NULL, "create the store first, empty (backends with CREATE)" },
	[OPT_PICK] = { "pick", 0, ARG_FLAG, NULL,
	               "list the store's history and read the number of the entry to start from on stdin" },
};

/* The generic options passed on to the engine under their own names. */
static const int generic_backend_options[] = { OPT_WRITE, OPT_PIN, OPT_AT };

/* This command line's table: the generic options, then the declared
 * options of the kind --kind names (kind_decl, which the names point into). */
static struct arg_option *line_options;
static struct arg_spec line_spec;
static json_t *kind_decl;
static const char *line_kind;

/* --kind's value on the command line (the last one, as the parser takes
 * it), found before the line is parsed: the kind decides the table. */
static const char *kind_named(int argc, char **argv)
{
	const char *kind = NULL;
	for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strncmp(argv[i], "--kind=", 7) == 0)
			kind = argv[i] + 7;
		else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
			kind = argv[++i];
	}
	return kind;
}

static int is_generic(const char *name)
{
	for (int i = 0; i < NGENERIC; i++)
		if (strcmp(options[i].name, name) == 0)
			return 1;
	return 0;
}

static const struct arg_spec *add_spec_for(int argc, char **argv)
{
	line_kind = kind_named(argc, argv);
	kind_decl = line_kind ? tether_add_options(line_kind) : NULL;
	/* An unknown kind (kind_decl NULL) is reported when the command runs. */
	size_t n = json_array_size(kind_decl);
	line_options = calloc(NGENERIC + n, sizeof *line_options);
	if (!line_options)
		return &cmd_add.spec;
	memcpy(line_options, options, sizeof options);
	size_t used = NGENERIC, i;
	json_t *d;
	json_array_foreach(kind_decl, i, d) {
		const char *name = out_str_or(d, "name", "");
		if (!*name || is_generic(name))
			continue; /* the engine's options are the engine's */
		line_options[used++] = (struct arg_option){ name, 0, ARG_VALUE, out_str_or(d, "value_name", "VALUE"),
			                                    out_str_or(d, "help", "") };
	}
	line_spec = cmd_add.spec;
	line_spec.options = line_options;
	line_spec.noptions = used;
	return &line_spec;
}

static void add_spec_free(void)
{
	free(line_options);
	json_decref(kind_decl);
	line_options = NULL;
	kind_decl = NULL;
}

/* The declaration of the kind's option called name, or NULL. */
static const json_t *declared(const char *name)
{
	size_t i;
	json_t *d;
	json_array_foreach(kind_decl, i, d)
		if (strcmp(out_str_or(d, "name", ""), name) == 0)
			return d;
	return NULL;
}

/* "immutable or mutable", from a declaration's choices. */
static void join_choices(const json_t *choices, char *out, size_t cap)
{
	size_t i, o = 0, n = json_array_size(choices);
	json_t *c;
	out[0] = '\0';
	json_array_foreach(choices, i, c) {
		int w = snprintf(out + o, cap - o, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
		                 json_string_value(c) ? json_string_value(c) : "?");
		if (w < 0 || (size_t)w >= cap - o)
			break;
		o += (size_t)w;
	}
}

/* A kind's option value against its choices: a usage error naming the
 * option, the kind and the values it takes. */
static int check_value(const char *name, const char *value)
{
	const json_t *d = declared(name);
	const json_t *choices = json_object_get(d, "choices");
	if (!json_is_array(choices))
		return 0;
	size_t i;
	json_t *c;
	json_array_foreach(choices, i, c)
		if (json_string_value(c) && strcmp(json_string_value(c), value) == 0)
			return 0;
	char allowed[256];
	join_choices(choices, allowed, sizeof allowed);
	return out_usage("add", "option '--%s' of kind %s takes %s, not '%s', for 'add'", name, line_kind, allowed,
	                 value);
}

/* The kinds' options, for `tether add --help`: every kind this build
 * knows, each with the options its backend declares. */
static void add_help_more(FILE *f)
{
	json_t *list = tether_backends();
	size_t i, j;
	json_t *b, *d;
	int width = 0, any = 0;
	char label[160];
	json_array_foreach(list, i, b) {
		json_array_foreach(json_object_get(b, "add_options"), j, d) {
			int n = snprintf(label, sizeof label, "--%s %s", out_str_or(d, "name", "?"),
			                 out_str_or(d, "value_name", "VALUE"));
			width = n > width ? n : width;
			any = 1;
		}
	}
	if (any)
		fprintf(f, "\noptions of each kind (tether add ... --kind KIND --NAME VALUE):\n");
	json_array_foreach(list, i, b) {
		const json_t *decls = json_object_get(b, "add_options");
		if (!json_array_size(decls))
			continue;
		fprintf(f, "  %s:\n", out_str_or(b, "kind", "?"));
		json_array_foreach(decls, j, d) {
			snprintf(label, sizeof label, "--%s %s", out_str_or(d, "name", "?"), out_str_or(d, "value_name", "VALUE"));
			fprintf(f, "    %-*s  %s", width, label, out_str_or(d, "help", ""));
			const json_t *choices = json_object_get(d, "choices");
			if (json_is_array(choices)) {
				char allowed[256];
				join_choices(choices, allowed, sizeof allowed);
				fprintf(f, "; one of %s", allowed);
			}
			if (json_is_string(json_object_get(d, "default")))
				fprintf(f, "; default %s", out_str_or(d, "default", ""));
			if (json_is_true(json_object_get(d, "defaults")))
				fprintf(f, "; [defaults] %s in tether.toml", out_str_or(d, "name", ""));
			fputc('\n', f);
		}
	}
	json_decref(list);
}

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
	int rc = check_value(name, eq + 1);
	if (!rc)
		rc = set_option(obj, name, eq + 1);
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
	for (size_t i = 0; rc == 0 && i < sizeof generic_backend_options / sizeof generic_backend_options[0]; i++) {
		int opt = generic_backend_options[i];
		if (args_has(a, opt))
			rc = set_option(obj, options[opt].name, args_value(a, opt));
	}
	for (size_t opt = NGENERIC; rc == 0 && opt < a->spec->noptions; opt++) {
		const char *name = a->spec->options[opt].name;
		if (args_has(a, (int)opt) && (rc = check_value(name, args_value(a, (int)opt))) == 0)
			rc = set_option(obj, name, args_value(a, (int)opt));
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
	.usage = "add KEY [URI] --kind K [--write fork|track|none] [--pin native|record] [--at ID | --pick]\n"
	         "           [--create] [--option NAME=VALUE]... [--json] [the kind's options: --NAME VALUE]...",
	.description =
		"Register the object at URI under KEY by writing .tether/objects/KEY.toml.\n"
		"The store is opened to check it: it must exist (unless --create makes it),\n"
		"with the branch, ref or --at point named; nothing in it is changed (unless\n"
		"--create), and no state is recorded: the first 'tether commit' does that.\n"
		"Relative paths in URI are taken from the current directory. A kind whose\n"
		"objects are named by its options alone (a repository, a database) takes\n"
		"no URI; the others refuse its absence.\n"
		"Each kind takes its own options, which its backend declares (listed below).",
	.spec = { ARGS_OPTIONS(options), .positionals = positionals, .min_positionals = 1,
	          .max_positionals = 2 },
	.run = run_add,
	.spec_for = add_spec_for,
	.spec_free = add_spec_free,
	.help_more = add_help_more,
};
