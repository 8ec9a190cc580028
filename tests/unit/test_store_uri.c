/* Store URIs: the canonical form tether records, and the rule for a URI a
 * committed locator (a clone, untrusted) may name, on hostile inputs. */
#include "check.h"

#include <tether/store.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void canon_is(const char *uri, const char *cwd, const char *want)
{
	char *got = NULL;
	int rc = tether_store_canonical(uri, cwd, &got);
	CHECK(rc == 0);
	if (rc == 0)
		CHECK_STR(got, want);
	else
		fprintf(stderr, "  %s: %s\n", uri, tether_error_last());
	free(got);
}

/* Refused with TETHER_EUSAGE, the message naming the URI and holding `why`. */
static void canon_refused(const char *uri, const char *why)
{
	char *got = (char *)"unchanged";
	int rc = tether_store_canonical(uri, "/cwd", &got);
	CHECK(rc == TETHER_EUSAGE && got == NULL);
	if (rc != TETHER_EUSAGE)
		fprintf(stderr, "  %s was not refused\n", uri);
	else if (!strstr(tether_error_last(), why))
		fprintf(stderr, "  %s: '%s' lacks '%s'\n", uri, tether_error_last(), why);
	CHECK(strstr(tether_error_last(), why) != NULL);
	free(rc == 0 ? got : NULL);
}

static void test_canonical(void)
{
	/* Local: made absolute, normalised, file:// folded to a plain path. */
	canon_is("/a/b/", NULL, "/a/b");
	canon_is("/a//b/./c/../d", NULL, "/a/b/d");
	canon_is("file:///a/b/", NULL, "/a/b");
	canon_is("FILE:///a", NULL, "/a");
	canon_is("file://localhost/a", NULL, "/a");
	canon_is("/", NULL, "/");
	canon_is("data:v1", "/nonexistent-cwd", "/nonexistent-cwd/data:v1"); /* a colon is a file name */
	/* Remote: scheme and host lowercased, empty segments gone. */
	canon_is("S3://My-Bucket/a//b/", NULL, "s3://my-bucket/a/b");
	canon_is("gs://bucket", NULL, "gs://bucket");
	canon_is("az://acct/container/", NULL, "az://acct/container");
	canon_is("fault+file:///tmp/x", NULL, "fault+file:///tmp/x");
	/* Case in the path is the object's name: kept. */
	canon_is("s3://b/Path/KEY", NULL, "s3://b/Path/KEY");

	canon_refused("", "empty");
	canon_refused("s3://user:secret@bucket/p", "credentials");
	canon_refused("s3://AKIA@bucket/p", "credentials");
	/* abfs names its container before the '@'; a password is still refused. */
	canon_is("ABFSS://Data@Acct.dfs.core.windows.net/a//b/", NULL, "abfss://data@acct.dfs.core.windows.net/a/b");
	canon_refused("abfs://data:secret@acct.dfs.core.windows.net/a", "credentials");
	canon_refused("az://data@acct/a", "credentials");
	/* The message never repeats a secret. */
	canon_refused("s3://key:hunter2@bucket/p", "s3://***@bucket/p");
	CHECK(!strstr(tether_error_last(), "hunter2"));
	canon_refused("az://acct/c?sig=hunter2", "az://acct/c?***");
	CHECK(!strstr(tether_error_last(), "hunter2"));
	canon_refused("s3://bucket/p?X-Amz-Signature=1", "query");
	canon_refused("az://acct/c?sv=2020&sig=abc", "query");
	canon_refused("gs://bucket/p#frag", "query or fragment");
	canon_refused("s3://bucket/a/../../etc", "\"..\"");
	canon_refused("s3://bucket/./a", "\".\"");
	canon_refused("s3://bucket\\x/a", "backslash");
	canon_refused("s3://bucket/a\nb", "control character");
	canon_refused("s3://", "neither a bucket nor a path");
	canon_refused("file://otherhost/etc/passwd", "another machine");
	canon_refused("s3:/bucket/p", "without \"//\"");
	canon_refused("1http://x", "not a URI scheme");
	canon_refused("my bucket://x", "not a URI scheme");
	/* A backslash is an ordinary character in a local file name. */
	canon_is("/a\\b", NULL, "/a\\b");
	/* Without a cwd a relative path has nothing to be relative to. */
	char *got = NULL;
	CHECK(tether_store_canonical("relative/p", NULL, &got) == TETHER_EUSAGE && !got);
	CHECK(tether_store_canonical("~/x", NULL, &got) == TETHER_EUSAGE && !got);
}

static void committed_ok(const char *uri)
{
	int rc = tether_store_check_committed(uri);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "  %s: %s\n", uri, tether_error_last());
}

static void committed_refused(const char *uri)
{
	int rc = tether_store_check_committed(uri);
	CHECK(rc == TETHER_EREFUSED);
	if (rc != TETHER_EREFUSED)
		fprintf(stderr, "  %s was not refused\n", uri);
	else
		CHECK(strstr(tether_error_last(), "refused") || strstr(tether_error_last(), "no store"));
}

static void test_committed(void)
{
	committed_ok("/data/repo");
	committed_ok("/");
	/* A clone may only name what tether would record. */
	committed_refused("relative/repo");
	committed_refused("../../etc");
	committed_refused("/data/../etc/repo");
	committed_refused("/data/./repo");
	committed_refused("/data//repo");
	committed_refused("/data/repo/");
	committed_refused("file:///data/repo"); /* tether records the plain path */
	committed_refused("~/repo");
	committed_refused("s3://user:pw@bucket/p");
	committed_refused("s3://Bucket/p");    /* not lowercased: not as recorded */
	committed_refused("s3://bucket/p/");   /* trailing slash */
	committed_refused("s3://bucket/p?token=x");
	committed_refused("/data/re\tpo");
	/* A well-formed URI of a scheme with no store is refused, not taken for
	 * a path (this build has no tether-store-nosuch.so). */
	committed_refused("nosuch://bucket/p");
	CHECK(strstr(tether_error_last(), "nosuch://") != NULL);
	committed_refused(NULL);
}

int main(void)
{
	/* No module directory may supply "nosuch". */
	setenv("TETHER_MODULE_PATH", "/nonexistent", 1);
	test_canonical();
	test_committed();
	CHECK_DONE();
}
