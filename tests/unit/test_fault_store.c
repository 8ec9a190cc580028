/* The fault-injecting store itself: its spec, which call faults, what each
 * action does to the store underneath (fail: nothing; tear: done, then
 * reported lost; delay: done), and that with no fault it is the local
 * store. */
#include "check.h"

#include <tether/store.h>
#include <tether/testing.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

static char root[256], uri[300];

static int put(tether_store *s, const char *key, const char *text)
{
	return tether_store_put(s, key, text, strlen(text), TETHER_PUT_OVERWRITE, NULL, NULL);
}

static int exists(tether_store *s, const char *key)
{
	int e = 0;
	return tether_store_head(s, key, &e, NULL, NULL) == 0 && e;
}

static void test_spec(void)
{
	const char *bad[] = {"put", "put:1", "put:0:fail", "put:x:fail", "nope:1:fail", "put:1:explode",
	                     "put:1:delay=", "put:1:delay=-5", "put:1+2:fail", ":1:fail", NULL};
	for (int i = 0; bad[i]; i++)
		CHECK(tether_fault_store_set(bad[i]) == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "OPS:N") != NULL);
	const char *good[] = {"put:1:fail", "put,copy:3+:tear", "read:2:transient", "any:1+:delay=1", "write:1:auth",
	                      "", NULL};
	for (int i = 0; good[i]; i++)
		CHECK(tether_fault_store_set(good[i]) == 0);
	CHECK(tether_fault_store_set(NULL) == 0);
}

static void test_actions(tether_store *s)
{
	/* No fault: the local store. */
	CHECK(put(s, "a", "one") == 0 && exists(s, "a"));
	CHECK(tether_fault_store_fired() == 0);

	/* The second put fails, and does nothing; the first and third do. */
	CHECK(tether_fault_store_set("put:2:fail") == 0);
	CHECK(put(s, "b1", "x") == 0);
	CHECK(put(s, "b2", "x") == TETHER_EIO && !exists(s, "b2"));
	CHECK(strstr(tether_error_last(), "injected") != NULL);
	CHECK(put(s, "b3", "x") == 0 && exists(s, "b3"));
	CHECK(tether_fault_store_fired() == 1);

	/* Reads are not writes: "write" faults put, copy and delete only. */
	CHECK(tether_fault_store_set("write:1+:transient") == 0);
	CHECK(exists(s, "a"));
	CHECK(tether_store_copy(s, "a", "c", NULL) == TETHER_ETRANSIENT && !exists(s, "c"));
	CHECK(tether_store_delete(s, "a") == TETHER_ETRANSIENT);
	CHECK(tether_fault_store_set(NULL) == 0 && exists(s, "a"));

	/* auth. */
	CHECK(tether_fault_store_set("get:1:auth") == 0);
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(tether_store_get(s, "a", &data, &len, NULL) == TETHER_EAUTH && !data);

	/* tear: the write lands, and is reported lost. */
	CHECK(tether_fault_store_set("put:1:tear") == 0);
	CHECK(tether_store_put(s, "t", "torn", 4, TETHER_PUT_IF_ABSENT, NULL, NULL) == TETHER_ETRANSIENT);
	CHECK(tether_fault_store_set(NULL) == 0);
	CHECK(tether_store_get(s, "t", &data, &len, NULL) == 0 && len == 4 && memcmp(data, "torn", 4) == 0);
	free(data);
	/* Asked again, put-if-absent tells it is there. */
	CHECK(tether_store_put(s, "t", "torn", 4, TETHER_PUT_IF_ABSENT, NULL, NULL) == TETHER_EREFUSED);

	/* list faults like the rest, and pages through when well. */
	CHECK(tether_fault_store_set("list:1:fail") == 0);
	tether_store_iter *it = NULL;
	const char *key = NULL;
	CHECK(tether_store_list(s, "", NULL, 2, &it) == 0);
	CHECK(tether_store_next(it, &key) == TETHER_EIO);
	tether_store_iter_free(it);
	CHECK(tether_fault_store_set(NULL) == 0);
	CHECK(tether_store_list(s, "", NULL, 2, &it) == 0);
	int n = 0;
	while (tether_store_next(it, &key) == 0 && key)
		n++;
	tether_store_iter_free(it);
	CHECK(n == 4); /* a b1 b3 t */

	/* delay: done, late. */
	CHECK(tether_fault_store_set("head:1:delay=30") == 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(exists(s, "a"));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 30);
	CHECK(tether_fault_store_set(NULL) == 0);
}

int main(void)
{
	snprintf(root, sizeof root, "%s/tether-test-fault-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	snprintf(uri, sizeof uri, "fault+file://%s", root);
	tether_store *s = NULL;
	CHECK(tether_store_open(uri, NULL, &s) == TETHER_EUSAGE); /* not registered yet */
	setenv("TETHER_STORE_FAULT", "put:1:fail", 1);
	CHECK(tether_fault_store_register() == 0);
	CHECK(tether_fault_store_register() == 0); /* twice is fine */
	CHECK(tether_store_open(uri, NULL, &s) == 0);
	if (s) {
		/* $TETHER_STORE_FAULT set the first fault. */
		CHECK(put(s, "env", "x") == TETHER_EIO);
		test_spec();
		test_actions(s);
		tether_store_close(s);
	}
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	CHECK_DONE();
}
