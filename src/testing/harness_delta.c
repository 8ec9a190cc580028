/* The harness for `delta`: every system is a fresh Delta table whose log
 * the harness writes as a Delta writer does, one JSON commit per version:
 * version 0 with commitInfo, protocol and metaData, each mutate a commit
 * with a commitInfo of delta-rs's shape (an append of one row and one
 * file). No data files are written: the backend reads only the log. The
 * tables the deltalake library itself writes are tests/e2e/test_delta.py's.
 * Layout: <scratch>/table. */
#include "testing/harnesses.h"

#include "testing/suite.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned long tables;

/* Version `version`'s commit, put-if-absent as a Delta writer commits. */
static int write_commit(const char *table, long long version, const char *text)
{
	char dir[PATH_MAX], name[32];
	if ((size_t)snprintf(dir, sizeof dir, "%s/_delta_log", table) >= sizeof dir)
		return tether_error_set(TETHER_EIO, "path too long: %s", table);
	snprintf(name, sizeof name, "%020lld.json", version);
	return tt_harness_write(dir, name, text, 1);
}

static int new_object(void *ud, json_t **locator)
{
	(void)ud;
	char table[PATH_MAX + 8], dir[PATH_MAX + 24];
	int rc = tt_harness_scratch_child("tether-conformance-delta", "table", table, sizeof table);
	snprintf(dir, sizeof dir, "%s/_delta_log", table);
	if (!rc && (mkdir(table, 0777) != 0 || mkdir(dir, 0777) != 0))
		rc = tether_error_set(TETHER_EIO, "cannot make %s", dir);
	char text[1024];
	snprintf(text, sizeof text,
	         "{\"commitInfo\":{\"timestamp\":1700000000000,\"operation\":\"CREATE TABLE\",\"operationParameters\":{}}}\n"
	         "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
	         "{\"metaData\":{\"id\":\"00000000-0000-4000-8000-%012lu\",\"format\":{\"provider\":\"parquet\","
	         "\"options\":{}},\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[]}\","
	         "\"partitionColumns\":[],\"configuration\":{},\"createdTime\":1700000000000}}\n",
	         ++tables);
	if (!rc)
		rc = write_commit(table, 0, text);
	if (!rc && !(*locator = json_pack("{s:s}", "uri", table)))
		rc = tether_error_set(TETHER_ERROR, "out of memory");
	return rc;
}

static int mutate(void *ud, const json_t *locator, const json_t *working_ref)
{
	(void)ud;
	(void)working_ref; /* Delta has no forks */
	const char *table = json_string_value(json_object_get(locator, "uri"));
	if (!table)
		return tether_error_set(TETHER_ERROR, "delta harness: a locator without uri");
	/* The next version: one past the newest commit there. */
	long long next = 0;
	char path[PATH_MAX];
	struct stat st;
	for (;; next++) {
		snprintf(path, sizeof path, "%s/_delta_log/%020lld.json", table, next);
		if (stat(path, &st) != 0)
			break;
	}
	char text[512];
	snprintf(text, sizeof text,
	         "{\"commitInfo\":{\"timestamp\":%lld,\"operation\":\"WRITE\",\"operationParameters\":{\"mode\":"
	         "\"Append\"},\"operationMetrics\":{\"num_added_files\":1,\"num_added_rows\":%lld,"
	         "\"num_removed_files\":0}}}\n",
	         1700000000000LL + next * 1000, next);
	return write_commit(table, next, text);
}

const struct tether_harness *tt_harness_delta(void)
{
	static const struct tether_harness h = {
		TETHER_HARNESS_INIT,
		.new_object = new_object,
		.mutate = mutate,
		.cleanup = tt_harness_remove_parent,
	};
	return &h;
}
