/* `tether-conformance KIND --fault-store`: the kind's harness with its
 * objects moved onto the fault store. A harness's locators name their
 * store under "uri" as an absolute path; the backend is handed
 * fault+file://PATH instead, and the harness's own callbacks (which act on
 * the system through its own library) get their locator back as they made
 * it. With no fault set the fault store passes every call through, so
 * every check runs over it as well as the store checks. */
#include "testing/harnesses.h"

#include <stdlib.h>
#include <string.h>

static const struct tether_harness *inner;
static struct tether_harness wrapped;

#define PREFIX "fault+file://"

/* A copy of locator with "uri" moved to (to_fault) or from the fault store. */
static json_t *moved(const json_t *locator, int to_fault)
{
	json_t *copy = json_deep_copy(locator);
	const char *uri = json_string_value(json_object_get(copy, "uri"));
	if (!uri)
		return copy;
	char *text = NULL;
	if (to_fault && uri[0] == '/' && (text = malloc(strlen(PREFIX) + strlen(uri) + 1)))
		strcat(strcpy(text, PREFIX), uri);
	else if (!to_fault && strncmp(uri, PREFIX, strlen(PREFIX)) == 0)
		text = strdup(uri + strlen(PREFIX));
	if (text)
		json_object_set_new(copy, "uri", json_string(text));
	free(text);
	return copy;
}

static int made(int rc, json_t **locator)
{
	if (rc == 0 && *locator) {
		json_t *f = moved(*locator, 1);
		json_decref(*locator);
		*locator = f;
	}
	return rc;
}

static int new_object(void *ud, json_t **locator)
{
	(void)ud;
	return made(inner->new_object(inner->ud, locator), locator);
}

static int new_locator(void *ud, json_t **locator)
{
	(void)ud;
	return made(inner->new_locator(inner->ud, locator), locator);
}

static int mutate(void *ud, const json_t *locator, const json_t *working_ref)
{
	(void)ud;
	json_t *own = moved(locator, 0);
	int rc = inner->mutate(inner->ud, own, working_ref);
	json_decref(own);
	return rc;
}

static void cleanup(void *ud, const json_t *locator)
{
	(void)ud;
	json_t *own = moved(locator, 0);
	inner->cleanup(inner->ud, own);
	json_decref(own);
}

const struct tether_harness *tt_fault_harness(const struct tether_harness *h)
{
	if (tether_fault_store_register() != 0)
		return NULL;
	inner = h;
	wrapped = *h;
	wrapped.ud = NULL;
	wrapped.new_object = h->new_object ? new_object : NULL;
	wrapped.new_locator = h->new_locator ? new_locator : NULL;
	wrapped.mutate = h->mutate ? mutate : NULL;
	wrapped.cleanup = h->cleanup ? cleanup : NULL;
	return &wrapped;
}
