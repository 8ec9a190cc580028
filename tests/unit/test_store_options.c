/* Store options: the committed rule (only region, allow_http,
 * virtual_hosted_style_request, conditional_put; each of its type) and
 * the engine's merge (tether_bctx_store_options: the longest [uris]
 * prefix at or above the URI, a segment at a time, then the object's
 * table on top). */
#include "check.h"

#include <tether/backend.h>
#include <tether/store.h>

#include <string.h>

static int committed(const char *json)
{
	json_t *o = json_loads(json, 0, NULL);
	int rc = tether_store_check_committed_options(o, "tether.toml [backends.file]");
	json_decref(o);
	return rc;
}

static void committed_refused(const char *json, int code, const char *why)
{
	CHECK(committed(json) == code);
	const char *msg = tether_error_last();
	CHECK(strstr(msg, "tether.toml [backends.file]: ") == msg);
	CHECK(strstr(msg, why) != NULL);
	if (!strstr(msg, why))
		fprintf(stderr, "  %s: %s\n", json, msg);
}

static void test_committed(void)
{
	CHECK(tether_store_check_committed_options(NULL, "x") == 0);
	CHECK(committed("{}") == 0);
	CHECK(committed("{\"region\": \"eu-west-1\", \"allow_http\": true, \"virtual_hosted_style_request\": false, "
	                "\"conditional_put\": \"etag\"}") == 0);
	const char *secret[] = {"endpoint_url", "profile", "role_arn", "access_key_id", "secret_access_key",
	                        "session_token"};
	for (size_t i = 0; i < sizeof secret / sizeof secret[0]; i++) {
		char json[128], why[128];
		snprintf(json, sizeof json, "{\"%s\": \"x\"}", secret[i]);
		snprintf(why, sizeof why, "storage_options.%s must not be committed", secret[i]);
		committed_refused(json, TETHER_EREFUSED, why);
	}
	committed_refused("{\"force_path_style\": true}", TETHER_EREFUSED, "force_path_style must not be committed");
	committed_refused("{\"timeout\": 3}", TETHER_EREFUSED, "timeout must not be committed");
	committed_refused("{\"regoin\": \"x\"}", TETHER_ECONFIG, "unknown store option 'regoin'");
	committed_refused("{\"allow_http\": \"true\"}", TETHER_ECONFIG, "allow_http must be true or false");
	committed_refused("{\"region\": 3}", TETHER_ECONFIG, "region must be a non-empty string");
	committed_refused("{\"conditional_put\": \"always\"}", TETHER_ECONFIG, "conditional_put must be \"etag\"");
	committed_refused("[1]", TETHER_ECONFIG, "storage_options must be a table");
}

static json_t *merged(const json_t *uris, const json_t *mine, const char *uri, const json_t *committed_opts)
{
	struct tether_bctx ctx = {TETHER_BCTX_INIT};
	ctx.dataset_root = "/ds";
	ctx.key = "k";
	ctx.uri_secrets = uris;
	ctx.secrets = mine;
	json_t *out = NULL;
	CHECK(tether_bctx_store_options(&ctx, uri, committed_opts, &out) == 0);
	return out;
}

static void merged_is(const json_t *uris, const json_t *mine, const char *uri, const json_t *c, const char *want)
{
	json_t *got = merged(uris, mine, uri, c);
	json_t *w = want ? json_loads(want, 0, NULL) : NULL;
	CHECK(want ? json_equal(got, w) : got == NULL);
	if (want ? !json_equal(got, w) : got != NULL) {
		char *g = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;
		fprintf(stderr, "  %s: got %s, want %s\n", uri, g ? g : "NULL", want ? want : "NULL");
		free(g);
	}
	json_decref(got);
	json_decref(w);
}

static void test_merge(void)
{
	json_t *uris = json_loads("{\"s3://b\": {\"region\": \"b\"}, \"s3://b/pre\": {\"region\": \"pre\", "
	                          "\"profile\": \"p\"}, \"s3://b/pre/x\": {\"region\": \"x\"}}",
	                          0, NULL);
	merged_is(uris, NULL, "s3://b", NULL, "{\"region\": \"b\"}");
	merged_is(uris, NULL, "s3://b/other", NULL, "{\"region\": \"b\"}");
	merged_is(uris, NULL, "s3://b/pre", NULL, "{\"region\": \"pre\", \"profile\": \"p\"}");
	merged_is(uris, NULL, "s3://b/pre/a/b", NULL, "{\"region\": \"pre\", \"profile\": \"p\"}");
	merged_is(uris, NULL, "s3://b/prefix2", NULL, "{\"region\": \"b\"}");
	merged_is(uris, NULL, "s3://b/pre/x", NULL, "{\"region\": \"x\"}");
	merged_is(uris, NULL, "s3://b/pre/xy", NULL, "{\"region\": \"pre\", \"profile\": \"p\"}");
	merged_is(uris, NULL, "s3://bb/pre", NULL, NULL); /* the bucket is a segment too */
	merged_is(uris, NULL, "S3://B/pre/", NULL, "{\"region\": \"pre\", \"profile\": \"p\"}");
	merged_is(uris, NULL, "gs://b/pre", NULL, NULL);
	merged_is(uris, NULL, "/local/path", NULL, NULL);
	merged_is(uris, NULL, "s3://b/../x", NULL, NULL); /* no canonical form: open refuses it */
	json_t *mine = json_loads("{\"region\": \"own\", \"timeout\": 5}", 0, NULL);
	json_t *c = json_loads("{\"region\": \"committed\", \"allow_http\": true}", 0, NULL);
	merged_is(uris, mine, "s3://b/pre/q", c,
	          "{\"region\": \"own\", \"profile\": \"p\", \"timeout\": 5, \"allow_http\": true}");
	merged_is(uris, NULL, "s3://b/pre/q", c, "{\"region\": \"pre\", \"profile\": \"p\", \"allow_http\": true}");
	merged_is(NULL, NULL, "s3://b/pre/q", c, "{\"region\": \"committed\", \"allow_http\": true}");
	merged_is(NULL, mine, "s3://b", NULL, "{\"region\": \"own\", \"timeout\": 5}");
	merged_is(NULL, NULL, "s3://b", NULL, NULL);
	/* A key of the object's table that is no store option, by name. */
	json_t *bad = json_loads("{\"remote\": \"x\"}", 0, NULL);
	struct tether_bctx ctx = {TETHER_BCTX_INIT};
	ctx.dataset_root = "/ds";
	ctx.key = "k";
	ctx.secrets = bad;
	json_t *out = (json_t *)1;
	CHECK(tether_bctx_store_options(&ctx, "s3://b", NULL, &out) == TETHER_ECONFIG && out == NULL);
	CHECK(strstr(tether_error_last(), "/ds/.tether/secrets.toml: objects.\"k\": unknown store option 'remote'") !=
	      NULL);
	/* A context of an older size has no [uris]: the object's table only. */
	ctx.secrets = mine;
	ctx.uri_secrets = uris;
	ctx.size = (uint32_t)offsetof(struct tether_bctx, uri_secrets);
	CHECK(tether_bctx_store_options(&ctx, "s3://b/pre", NULL, &out) == 0 && json_equal(out, mine));
	json_decref(out);
	json_decref(bad);
	json_decref(c);
	json_decref(mine);
	json_decref(uris);
}

int main(void)
{
	test_committed();
	test_merge();
	CHECK_DONE();
}
