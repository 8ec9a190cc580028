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

/* A growing string; on out of memory `failed` is set and it stays short. */
struct buf {
	char *s;
	size_t len, cap;
	int failed;
};

static void add(struct buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->s, cap);
		if (!p) {
			b->failed = 1;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void adds(struct buf *b, const char *s)
{
	add(b, s, strlen(s));
}

static const char *header_value(const struct tt_http_header *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(h[i].name, name) == 0)
			return h[i].value;
	return NULL;
}

/* Trimmed of spaces and tabs at both ends, into b. */
static void add_trimmed(struct buf *b, const char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	add(b, v, n);
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
static void add_canonical_query(struct buf *b, const char *query)
{
	size_t n = 0;
	for (const char *p = query; p && *p; p++)
		n += *p == '&';
	struct param *ps = calloc(n + 1, sizeof *ps);
	if (!ps) {
		b->failed = 1;
		return;
	}
	size_t k = 0;
	for (const char *p = query; p && *p && !b->failed;) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t nl = eq ? (size_t)(eq - p) : len;
		if (len) {
			ps[k].name = decoded(p, nl);
			ps[k].value = eq ? decoded(eq + 1, len - nl - 1) : strdup("");
			if (!ps[k].name || !ps[k].value)
				b->failed = 1;
			for (char *c = ps[k].name; c && *c; c++)
				*c = (char)tolower((unsigned char)*c);
			k++;
		}
		p = end ? end + 1 : p + len;
	}
	if (!b->failed)
		qsort(ps, k, sizeof *ps, param_cmp);
	for (size_t i = 0; i < k && !b->failed; i++) {
		if (i > 0 && strcmp(ps[i].name, ps[i - 1].name) == 0) {
			adds(b, ",");
		} else {
			adds(b, "\n");
			adds(b, ps[i].name);
			adds(b, ":");
		}
		adds(b, ps[i].value);
	}
	for (size_t i = 0; i < k; i++) {
		free(ps[i].name);
		free(ps[i].value);
	}
	free(ps);
}

static int header_cmp(const void *a, const void *b)
{
	return strcasecmp((*(const struct tt_http_header *const *)a)->name,
	                  (*(const struct tt_http_header *const *)b)->name);
}

/* "name:value\n" for each x-ms-* header, names lowercased, sorted. */
static void add_canonical_headers(struct buf *b, const struct tt_http_header *h, size_t n)
{
	const struct tt_http_header **ms = calloc(n + 1, sizeof *ms);
	size_t k = 0;
	if (!ms) {
		b->failed = 1;
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (strncasecmp(h[i].name, "x-ms-", 5) == 0)
			ms[k++] = &h[i];
	qsort(ms, k, sizeof *ms, header_cmp);
	for (size_t i = 0; i < k; i++) {
		for (const char *c = ms[i]->name; *c; c++) {
			char l = (char)tolower((unsigned char)*c);
			add(b, &l, 1);
		}
		adds(b, ":");
		add_trimmed(b, ms[i]->value);
		adds(b, "\n");
	}
	free(ms);
}

char *az_string_to_sign(const char *method, const char *account, const char *url_path, const char *query,
                        const struct tt_http_header *headers, size_t n_headers, size_t content_length)
{
	static const char *const standard[] = {
		"Content-Encoding", "Content-Language", "Content-Length", "Content-MD5",
		"Content-Type", "Date", "If-Modified-Since", "If-Match",
		"If-None-Match", "If-Unmodified-Since", "Range",
	};
	struct buf b = {0};
	adds(&b, method);
	adds(&b, "\n");
	for (size_t i = 0; i < sizeof standard / sizeof standard[0]; i++) {
		if (strcmp(standard[i], "Content-Length") == 0) {
			/* Empty for no body (API versions 2015-02-21 and later). */
			if (content_length) {
				char n[32];
				snprintf(n, sizeof n, "%zu", content_length);
				adds(&b, n);
			}
		} else {
			const char *v = header_value(headers, n_headers, standard[i]);
			if (v)
				add_trimmed(&b, v);
		}
		adds(&b, "\n");
	}
	add_canonical_headers(&b, headers, n_headers);
	adds(&b, "/");
	adds(&b, account);
	adds(&b, url_path);
	add_canonical_query(&b, query);
	if (b.failed || !b.s) {
		free(b.s);
		return NULL;
	}
	return b.s;
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
