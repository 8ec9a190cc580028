/* tether: the command-line tool. main() reads the global options (-C DIR,
 * --version, --help), finds the command and hands it the rest of argv.
 * Nothing here calls into the engine before a command runs, so help and
 * usage errors cost no more than starting the process (but for `add`,
 * whose options and help come from the backends' declarations). */
#include "args.h"
#include "output.h"
#include "stop.h"

#include <tether.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct cli_command *find_command(const char *name);
static void print_global_help(FILE *f);
static void print_command_help(FILE *f, const struct cli_command *cmd);

/* `tether help [COMMAND]`: a command itself, so that `tether help --help`
 * and usage errors behave like every other command's. */
static int run_help(const struct args *a)
{
	if (a->npos == 0) {
		print_global_help(stdout);
		return 0;
	}
	const struct cli_command *cmd = find_command(a->pos[0]);
	if (!cmd)
		return out_usage(NULL, "unknown command '%s'", a->pos[0]);
	print_command_help(stdout, cmd);
	return 0;
}

static const char *const help_positionals[] = { "COMMAND", NULL };

static const struct cli_command cmd_help = {
	.name = "help",
	.summary = "show a command's help",
	.usage = "help [COMMAND]",
	.description = "Show the help of COMMAND, or the list of commands.",
	.spec = { .positionals = help_positionals, .max_positionals = 1 },
	.run = run_help,
};

/* In the order `tether --help` lists them: the order of a first session. */
static const struct cli_command *const commands[] = {
	&cmd_init, &cmd_add, &cmd_backends, &cmd_status, &cmd_commit,
	&cmd_diff, &cmd_log, &cmd_verify, &cmd_new, &cmd_pull, &cmd_promote, &cmd_merge, &cmd_open, &cmd_restore,
	&cmd_drop, &cmd_gc, &cmd_repair, &cmd_upgrade, &cmd_abandon, &cmd_undo, &cmd_ops, &cmd_export, &cmd_publish,
	&cmd_import, &cmd_help,
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

enum { GOPT_DIRECTORY, GOPT_VERSION, GOPT_TIMEOUT };

static const struct arg_option global_options[] = {
	[GOPT_DIRECTORY] = { NULL, 'C', ARG_LIST, "DIR",
	                     "run as if started in DIR (repeatable; each relative to the last)" },
	[GOPT_VERSION] = { "version", 0, ARG_FLAG, NULL, "print tether's version" },
	[GOPT_TIMEOUT] = { "timeout", 0, ARG_VALUE, "SECONDS",
	                   "stop the command after SECONDS (exit 124); default: $TETHER_TIMEOUT, or none" },
};

static const struct arg_spec global_spec = {
	ARGS_OPTIONS(global_options),
	.stop_at_positional = 1,
};

static void print_global_help(FILE *f)
{
	fputs("usage: tether [-C DIR] [--version] [--help] COMMAND [ARGS]\n"
	      "\n"
	      "Version control for heterogeneous datasets inside a git repository.\n"
	      "\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fputs("\nglobal options:\n", f);
	args_print_options(f, &global_spec);
	fputs("\n"
	      "See 'tether help COMMAND' for a command's options.\n"
	      "Exit codes: 0 ok, 1 error, 2 usage, 3 refused or conflict, 4 lock timeout,\n"
	      "130 SIGINT, 143 SIGTERM, 124 --timeout (the command stopped, nothing half-written).\n",
	      f);
}

static void print_command_help(FILE *f, const struct cli_command *cmd)
{
	fprintf(f, "usage: tether %s\n\n%s\n\noptions:\n", cmd->usage,
	        cmd->description ? cmd->description : cmd->summary);
	args_print_options(f, &cmd->spec);
	if (cmd->help_more)
		cmd->help_more(f);
}

char *cli_cwd(void)
{
	for (size_t size = 256;; size *= 2) {
		char *buf = malloc(size);
		if (!buf) {
			out_fail("out of memory");
			return NULL;
		}
		if (getcwd(buf, size))
			return buf;
		free(buf);
		if (errno != ERANGE) {
			out_fail("cannot read the current directory: %s", strerror(errno));
			return NULL;
		}
	}
}

int cli_find_repo(tether_repo **repo)
{
	char *cwd = cli_cwd();
	if (!cwd)
		return tether_exit_code(TETHER_ERROR);
	int err = tether_repo_find(cwd, repo);
	free(cwd);
	return err ? out_error(err) : 0;
}

int cli_find_repo_with_plan(const char *from, json_t **plan, tether_repo **repo)
{
	*plan = NULL;
	if (from && tether_plan_load(from, plan) != 0)
		return out_error(TETHER_EUSAGE);
	int rc = cli_find_repo(repo);
	if (rc) {
		json_decref(*plan);
		*plan = NULL;
	}
	return rc;
}

int cli_finish_engine_call(tether_repo *repo, json_t *plan, int err, json_t *report, int json,
                           void (*print_text)(const json_t *report))
{
	tether_repo_free(repo);
	json_decref(plan);
	if (err) {
		json_decref(report);
		return out_error(err);
	}
	int rc = json ? out_json(report) : (print_text(report), 0);
	json_decref(report);
	return rc;
}

/* -C DIR, in order, like git: each one relative to the one before; an
 * empty DIR changes nothing. */
static int change_directories(const char *const *dirs)
{
	for (; *dirs; dirs++) {
		if (**dirs && chdir(*dirs) != 0)
			return out_fail("cannot change to '%s': %s", *dirs, strerror(errno));
	}
	return 0;
}

static int run_command(const struct cli_command *cmd, int argc, char **argv)
{
	struct args a;
	const struct arg_spec *spec = cmd->spec_for ? cmd->spec_for(argc, argv) : &cmd->spec;
	int rc = args_parse(spec, cmd->name, argc, argv, &a);
	if (rc == ARGS_HELP) {
		print_command_help(stdout, cmd);
		rc = 0;
	} else if (rc == 0) {
		rc = cmd->run(&a);
	}
	args_free(&a);
	if (cmd->spec_free)
		cmd->spec_free();
	return rc;
}

/* After the global options: --version, or the command at argv[g->next]. */
static int dispatch(const struct args *g, int argc, char **argv)
{
	if (args_has(g, GOPT_VERSION)) {
		printf("tether %s\n", tether_version());
		return 0;
	}
	int rc = change_directories(args_values(g, GOPT_DIRECTORY));
	if (rc)
		return rc;
	if ((rc = cli_stop_install(args_value(g, GOPT_TIMEOUT))) != 0)
		return rc;
	if (g->next >= argc) {
		print_global_help(stderr);
		return tether_exit_code(TETHER_EUSAGE);
	}
	const char *name = argv[g->next];
	const struct cli_command *cmd = find_command(name);
	if (!cmd)
		return out_usage(NULL, "unknown command '%s'", name);
	return run_command(cmd, argc - g->next - 1, argv + g->next + 1);
}

int main(int argc, char **argv)
{
	struct args g;
	int rc = args_parse(&global_spec, NULL, argc - 1, argv + 1, &g);
	if (rc == ARGS_HELP) {
		print_global_help(stdout);
		rc = 0;
	} else if (rc == 0) {
		rc = dispatch(&g, argc - 1, argv + 1);
	}
	args_free(&g);
	return out_finish(rc);
}
