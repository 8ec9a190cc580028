/* The option parser. Hand-written rather than getopt_long: tether's errors
 * name the command ("unknown option '--foo' for 'status'"), --x/--no-x pairs
 * are settled by order, options repeat, and help is generated from the same
 * table, none of which getopt_long gives without as much code again. */
#include "args.h"
#include "output.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Print a usage error, naming the command when there is one. */
__attribute__((format(printf, 2, 3))) static int usage_error(const struct args *a,
                                                             const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (a->command)
		return out_usage(a->command, "%s for '%s'", msg, a->command);
	return out_usage(NULL, "%s", msg);
}

static int find_long(const struct arg_spec *spec, const char *name, size_t len)
{
	for (size_t i = 0; i < spec->noptions; i++) {
		const char *o = spec->options[i].name;
		if (o && strlen(o) == len && memcmp(o, name, len) == 0)
			return (int)i;
	}
	return -1;
}

static int find_short(const struct arg_spec *spec, char c)
{
	for (size_t i = 0; i < spec->noptions; i++)
		if (spec->options[i].short_name == c)
			return (int)i;
	return -1;
}

static void record(struct args *a, int opt, int index, const char *value)
{
	struct arg_seen *s = &a->seen[opt];
	if (s->values)
		s->values[s->count] = value;
	s->count++;
	s->last = index;
	s->value = value;
}

/* --name, --name=value or --name value, at argv[*i]. */
static int parse_long(struct args *a, int argc, char **argv, int *i)
{
	const char *name = argv[*i] + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	int opt = find_long(a->spec, name, len);

	if (opt < 0) {
		if (len == 4 && memcmp(name, "help", 4) == 0)
			return ARGS_HELP;
		return usage_error(a, "unknown option '--%.*s'", (int)len, name);
	}
	const struct arg_option *o = &a->spec->options[opt];
	if (o->type == ARG_FLAG) {
		if (eq)
			return usage_error(a, "option '--%s' takes no value", o->name);
		record(a, opt, *i, NULL);
		return 0;
	}
	const char *value = eq ? eq + 1 : NULL;
	if (!value) {
		if (*i + 1 >= argc)
			return usage_error(a, "option '--%s' needs a value (%s)", o->name, o->metavar);
		value = argv[++*i];
	}
	record(a, opt, *i, value);
	return 0;
}

/* -m MSG, -mMSG, or a cluster of short flags, at argv[*i]. */
static int parse_short(struct args *a, int argc, char **argv, int *i)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		int opt = find_short(a->spec, *p);
		if (opt < 0) {
			if (*p == 'h')
				return ARGS_HELP;
			return usage_error(a, "unknown option '-%c'", *p);
		}
		const struct arg_option *o = &a->spec->options[opt];
		if (o->type == ARG_FLAG) {
			record(a, opt, *i, NULL);
			continue;
		}
		const char *value = p[1] ? p + 1 : NULL;
		if (!value) {
			if (*i + 1 >= argc)
				return usage_error(a, "option '-%c' needs a value (%s)", *p, o->metavar);
			value = argv[++*i];
		}
		record(a, opt, *i, value);
		return 0;
	}
	return 0;
}

static const char *positional_name(const struct arg_spec *spec, int n)
{
	if (spec->positionals) {
		for (int i = 0; spec->positionals[i]; i++)
			if (i == n)
				return spec->positionals[i];
	}
	return "ARGUMENT";
}

/* Room for everything argv could fill: every value and every positional
 * is one argument, so argc + 1 slots always suffice. */
static int allocate(struct args *a, int argc)
{
	const struct arg_spec *spec = a->spec;
	a->seen = calloc(spec->noptions ? spec->noptions : 1, sizeof *a->seen);
	a->pos = calloc((size_t)argc + 1, sizeof *a->pos);
	if (!a->seen || !a->pos)
		return -1;
	for (size_t i = 0; i < spec->noptions; i++) {
		if (spec->options[i].type != ARG_LIST)
			continue;
		a->seen[i].values = calloc((size_t)argc + 1, sizeof *a->seen[i].values);
		if (!a->seen[i].values)
			return -1;
	}
	return 0;
}

int args_parse(const struct arg_spec *spec, const char *command, int argc, char **argv,
               struct args *a)
{
	memset(a, 0, sizeof *a);
	a->command = command;
	a->spec = spec;
	if (allocate(a, argc) < 0)
		return out_fail("out of memory");

	int only_positionals = 0;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		if (!only_positionals && strcmp(arg, "--") == 0) {
			only_positionals = 1;
			continue;
		}
		if (!only_positionals && arg[0] == '-' && arg[1] != '\0') {
			int rc = arg[1] == '-' ? parse_long(a, argc, argv, &i)
			                       : parse_short(a, argc, argv, &i);
			if (rc)
				return rc;
			continue;
		}
		if (spec->stop_at_positional) {
			a->next = i;
			return 0;
		}
		/* Counted after the loop, so that a --help further on still wins. */
		a->pos[a->npos++] = arg;
	}
	a->next = argc;
	if (a->npos > spec->max_positionals)
		return usage_error(a, "unexpected argument '%s'", a->pos[spec->max_positionals]);
	if (a->npos < spec->min_positionals)
		return usage_error(a, "missing argument %s", positional_name(spec, a->npos));
	return 0;
}

void args_free(struct args *a)
{
	if (a->seen) {
		for (size_t i = 0; i < a->spec->noptions; i++)
			free(a->seen[i].values);
	}
	free(a->seen);
	free(a->pos);
	a->seen = NULL;
	a->pos = NULL;
}

int args_has(const struct args *a, int opt)
{
	return a->seen[opt].count > 0;
}

const char *args_value(const struct args *a, int opt)
{
	return a->seen[opt].value;
}

const char *const *args_values(const struct args *a, int opt)
{
	static const char *const none[] = { NULL };
	return a->seen[opt].values ? a->seen[opt].values : none;
}

int args_later(const struct args *a, int opt, int other)
{
	if (!args_has(a, opt))
		return 0;
	return !args_has(a, other) || a->seen[opt].last > a->seen[other].last;
}

int args_integer(const struct args *a, int opt, long min, long max, long *out)
{
	const char *v = args_value(a, opt);
	if (!v)
		return 0;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno == 0 && end != v && *end == '\0' && n >= min && n <= max) {
		*out = n;
		return 0;
	}
	const struct arg_option *o = &a->spec->options[opt];
	char name[64];
	if (o->name)
		snprintf(name, sizeof name, "--%s", o->name);
	else
		snprintf(name, sizeof name, "-%c", o->short_name);
	if (max == LONG_MAX)
		return usage_error(a, "option '%s' needs a whole number >= %ld (got '%s')", name, min,
		                   v);
	return usage_error(a, "option '%s' needs a whole number from %ld to %ld (got '%s')", name,
	                   min, max, v);
}

/* "-m, --message MSG", "    --json" or "-C DIR" into buf. */
static void option_label(const struct arg_option *o, char *buf, size_t len)
{
	const char *space = o->metavar ? " " : "";
	const char *metavar = o->metavar ? o->metavar : "";
	if (!o->name)
		snprintf(buf, len, "-%c%s%s", o->short_name, space, metavar);
	else if (o->short_name)
		snprintf(buf, len, "-%c, --%s%s%s", o->short_name, o->name, space, metavar);
	else
		snprintf(buf, len, "    --%s%s%s", o->name, space, metavar);
}

void args_print_options(FILE *f, const struct arg_spec *spec)
{
	static const struct arg_option help = { "help", 'h', ARG_FLAG, NULL, "show this help" };
	char label[128];
	int width = 0;

	for (size_t i = 0; i <= spec->noptions; i++) {
		option_label(i < spec->noptions ? &spec->options[i] : &help, label, sizeof label);
		int n = (int)strlen(label);
		if (n > width)
			width = n;
	}
	for (size_t i = 0; i <= spec->noptions; i++) {
		const struct arg_option *o = i < spec->noptions ? &spec->options[i] : &help;
		option_label(o, label, sizeof label);
		fprintf(f, "  %-*s  %s\n", width, label, o->help);
	}
}
