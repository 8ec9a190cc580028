/* Store URIs: the one place that decides what a store URI means, how
 * tether records it, and what a committed locator may name.
 *
 * A URI tether records is canonical, so that one store has one spelling
 * (its identity, and so its pin ids, must not depend on how it was typed):
 * a local store is a plain absolute path, normalised; anything else is
 * scheme://host/path with the scheme and host lowercased and no empty
 * segments. A committed locator comes from a clone, which is untrusted:
 * it may name only what tether itself would record, so no "..", no
 * credentials (a URI is printed, logged and committed; secrets belong in
 * .tether/secrets.toml), no query (where Azure carries SAS tokens), no
 * relative path, and no scheme tether has no store for. */
#include "store/store_impl.h"

#include "util/fsutil.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

/* Length of the scheme before "://", or 0 when uri starts with none. */
static size_t scheme_len(const char *uri)
{
	const char *sep = strstr(uri, "://");
	if (!sep || sep == uri || !isalpha((unsigned char)uri[0]))
		return 0;
	for (const char *p = uri; p < sep; p++)
		if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
			return 0;
	return (size_t)(sep - uri);
}

char *tt_store_scheme_of(const char *uri)
{
	size_t n = scheme_len(uri);
	if (!n)
		return uri[0] == '/' ? strdup("file") : NULL;
	char *s = strndup(uri, n);
	for (char *p = s; p && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

/* uri for a message: what may be a secret (user:password@, a query that
 * may be a signature, a fragment) replaced by "***". malloc'd. */
static char *redacted(const char *uri)
{
	size_t n = strlen(uri);
	char *o = malloc(n + 8);
	if (!o)
		return NULL;
	const char *sep = strstr(uri, "://");
	const char *host = sep ? sep + 3 : uri;
	const char *slash = strchr(host, '/');
	const char *at = NULL;
	for (const char *p = host; *p && (!slash || p < slash); p++)
		if (*p == '@')
			at = p;
	size_t k = 0;
	if (sep && at) {
		memcpy(o, uri, (size_t)(host - uri));
		k = (size_t)(host - uri);
		memcpy(o + k, "***", 3);
		k += 3;
		uri = at;
	}
	const char *q = strpbrk(uri, "?#");
	size_t keep = q ? (size_t)(q - uri) + 1 : strlen(uri);
	memcpy(o + k, uri, keep);
	k += keep;
	if (q) {
		memcpy(o + k, "***", 3);
		k += 3;
	}
	o[k] = '\0';
	return o;
}

static int bad(const char *uri, const char *why)
{
	char *shown = redacted(uri);
	int rc = tether_error_set(TETHER_EUSAGE, "store URI '%s': %s", shown ? shown : "(out of memory)", why);
	free(shown);
	return rc;
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* A local path: absolute (or made so against cwd), normalised. */
static int canonical_local(const char *uri, const char *path, const char *cwd, char **out)
{
	if (!*path)
		return bad(uri, "names no path");
	if (!cwd && path[0] != '/')
		return bad(uri, "a store must be an absolute path or SCHEME://...");
	/* "s3:/bucket": a scheme with one slash is a typo, not a file. */
	const char *colon = strchr(path, ':');
	if (colon && colon[1] == '/' && path[0] != '/' && path[0] != '.' && path[0] != '~') {
		size_t n = 0;
		while (isalnum((unsigned char)path[n]) || path[n] == '+' || path[n] == '-' || path[n] == '.')
			n++;
		if (path + n == colon)
			return bad(uri, "looks like a URI without \"//\" (write SCHEME://..., or ./PATH for a local path)");
	}
	*out = cwd ? tether_path_resolve(path, cwd) : tt_path_normalize(path);
	return *out ? 0 : oom();
}

/* Hadoop's Azure URIs (abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/
 * PATH, and the older wasb[s]://) name the container before the '@': a
 * name, not a credential. A ':' there (a password) is still refused. */
static int authority_names_container(const char *uri, size_t slen)
{
	static const char *const schemes[] = {"abfs", "abfss", "wasb", "wasbs"};
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
		if (slen == strlen(schemes[i]) && strncasecmp(uri, schemes[i], slen) == 0)
			return 1;
	return 0;
}

static int canonical_remote(const char *uri, size_t slen, char **out)
{
	const char *rest = uri + slen + 3;
	if (strpbrk(rest, "?#"))
		return bad(uri, "a query or fragment is not part of a store's name (options and secrets go in "
		                ".tether/secrets.toml)");
	if (strchr(rest, '\\'))
		return bad(uri, "a backslash is not allowed");
	const char *slash = strchr(rest, '/');
	size_t hlen = slash ? (size_t)(slash - rest) : strlen(rest);
	if (memchr(rest, '@', hlen) && !(authority_names_container(uri, slen) && !memchr(rest, ':', hlen)))
		return bad(uri, "credentials do not belong in a URI (put them in .tether/secrets.toml)");
	size_t n = strlen(uri);
	char *o = malloc(n + 2);
	if (!o)
		return oom();
	size_t k = 0;
	for (size_t i = 0; i < slen; i++)
		o[k++] = (char)tolower((unsigned char)uri[i]);
	memcpy(o + k, "://", 3);
	k += 3;
	for (size_t i = 0; i < hlen; i++)
		o[k++] = (char)tolower((unsigned char)rest[i]);
	for (const char *p = slash; p && *p;) {
		while (*p == '/')
			p++;
		const char *seg = p;
		while (*p && *p != '/')
			p++;
		size_t sl = (size_t)(p - seg);
		if (sl == 0)
			continue;
		if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.')) {
			free(o);
			return bad(uri, "\".\" and \"..\" are not allowed in a store's path");
		}
		o[k++] = '/';
		memcpy(o + k, seg, sl);
		k += sl;
	}
	if (hlen == 0 && k == slen + 3) {
		free(o);
		return bad(uri, "names neither a bucket nor a path");
	}
	o[k] = '\0';
	*out = o;
	return 0;
}

int tether_store_canonical(const char *uri, const char *cwd, char **out)
{
	*out = NULL;
	if (!uri || !*uri)
		return tether_error_set(TETHER_EUSAGE, "an empty store URI");
	if (has_control(uri))
		return bad(uri, "holds a control character");
	size_t slen = scheme_len(uri);
	if (!slen && strstr(uri, "://") && uri[0] != '/' && uri[0] != '.')
		return bad(uri, "the part before \"://\" is not a URI scheme");
	if (slen == 4 && strncasecmp(uri, "file", 4) == 0) {
		const char *path = uri + 7;
		if (strncasecmp(path, "localhost/", 10) == 0)
			path += 9;
		else if (path[0] != '/')
			return bad(uri, "file:// names another machine (write file:///PATH)");
		return canonical_local(uri, path, cwd, out);
	}
	if (slen)
		return canonical_remote(uri, slen, out);
	return canonical_local(uri, uri, cwd, out);
}

int tether_store_check_committed(const char *uri)
{
	char *canon = NULL;
	if (!uri)
		return tether_error_set(TETHER_EREFUSED, "a committed store URI is missing: refused");
	int rc = tether_store_canonical(uri, NULL, &canon);
	if (rc == 0 && strcmp(canon, uri) != 0)
		rc = tether_error_set(TETHER_EREFUSED, "committed store URI '%s' is not as tether records it ('%s'): "
		                      "refused", uri, canon); /* canonical: nothing secret in it */
	else if (rc)
		rc = tether_error_set(TETHER_EREFUSED, "committed %s: refused", tether_error_last());
	free(canon);
	if (rc)
		return rc;
	char *scheme = tt_store_scheme_of(uri);
	const struct tether_store_ops *ops = NULL;
	rc = scheme ? tt_store_find_ops(scheme, &ops) : oom();
	if (rc == TETHER_EUSAGE)
		rc = tether_error_set(TETHER_EREFUSED, "committed store URI '%s': %s: refused", uri, tether_error_last());
	free(scheme);
	return rc;
}
