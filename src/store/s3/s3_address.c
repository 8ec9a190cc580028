/* Where an S3 request goes: the endpoint, and the bucket either in the
 * path (path-style, scheme://host/bucket/key) or in the host name
 * (virtual-hosted, scheme://bucket.host/key). AWS's SDKs choose path-style
 * for an endpoint that is an IP address or localhost (a bucket cannot be a
 * sub-domain of those) and for a bucket name a host name cannot carry;
 * this does the same, and the options force either. */
#include "store/s3/s3.h"

#include "store/http/http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void s3_endpoint_clear(struct s3_endpoint *ep)
{
	free(ep->scheme);
	free(ep->authority);
	free(ep->host);
	free(ep->base);
	memset(ep, 0, sizeof *ep);
}

int s3_endpoint_parse(const char *url, struct s3_endpoint *ep)
{
	memset(ep, 0, sizeof *ep);
	const char *sep = strstr(url, "://");
	if (!sep || (!(sep - url == 4 && strncasecmp(url, "http", 4) == 0) &&
	             !(sep - url == 5 && strncasecmp(url, "https", 5) == 0)))
		return tether_error_set(TETHER_EUSAGE, "endpoint_url '%s' is not an http:// or https:// URL", url);
	const char *auth = sep + 3;
	size_t alen = strcspn(auth, "/?#");
	const char *rest = auth + alen;
	if (alen == 0 || memchr(auth, '@', alen) || (*rest && *rest != '/'))
		return tether_error_set(TETHER_EUSAGE,
		                        "endpoint_url '%s' must be scheme://host[:port][/path], without user, query or fragment",
		                        url);
	for (size_t i = 0; i < alen; i++)
		if (!isalnum((unsigned char)auth[i]) && !strchr(".-:[]_", auth[i]))
			return tether_error_set(TETHER_EUSAGE, "endpoint_url '%s': bad character in the host", url);
	size_t hlen;
	const char *host = auth;
	if (auth[0] == '[') {
		const char *close = memchr(auth, ']', alen);
		if (!close)
			return tether_error_set(TETHER_EUSAGE, "endpoint_url '%s': unclosed '[' in the host", url);
		hlen = (size_t)(close - auth) + 1;
	} else {
		const char *colon = memchr(auth, ':', alen);
		hlen = colon ? (size_t)(colon - auth) : alen;
	}
	size_t blen = strlen(rest);
	while (blen && rest[blen - 1] == '/')
		blen--;
	ep->scheme = strndup(url, (size_t)(sep - url));
	ep->authority = strndup(auth, alen);
	ep->host = strndup(host, hlen);
	ep->base = strndup(rest, blen);
	if (!ep->scheme || !ep->authority || !ep->host || !ep->base) {
		s3_endpoint_clear(ep);
		return s3_oom();
	}
	for (char *p = ep->scheme; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return 0;
}

static int is_ipv4(const char *h)
{
	int dots = 0, digits = 0;
	for (; *h; h++) {
		if (*h == '.') {
			if (!digits)
				return 0;
			dots++;
			digits = 0;
		} else if (isdigit((unsigned char)*h)) {
			digits++;
		} else {
			return 0;
		}
	}
	return dots == 3 && digits;
}

/* A bucket that can be a DNS label of the host: lowercase letters, digits
 * and '-' (a '.' would break the TLS certificate's wildcard). */
static int bucket_fits_host(const char *bucket)
{
	size_t n = strlen(bucket);
	if (n < 3 || n > 63 || bucket[0] == '-' || bucket[n - 1] == '-')
		return 0;
	for (const char *p = bucket; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-')
			return 0;
	return 1;
}

int s3_choose_path_style(struct s3_endpoint *ep, const char *bucket, int force_path_style, int force_virtual)
{
	if (force_path_style == 1 && force_virtual == 1)
		return tether_error_set(TETHER_EUSAGE,
		                        "force_path_style and virtual_hosted_style_request are both true: choose one");
	if (force_path_style == 1)
		ep->path_style = 1;
	else if (force_virtual == 1)
		ep->path_style = 0;
	else
		ep->path_style = is_ipv4(ep->host) || ep->host[0] == '[' || strcasecmp(ep->host, "localhost") == 0 ||
		                 !bucket_fits_host(bucket);
	return 0;
}

char *s3_url(const struct s3_endpoint *ep, const char *bucket, const char *object, const char *query)
{
	char *b = tt_http_escape(bucket, 0);
	char *o = object ? tt_http_escape(object, 1) : strdup("");
	char *url = NULL;
	if (b && o) {
		size_t n = strlen(ep->scheme) + strlen(ep->authority) + strlen(ep->base) + strlen(b) + strlen(o) +
		           (query ? strlen(query) : 0) + 16;
		if ((url = malloc(n))) {
			const char *q = query && *query ? "?" : "";
			if (ep->path_style)
				snprintf(url, n, "%s://%s%s/%s%s%s%s%s", ep->scheme, ep->authority, ep->base, b,
				         object ? "/" : "", o, q, query && *query ? query : "");
			else
				snprintf(url, n, "%s://%s.%s%s/%s%s%s", ep->scheme, b, ep->authority, ep->base, o, q,
				         query && *query ? query : "");
		}
	}
	free(b);
	free(o);
	return url;
}
