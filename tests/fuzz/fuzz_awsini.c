/* The reader of AWS's shared credentials and config files
 * (src/store/s3/awsfiles.h), on any bytes, in both modes. Beyond not
 * crashing: a file is either read, every profile and services section a
 * table of string settings with lowercase names, or refused with
 * TETHER_ECONFIG and "fuzz:LINE: why" (or "fuzz: contains a NUL byte"). */
#include "fuzz.h"

#include "store/s3/awsfiles.h"

#include <tether.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_tables(const json_t *sections)
{
	const char *name, *key;
	json_t *table, *v;
	json_object_foreach((json_t *)sections, name, table) {
		FUZZ_ASSERT(json_is_object(table));
		json_object_foreach(table, key, v) {
			FUZZ_ASSERT(json_is_string(v));
			FUZZ_ASSERT(key[0] != '\0');
			for (const char *c = key; *c; c++)
				FUZZ_ASSERT(!isupper((unsigned char)*c));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int config = 0; config <= 1; config++) {
		json_t *profiles = NULL, *services = NULL;
		int rc = tt_aws_ini_parse((const char *)data, size, "fuzz", config, &profiles, &services);
		if (rc != 0) {
			FUZZ_ASSERT(rc == TETHER_ECONFIG || rc == TETHER_EIO);
			FUZZ_ASSERT(!profiles && !services);
			const char *msg = tether_error_last();
			unsigned long line = 0;
			FUZZ_ASSERT((sscanf(msg, "fuzz:%lu: ", &line) == 1 && line >= 1) ||
			            strcmp(msg, "fuzz: contains a NUL byte: not a text file") == 0 || rc == TETHER_EIO);
			continue;
		}
		check_tables(profiles);
		FUZZ_ASSERT(config ? json_is_object(services) : services == NULL);
		if (services)
			check_tables(services);
		json_decref(profiles);
		json_decref(services);
	}
	return 0;
}
