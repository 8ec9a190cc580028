/* The S3 store's request building, without a network: the canonical query
 * libcurl's SigV4 needs, the endpoint and the addressing style, the URL of
 * a request, and error answers as TETHER_E* codes with one-line messages. */
#include "check.h"

#include "store/http/http.h"
#include "store/s3/s3.h"

static void query_is(const char *const *pairs, size_t n, const char *want)
{
	struct s3_query q = {0};
	for (size_t i = 0; i < n; i += 2)
		s3_query_add(&q, pairs[i], pairs[i + 1]);
	char *got = s3_query_build(&q);
	CHECK_STR(got, want);
	free(got);
	s3_query_clear(&q);
}

static void test_query(void)
{
	/* Sorted by name; empty values as "name="; values percent-encoded
	 * (RFC 3986: only A-Z a-z 0-9 - _ . ~ stay, '/' too is encoded). */
	const char *list[] = {"prefix", "a/b c", "list-type", "2", "max-keys", "1000", "continuation-token",
	                      "1/x+y=="};
	query_is(list, 8, "continuation-token=1%2Fx%2By%3D%3D&list-type=2&max-keys=1000&prefix=a%2Fb%20c");
	const char *versions[] = {"versions", "", "prefix", "k", "key-marker", "k", "version-id-marker", "v~1.-_"};
	query_is(versions, 8, "key-marker=k&prefix=k&version-id-marker=v~1.-_&versions=");
	const char *one[] = {"versionId", NULL};
	query_is(one, 2, "versionId=");
	query_is(NULL, 0, "");
	/* Unicode as UTF-8 bytes, upper-case hex. */
	const char *uni[] = {"prefix", "d\xC3\xA9j\xC3\xA0/"};
	query_is(uni, 2, "prefix=d%C3%A9j%C3%A0%2F");
	/* Same name twice: then by value. */
	const char *twice[] = {"b", "2", "a", "x", "b", "1"};
	query_is(twice, 6, "a=x&b=1&b=2");
}

static void style_is(const char *endpoint, const char *bucket, int force_path, int force_virtual, int want_path,
                     const char *object, const char *query, const char *want_url)
{
	struct s3_endpoint ep;
	CHECK(s3_endpoint_parse(endpoint, &ep) == 0);
	CHECK(s3_choose_path_style(&ep, bucket, force_path, force_virtual) == 0);
	CHECK(ep.path_style == want_path);
	char *url = s3_url(&ep, bucket, object, query);
	CHECK_STR(url, want_url);
	free(url);
	s3_endpoint_clear(&ep);
}

static void test_addressing(void)
{
	/* Path-style by itself for an IP address or localhost. */
	style_is("http://127.0.0.1:8333", "b", -1, -1, 1, "k/a b", NULL, "http://127.0.0.1:8333/b/k/a%20b");
	style_is("http://localhost:9000/", "bucket", -1, -1, 1, NULL, "list-type=2",
	         "http://localhost:9000/bucket?list-type=2");
	style_is("http://[::1]:9000", "bucket", -1, -1, 1, "x", "", "http://[::1]:9000/bucket/x");
	/* Virtual-hosted for a name, as AWS's SDKs do. */
	style_is("https://s3.eu-west-1.amazonaws.com", "my-data", -1, -1, 0, "p/q", "versionId=3",
	         "https://my-data.s3.eu-west-1.amazonaws.com/p/q?versionId=3");
	style_is("https://s3.eu-west-1.amazonaws.com", "my-data", -1, -1, 0, NULL, "list-type=2",
	         "https://my-data.s3.eu-west-1.amazonaws.com/?list-type=2");
	/* A bucket a host name cannot carry (a dot, upper case): path-style. */
	style_is("https://s3.amazonaws.com", "my.data", -1, -1, 1, "k", NULL, "https://s3.amazonaws.com/my.data/k");
	/* The options force either. */
	style_is("https://minio.example:9000/base/", "b1b", 1, -1, 1, "k", NULL, "https://minio.example:9000/base/b1b/k");
	style_is("http://127.0.0.1:8333", "bkt", -1, 1, 0, "k", NULL, "http://bkt.127.0.0.1:8333/k");
	style_is("http://localhost:8333", "bkt", 0, 0, 1, "k", NULL, "http://localhost:8333/bkt/k");
	/* Characters a key may hold are escaped, '/' kept. */
	style_is("http://127.0.0.1:1", "b", -1, -1, 1, "a+b/c%d/\xC3\xBC", NULL, "http://127.0.0.1:1/b/a%2Bb/c%25d/%C3%BC");

	struct s3_endpoint ep;
	CHECK(s3_endpoint_parse("http://127.0.0.1:1", &ep) == 0);
	CHECK(s3_choose_path_style(&ep, "b", 1, 1) == TETHER_EUSAGE);
	s3_endpoint_clear(&ep);
	CHECK(s3_endpoint_parse("ftp://host", &ep) == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "ftp://host") != NULL);
	CHECK(s3_endpoint_parse("http://user:pw@host", &ep) == TETHER_EUSAGE);
	CHECK(s3_endpoint_parse("http://host?x=1", &ep) == TETHER_EUSAGE);
	CHECK(s3_endpoint_parse("http://", &ep) == TETHER_EUSAGE);
	CHECK(s3_endpoint_parse("http://ho st", &ep) == TETHER_EUSAGE);
	CHECK(s3_endpoint_parse("http://[::1", &ep) == TETHER_EUSAGE);
}

/* s3_fail on a synthetic answer: the code, and the message's start. */
static void fails_as(long status, const char *body, int attempts, int want_rc, const char *want_msg)
{
	struct s3 s = {.bucket = (char *)"bkt"};
	struct tt_http_response r = {.status = status, .body = (uint8_t *)body, .body_len = strlen(body)};
	int rc = s3_fail(&s, "s3://bkt/k", &r, attempts);
	CHECK(rc == want_rc);
	const char *msg = tether_error_last();
	CHECK(strncmp(msg, want_msg, strlen(want_msg)) == 0);
	CHECK(strchr(msg, '\n') == NULL);
	if (rc != want_rc || strncmp(msg, want_msg, strlen(want_msg)) != 0)
		fprintf(stderr, "  got %d '%s', want %d '%s'\n", rc, msg, want_rc, want_msg);
}

#define ERR(code, msg) "<?xml version=\"1.0\"?><Error><Code>" code "</Code><Message>" msg "</Message></Error>"

static void test_errors(void)
{
	fails_as(403, ERR("SignatureDoesNotMatch", "The request signature we calculated does not match"), 1,
	         TETHER_EAUTH, "s3://bkt/k: 403 SignatureDoesNotMatch: The request signature we calculated");
	fails_as(403, ERR("InvalidAccessKeyId", "no such key"), 1, TETHER_EAUTH, "s3://bkt/k: 403 InvalidAccessKeyId");
	fails_as(400, ERR("ExpiredToken", "The provided token has expired."), 1, TETHER_EAUTH,
	         "s3://bkt/k: 400 ExpiredToken: The provided token has expired.");
	fails_as(400, ERR("InvalidToken", "malformed"), 1, TETHER_EAUTH, "s3://bkt/k: 400 InvalidToken");
	fails_as(403, ERR("AccessDenied", "Access Denied"), 1, TETHER_EAUTH, "s3://bkt/k: 403 AccessDenied: Access Denied");
	fails_as(403, "", 1, TETHER_EAUTH, "s3://bkt/k: 403 (no error document)");
	fails_as(404, ERR("NoSuchBucket", "The specified bucket does not exist"), 1, TETHER_ENOTFOUND,
	         "s3://bkt: 404 NoSuchBucket: bucket 'bkt' does not exist (The specified bucket does not exist)");
	fails_as(404, ERR("NoSuchKey", "gone"), 1, TETHER_ENOTFOUND, "s3://bkt/k: 404 NoSuchKey: gone");
	fails_as(404, "", 1, TETHER_ENOTFOUND, "s3://bkt/k: 404 not found");
	fails_as(412, ERR("PreconditionFailed", "At least one of the pre-conditions"), 1, TETHER_EREFUSED,
	         "s3://bkt/k: 412 PreconditionFailed");
	fails_as(409, ERR("ConditionalRequestConflict", "try again"), 1, TETHER_EREFUSED,
	         "s3://bkt/k: 409 ConditionalRequestConflict");
	fails_as(503, ERR("SlowDown", "Please reduce your request rate."), 5, TETHER_ETRANSIENT,
	         "s3://bkt/k: 503 SlowDown: Please reduce your request rate. (gave up after 5 attempts)");
	fails_as(500, ERR("InternalError", "oops"), 1, TETHER_ETRANSIENT, "s3://bkt/k: 500 InternalError: oops");
	fails_as(400, ERR("InvalidBucketName", "bad"), 1, TETHER_EUSAGE, "s3://bkt/k: 400 InvalidBucketName");
	fails_as(400, ERR("MalformedXML", "two\nlines"), 1, TETHER_EIO, "s3://bkt/k: 400 MalformedXML: two lines");
	fails_as(502, "<html>bad gateway</html>", 3, TETHER_ETRANSIENT, "s3://bkt/k: 502 (no error document) (gave up after 3");
}

int main(void)
{
	test_query();
	test_addressing();
	test_errors();
	CHECK_DONE();
}
