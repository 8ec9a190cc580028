/* Versions of a branch: the two manifest naming schemes of _versions/ and
 * finding the newest. V1 names a version by its decimal number; V2 by
 * u64::MAX - version, 20 digits, so a listing in byte order (every store
 * lists so) gives the newest version first. Staging files, detached
 * versions (`d...`) and latest_version_hint.json are not versions; the
 * hint, where Lance wrote one, saves the listing. */
#include "backends/lance/lance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V2_DIGITS 20

char *lc_base(const char *branch)
{
	if (!branch || strcmp(branch, "main") == 0)
		return strdup("");
	return tt_strdupf("tree/%s/", branch);
}

char *lc_version_key(const char *branch, uint64_t version, enum lc_scheme scheme)
{
	char *base = lc_base(branch), *key = NULL;
	if (!base)
		return NULL;
	if (scheme == LC_SCHEME_V2)
		key = tt_strdupf("%s_versions/%020llu.manifest", base, (unsigned long long)(UINT64_MAX - version));
	else
		key = tt_strdupf("%s_versions/%llu.manifest", base, (unsigned long long)version);
	free(base);
	return key;
}

uint64_t lc_parse_version_name(const char *name, enum lc_scheme *scheme)
{
	*scheme = LC_SCHEME_NONE;
	size_t n = strlen(name), digits = 0;
	static const char suffix[] = ".manifest";
	if (n <= sizeof suffix - 1 || strcmp(name + n - (sizeof suffix - 1), suffix) != 0)
		return 0;
	while (name[digits] >= '0' && name[digits] <= '9')
		digits++;
	if (digits == 0 || digits != n - (sizeof suffix - 1) || digits > V2_DIGITS)
		return 0;
	uint64_t v = 0;
	for (size_t i = 0; i < digits; i++) {
		unsigned d = (unsigned)(name[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	if (digits == V2_DIGITS) {
		*scheme = LC_SCHEME_V2;
		return UINT64_MAX - v;
	}
	*scheme = LC_SCHEME_V1;
	return v;
}

struct walk {
	uint64_t *v;
	size_t n, cap;
	enum lc_scheme scheme;
};

static int walk_add(struct walk *w, uint64_t v)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		uint64_t *p = realloc(w->v, cap * sizeof *p);
		if (!p)
			return lc_fail_oom();
		w->v = p;
		w->cap = cap;
	}
	w->v[w->n++] = v;
	return 0;
}

/* List _versions/ of the branch; with first_only, stop at the first V2 name
 * (the newest). */
static int walk(struct lc_dataset *ds, const char *branch, int first_only, struct walk *w)
{
	memset(w, 0, sizeof *w);
	char *base = lc_base(branch), *prefix = base ? tt_strdupf("%s_versions", base) : NULL;
	free(base);
	if (!prefix)
		return lc_fail_oom();
	tether_store_iter *it = NULL;
	int rc = tether_store_list(ds->store, prefix, NULL, first_only ? 16 : 0, &it);
	size_t plen = strlen(prefix) + 1; /* and its '/' */
	for (const char *key = NULL; rc == 0;) {
		if ((rc = tether_store_next(it, &key)) || !key)
			break;
		if (strchr(key + plen, '/'))
			continue;
		enum lc_scheme s;
		uint64_t v = lc_parse_version_name(key + plen, &s);
		if (s == LC_SCHEME_NONE)
			continue;
		if (w->scheme != LC_SCHEME_NONE && s != w->scheme) {
			rc = tether_error_set(TETHER_EIO, "%s/%s/: holds manifests of both naming schemes; Lance refuses "
			                                  "such a directory", ds->uri, prefix);
			break;
		}
		w->scheme = s;
		if ((rc = walk_add(w, v)) || (first_only && s == LC_SCHEME_V2))
			break;
	}
	tether_store_iter_free(it);
	free(prefix);
	if (rc) {
		free(w->v);
		w->v = NULL;
	}
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Lance's latest_version_hint.json ({"version": N}, written after each
 * commit): version N must exist, and the probe walks up from it while
 * N+1, N+2, ... do (versions are contiguous above a committed one). A
 * hint that is missing, unreadable, names no manifest, or lags by more
 * than a few versions leaves the answer to the listing. *found 0 then. */
#define HINT_PROBES 8

static int exists_any(struct lc_dataset *ds, const char *branch, uint64_t v, enum lc_scheme *scheme, int *yes)
{
	char *key = NULL;
	int rc = lc_find_version(ds, branch, v, &key, NULL, scheme, yes);
	free(key);
	return rc;
}

static int from_hint(struct lc_dataset *ds, const char *branch, uint64_t *version, enum lc_scheme *scheme,
                     int *found)
{
	*found = 0;
	char *base = lc_base(branch), *key = base ? tt_strdupf("%s_versions/latest_version_hint.json", base) : NULL;
	free(base);
	if (!key)
		return lc_fail_oom();
	uint8_t *bytes = NULL;
	size_t len = 0;
	int rc = tether_store_get(ds->store, key, &bytes, &len, NULL);
	free(key);
	if (rc == TETHER_ENOTFOUND) {
		tether_error_clear();
		return 0;
	}
	if (rc)
		return rc;
	json_t *doc = json_loadb((const char *)bytes, len, 0, NULL);
	free(bytes);
	json_t *v = json_object_get(doc, "version");
	uint64_t at = json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
	json_decref(doc);
	int yes = 0;
	enum lc_scheme s = LC_SCHEME_NONE;
	if (at == 0 || (rc = exists_any(ds, branch, at, &s, &yes)) || !yes)
		return rc;
	for (int i = 0; i < HINT_PROBES; i++) {
		char *next = lc_version_key(branch, at + 1, s);
		int more = 0;
		rc = next ? tether_store_head(ds->store, next, &more, NULL, NULL) : lc_fail_oom();
		free(next);
		if (rc)
			return rc;
		if (!more) {
			*version = at;
			if (scheme)
				*scheme = s;
			*found = 1;
			return 0;
		}
		at++;
	}
	return 0;
}

int lc_latest(struct lc_dataset *ds, const char *branch, uint64_t *version, enum lc_scheme *scheme)
{
	int found = 0;
	int rc = from_hint(ds, branch, version, scheme, &found);
	if (rc || found)
		return rc;
	struct walk w;
	if ((rc = walk(ds, branch, 1, &w)))
		return rc;
	if (w.n == 0) {
		free(w.v);
		if (strcmp(branch, "main") == 0)
			return tether_error_set(TETHER_ENOTFOUND, "%s is not a Lance dataset (no manifest in _versions/)",
			                        ds->uri);
		return tether_error_set(TETHER_ENOTFOUND, "%s has no branch \"%s\"", ds->uri, branch);
	}
	uint64_t max = 0;
	for (size_t i = 0; i < w.n; i++)
		if (w.v[i] > max)
			max = w.v[i];
	*version = max;
	if (scheme)
		*scheme = w.scheme;
	free(w.v);
	return 0;
}

int lc_versions(struct lc_dataset *ds, const char *branch, uint64_t **out, size_t *n, enum lc_scheme *scheme)
{
	struct walk w;
	int rc = walk(ds, branch, 0, &w);
	if (rc)
		return rc;
	qsort(w.v, w.n, sizeof *w.v, cmp_u64);
	*out = w.v;
	*n = w.n;
	if (scheme)
		*scheme = w.scheme;
	return 0;
}

int lc_find_version(struct lc_dataset *ds, const char *branch, uint64_t version, char **key, uint64_t *size,
                    enum lc_scheme *scheme, int *exists)
{
	*exists = 0;
	*key = NULL;
	/* V2 first, as Lance resolves a version. */
	for (int s = LC_SCHEME_V2; s >= LC_SCHEME_V1; s--) {
		char *k = lc_version_key(branch, version, (enum lc_scheme)s);
		if (!k)
			return lc_fail_oom();
		int rc = tether_store_head(ds->store, k, exists, NULL, size);
		if (rc || *exists) {
			if (rc == 0) {
				*key = k;
				if (scheme)
					*scheme = (enum lc_scheme)s;
			} else {
				free(k);
			}
			return rc;
		}
		free(k);
	}
	return 0;
}

int lc_read_version(struct lc_dataset *ds, const char *branch, uint64_t version, struct lc_manifest *out)
{
	memset(out, 0, sizeof *out);
	char *key = NULL;
	int exists = 0;
	enum lc_scheme scheme = LC_SCHEME_NONE;
	int rc = lc_find_version(ds, branch, version, &key, NULL, &scheme, &exists);
	if (rc == 0 && !exists)
		rc = tether_error_set(TETHER_ENOTFOUND, "%s has no version %llu on branch %s", ds->uri,
		                      (unsigned long long)version, branch);
	uint8_t *bytes = NULL;
	size_t len = 0;
	if (rc == 0)
		rc = tether_store_get(ds->store, key, &bytes, &len, NULL);
	char *name = rc == 0 ? tt_strdupf("%s/%s", ds->uri, key) : NULL;
	if (rc == 0 && !name)
		rc = lc_fail_oom();
	if (rc == 0 && (rc = lc_manifest_parse(bytes, len, name, out)) == 0) {
		const char *mb = out->m->branch && *out->m->branch ? out->m->branch : "main";
		if (out->version != version)
			rc = tether_error_set(TETHER_EIO, "%s: holds version %llu, not %llu", name,
			                      (unsigned long long)out->version, (unsigned long long)version);
		else if (strcmp(mb, branch) != 0)
			rc = tether_error_set(TETHER_EIO, "%s: belongs to branch %s, not %s", name, mb, branch);
	}
	free(name);
	if (rc) {
		lc_manifest_free(out);
		free(bytes);
		free(key);
		return rc;
	}
	out->bytes = bytes;
	out->len = len;
	out->key = key;
	out->scheme = scheme;
	return 0;
}
