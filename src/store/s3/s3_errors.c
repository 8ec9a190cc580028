/* An S3 error answer as a TETHER_E* code and one line naming the URI, the
 * HTTP status and the server's <Code> and <Message>:
 *   s3://b/k: 403 SignatureDoesNotMatch: The request signature we calculated ... */
#include "store/s3/s3.h"

#include "format/xml.h"
#include "store/http/http.h"

#include <stdio.h>
#include <string.h>

void s3_error_code(const struct tt_http_response *resp, char *code, size_t n, char *message, size_t mn)
{
	code[0] = '\0';
	if (message && mn)
		message[0] = '\0';
	if (!resp->body_len)
		return;
	struct tt_xml_doc *d = tt_xml_parse((const char *)resp->body, resp->body_len, "error answer", NULL, 0);
	if (!d)
		return;
	const struct tt_xml_node *r = tt_xml_root(d);
	const char *c = strcmp(tt_xml_name(r), "Error") == 0 ? tt_xml_child_text(r, "Code") : NULL;
	const char *m = c ? tt_xml_child_text(r, "Message") : NULL;
	if (c)
		snprintf(code, n, "%s", c);
	if (m && message && mn)
		snprintf(message, mn, "%s", m);
	tt_xml_free(d);
}

int s3_no_bucket(const struct tt_http_response *resp)
{
	char code[64];
	s3_error_code(resp, code, sizeof code, NULL, 0);
	return strcmp(code, "NoSuchBucket") == 0;
}

/* One line: control characters (a newline in a server's message) become
 * spaces. */
static void one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

static int is_code(const char *code, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(code, *list) == 0)
			return 1;
	return 0;
}

static const char *const auth_codes[] = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
                                         "AccessDenied", "InvalidToken", "TokenRefreshRequired",
                                         "AuthorizationHeaderMalformed", "InvalidSecurity", "AccountProblem",
                                         "AllAccessDisabled", "InvalidClientTokenId", NULL};
static const char *const throttle_codes[] = {"SlowDown", "RequestTimeout", "Throttling", "ThrottlingException",
                                             "RequestLimitExceeded", "ServiceUnavailable", "InternalError", NULL};

int s3_fail(const struct s3 *s, const char *what, const struct tt_http_response *resp, int attempts)
{
	char code[128], message[400];
	s3_error_code(resp, code, sizeof code, message, sizeof message);
	one_line(code);
	one_line(message);
	long st = resp->status;
	int rc;
	const char *hint = "";
	if (strcmp(code, "NoSuchBucket") == 0) {
		return tether_error_set(TETHER_ENOTFOUND, "s3://%s: %ld NoSuchBucket: bucket '%s' does not exist%s%s%s",
		                        s->bucket, st, s->bucket, message[0] ? " (" : "", message, message[0] ? ")" : "");
	} else if (is_code(code, auth_codes) || (!code[0] && (st == 401 || st == 403))) {
		rc = TETHER_EAUTH;
	} else if (strcmp(code, "NoSuchKey") == 0 || strcmp(code, "NoSuchVersion") == 0 || st == 404) {
		rc = TETHER_ENOTFOUND;
	} else if (st == 412 || strcmp(code, "ConditionalRequestConflict") == 0 ||
	           strcmp(code, "PreconditionFailed") == 0) {
		rc = TETHER_EREFUSED;
	} else if (is_code(code, throttle_codes) || st == 429 || st == 500 || st == 502 || st == 503 || st == 504) {
		rc = TETHER_ETRANSIENT;
		hint = attempts > 1 ? " (gave up after" : "";
	} else if (strcmp(code, "InvalidBucketName") == 0 || strcmp(code, "KeyTooLongError") == 0) {
		rc = TETHER_EUSAGE;
	} else {
		rc = TETHER_EIO;
	}
	char tail[64] = "";
	if (*hint)
		snprintf(tail, sizeof tail, "%s %d attempts)", hint, attempts);
	if (!code[0])
		return tether_error_set(rc, "%s: %ld%s%s", what, st, st == 404 ? " not found" : " (no error document)",
		                        tail);
	return tether_error_set(rc, "%s: %ld %s%s%s%s", what, st, code, message[0] ? ": " : "", message, tail);
}
