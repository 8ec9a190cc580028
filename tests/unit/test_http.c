/* The remote stores' HTTP client (src/store/http/http.c) against a small
 * HTTP/1.1 server in a thread of this test, on 127.0.0.1: answers,
 * headers, bodies, connection reuse, a connection reset mid-body, error
 * bodies capped at 64 KiB, retryable statuses, timeouts, no redirects,
 * plain http refused without allow_http, a batch over a multi handle,
 * SigV4 signing, the backoff and its cancel, percent-encoding. */
#define _GNU_SOURCE /* memmem */
#include "check.h"

#include "store/http/http.h"

#include <tether.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int listen_fd;
static int port;
static atomic_int connections;

static void send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void answer(int fd, int status, const char *extra_headers, const char *body, size_t len)
{
	char head[512];
	int n = snprintf(head, sizeof head, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s\r\n", status, len,
	                 extra_headers ? extra_headers : "");
	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

/* Answer one request by its path; 0 to keep the connection, -1 to end it. */
static int serve_one(int fd, const char *head, size_t head_len, const char *body, size_t body_len)
{
	char method[16], path[256];
	if (sscanf(head, "%15s %255s", method, path) != 2)
		return -1;
	char *q = strchr(path, '?');
	if (q)
		*q = '\0';
	if (strcmp(path, "/ok") == 0) {
		answer(fd, 200, "X-Test:   spaced value  \r\n", strcmp(method, "HEAD") == 0 ? "" : "hello",
		       strcmp(method, "HEAD") == 0 ? 0 : 5);
		if (strcmp(method, "HEAD") == 0) /* a HEAD's Content-Length describes a body not sent */
			return 0;
	} else if (strcmp(path, "/echo") == 0) {
		size_t n = strlen(method) + 1 + head_len + body_len;
		char *out = malloc(n + 1);
		snprintf(out, n + 1, "%s\n%.*s", method, (int)head_len, head);
		memcpy(out + strlen(method) + 1 + head_len, body, body_len);
		answer(fd, 200, NULL, out, n);
		free(out);
	} else if (strcmp(path, "/reset") == 0) {
		/* Promise 1000 bytes, send 10, then reset the connection. */
		const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789";
		send_all(fd, h, strlen(h));
		usleep(50000);
		struct linger lg = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		return -1;
	} else if (strcmp(path, "/503") == 0) {
		const char *b = "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
		answer(fd, 503, NULL, b, strlen(b));
	} else if (strcmp(path, "/400timeout") == 0) {
		const char *b = "<Error><Code>RequestTimeout</Code></Error>";
		answer(fd, 400, NULL, b, strlen(b));
	} else if (strcmp(path, "/403") == 0) {
		const char *b = "<Error><Code>AccessDenied</Code></Error>";
		answer(fd, 403, NULL, b, strlen(b));
	} else if (strcmp(path, "/404big") == 0 || strcmp(path, "/big") == 0) {
		size_t n = 100000;
		char *b = malloc(n);
		memset(b, 'x', n);
		answer(fd, path[1] == '4' ? 404 : 200, NULL, b, n);
		free(b);
	} else if (strcmp(path, "/slow") == 0) {
		usleep(1500000);
		answer(fd, 200, NULL, "late", 4);
	} else if (strcmp(path, "/redirect") == 0) {
		answer(fd, 301, "Location: /ok\r\n", "", 0);
	} else {
		answer(fd, 404, NULL, "no", 2);
	}
	return 0;
}

static void *connection(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char *buf = malloc(1 << 20);
	size_t have = 0;
	for (;;) {
		char *end = NULL;
		while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
			ssize_t r = recv(fd, buf + have, (1 << 20) - have, 0);
			if (r <= 0)
				goto done;
			have += (size_t)r;
		}
		size_t head_len = (size_t)(end - buf) + 4;
		size_t body_len = 0;
		for (char *p = buf; p < end; p++)
			if (strncasecmp(p, "\nContent-Length:", 16) == 0)
				body_len = strtoul(p + 16, NULL, 10);
		while (have < head_len + body_len) {
			ssize_t r = recv(fd, buf + have, (1 << 20) - have, 0);
			if (r <= 0)
				goto done;
			have += (size_t)r;
		}
		buf[head_len - 1] = '\0';
		int keep = serve_one(fd, buf, head_len, buf + head_len, body_len);
		memmove(buf, buf + head_len + body_len, have - head_len - body_len);
		have -= head_len + body_len;
		if (keep != 0)
			break;
	}
done:
	close(fd);
	free(buf);
	return NULL;
}

static void *server(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		if (fd < 0)
			return NULL;
		atomic_fetch_add(&connections, 1);
		pthread_t t;
		pthread_create(&t, NULL, connection, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

static void start_server(void)
{
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(listen_fd, 64) != 0 ||
	    getsockname(listen_fd, (struct sockaddr *)&a, &al) != 0) {
		perror("test server");
		exit(1);
	}
	port = ntohs(a.sin_port);
	pthread_t t;
	pthread_create(&t, NULL, server, NULL);
	pthread_detach(t);
}

static char urlbuf[8][256];
static const char *url(int slot, const char *path)
{
	snprintf(urlbuf[slot], sizeof urlbuf[slot], "http://127.0.0.1:%d%s", port, path);
	return urlbuf[slot];
}

static int get(struct tt_http *h, const char *path, struct tt_http_response *resp)
{
	struct tt_http_request req = {.method = "GET", .url = url(0, path)};
	return tt_http_perform(h, &req, resp);
}

static struct tt_http *client(long timeout_ms, int allow_http)
{
	struct tt_http_options o = {.timeout_ms = timeout_ms, .allow_http = allow_http};
	struct tt_http *h = NULL;
	if (tt_http_new(&o, &h) != 0) {
		fprintf(stderr, "tt_http_new: %s\n", tether_error_last());
		exit(1);
	}
	return h;
}

static void test_answers(struct tt_http *h)
{
	struct tt_http_response r;
	CHECK(get(h, "/ok", &r) == 0);
	CHECK(r.status == 200 && r.body_len == 5 && memcmp(r.body, "hello", 6) == 0);
	CHECK_STR(tt_http_header(&r, "x-test"), "spaced value");
	CHECK_STR(tt_http_header(&r, "Content-Length"), "5");
	CHECK(tt_http_header(&r, "X-Absent") == NULL);
	CHECK(!tt_http_retryable(0, &r));
	tt_http_response_free(&r);
	tt_http_response_free(&r); /* safe on a zeroed struct */

	struct tt_http_request head = {.method = "HEAD", .url = url(0, "/ok")};
	CHECK(tt_http_perform(h, &head, &r) == 0);
	CHECK(r.status == 200 && r.body_len == 0 && r.body != NULL);
	tt_http_response_free(&r);

	/* No redirect is followed: the 301 is the answer. */
	CHECK(get(h, "/redirect", &r) == 0);
	CHECK(r.status == 301);
	CHECK_STR(tt_http_header(&r, "location"), "/ok");
	tt_http_response_free(&r);
}

static void test_reuse(struct tt_http *h)
{
	struct tt_http_response r;
	CHECK(get(h, "/ok", &r) == 0);
	tt_http_response_free(&r);
	int before = atomic_load(&connections);
	for (int i = 0; i < 10; i++) {
		CHECK(get(h, "/ok", &r) == 0 && r.status == 200);
		tt_http_response_free(&r);
	}
	CHECK(atomic_load(&connections) == before); /* all ten on the kept connection */
}

static void test_body_and_headers(struct tt_http *h)
{
	struct tt_http_header hs[] = {{"X-Amz-Meta-A", "one"}, {"If-None-Match", "*"}};
	struct tt_http_request req = {.method = "PUT", .url = url(0, "/echo"), .headers = hs, .n_headers = 2,
	                              .body = "payload\0bytes", .body_len = 13};
	struct tt_http_response r;
	CHECK(tt_http_perform(h, &req, &r) == 0);
	CHECK(r.status == 200);
	const char *b = (const char *)r.body;
	CHECK(strncmp(b, "PUT\nPUT /echo ", 14) == 0);
	CHECK(strstr(b, "X-Amz-Meta-A: one\r\n") != NULL);
	CHECK(strstr(b, "If-None-Match: *\r\n") != NULL);
	CHECK(strstr(b, "Content-Length: 13\r\n") != NULL);
	CHECK(strstr(b, "Expect") == NULL);       /* no 100-continue round trip */
	CHECK(strstr(b, "Content-Type: application/octet-stream\r\n") != NULL); /* ours, not curl's form type */
	CHECK(r.body_len > 13 && memcmp(r.body + r.body_len - 13, "payload\0bytes", 13) == 0);
	tt_http_response_free(&r);

	/* A PUT without a body still says Content-Length: 0. */
	struct tt_http_request empty = {.method = "PUT", .url = url(0, "/echo")};
	CHECK(tt_http_perform(h, &empty, &r) == 0);
	CHECK(strstr((const char *)r.body, "Content-Length: 0\r\n") != NULL);
	tt_http_response_free(&r);

	struct tt_http_request del = {.method = "DELETE", .url = url(0, "/echo")};
	CHECK(tt_http_perform(h, &del, &r) == 0);
	CHECK(strncmp((const char *)r.body, "DELETE\nDELETE /echo ", 20) == 0);
	tt_http_response_free(&r);

	/* SigV4 by libcurl: the Authorization header names the key id and the
	 * scope; the secret never appears. */
	struct tt_http_header sh[] = {{"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}};
	struct tt_http_request sig = {.method = "GET", .url = url(0, "/echo?list-type=2&prefix="), .headers = sh,
	                              .n_headers = 1, .aws_sigv4 = "aws:amz:us-east-1:s3",
	                              .access_key_id = "AKIDTEST", .secret_access_key = "SECRETTEST"};
	CHECK(tt_http_perform(h, &sig, &r) == 0);
	b = (const char *)r.body;
	CHECK(strstr(b, "Authorization: AWS4-HMAC-SHA256 Credential=AKIDTEST/") != NULL);
	CHECK(strstr(b, "/us-east-1/s3/aws4_request") != NULL);
	CHECK(strstr(b, "X-Amz-Date: ") != NULL || strstr(b, "x-amz-date: ") != NULL);
	CHECK(strstr(b, "SECRETTEST") == NULL);
	tt_http_response_free(&r);

	/* A signed PUT signs exactly the headers it sends (libcurl 7.88 signs
	 * a header-removing "Name:" line as an empty header it never sends). */
	struct tt_http_request sput = sig;
	sput.method = "PUT";
	sput.url = url(0, "/echo");
	sput.body = "x";
	sput.body_len = 1;
	CHECK(tt_http_perform(h, &sput, &r) == 0);
	b = (const char *)r.body;
	CHECK(strstr(b, "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date,") != NULL);
	CHECK(strstr(b, "Expect") == NULL);
	tt_http_response_free(&r);
}

static void test_faults(struct tt_http *h)
{
	struct tt_http_response r;
	/* A reset mid-body: no response, transient, retryable; the message
	 * names method and URL but not the query (it may carry a signature). */
	CHECK(get(h, "/reset?X-Amz-Signature=hidden", &r) == TETHER_ETRANSIENT);
	char want[128];
	snprintf(want, sizeof want, "GET http://127.0.0.1:%d/reset: ", port);
	CHECK(strncmp(tether_error_last(), want, strlen(want)) == 0);
	CHECK(strstr(tether_error_last(), "hidden") == NULL);
	CHECK(tt_http_retryable(TETHER_ETRANSIENT, &r));
	tt_http_response_free(&r);

	CHECK(get(h, "/503", &r) == 0);
	CHECK(r.status == 503 && strstr((const char *)r.body, "<Code>SlowDown</Code>") != NULL);
	CHECK(tt_http_retryable(0, &r));
	tt_http_response_free(&r);

	CHECK(get(h, "/400timeout", &r) == 0);
	CHECK(r.status == 400 && tt_http_retryable(0, &r));
	tt_http_response_free(&r);
	CHECK(get(h, "/403", &r) == 0);
	CHECK(r.status == 403 && !tt_http_retryable(0, &r));
	tt_http_response_free(&r);

	/* An error body is kept up to 64 KiB; the rest is drained, and the
	 * connection stays usable. */
	CHECK(get(h, "/404big", &r) == 0);
	CHECK(r.status == 404 && r.body_len == 64 * 1024);
	tt_http_response_free(&r);
	CHECK(get(h, "/ok", &r) == 0 && r.status == 200);
	tt_http_response_free(&r);

	/* max_body stops a 2xx body there, and that is no error. */
	struct tt_http_request capped = {.method = "GET", .url = url(0, "/big"), .max_body = 1000};
	CHECK(tt_http_perform(h, &capped, &r) == 0);
	CHECK(r.status == 200 && r.body_len == 1000);
	tt_http_response_free(&r);
	CHECK(get(h, "/big", &r) == 0 && r.body_len == 100000);
	tt_http_response_free(&r);

	/* Refused connection: transient. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	bind(fd, (struct sockaddr *)&a, sizeof a);
	getsockname(fd, (struct sockaddr *)&a, &al);
	char closed[64];
	snprintf(closed, sizeof closed, "http://127.0.0.1:%d/x", ntohs(a.sin_port));
	close(fd);
	struct tt_http_request refused = {.method = "GET", .url = closed};
	CHECK(tt_http_perform(h, &refused, &r) == TETHER_ETRANSIENT);
	tt_http_response_free(&r);
}

static void test_refusals(void)
{
	struct tt_http_response r;
	struct tt_http *strict = client(0, 0);
	CHECK(get(strict, "/ok", &r) == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "allow_http") != NULL);
	tt_http_response_free(&r);
	CHECK(tt_http_options(strict)->connect_timeout_ms == 10000);
	CHECK(tt_http_options(strict)->timeout_ms == 300000);
	CHECK(tt_http_options(strict)->max_attempts == 5);
	tt_http_free(strict);

	struct tt_http *h = client(0, 1);
	struct tt_http_request ftp = {.method = "GET", .url = "ftp://127.0.0.1/x"};
	CHECK(tt_http_perform(h, &ftp, &r) == TETHER_EUSAGE);
	struct tt_http_request file = {.method = "GET", .url = "file:///etc/passwd"};
	CHECK(tt_http_perform(h, &file, &r) == TETHER_EUSAGE);
	tt_http_free(h);

	struct tt_http *quick = client(300, 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(get(quick, "/slow", &r) == TETHER_ETRANSIENT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 2);
	tt_http_free(quick);
}

static void test_many(struct tt_http *h)
{
	enum { N = 40 };
	struct tt_http_request reqs[N];
	struct tt_http_response resps[N];
	int rcs[N];
	for (int i = 0; i < N; i++) {
		const char *path = i == 7 ? "/reset" : i == 9 ? "/503" : "/ok";
		static char urls[N][128];
		snprintf(urls[i], sizeof urls[i], "http://127.0.0.1:%d%s", port, path);
		reqs[i] = (struct tt_http_request){.method = "GET", .url = urls[i]};
	}
	CHECK(tt_http_perform_many(h, reqs, N, resps, rcs) == 0);
	int ok = 0;
	for (int i = 0; i < N; i++) {
		if (i == 7)
			CHECK(rcs[i] == TETHER_ETRANSIENT);
		else if (i == 9)
			CHECK(rcs[i] == 0 && resps[i].status == 503);
		else if (rcs[i] == 0 && resps[i].status == 200 && strcmp((const char *)resps[i].body, "hello") == 0)
			ok++;
		tt_http_response_free(&resps[i]);
	}
	CHECK(ok == N - 2);
	CHECK(tt_http_perform_many(h, reqs, 0, resps, rcs) == 0);
}

static void *hammer(void *arg)
{
	struct tt_http *h = arg;
	int bad = 0;
	for (int i = 0; i < 25; i++) {
		char u[128];
		snprintf(u, sizeof u, "http://127.0.0.1:%d/ok", port);
		struct tt_http_request req = {.method = "GET", .url = u};
		struct tt_http_response r;
		if (tt_http_perform(h, &req, &r) != 0 || r.status != 200)
			bad++;
		tt_http_response_free(&r);
	}
	return (void *)(intptr_t)bad;
}

static void test_threads(struct tt_http *h)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, hammer, h);
	int bad = 0;
	for (int i = 0; i < 4; i++) {
		void *rv;
		pthread_join(t[i], &rv);
		bad += (int)(intptr_t)rv;
	}
	CHECK(bad == 0);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

static void test_backoff(void)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(tt_http_backoff(1) == 0);
	CHECK(ms_since(&t0) < 150); /* [0, 100) ms */
	/* A cancel cuts a long wait short. */
	tether_cancel(2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = 0;
	for (int i = 0; i < 5 && rc == 0; i++)
		rc = tt_http_backoff(30);
	CHECK(rc == TETHER_ECANCELLED);
	CHECK(ms_since(&t0) < 200);
	tether_cancel_reset();
}

static void test_escape(void)
{
	char *s = tt_http_escape("a b/c~d-e_f.g+h=é", 1);
	CHECK_STR(s, "a%20b/c~d-e_f.g%2Bh%3D%C3%A9");
	free(s);
	s = tt_http_escape("a/b", 0);
	CHECK_STR(s, "a%2Fb");
	free(s);
	s = tt_http_escape("", 0);
	CHECK_STR(s, "");
	free(s);
}

int main(void)
{
	start_server();
	struct tt_http *h = client(5000, 1);
	test_answers(h);
	test_reuse(h);
	test_body_and_headers(h);
	test_faults(h);
	test_many(h);
	test_threads(h);
	tt_http_free(h);
	test_refusals();
	test_backoff();
	test_escape();
	CHECK_DONE();
}
