/* The store contract, version ids (TETHER_STORE_VERSION_IDS): an older
 * version reads as it was written, list_versions lists newest first, and
 * an id the object never had is not found. A store without the flag, or a
 * bucket keeping no versions (stat gives no id), skips them, saying why;
 * so does a store that keeps only the latest version, where only the
 * last check applies. */
#include "testing/store_contract.h"

#include <stdlib.h>
#include <string.h>

struct versions {
	struct tether_store_stat st[8];
	int n;
};

static int collect(void *ud, const char *key, const struct tether_store_stat *st)
{
	(void)key;
	struct versions *v = ud;
	if (v->n < 8)
		v->st[v->n] = *st;
	v->n++;
	return 0;
}

/* Two writes of key, their stats in s1 and s2, and what list_versions
 * says; SC_SKIP when the store or bucket names no versions. */
static int two_versions(struct sc_run *r, const char *key, struct tether_store_stat *s1,
                        struct tether_store_stat *s2, struct versions *listed)
{
	if (!(r->s->flags & TETHER_STORE_VERSION_IDS))
		return sc_skip(r, "the store has no TETHER_STORE_VERSION_IDS");
	const char *k = sc_key(r, key);
	int rc = sc_put(r, key, "one", 3, NULL);
	if (!rc)
		rc = sc_ok(r, "stat", tether_store_stat(r->st, k, NULL, s1));
	if (!rc && !s1->version_id[0])
		return sc_skip(r, "the bucket keeps no versions: stat gives no version id (versioning is off)");
	if (!rc)
		rc = sc_put(r, key, "two!!", 5, NULL);
	if (!rc)
		rc = sc_ok(r, "stat", tether_store_stat(r->st, k, NULL, s2));
	if (!rc && (!s2->version_id[0] || strcmp(s1->version_id, s2->version_id) == 0))
		rc = sc_fail(r, "the second write's version id is \"%s\"; the first's was \"%s\"", s2->version_id,
		             s1->version_id);
	memset(listed, 0, sizeof *listed);
	if (!rc)
		rc = sc_ok(r, "list_versions", tether_store_list_versions(r->st, k, collect, listed));
	return rc;
}

/* The store lists only the latest version: older ones are not kept. */
static int keeps_only_latest(struct sc_run *r, const struct versions *listed)
{
	return sc_skip(r, "the store keeps only the latest version (list_versions lists %d of the 2 written)",
	               listed->n);
}

static int check_old_version(struct sc_run *r)
{
	struct tether_store_stat s1, s2, at;
	struct versions listed;
	int rc = two_versions(r, "versioned", &s1, &s2, &listed);
	if (rc)
		return rc;
	const char *k = sc_key(r, "versioned");
	rc = tether_store_stat(r->st, k, s1.version_id, &at);
	if (rc == TETHER_ENOTFOUND && listed.n < 2)
		return keeps_only_latest(r, &listed);
	if ((rc = sc_ok(r, "stat at the older version id", rc)))
		return rc;
	if (!at.exists || at.size != 3 || strcmp(at.version.token, s1.version.token) != 0)
		return sc_fail(r, "stat at %s says exists %d, %llu bytes at %s; it was 3 bytes at %s", s1.version_id,
		               at.exists, (unsigned long long)at.size, at.version.token, s1.version.token);
	uint8_t *data = NULL;
	size_t n = 0;
	struct tether_store_stat got;
	rc = sc_ok(r, "get at the older version id", tether_store_get_version(r->st, k, s1.version_id, &data, &n, &got));
	if (!rc && (n != 3 || memcmp(data, "one", 3) != 0))
		rc = sc_fail(r, "get at the older version id gave %zu bytes, not \"one\"", n);
	if (!rc && strcmp(got.version_id, s1.version_id) != 0)
		rc = sc_fail(r, "get at version id %s says it read %s", s1.version_id, got.version_id);
	free(data);
	data = NULL;
	if (!rc)
		rc = sc_ok(r, "get at the current version id",
		           tether_store_get_version(r->st, k, s2.version_id, &data, &n, NULL));
	if (!rc && (n != 5 || memcmp(data, "two!!", 5) != 0))
		rc = sc_fail(r, "get at the current version id gave %zu bytes, not \"two!!\"", n);
	free(data);
	if (!rc)
		rc = sc_ok(r, "stat", tether_store_stat(r->st, k, NULL, &at));
	if (!rc && strcmp(at.version_id, s2.version_id) != 0)
		rc = sc_fail(r, "stat now says version id %s; the last write was %s", at.version_id, s2.version_id);
	return rc;
}

static int check_list_versions(struct sc_run *r)
{
	struct tether_store_stat s1, s2;
	struct versions listed;
	int rc = two_versions(r, "listed", &s1, &s2, &listed);
	if (rc)
		return rc;
	if (listed.n == 0)
		return sc_fail(r, "list_versions listed no version of an object written twice");
	if (listed.n > 8)
		return sc_fail(r, "list_versions listed %d versions of an object written twice", listed.n);
	const struct tether_store_stat *first = &listed.st[0];
	if (!first->exists || !first->is_latest || strcmp(first->version_id, s2.version_id) != 0 || first->size != 5)
		return sc_fail(r, "list_versions lists first %s (exists %d, latest %d, %llu bytes); want the latest, %s "
		               "(5 bytes)", first->version_id, first->exists, first->is_latest,
		               (unsigned long long)first->size, s2.version_id);
	if (listed.n < 2)
		return keeps_only_latest(r, &listed);
	const struct tether_store_stat *second = &listed.st[1];
	if (listed.n != 2 || !second->exists || second->is_latest || strcmp(second->version_id, s1.version_id) != 0 ||
	    second->size != 3)
		return sc_fail(r, "list_versions lists %d versions, the second %s (exists %d, latest %d, %llu bytes); "
		               "want 2, the second %s (3 bytes, not latest)", listed.n, second->version_id,
		               second->exists, second->is_latest, (unsigned long long)second->size, s1.version_id);
	return 0;
}

static int check_foreign_id(struct sc_run *r)
{
	struct tether_store_stat s1, s2, other, st;
	struct versions listed;
	int rc = two_versions(r, "mine", &s1, &s2, &listed);
	if (rc)
		return rc;
	/* An id the store gave, but to another object: one `mine` never had. */
	if ((rc = sc_put(r, "other", "other", 5, NULL)) ||
	    (rc = sc_ok(r, "stat", tether_store_stat(r->st, sc_key(r, "other"), NULL, &other))))
		return rc;
	const char *k = sc_key(r, "mine");
	if ((rc = sc_want(r, "stat at another object's version id", tether_store_stat(r->st, k, other.version_id, &st),
	                  TETHER_ENOTFOUND)))
		return rc;
	uint8_t *data = NULL;
	size_t n = 0;
	rc = sc_want(r, "get at another object's version id",
	             tether_store_get_version(r->st, k, other.version_id, &data, &n, NULL), TETHER_ENOTFOUND);
	free(data);
	return rc;
}

const struct sc_check sc_checks_versions[] = {
	{"versions: stat and get at an older version id give the old bytes", check_old_version},
	{"versions: list_versions lists newest first", check_list_versions},
	{"versions: an id the object never had is TETHER_ENOTFOUND", check_foreign_id},
	{NULL, NULL},
};
