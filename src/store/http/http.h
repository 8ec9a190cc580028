/* One HTTP client for the remote stores (S3, GCS, Azure) and for their
 * credential endpoints (STS, the ECS and EC2 metadata services, the GCS
 * token endpoint), on libcurl. Linked into each remote store module, never
 * into libtether: a command on local files never maps libcurl.
 *
 * One request is one attempt (tt_http_perform); tt_http_perform_retried
 * makes the same request again while it is worth it. A module that must
 * sign each attempt anew (a date header, a refreshed token) loops itself,
 * with tt_http_retryable to decide and tt_http_backoff to wait. Connections,
 * DNS answers and TLS sessions are shared by every request of a client (a
 * curl share), so a command that makes many requests to one server opens
 * few connections; tt_http_perform_many runs a batch of independent
 * requests concurrently on a curl multi handle over those connections.
 *
 * A client is safe to use from several threads at once.
 *
 * Errors (the TETHER_E* codes, the message set, naming the method and URL
 * without its query string, which may carry a signature):
 *   0                  a response arrived, whatever its status
 *   TETHER_ETRANSIENT  no response: connect refused or reset, timeout,
 *                      a transfer cut short
 *   TETHER_EUSAGE      plain http:// to a server without allow_http, a URL
 *                      curl refuses
 *   TETHER_EIO         anything else (out of memory, a TLS failure) */
#ifndef TETHER_STORE_HTTP_H
#define TETHER_STORE_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct tt_http;

struct tt_http_options {
	long connect_timeout_ms; /* 0: 10 s */
	long timeout_ms;         /* whole request; 0: 300 s */
	int max_attempts;        /* for the caller's retry loop; 0: 5 */
	int allow_http;          /* plain http:// allowed (local servers) */
};

/* A new client; *out NULL on error. */
int tt_http_new(const struct tt_http_options *opts, struct tt_http **out);
void tt_http_free(struct tt_http *h);
/* The options the client was made with (defaults filled in). */
const struct tt_http_options *tt_http_options(const struct tt_http *h);

struct tt_http_header {
	const char *name;
	const char *value;
};

struct tt_http_request {
	const char *method; /* "GET", "HEAD", "PUT", "POST", "DELETE" */
	const char *url;    /* absolute; the query already in its final (canonical) form */
	const struct tt_http_header *headers;
	size_t n_headers;
	const void *body; /* may be NULL (no body) */
	size_t body_len;
	/* AWS SigV4 by libcurl (CURLOPT_AWS_SIGV4): "aws:amz:REGION:SERVICE"
	 * and the key pair; NULL for none. The caller adds
	 * x-amz-content-sha256 (and x-amz-security-token) to headers. */
	const char *aws_sigv4;
	const char *access_key_id;
	const char *secret_access_key;
	/* Keep at most this many body bytes of a 2xx answer (0: all); the
	 * transfer is stopped past it. Error answers are always kept whole
	 * up to 64 KiB (they carry the server's code). */
	size_t max_body;
};

struct tt_http_response {
	long status;
	uint8_t *body; /* malloc'd, NUL-terminated beyond body_len; never NULL after a response */
	size_t body_len;
	char **headers; /* "name: value" lines as received, names as sent */
	size_t n_headers;
};

/* One attempt. resp is filled on 0 and must be freed with
 * tt_http_response_free (also safe on a zeroed struct). */
int tt_http_perform(struct tt_http *h, const struct tt_http_request *req, struct tt_http_response *resp);
/* n independent attempts at once over the client's connections; rcs[i] and
 * resps[i] as tt_http_perform's for reqs[i]. Returns 0, or an error that
 * stopped the whole batch (out of memory). */
int tt_http_perform_many(struct tt_http *h, const struct tt_http_request *reqs, size_t n,
                         struct tt_http_response *resps, int *rcs);
void tt_http_response_free(struct tt_http_response *resp);

/* The value of header name (case-insensitive), trimmed, or NULL. Valid
 * while resp lives. */
const char *tt_http_header(const struct tt_http_response *resp, const char *name);

/* Is this outcome worth another attempt? rc from tt_http_perform; on a
 * response, 500, 502, 503, 504 and 429, and a 503/400-family body naming
 * SlowDown, RequestTimeout or Throttling are; never another 4xx. */
int tt_http_retryable(int rc, const struct tt_http_response *resp);
/* Sleep before attempt number `attempt` (1 = the first retry): full
 * jitter over an exponential base of 100 ms, capped at 5 s; a cancel
 * (tether_cancel) cuts the sleep short and returns TETHER_ECANCELLED. */
int tt_http_backoff(int attempt);

/* tt_http_perform, attempted again while tt_http_retryable says so, up to
 * the client's max_attempts, with tt_http_backoff between: for a request
 * that needs no new signature per attempt (a module that re-signs loops
 * itself). Returns as tt_http_perform does for the last attempt, or
 * TETHER_ECANCELLED from the wait; resp as tt_http_perform's. *attempts
 * (may be NULL) is how many were made. */
int tt_http_perform_retried(struct tt_http *h, const struct tt_http_request *req, struct tt_http_response *resp,
                            int *attempts);

/* Is this access token safe to send as "Authorization: Bearer <token>":
 * non-empty printable ASCII without spaces, at most 8 KiB (so a token
 * endpoint's answer cannot smuggle a header in)? */
int tt_http_token_ok(const char *token);

/* Percent-encode s as RFC 3986's unreserved set allows (A-Z a-z 0-9 - _ .
 * ~ stay); '/' stays too when keep_slash. malloc'd. */
char *tt_http_escape(const char *s, int keep_slash);

/* For JSON APIs (json_api.c). Does the URL's host name this machine
 * (127.0.0.1, localhost or [::1])? */
int tt_http_loopback_url(const char *url);
/* An error answer's message, one line: the body's JSON "message" (lakeFS,
 * Neon), else its first line cut at 200 bytes; control bytes blanked.
 * malloc'd, NULL when out of memory. */
char *tt_http_error_message(const struct tt_http_response *resp);
/* A command's shared client when it may carry this request (plain http
 * only through a client allowed it, as allow_http says for this endpoint),
 * else a new one of the caller's (*own = 1: free it). For the backends
 * over a JSON API (lakefs, neon), whose store session holds one client. */
int tt_http_shared_or_new(struct tt_http *shared, const char *url, int allow_http, long timeout_ms,
                          struct tt_http **out, int *own);

#endif
