/* SharedKey, the account key's signature of one request (Microsoft's
 * "Authorize with Shared Key", Blob service, API version 2015-02-21 and
 * later): HMAC-SHA256 under the decoded account key of a string built from
 * the request, base64 in "Authorization: SharedKey ACCOUNT:SIGNATURE".
 * tests/unit/test_az_sign.c checks a fixed request against a signature
 * computed apart from this code; the e2e tests check it against Azurite. */
#include "store/azure/az.h"

#include <nettle/base64.h>
#include <nettle/hmac.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *header_value(const struct tt_http_header *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(h[i].name, name) == 0)
			return h[i].value;
	return NULL;
}

/* Trimmed of spaces and tabs at both ends, to f. */
static void put_trimmed(FILE *f, const char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	int n = (int)strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	fprintf(f, "%.*s", n, v);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* s[0..n) percent-decoded ('+' stays: Azure's query values are encoded
 * with %20), malloc'd. */
static char *decoded(const char *s, size_t n)
{
	char *o = malloc(n + 1), *p = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (s[i] == '%' && i + 2 < n && (hi = hexval((unsigned char)s[i + 1])) >= 0 &&
		    (lo = hexval((unsigned char)s[i + 2])) >= 0) {
			*p++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*p++ = s[i];
		}
	}
	*p = '\0';
	return o;
}

struct param {
	char *name, *value;
};

static int param_cmp(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

/* "\nname:v1,v2" for each parameter of the query, names lowercased and
 * sorted, values decoded (several values of one name sorted, joined by
 * ','). */
static int put_canonical_query(FILE *f, const char *query)
{
	size_t n = 0;
	for (const char *p = query; p && *p; p++)
		n += *p == '&';
	struct param *ps = calloc(n + 1, sizeof *ps);
	if (!ps)
		return -1;
	size_t k = 0;
	int failed = 0;
	for (const char *p = query; p && *p && !failed;) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t nl = eq ? (size_t)(eq - p) : len;
		if (len) {
			ps[k].name = decoded(p, nl);
			ps[k].value = eq ? decoded(eq + 1, len - nl - 1) : strdup("");
			if (!ps[k].name || !ps[k].value)
				failed = 1;
			for (char *c = ps[k].name; c && *c; c++)
				*c = (char)tolower((unsigned char)*c);
			k++;
		}
		p = end ? end + 1 : p + len;
	}
	if (!failed)
		qsort(ps, k, sizeof *ps, param_cmp);
	for (size_t i = 0; i < k && !failed; i++) {
		if (i > 0 && strcmp(ps[i].name, ps[i - 1].name) == 0)
			fprintf(f, ",%s", ps[i].value);
		else
			fprintf(f, "\n%s:%s", ps[i].name, ps[i].value);
	}
	for (size_t i = 0; i < k; i++) {
		free(ps[i].name);
		free(ps[i].value);
	}
	free(ps);
	return failed ? -1 : 0;
}

static int header_cmp(const void *a, const void *b)
{
	return strcasecmp((*(const struct tt_http_header *const *)a)->name,
	                  (*(const struct tt_http_header *const *)b)->name);
}

/* "name:value\n" for each x-ms-* header, names lowercased, sorted. */
static int put_canonical_headers(FILE *f, const struct tt_http_header *h, size_t n)
{
	const struct tt_http_header **ms = calloc(n + 1, sizeof *ms);
	size_t k = 0;
	if (!ms)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (strncasecmp(h[i].name, "x-ms-", 5) == 0)
			ms[k++] = &h[i];
	qsort(ms, k, sizeof *ms, header_cmp);
	for (size_t i = 0; i < k; i++) {
		for (const char *c = ms[i]->name; *c; c++)
			fputc(tolower((unsigned char)*c), f);
		fputc(':', f);
		put_trimmed(f, ms[i]->value);
		fputc('\n', f);
	}
	free(ms);
	return 0;
}

char *az_string_to_sign(const char *method, const char *account, const char *url_path, const char *query,
                        const struct tt_http_header *headers, size_t n_headers, size_t content_length)
{
	static const char *const standard[] = {
		"Content-Encoding", "Content-Language", "Content-Length", "Content-MD5",
		"Content-Type", "Date", "If-Modified-Since", "If-Match",
		"If-None-Match", "If-Unmodified-Since", "Range",
	};
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	fprintf(f, "%s\n", method);
	for (size_t i = 0; i < sizeof standard / sizeof standard[0]; i++) {
		if (strcmp(standard[i], "Content-Length") == 0) {
			if (content_length) /* empty for no body (API versions 2015-02-21 and later) */
				fprintf(f, "%zu", content_length);
		} else {
			const char *v = header_value(headers, n_headers, standard[i]);
			if (v)
				put_trimmed(f, v);
		}
		fputc('\n', f);
	}
	int failed = put_canonical_headers(f, headers, n_headers);
	fprintf(f, "/%s%s", account, url_path);
	failed |= put_canonical_query(f, query);
	failed |= ferror(f);
	if (fclose(f) != 0 || failed) {
		free(out);
		return NULL;
	}
	return out;
}

void az_sign(const uint8_t *key, size_t key_len, const char *sts, char *out)
{
	struct hmac_sha256_ctx ctx;
	uint8_t mac[SHA256_DIGEST_SIZE];
	hmac_sha256_set_key(&ctx, key_len, key);
	hmac_sha256_update(&ctx, strlen(sts), (const uint8_t *)sts);
	hmac_sha256_digest(&ctx, sizeof mac, mac);
	base64_encode_raw(out, sizeof mac, mac);
	out[BASE64_ENCODE_RAW_LENGTH(sizeof mac)] = '\0';
}
