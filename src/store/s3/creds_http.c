/* One request of the credential chain, retried as the HTTP client says
 * (creds_impl.h): STS and the metadata services throttle and restart like
 * any server, and a command should not fail on one 500. */
#include "store/s3/creds_impl.h"

#include "store/http/http.h"

#include <tether/backend.h> /* tether_error_set */

#include <stdio.h>
#include <string.h>

int tt_aws_http_call(struct tt_http *h, const struct tt_http_request *req, const char *what,
                     struct tt_http_response *resp)
{
	int attempt = 0;
	int rc = tt_http_perform_retried(h, req, resp, &attempt);
	if (rc == 0 || rc == TETHER_ECANCELLED)
		return rc;
	tt_http_response_free(resp);
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", tether_error_last());
	return tether_error_set(rc, "%s: %s (%d attempt%s)", what, msg, attempt, attempt == 1 ? "" : "s");
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
