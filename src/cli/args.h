/* The command line: how a command describes its options and arguments, the
 * parser that reads argv against that description, and the command table's
 * entry type. The same description generates `tether CMD --help`, so the
 * help can never list an option the parser does not take. */
#ifndef TETHER_CLI_ARGS_H
#define TETHER_CLI_ARGS_H

#include <tether.h>

#include <stddef.h>
#include <stdio.h>

enum arg_type {
	ARG_FLAG,  /* --json: given or not */
	ARG_VALUE, /* --kind K: one value; given twice, the last one wins (as in git) */
	ARG_LIST,  /* --option N=V: repeatable; every value is kept, in order */
};

struct arg_option {
	const char *name;    /* long name, without "--"; NULL for a short-only option */
	char short_name;     /* 'm' for -m, or 0 */
	enum arg_type type;
	const char *metavar; /* the value's name in help ("MSG"); NULL for flags */
	const char *help;    /* one line */
};

struct arg_spec {
	const struct arg_option *options;
	size_t noptions;
	const char *const *positionals; /* names for errors, NULL-terminated; may be NULL */
	int min_positionals;
	int max_positionals;
	/* Stop at the first positional instead of reading on: the global
	 * options end where the command's name begins. */
	int stop_at_positional;
};

#define ARGS_OPTIONS(table) .options = (table), .noptions = sizeof(table) / sizeof((table)[0])

/* What the parser found for one option. */
struct arg_seen {
	int count;           /* times given */
	int last;            /* argv index of the last time: for --x/--no-x, the later wins */
	const char *value;   /* the last value (ARG_VALUE, ARG_LIST) */
	const char **values; /* ARG_LIST: every value, NULL-terminated */
};

struct args {
	const char *command;   /* named in errors; NULL for the global options */
	const struct arg_spec *spec;
	struct arg_seen *seen; /* one per option, in the spec's order */
	const char **pos;      /* positionals, NULL-terminated */
	int npos;
	int next; /* stop_at_positional: index in argv of the first argument not read */
};

/* args_parse's result when -h or --help was given. */
enum { ARGS_HELP = -1 };

/* Parse argv[0..argc) (the arguments after the command name). Returns 0;
 * ARGS_HELP as soon as -h or --help is read (every spec understands them);
 * or the exit code after printing the error (a usage error is printed as
 * "tether: error: ... for 'COMMAND'" with a hint). `out` must be passed to
 * args_free whatever the result. */
int args_parse(const struct arg_spec *spec, const char *command, int argc, char **argv,
               struct args *out);
void args_free(struct args *a);

/* Was option `opt` (its index in the spec) given? */
int args_has(const struct args *a, int opt);
/* The option's last value, or NULL when not given. */
const char *args_value(const struct args *a, int opt);
/* The option's values in order, NULL-terminated (never NULL). */
const char *const *args_values(const struct args *a, int opt);
/* Was `opt` given after `other` (or `other` not at all)? For --x / --no-x. */
int args_later(const struct args *a, int opt, int other);
/* Read the option's value as an integer in [min, max]; when the option is
 * absent *out is left alone. Returns 0, or the usage exit code after
 * printing why the value was refused. */
int args_integer(const struct args *a, int opt, long min, long max, long *out);

/* Print the spec's options, one a line with its help, -h/--help last. */
void args_print_options(FILE *f, const struct arg_spec *spec);

/* One `tether` command. Each cmd_<name>.c defines one of these. */
struct cli_command {
	const char *name;
	const char *summary;     /* one line, for `tether --help` */
	const char *usage;       /* the synopsis after "tether " */
	const char *description; /* for `tether help CMD`; may be NULL */
	struct arg_spec spec;
	int (*run)(const struct args *a); /* returns the exit code */
	/* Optional: the table to parse this command line with, when it
	 * depends on the line (add: the options of the kind --kind names);
	 * NULL: spec. spec_free, called after run, releases it. */
	const struct arg_spec *(*spec_for)(int argc, char **argv);
	void (*spec_free)(void);
	/* Optional: more help after the options (add: each kind's). */
	void (*help_more)(FILE *f);
};

extern const struct cli_command cmd_init;
extern const struct cli_command cmd_add;
extern const struct cli_command cmd_backends;
extern const struct cli_command cmd_status;
extern const struct cli_command cmd_commit;
extern const struct cli_command cmd_diff;
extern const struct cli_command cmd_log;
extern const struct cli_command cmd_verify;
extern const struct cli_command cmd_gc;
extern const struct cli_command cmd_new;
extern const struct cli_command cmd_promote;
extern const struct cli_command cmd_merge;
extern const struct cli_command cmd_pull;
extern const struct cli_command cmd_open;
extern const struct cli_command cmd_ops;
extern const struct cli_command cmd_repair;
extern const struct cli_command cmd_upgrade;
extern const struct cli_command cmd_restore;
extern const struct cli_command cmd_drop;
extern const struct cli_command cmd_abandon;
extern const struct cli_command cmd_undo;
extern const struct cli_command cmd_export;
extern const struct cli_command cmd_publish;
extern const struct cli_command cmd_import;

/* Provided by main.c: what a command needs before it calls the engine. */

/* The current directory (malloc'd), or NULL after printing an error. */
char *cli_cwd(void);
/* Find the dataset at or above the current directory. Returns 0, or the
 * exit code after printing the error. */
int cli_find_repo(tether_repo **repo);
/* --from-plan FILE (NULL: none): load the plan into *plan (NULL when
 * none), then find the dataset. Returns 0, or the exit code after printing
 * the error; on failure nothing is left to free. */
int cli_find_repo_with_plan(const char *from, json_t **plan, tether_repo **repo);
/* After the engine call of a command that found its dataset with
 * cli_find_repo_with_plan: free the dataset and the plan, then print the
 * error `err` (a report that came with it is dropped) or the report, as
 * JSON when `json`, else through print_text, and free it. Returns the
 * exit code. */
int cli_finish_engine_call(tether_repo *repo, json_t *plan, int err, json_t *report, int json,
                           void (*print_text)(const json_t *report));

#endif
