/* One S3 request: signed by libcurl's SigV4 with the credentials of the
 * moment (the chain refreshes temporary ones), and tried again on what
 * tt_http_retryable calls worth it, after a jittered wait. Each attempt is
 * signed anew: the signature covers the time, and the keys may change. */
#include "store/s3/s3.h"

#include "store/http/http.h"
#include "store/s3/creds.h"

#include <tether/backend.h> /* tether_sha256_hex */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prefix the error message with what the request was for. */
static int named(int rc, const char *what, const char *suffix)
{
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", tether_error_last());
	return tether_error_set(rc, "%s: %s%s", what, msg, suffix ? suffix : "");
}

static int current_creds(struct s3 *s, struct tt_aws_creds *out)
{
	pthread_mutex_lock(&s->creds_lock);
	int rc = 0;
	if (!s->creds)
		rc = tt_aws_provider_new(s->options, s->http, &s->creds);
	pthread_mutex_unlock(&s->creds_lock);
	if (rc == 0)
		rc = tt_aws_provider_get(s->creds, out);
	return rc;
}

int s3_perform(struct s3 *s, const struct s3_call *c, const char *what, struct tt_http_response *resp,
               int *attempts)
{
	memset(resp, 0, sizeof *resp);
	*attempts = 0;
	char hash[65];
	/* x-amz-content-sha256: libcurl 7.88 does not add it, and both
	 * SeaweedFS and AWS check the body against it. */
	tether_sha256_hex(c->body, c->body_len, hash);
	char *url = s3_url(&s->ep, s->bucket, c->object, c->query);
	size_t nh = c->n_headers + 2;
	struct tt_http_header *hs = calloc(nh, sizeof *hs);
	size_t sig_len = strlen(s->region) + 16;
	char *sigv4 = malloc(sig_len);
	if (!url || !hs || !sigv4) {
		free(url);
		free(hs);
		free(sigv4);
		return s3_oom();
	}
	snprintf(sigv4, sig_len, "aws:amz:%s:s3", s->region);
	int max = tt_http_options(s->http)->max_attempts;
	int rc;
	for (int attempt = 1;; attempt++) {
		*attempts = attempt;
		struct tt_aws_creds cr = {0};
		if ((rc = current_creds(s, &cr)) != 0) {
			rc = named(rc, what, NULL);
			break;
		}
		size_t n = 0;
		hs[n++] = (struct tt_http_header){"x-amz-content-sha256", hash};
		if (cr.session_token && *cr.session_token)
			hs[n++] = (struct tt_http_header){"x-amz-security-token", cr.session_token};
		for (size_t i = 0; i < c->n_headers; i++)
			hs[n++] = c->headers[i];
		struct tt_http_request req = {.method = c->method, .url = url, .headers = hs, .n_headers = n,
		                              .body = c->body, .body_len = c->body_len, .aws_sigv4 = sigv4,
		                              .access_key_id = cr.access_key_id, .secret_access_key = cr.secret_access_key,
		                              .max_body = c->max_body};
		rc = tt_http_perform(s->http, &req, resp);
		tt_aws_creds_clear(&cr);
		if (rc == 0 && resp->status < 300)
			break;
		if (attempt < max && tt_http_retryable(rc, resp)) {
			tt_http_response_free(resp);
			int brc = tt_http_backoff(attempt);
			if (brc != 0) {
				rc = named(brc, what, NULL);
				break;
			}
			continue;
		}
		if (rc != 0) {
			char suffix[64] = "";
			if (attempt > 1)
				snprintf(suffix, sizeof suffix, " (gave up after %d attempts)", attempt);
			rc = named(rc, what, suffix);
		}
		break;
	}
	free(url);
	free(hs);
	free(sigv4);
	return rc;
}
