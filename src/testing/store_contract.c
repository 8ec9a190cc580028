/* tether_store_conformance: run the store contract's checks over one
 * store, in a fresh contract root under the URI given, one line per check,
 * and delete everything written at the end. */
#include "testing/store_contract.h"

#include "testing/suite.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct sc_check *const tables[] = {
	sc_checks_objects,
	sc_checks_listing,
	sc_checks_versions,
	sc_checks_race,
};

static int vreason(struct sc_run *r, int code, const char *fmt, va_list ap)
{
	if (!r->why) {
		char buf[1024];
		vsnprintf(buf, sizeof buf, fmt, ap);
		r->why = strdup(buf);
	}
	return code;
}

int sc_fail(struct sc_run *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreason(r, SC_FAIL, fmt, ap);
	va_end(ap);
	return SC_FAIL;
}

int sc_skip(struct sc_run *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreason(r, SC_SKIP, fmt, ap);
	va_end(ap);
	return SC_SKIP;
}

const char *sc_key(struct sc_run *r, const char *key)
{
	char *buf = r->keys[r->next_key++ % SC_KEYS];
	snprintf(buf, SC_KEY_MAX, "%s%s%s", r->area, *key ? "/" : "", key);
	return buf;
}

int sc_ok(struct sc_run *r, const char *what, int rc)
{
	if (rc == 0)
		return 0;
	const char *msg = tether_error_last();
	return sc_fail(r, "%s returned %s%s%s", what, conf_code_name(rc), *msg ? ": " : " with no message", msg);
}

int sc_want(struct sc_run *r, const char *what, int rc, int want)
{
	if (rc == 0)
		return sc_fail(r, "%s succeeded; it must fail with %s", what, conf_code_name(want));
	if (rc != want)
		return sc_fail(r, "%s returned %s, not %s: %s", what, conf_code_name(rc), conf_code_name(want),
		               tether_error_last());
	if (!*tether_error_last())
		return sc_fail(r, "%s returned %s without a message (tether_error_set)", what, conf_code_name(rc));
	return 0;
}

uint8_t *sc_pattern(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		abort();
	uint32_t x = 2463534242u ^ (seed * 2654435761u);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
	return p;
}

int sc_put(struct sc_run *r, const char *key, const void *data, size_t len, struct tether_store_version *new_version)
{
	char what[SC_KEY_MAX + 32];
	const char *k = sc_key(r, key);
	snprintf(what, sizeof what, "put %s", k);
	tether_error_clear();
	return sc_ok(r, what, tether_store_put(r->st, k, data, len, TETHER_PUT_OVERWRITE, NULL, new_version));
}

int sc_expect_bytes(struct sc_run *r, const char *key, const void *data, size_t len)
{
	char what[SC_KEY_MAX + 32];
	const char *k = sc_key(r, key);
	snprintf(what, sizeof what, "get %s", k);
	uint8_t *got = NULL;
	size_t n = 0;
	tether_error_clear();
	int rc = sc_ok(r, what, tether_store_get(r->st, k, &got, &n, NULL));
	if (!rc && !got)
		rc = sc_fail(r, "%s gave no buffer (NULL data on success)", what);
	else if (!rc && (n != len || (len && memcmp(got, data, len) != 0)))
		rc = sc_fail(r, "%s gave %zu bytes%s, not the %zu written", what, n, n == len ? " that differ" : "", len);
	free(got);
	return rc;
}

int sc_expect_absent(struct sc_run *r, const char *key)
{
	char what[SC_KEY_MAX + 32];
	const char *k = sc_key(r, key);
	snprintf(what, sizeof what, "head %s", k);
	int exists = 1;
	tether_error_clear();
	int rc = sc_ok(r, what, tether_store_head(r->st, k, &exists, NULL, NULL));
	if (!rc && exists)
		rc = sc_fail(r, "%s says it exists; it must be absent", what);
	return rc;
}

int sc_list(struct sc_run *r, const char *prefix, const char *start_after, size_t page_size, json_t **keys)
{
	*keys = json_array();
	char pre[SC_KEY_MAX], after[SC_KEY_MAX], what[2 * SC_KEY_MAX + 64];
	snprintf(pre, sizeof pre, "%s", sc_key(r, prefix));
	snprintf(after, sizeof after, "%s", start_after ? sc_key(r, start_after) : "");
	snprintf(what, sizeof what, "list of %s/ after \"%s\" (%zu a page)", pre, after, page_size);
	tether_store_iter *it = NULL;
	tether_error_clear();
	int rc = sc_ok(r, what, tether_store_list(r->st, pre, after, page_size, &it));
	const char *key = NULL;
	size_t al = strlen(r->area) + 1;
	while (!rc && !(rc = sc_ok(r, what, tether_store_next(it, &key))) && key)
		json_array_append_new(*keys, json_string(key + al));
	tether_store_iter_free(it);
	if (rc) {
		json_decref(*keys);
		*keys = NULL;
	}
	return rc;
}

static void run_one(struct sc_suite *s, const struct sc_check *c, int index)
{
	struct sc_run r = {.s = s, .st = s->st};
	snprintf(r.area, sizeof r.area, "c%02d", index);
	tether_error_clear();
	int rc = c->run(&r);
	if (rc < 0)
		rc = SC_FAIL;
	conf_report(s->out, &s->counts, c->name, rc, r.why);
	free(r.why);
	tether_fault_store_set(NULL); /* a fault check that failed midway leaves none behind */
}

/* "contract-" and 12 random hex digits: a name no earlier run left. */
static void random_name(char out[32])
{
	unsigned char b[6] = {0};
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, b, sizeof b) : -1;
	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)sizeof b) {
		/* No /dev/urandom: time and pid are unique enough for a scratch name. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
		memcpy(b, &x, sizeof b);
	}
	snprintf(out, 32, "contract-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
}

/* Delete every key under the contract root, then the root: the last check,
 * reported like the others. */
static int clean_up(struct sc_run *r)
{
	for (int round = 0; round < 3; round++) {
		tether_store_iter *it = NULL;
		const char *key = NULL;
		size_t n = 0;
		int rc = sc_ok(r, "list of the contract root", tether_store_list(r->st, "", NULL, 0, &it));
		/* Deleting while listing: the walk resumes after the last key
		 * listed, so deleted keys are not listed again. */
		while (!rc && !(rc = sc_ok(r, "list of the contract root", tether_store_next(it, &key))) && key) {
			char what[SC_KEY_MAX + 16];
			snprintf(what, sizeof what, "delete %s", key);
			rc = sc_ok(r, what, tether_store_delete(r->st, key));
			n++;
		}
		tether_store_iter_free(it);
		if (rc)
			return rc;
		if (n == 0)
			break;
		if (round == 2)
			return sc_fail(r, "keys are still listed after deleting them twice");
	}
	int rc = sc_ok(r, "remove_root of the contract root", tether_store_remove_root(r->st));
	int exists = 1;
	if (!rc)
		rc = sc_ok(r, "root_exists after remove_root", tether_store_root_exists(r->st, &exists));
	if (!rc && exists)
		rc = sc_fail(r, "root_exists says the contract root still exists after remove_root");
	return rc;
}

static void print_header(struct sc_suite *s)
{
	fprintf(s->out, "# store contract of %s: flags%s%s%s\n", s->uri,
	        (s->flags & TETHER_STORE_ATOMIC_CAS) ? " ATOMIC_CAS" : "",
	        (s->flags & TETHER_STORE_VERSION_IDS) ? " VERSION_IDS" : "", s->flags ? "" : " none");
	if (!(s->flags & TETHER_STORE_ATOMIC_CAS))
		fprintf(s->out, "# no ATOMIC_CAS: the concurrent checks race writers of this process, which the "
		        "store orders (under its lock); writers that take no lock are not ordered\n");
	fflush(s->out);
}

static int unusable(FILE *out, struct tether_conformance_counts *counts, const char *fmt, const char *a,
                    const char *b)
{
	fputs("FAIL store: ", out);
	fprintf(out, fmt, a, b);
	fputc('\n', out);
	if (counts)
		*counts = (struct tether_conformance_counts){.failed = 1};
	return 1;
}

int tether_store_conformance(const char *uri, const json_t *options, FILE *out, struct tether_conformance_counts *counts)
{
	if (!out)
		out = stdout;
	if (!uri || !*uri)
		return unusable(out, counts, "no store URI%s%s", "", "");
	if (strncmp(uri, "fault+", 6) == 0 && tether_fault_store_register() != 0)
		return unusable(out, counts, "cannot register the fault store for %s: %s", uri, tether_error_last());
	char *canon = NULL;
	if (tether_store_canonical(uri, NULL, &canon) != 0)
		return unusable(out, counts, "%s: %s", uri, tether_error_last());
	char name[32];
	random_name(name);
	struct sc_suite s = {.options = options, .out = out};
	size_t n = strlen(canon) + strlen(name) + 2;
	s.uri = malloc(n);
	if (!s.uri)
		abort();
	snprintf(s.uri, n, "%s/%s", canon, name);
	free(canon);
	s.fault = strncmp(s.uri, "fault+", 6) == 0;
	s.local = s.uri[0] == '/';
	int rc = tether_store_open(s.uri, options, &s.st);
	if (rc == 0)
		rc = tether_store_make_root(s.st);
	if (rc) {
		unusable(out, counts, "cannot open %s: %s", s.uri, tether_error_last());
		tether_store_close(s.st);
		free(s.uri);
		return 1;
	}
	s.flags = tether_store_flags(s.st);
	print_header(&s);
	int index = 0;
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
		for (const struct sc_check *c = tables[t]; c->name; c++)
			run_one(&s, c, ++index);
	static const struct sc_check last = {"cleanup: every key the suite wrote is deleted, and the root removed",
	                                     clean_up};
	run_one(&s, &last, ++index);
	tether_store_close(s.st);
	free(s.uri);
	if (counts)
		*counts = s.counts;
	return s.counts.failed;
}
