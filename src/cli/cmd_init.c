/* tether init: make the current directory a dataset. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <stdlib.h>

static int run_init(const struct args *a)
{
	(void)a;
	char *cwd = cli_cwd();
	if (!cwd)
		return tether_exit_code(TETHER_ERROR);
	tether_repo *repo;
	int err = tether_repo_init(cwd, &repo);
	free(cwd);
	if (err)
		return out_error(err);
	/* The first 8 characters are the ones every pin id of this dataset
	 * starts with, so they are what a user will recognise later. */
	printf("Initialized tether dataset %.8s in %s\n", tether_repo_id(repo),
	       tether_repo_root(repo));
	tether_repo_free(repo);
	return 0;
}

const struct cli_command cmd_init = {
	.name = "init",
	.summary = "create a dataset in the current directory",
	.usage = "init",
	.description = "Create tether.toml and .tether/ in the current directory, which must be\n"
	               "inside a git checkout (one with a working tree) or a jj repository,\n"
	               "colocated with git or not; its commits are then git's or jj's. Refuses\n"
	               "when a dataset already exists there.",
	.spec = { 0 },
	.run = run_init,
};
