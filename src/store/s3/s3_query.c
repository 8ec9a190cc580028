/* The canonical query string of an S3 request. libcurl 7.88's SigV4 signs
 * the query exactly as the URL carries it, while the server signs its
 * canonical form (parameters sorted by name, every value percent-encoded
 * as RFC 3986 says, "name=" for an empty value), so the URL must carry
 * that form already or the signatures differ. */
#include "store/s3/s3.h"

#include "store/http/http.h"

#include <stdlib.h>
#include <string.h>

void s3_query_add(struct s3_query *q, const char *name, const char *value)
{
	if (q->oom)
		return;
	struct s3_param *ps = realloc(q->params, (q->n + 1) * sizeof *ps);
	if (!ps) {
		q->oom = 1;
		return;
	}
	q->params = ps;
	char *n = tt_http_escape(name, 0), *v = tt_http_escape(value ? value : "", 0);
	if (!n || !v) {
		free(n);
		free(v);
		q->oom = 1;
		return;
	}
	ps[q->n].name = n;
	ps[q->n].value = v;
	q->n++;
}

/* Sorted as SigV4 sorts: by the encoded name, then the encoded value, as
 * bytes. */
static int by_name(const void *a, const void *b)
{
	const struct s3_param *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

char *s3_query_build(const struct s3_query *q)
{
	if (q->oom)
		return NULL;
	size_t len = 1;
	for (size_t i = 0; i < q->n; i++)
		len += strlen(q->params[i].name) + strlen(q->params[i].value) + 2;
	char *out = malloc(len);
	if (!out)
		return NULL;
	qsort(q->params, q->n, sizeof *q->params, by_name);
	size_t o = 0;
	for (size_t i = 0; i < q->n; i++) {
		if (i)
			out[o++] = '&';
		size_t nl = strlen(q->params[i].name), vl = strlen(q->params[i].value);
		memcpy(out + o, q->params[i].name, nl);
		o += nl;
		out[o++] = '=';
		memcpy(out + o, q->params[i].value, vl);
		o += vl;
	}
	out[o] = '\0';
	return out;
}

void s3_query_clear(struct s3_query *q)
{
	for (size_t i = 0; i < q->n; i++) {
		free(q->params[i].name);
		free(q->params[i].value);
	}
	free(q->params);
	memset(q, 0, sizeof *q);
}
