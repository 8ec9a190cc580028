/* The harness for `memory`: systems live in the process-global store that
 * memory.h exposes for tests, so new systems, writes and forks' locators
 * are a name, a tt_memory_write and a branch away. Nothing to clean up:
 * the store ends with the process. */
#include "testing/harnesses.h"

#include "backends/memory.h"

#include <stdio.h>

/* Names and written values never repeat within a process, so every
 * mutate is a change no earlier one made, and a fork's writes never
 * touch the keys the base's writes do. */
static unsigned long systems, writes;

static const char *string_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int new_locator(void *ud, json_t **locator)
{
	(void)ud;
	char name[64];
	snprintf(name, sizeof name, "conformance-%lu", ++systems);
	*locator = json_pack("{s:s, s:s}", "system", name, "branch", "main");
	return *locator ? 0 : tether_error_set(TETHER_ERROR, "out of memory");
}

static int new_object(void *ud, json_t **locator)
{
	int rc = new_locator(ud, locator);
	if (!rc)
		rc = tt_memory_create(string_of(*locator, "system"));
	if (rc) {
		json_decref(*locator);
		*locator = NULL;
	}
	return rc;
}

static int mutate(void *ud, const json_t *locator, const json_t *working_ref)
{
	(void)ud;
	const char *branch = working_ref ? string_of(working_ref, "branch") : string_of(locator, "branch");
	char key[32];
	snprintf(key, sizeof key, "k%lu", ++writes);
	return tt_memory_write(string_of(locator, "system"), branch ? branch : "main", key, json_integer((json_int_t)writes),
	                       NULL);
}

const struct tether_harness *tt_harness_memory(void)
{
	static const struct tether_harness h = {
		TETHER_HARNESS_INIT,
		.new_object = new_object,
		.mutate = mutate,
		.new_locator = new_locator,
	};
	return &h;
}
