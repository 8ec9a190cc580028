/* The DuckLake backend's parsers of what a clone or a catalog hands it: a
 * committed locator's metadata string and table name, a snapshot time as a
 * catalog stores it, and a snapshot's changes_made list. Beyond not
 * crashing: a committed metadata string that parses carries no credential
 * keyword and names a server or an absolute file; a table name that parses
 * prints back (dl_table_name) to a name that parses to the same parts; a
 * time that parses as a timestamp prints back to one that parses to the
 * same instant. */
#include "fuzz.h"

#include "backends/ducklake/dl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void metadata(const char *s)
{
	struct dl_target t = {0};
	if (dl_parse_metadata(s, 1, &t) == 0) {
		if (t.type == DL_POSTGRES || t.type == DL_MYSQL) {
			FUZZ_ASSERT(t.server && strchr(t.server, ':'));
			FUZZ_ASSERT(!dl_param(&t, "password") && !dl_param(&t, "passfile") && !dl_param(&t, "service"));
		} else {
			FUZZ_ASSERT(t.path && t.path[0] == '/');
		}
	}
	dl_target_free(&t);
}

static void table(const char *s)
{
	char *schema = NULL, *name = NULL;
	if (dl_parse_table(s, &schema, &name) != 0)
		return;
	FUZZ_ASSERT(schema && *schema && name && *name);
	char *printed = dl_table_name(schema, name);
	FUZZ_ASSERT(printed);
	char *schema2 = NULL, *name2 = NULL;
	FUZZ_ASSERT(dl_parse_table(printed, &schema2, &name2) == 0);
	FUZZ_ASSERT(strcmp(schema, schema2) == 0 && strcmp(name, name2) == 0);
	free(schema);
	free(name);
	free(schema2);
	free(name2);
	free(printed);
}

static void timestamp(const char *s)
{
	int64_t us;
	if (dl_parse_time(s, &us) != 0 || !strchr(s, ':'))
		return;
	time_t secs = (time_t)(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
	int64_t frac = us - (int64_t)secs * 1000000;
	struct tm tm;
	if (!gmtime_r(&secs, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		return;
	char text[64];
	snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%02d.%06" PRId64 "+00", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	int64_t again;
	FUZZ_ASSERT(dl_parse_time(text, &again) == 0 && again == us);
}

static void changes(const char *s)
{
	int64_t *ids = NULL;
	size_t n = 0;
	(void)dl_changes_altered(s, &ids, &n);
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	metadata(s);
	table(s);
	timestamp(s);
	changes(s);
	free(s);
	return 0;
}
