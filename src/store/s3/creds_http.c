/* One request of the credential chain, retried as the HTTP client says
 * (creds_impl.h): STS and the metadata services throttle and restart like
 * any server, and a command should not fail on one 500. */
#include "store/s3/creds_impl.h"

#include "store/http/http.h"

#include <tether/backend.h> /* tether_error_set */

#include <string.h>

int tt_aws_http_call(struct tt_http *h, const struct tt_http_request *req, const char *what,
                     struct tt_http_response *resp)
{
	int attempts = tt_http_options(h)->max_attempts;
	for (int attempt = 1;; attempt++) {
		memset(resp, 0, sizeof *resp);
		int rc = tt_http_perform(h, req, resp);
		if (attempt >= attempts || !tt_http_retryable(rc, resp)) {
			if (rc == 0)
				return 0;
			tt_http_response_free(resp);
			char msg[1024];
			snprintf(msg, sizeof msg, "%s", tether_error_last());
			return tether_error_set(rc, "%s: %s (%d attempt%s)", what, msg, attempt, attempt == 1 ? "" : "s");
		}
		tt_http_response_free(resp);
		int brc = tt_http_backoff(attempt);
		if (brc != 0)
			return brc;
	}
}

void tt_aws_server_words(char *out, size_t n, const char *code, const char *msg)
{
	out[0] = '\0';
	if (!code || n == 0)
		return;
	snprintf(out, n, " %.100s%s%.300s", code, msg ? ": " : "", msg ? msg : "");
	for (unsigned char *c = (unsigned char *)out; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			*c = '?';
}
