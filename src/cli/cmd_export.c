/* tether export FILE and tether publish --to URL: the dataset's history as
 * tables, written to a file or upserted into Postgres. */
#include "args.h"
#include "output.h"

#include <tether.h>

#include <stdio.h>
#include <string.h>

static size_t count_of(const char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	return n;
}

enum { EXP_FORMAT, EXP_REV, EXP_JSON };

static const struct arg_option export_options[] = {
	[EXP_FORMAT] = { "format", 0, ARG_VALUE, "FORMAT", "sqlite, parquet, csv or jsonl (default: by FILE's extension)" },
	[EXP_REV] = { "rev", 'r', ARG_LIST, "REV", "export the ancestors of REV only (repeatable)" },
	[EXP_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
};

static const char *const export_positionals[] = { "FILE", NULL };

static void print_tables(const json_t *tables)
{
	const char *name;
	json_t *n;
	json_object_foreach((json_t *)tables, name, n)
		printf("  %-16s %lld\n", name, (long long)json_integer_value(n));
}

static void print_export(const json_t *report)
{
	printf("exported to %s (%s):\n", out_escape(out_str_or(report, "path", "?")), out_str_or(report, "format", "?"));
	print_tables(json_object_get(report, "tables"));
}

static int run_export(const struct args *a)
{
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	const char *const *revs = args_values(a, EXP_REV);
	struct tether_export_opts opts = {
		TETHER_EXPORT_OPTS_INIT,
		.path = a->pos[0],
		.format = args_value(a, EXP_FORMAT),
		.revs = revs,
		.nrevs = count_of(revs),
	};
	json_t *report = NULL;
	int err = tether_export(repo, &opts, &report);
	return cli_finish_engine_call(repo, NULL, err, report, args_has(a, EXP_JSON), print_export);
}

const struct cli_command cmd_export = {
	.name = "export",
	.summary = "write the dataset's history as tables",
	.usage = "export FILE [--format FORMAT] [-r REV]... [--json]",
	.description =
		"Write the dataset's history as the tables commits, objects,\n"
		"object_states, refs, listings, listing_entries and meta (docs/CLI.md\n"
		"lists their columns): a SQLite file (.sqlite, .sqlite3, .db), or a\n"
		"directory of one file per table in Parquet (.parquet), CSV (.csv) or\n"
		"JSON Lines (.jsonl). By default every commit reachable from any ref;\n"
		"--rev REV exports REV and its ancestors. FILE is replaced whole; a\n"
		"directory only when it holds nothing but an earlier export's files.\n"
		"The same history gives the same bytes.",
	.spec = { ARGS_OPTIONS(export_options), .positionals = export_positionals, .min_positionals = 1,
	          .max_positionals = 1 },
	.run = run_export,
};

enum { PUB_TO, PUB_SCHEMA, PUB_REV, PUB_JSON };

static const struct arg_option publish_options[] = {
	[PUB_TO] = { "to", 0, ARG_VALUE, "URL", "postgresql://[USER@]HOST[:PORT]/DB (no password in it)" },
	[PUB_SCHEMA] = { "schema", 0, ARG_VALUE, "NAME", "the Postgres schema to write (default: tether)" },
	[PUB_REV] = { "rev", 'r', ARG_LIST, "REV", "publish the ancestors of REV only (repeatable)" },
	[PUB_JSON] = { "json", 0, ARG_FLAG, NULL, "print the report as JSON" },
};

static void print_publish(const json_t *report)
{
	printf("published to %s, schema %s: %lld new commits, %lld removed, %lld unchanged\n",
	       out_escape(out_str_or(report, "to", "?")), out_escape(out_str_or(report, "schema", "?")),
	       (long long)out_int(report, "new_commits"), (long long)out_int(report, "removed_commits"),
	       (long long)out_int(report, "unchanged_commits"));
}

static int run_publish(const struct args *a)
{
	if (!args_has(a, PUB_TO))
		return out_usage("publish", "--to URL is required");
	tether_repo *repo;
	int rc = cli_find_repo(&repo);
	if (rc)
		return rc;
	const char *const *revs = args_values(a, PUB_REV);
	struct tether_publish_opts opts = {
		TETHER_PUBLISH_OPTS_INIT,
		.to = args_value(a, PUB_TO),
		.schema = args_value(a, PUB_SCHEMA),
		.revs = revs,
		.nrevs = count_of(revs),
	};
	json_t *report = NULL;
	int err = tether_publish(repo, &opts, &report);
	return cli_finish_engine_call(repo, NULL, err, report, args_has(a, PUB_JSON), print_publish);
}

const struct cli_command cmd_publish = {
	.name = "publish",
	.summary = "upsert the export's tables into Postgres",
	.usage = "publish --to postgresql://... [--schema NAME] [-r REV]... [--json]",
	.description =
		"Upsert the tables of `tether export` into a Postgres schema, in one\n"
		"transaction: commits the schema does not hold yet are added with their\n"
		"objects, states and listings; commits it holds that are no longer in\n"
		"the history (a rebase dropped them) are deleted with their objects;\n"
		"refs and meta are replaced. The password comes from PGPASSWORD,\n"
		"~/.pgpass, a service file or .tether/secrets.toml\n"
		"[databases.\"URL\"] password, never from the URL.",
	.spec = { ARGS_OPTIONS(publish_options) },
	.run = run_publish,
};
