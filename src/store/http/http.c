/* The HTTP client of the remote stores on libcurl: see http.h.
 *
 * A client is a curl share (connections, DNS answers, TLS sessions, each
 * guarded by its own mutex so several threads may use the client at once),
 * its options, and a small pool of easy handles: an attempt borrows one,
 * resets it and sets it up anew, so nothing of one request's options leaks
 * into the next while the connection it used stays in the share. */
#include "store/http/http.h"

#include <tether/backend.h>

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* Error answers are kept whole up to this much: enough for any store's
 * error document, bounded against a server that streams forever. */
#define ERROR_BODY_MAX (64u * 1024u)
/* Idle easy handles kept for reuse. */
#define POOL_MAX 16
/* Connections a batch (tt_http_perform_many) opens to one host at most. */
#define BATCH_HOST_CONNECTIONS 16

struct tt_http {
	struct tt_http_options opts;
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	pthread_mutex_t pool_lock;
	CURL *pool[POOL_MAX];
	size_t n_pool;
};

/* One attempt in flight: what the callbacks fill. */
struct xfer {
	const struct tt_http_request *req;
	CURL *easy;
	struct curl_slist *headers_out;
	char errbuf[CURL_ERROR_SIZE];
	uint8_t *body;
	size_t len, cap;
	char **headers;
	size_t n_headers, cap_headers;
	int oom;
	int stopped_at_max; /* a 2xx body reached req->max_body: not an error */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *easy, curl_lock_data data, curl_lock_access access, void *ud)
{
	(void)easy;
	(void)access;
	struct tt_http *h = ud;
	pthread_mutex_lock(&h->share_locks[data]);
}

static void share_unlock(CURL *easy, curl_lock_data data, void *ud)
{
	(void)easy;
	struct tt_http *h = ud;
	pthread_mutex_unlock(&h->share_locks[data]);
}

static int oom(void)
{
	return tether_error_set(TETHER_EIO, "out of memory");
}

int tt_http_new(const struct tt_http_options *opts, struct tt_http **out)
{
	*out = NULL;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return tether_error_set(TETHER_EIO, "libcurl: %s", curl_easy_strerror(global_rc));
	struct tt_http *h = calloc(1, sizeof *h);
	if (!h)
		return oom();
	if (opts)
		h->opts = *opts;
	if (h->opts.connect_timeout_ms <= 0)
		h->opts.connect_timeout_ms = 10000;
	if (h->opts.timeout_ms <= 0)
		h->opts.timeout_ms = 300000;
	if (h->opts.max_attempts <= 0)
		h->opts.max_attempts = 5;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&h->share_locks[i], NULL);
	pthread_mutex_init(&h->pool_lock, NULL);
	h->share = curl_share_init();
	if (!h->share || curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_USERDATA, h) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
		tt_http_free(h);
		return tether_error_set(TETHER_EIO, "libcurl: cannot set up a connection share");
	}
	*out = h;
	return 0;
}

void tt_http_free(struct tt_http *h)
{
	if (!h)
		return;
	/* Easy handles go before the share they use. */
	for (size_t i = 0; i < h->n_pool; i++)
		curl_easy_cleanup(h->pool[i]);
	if (h->share)
		curl_share_cleanup(h->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&h->share_locks[i]);
	pthread_mutex_destroy(&h->pool_lock);
	free(h);
}

const struct tt_http_options *tt_http_options(const struct tt_http *h)
{
	return &h->opts;
}

static CURL *easy_take(struct tt_http *h)
{
	CURL *e = NULL;
	pthread_mutex_lock(&h->pool_lock);
	if (h->n_pool)
		e = h->pool[--h->n_pool];
	pthread_mutex_unlock(&h->pool_lock);
	if (e)
		curl_easy_reset(e);
	else
		e = curl_easy_init();
	return e;
}

static void easy_give_back(struct tt_http *h, CURL *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&h->pool_lock);
	if (h->n_pool < POOL_MAX) {
		h->pool[h->n_pool++] = e;
		e = NULL;
	}
	pthread_mutex_unlock(&h->pool_lock);
	if (e)
		curl_easy_cleanup(e);
}

/* The URL as messages name it: without the query (it may carry a
 * signature or a SAS token) or fragment. */
static int url_shown_len(const char *url)
{
	return (int)strcspn(url, "?#");
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	long status = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	int ok = status >= 200 && status < 300;
	size_t limit = ok ? x->req->max_body : ERROR_BODY_MAX;
	size_t take = n;
	if (limit && x->len + take > limit)
		take = limit - x->len;
	if (take) {
		if (x->len + take + 1 > x->cap) {
			size_t cap = x->cap ? x->cap : 16384;
			while (cap < x->len + take + 1)
				cap *= 2;
			uint8_t *b = realloc(x->body, cap);
			if (!b) {
				x->oom = 1;
				return 0;
			}
			x->body = b;
			x->cap = cap;
		}
		memcpy(x->body + x->len, ptr, take);
		x->len += take;
	}
	if (take < n && ok) {
		/* The caller asked for no more: stop the transfer. */
		x->stopped_at_max = 1;
		return 0;
	}
	return n; /* an error body past 64 KiB is drained, not kept */
}

static void headers_clear(struct xfer *x)
{
	for (size_t i = 0; i < x->n_headers; i++)
		free(x->headers[i]);
	x->n_headers = 0;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb, len = n;
	/* A new status line (after a 100 Continue, say) starts a new set. */
	if (len >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
		headers_clear(x);
		return n;
	}
	while (len && (ptr[len - 1] == '\r' || ptr[len - 1] == '\n' || ptr[len - 1] == ' ' || ptr[len - 1] == '\t'))
		len--;
	if (!len || !memchr(ptr, ':', len))
		return n;
	if (x->n_headers == x->cap_headers) {
		size_t cap = x->cap_headers ? x->cap_headers * 2 : 16;
		char **hs = realloc(x->headers, cap * sizeof *hs);
		if (!hs) {
			x->oom = 1;
			return 0;
		}
		x->headers = hs;
		x->cap_headers = cap;
	}
	char *line = strndup(ptr, len);
	if (!line) {
		x->oom = 1;
		return 0;
	}
	x->headers[x->n_headers++] = line;
	return n;
}

static int has_header(const struct tt_http_request *req, const char *name)
{
	for (size_t i = 0; i < req->n_headers; i++)
		if (strcasecmp(req->headers[i].name, name) == 0)
			return 1;
	return 0;
}

static int append_header(struct curl_slist **list, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 3;
	char *line = malloc(n);
	if (!line)
		return -1;
	/* "Name;" sends a header with an empty value; "Name:" removes one. */
	if (*value)
		snprintf(line, n, "%s: %s", name, value);
	else
		snprintf(line, n, "%s;", name);
	struct curl_slist *l = curl_slist_append(*list, line);
	free(line);
	if (!l)
		return -1;
	*list = l;
	return 0;
}

static int is_plain_http(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0;
}

/* Set up x->easy for x->req. 0, or an error with the message set. */
static int xfer_setup(struct tt_http *h, struct xfer *x)
{
	const struct tt_http_request *req = x->req;
	CURL *e = x->easy;
	if (is_plain_http(req->url) && !h->opts.allow_http)
		return tether_error_set(TETHER_EUSAGE, "%s %.*s: plain http:// is refused without allow_http = true",
		                        req->method, url_shown_len(req->url), req->url);
	struct curl_slist *l = NULL;
	for (size_t i = 0; i < req->n_headers; i++)
		if (append_header(&l, req->headers[i].name, req->headers[i].value) != 0)
			goto nomem;
	/* No "Name:" lines to remove headers curl adds: libcurl 7.88's SigV4
	 * signs them as empty headers that are never sent, and every
	 * signature then fails. Instead a body's Content-Type is always one
	 * of ours (curl would add a form type of its own to POSTFIELDS),
	 * so what is signed is what is sent. */
	int body_method = strcmp(req->method, "PUT") == 0 || strcmp(req->method, "POST") == 0;
	if (body_method && !has_header(req, "Content-Type") &&
	    append_header(&l, "Content-Type",
	                  req->method[1] == 'U' ? "application/octet-stream" : "application/x-www-form-urlencoded") != 0)
		goto nomem;
	x->headers_out = l;

	CURLcode c = CURLE_OK;
#define SET(opt, val) \
	if (c == CURLE_OK) \
	c = curl_easy_setopt(e, opt, val)
	SET(CURLOPT_SHARE, h->share);
	SET(CURLOPT_URL, req->url);
	SET(CURLOPT_PROTOCOLS_STR, h->opts.allow_http ? "http,https" : "https");
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, h->opts.connect_timeout_ms);
	SET(CURLOPT_TIMEOUT_MS, h->opts.timeout_ms);
	SET(CURLOPT_ERRORBUFFER, x->errbuf);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, x);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, x);
	SET(CURLOPT_HTTPHEADER, x->headers_out);
	if (strcmp(req->method, "HEAD") == 0) {
		SET(CURLOPT_NOBODY, 1L);
	} else if (body_method) {
		/* The body as POSTFIELDS, for PUT too: curl sends an upload
		 * ("PUT" proper) with "Expect: 100-continue", a round trip per
		 * request (a second's wait where the server sends no 100), and it
		 * cannot be removed (see above); POSTFIELDS asks for it only past
		 * 1 MiB. Always a Content-Length (S3 refuses a PUT without one),
		 * 0 for no body. */
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
		SET(CURLOPT_POSTFIELDS, req->body ? (const char *)req->body : "");
		SET(CURLOPT_CUSTOMREQUEST, req->method);
	} else if (strcmp(req->method, "GET") == 0) {
		SET(CURLOPT_HTTPGET, 1L);
	} else {
		SET(CURLOPT_CUSTOMREQUEST, req->method);
	}
	if (req->aws_sigv4) {
		SET(CURLOPT_AWS_SIGV4, req->aws_sigv4);
		SET(CURLOPT_USERNAME, req->access_key_id ? req->access_key_id : "");
		SET(CURLOPT_PASSWORD, req->secret_access_key ? req->secret_access_key : "");
	}
#undef SET
	if (c != CURLE_OK)
		return tether_error_set(c == CURLE_OUT_OF_MEMORY ? TETHER_EIO : TETHER_EUSAGE, "%s %.*s: %s", req->method,
		                        url_shown_len(req->url), req->url, curl_easy_strerror(c));
	return 0;
nomem:
	curl_slist_free_all(l);
	return oom();
}

static void xfer_release(struct tt_http *h, struct xfer *x)
{
	curl_slist_free_all(x->headers_out);
	x->headers_out = NULL;
	easy_give_back(h, x->easy);
	x->easy = NULL;
	free(x->body);
	x->body = NULL;
	headers_clear(x);
	free(x->headers);
	x->headers = NULL;
}

/* What a transfer that ended with c means: 0 and resp filled, or an error. */
static int xfer_finish(struct xfer *x, CURLcode c, struct tt_http_response *resp)
{
	const struct tt_http_request *req = x->req;
	if (x->oom)
		return oom();
	if (c != CURLE_OK && !(c == CURLE_WRITE_ERROR && x->stopped_at_max)) {
		const char *why = x->errbuf[0] ? x->errbuf : curl_easy_strerror(c);
		int code;
		switch (c) {
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_RESOLVE_PROXY:
		case CURLE_COULDNT_CONNECT:
		case CURLE_OPERATION_TIMEDOUT:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
		case CURLE_PARTIAL_FILE:
		case CURLE_GOT_NOTHING:
		case CURLE_HTTP2:
		case CURLE_HTTP2_STREAM:
		case CURLE_HTTP3:
		case CURLE_WEIRD_SERVER_REPLY:
			code = TETHER_ETRANSIENT;
			break;
		case CURLE_UNSUPPORTED_PROTOCOL:
		case CURLE_URL_MALFORMAT:
			code = TETHER_EUSAGE;
			break;
		default:
			code = TETHER_EIO;
		}
		return tether_error_set(code, "%s %.*s: %s", req->method, url_shown_len(req->url), req->url, why);
	}
	if (!x->body && !(x->body = malloc(1)))
		return oom();
	x->body[x->len] = '\0';
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &resp->status);
	resp->body = x->body;
	resp->body_len = x->len;
	resp->headers = x->headers;
	resp->n_headers = x->n_headers;
	x->body = NULL;
	x->headers = NULL;
	x->n_headers = 0;
	return 0;
}

int tt_http_perform(struct tt_http *h, const struct tt_http_request *req, struct tt_http_response *resp)
{
	memset(resp, 0, sizeof *resp);
	struct xfer x = {.req = req};
	if (!(x.easy = easy_take(h)))
		return oom();
	int rc = xfer_setup(h, &x);
	if (rc == 0)
		rc = xfer_finish(&x, curl_easy_perform(x.easy), resp);
	xfer_release(h, &x);
	return rc;
}

int tt_http_perform_many(struct tt_http *h, const struct tt_http_request *reqs, size_t n,
                         struct tt_http_response *resps, int *rcs)
{
	for (size_t i = 0; i < n; i++) {
		memset(&resps[i], 0, sizeof resps[i]);
		rcs[i] = 0;
	}
	if (n == 0)
		return 0;
	struct xfer *xs = calloc(n, sizeof *xs);
	CURLM *m = curl_multi_init();
	if (!xs || !m) {
		free(xs);
		if (m)
			curl_multi_cleanup(m);
		return oom();
	}
	/* The multi handle queues what is over the limit; connections come
	 * from (and go back to) the client's share. */
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)BATCH_HOST_CONNECTIONS);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		xs[i].req = &reqs[i];
		if (!(xs[i].easy = easy_take(h))) {
			rc = oom();
			break;
		}
		curl_easy_setopt(xs[i].easy, CURLOPT_PRIVATE, &xs[i]);
		rcs[i] = xfer_setup(h, &xs[i]);
		if (rcs[i] == 0 && curl_multi_add_handle(m, xs[i].easy) != CURLM_OK) {
			rc = oom();
			break;
		}
	}
	int running = 1;
	while (rc == 0 && running) {
		CURLMcode mc = curl_multi_perform(m, &running);
		if (mc == CURLM_OK && running)
			mc = curl_multi_poll(m, NULL, 0, 1000, NULL);
		if (mc != CURLM_OK) {
			rc = tether_error_set(TETHER_EIO, "libcurl: %s", curl_multi_strerror(mc));
			break;
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct xfer *x = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			size_t i = (size_t)(x - xs);
			rcs[i] = xfer_finish(x, msg->data.result, &resps[i]);
			curl_multi_remove_handle(m, x->easy);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (xs[i].easy)
			curl_multi_remove_handle(m, xs[i].easy);
		xfer_release(h, &xs[i]);
	}
	curl_multi_cleanup(m);
	free(xs);
	if (rc != 0)
		for (size_t i = 0; i < n; i++)
			tt_http_response_free(&resps[i]);
	return rc;
}

void tt_http_response_free(struct tt_http_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	for (size_t i = 0; i < resp->n_headers; i++)
		free(resp->headers[i]);
	free(resp->headers);
	memset(resp, 0, sizeof *resp);
}

const char *tt_http_header(const struct tt_http_response *resp, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < resp->n_headers; i++) {
		const char *line = resp->headers[i];
		if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			return v; /* trailing blanks were cut when the line was kept */
		}
	}
	return NULL;
}

static int body_names(const struct tt_http_response *resp, const char *code)
{
	size_t n = strlen(code);
	if (!resp->body)
		return 0;
	for (size_t i = 0; i + n <= resp->body_len; i++)
		if (memcmp(resp->body + i, code, n) == 0)
			return 1;
	return 0;
}

int tt_http_retryable(int rc, const struct tt_http_response *resp)
{
	if (rc == TETHER_ETRANSIENT)
		return 1;
	if (rc != 0 || !resp)
		return 0;
	switch (resp->status) {
	case 429:
	case 500:
	case 502:
	case 503:
	case 504:
		return 1;
	}
	/* S3 says RequestTimeout with a 400, and some servers throttle with a
	 * 400-family status and a code; any other 4xx is final. */
	if (resp->status >= 400 && resp->status < 500)
		return body_names(resp, ">SlowDown<") || body_names(resp, ">RequestTimeout<") ||
		       body_names(resp, ">Throttling");
	return 0;
}

/* A random number for the jitter: splitmix64 over a process-wide counter
 * seeded from the clock. No thread-local state: this code lives in
 * dlopen'ed modules, whose dynamic TLS LeakSanitizer trips over at exit. */
static uint64_t jitter_random(void)
{
	static uint64_t state;
	uint64_t s = __atomic_load_n(&state, __ATOMIC_RELAXED);
	if (s == 0) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t seed = ((uint64_t)now.tv_sec << 30) ^ (uint64_t)now.tv_nsec ^ ((uint64_t)getpid() << 16);
		uint64_t zero = 0;
		__atomic_compare_exchange_n(&state, &zero, seed | 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	uint64_t z = __atomic_add_fetch(&state, 0x9E3779B97F4A7C15ull, __ATOMIC_RELAXED);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

int tt_http_backoff(int attempt)
{
	if (attempt < 1)
		attempt = 1;
	long cap_ms = 100;
	for (int i = 1; i < attempt && cap_ms < 5000; i++)
		cap_ms *= 2;
	if (cap_ms > 5000)
		cap_ms = 5000;
	/* Full jitter: anywhere in [0, cap), so retrying clients spread out. */
	long wait_ms = (long)(jitter_random() % (uint64_t)cap_ms);
	/* Sleep in slices so a cancel is honoured within 20 ms. */
	while (wait_ms > 0) {
		if (tether_cancel_reason() != -1)
			return tether_error_set(TETHER_ECANCELLED, "cancelled: while waiting to retry a request");
		long slice = wait_ms < 20 ? wait_ms : 20;
		struct timespec ts = {0, slice * 1000000L};
		nanosleep(&ts, NULL);
		wait_ms -= slice;
	}
	if (tether_cancel_reason() != -1)
		return tether_error_set(TETHER_ECANCELLED, "cancelled: while waiting to retry a request");
	return 0;
}

int tt_http_perform_retried(struct tt_http *h, const struct tt_http_request *req, struct tt_http_response *resp,
                            int *attempts)
{
	int max = tt_http_options(h)->max_attempts;
	for (int attempt = 1;; attempt++) {
		memset(resp, 0, sizeof *resp);
		if (attempts)
			*attempts = attempt;
		int rc = tt_http_perform(h, req, resp);
		if (attempt >= max || !tt_http_retryable(rc, resp))
			return rc;
		tt_http_response_free(resp);
		if ((rc = tt_http_backoff(attempt)))
			return rc;
	}
}

int tt_http_token_ok(const char *t)
{
	if (!t || !*t || strlen(t) > 8192)
		return 0;
	for (; *t; t++)
		if (*t <= ' ' || *t > '~')
			return 0;
	return 1;
}

char *tt_http_escape(const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;
	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~' || (c == '/' && keep_slash)) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}
