/* The Iceberg REST catalog's pure parts: settings from properties and
 * secrets (what is refused), URLs and namespace encoding, error texts,
 * token answers, and the judgement of a commit whose answer was lost. */
#include "check.h"

#include "backends/iceberg/rest_endpoint.h"
#include "backends/iceberg/rest_oauth2.h"
#include "backends/iceberg/rest_outcome.h"
#include "store/http/http.h"

#include <tether.h>

#include <jansson.h>

static json_t *J(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);
	if (!j) {
		fprintf(stderr, "bad test JSON: %s\n", text);
		abort();
	}
	return j;
}

/* Read settings from two JSON texts; returns rc, fills s on 0. */
static int settings(const char *props, const char *secrets, struct ib_rest_settings *s)
{
	json_t *p = props ? J(props) : NULL, *sec = secrets ? J(secrets) : NULL;
	int rc = ib_rest_settings_read(p, sec, "cat", s);
	json_decref(p);
	json_decref(sec);
	return rc;
}

static void test_settings(void)
{
	struct ib_rest_settings s;
	CHECK(settings("{\"type\":\"rest\",\"warehouse\":\"wh\"}",
	               "{\"uri\":\"http://127.0.0.1:8181/\",\"credential\":\"id:se:cret\",\"allow_http\":true}", &s) == 0);
	CHECK_STR(s.base, "http://127.0.0.1:8181");
	CHECK_STR(s.client_id, "id");
	CHECK_STR(s.client_secret, "se:cret");
	CHECK_STR(s.scope, "PRINCIPAL_ROLE:ALL");
	CHECK_STR(s.oauth2_uri, "http://127.0.0.1:8181/v1/oauth/tokens");
	CHECK_STR(s.warehouse, "wh");
	CHECK(s.allow_http == 1);
	CHECK(s.prefix == NULL);
	char *url = ib_rest_config_url(&s);
	CHECK_STR(url, "http://127.0.0.1:8181/v1/config?warehouse=wh");
	free(url);

	/* /v1/config: defaults below the client, overrides above; credentials
	 * and the uri never taken from the server */
	json_t *cfg = J("{\"defaults\":{\"prefix\":\"d\",\"warehouse\":\"x\"},"
	                "\"overrides\":{\"prefix\":\"/p/q/\",\"uri\":\"http://evil/\",\"token\":\"t\"}}");
	CHECK(ib_rest_settings_apply_config(&s, cfg) == 0);
	json_decref(cfg);
	CHECK_STR(s.prefix, "p/q");
	CHECK_STR(s.warehouse, "wh");
	CHECK_STR(s.base, "http://127.0.0.1:8181");
	CHECK(s.token == NULL);
	CHECK(ib_rest_table_url(&s, "a.b c", "t/1", &url) == 0);
	CHECK_STR(url, "http://127.0.0.1:8181/v1/p/q/namespaces/a%1Fb%20c/tables/t%2F1");
	free(url);
	cfg = J("{\"overrides\":[]}");
	CHECK(ib_rest_settings_apply_config(&s, cfg) == TETHER_EIO);
	json_decref(cfg);
	ib_rest_settings_free(&s);

	/* a secret alone, a token, the default name, a prefix from secrets */
	CHECK(settings(NULL, "{\"uri\":\"https://h/api\",\"credential\":\"s3cret\",\"prefix\":\"w\",\"s3.endpoint\":\"x\"}",
	               &s) == 0);
	CHECK(s.client_id == NULL);
	CHECK_STR(s.client_secret, "s3cret");
	CHECK(ib_rest_table_url(&s, "ns", "t", &url) == 0);
	CHECK_STR(url, "https://h/api/v1/w/namespaces/ns/tables/t");
	free(url);
	ib_rest_settings_free(&s);

	/* refused: committed secrets, unknown keys, no uri, bad uris, bad values */
	CHECK(settings("{\"uri\":\"http://h\"}", "{\"uri\":\"http://h\"}", &s) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "'uri' is committed") != NULL);
	CHECK(settings("{\"token\":\"t\"}", "{\"uri\":\"http://h\"}", &s) == TETHER_ECONFIG);
	CHECK(settings("{\"s3.secret-access-key\":\"k\"}", "{\"uri\":\"http://h\"}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "{\"uri\":\"http://h\",\"tokn\":\"t\"}", &s) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "unknown property 'tokn'") != NULL);
	CHECK(settings(NULL, "{\"token\":\"t\"}", &s) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "no uri") != NULL);
	CHECK(settings(NULL, "{\"uri\":\"ftp://h\"}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "{\"uri\":\"http://u:p@h/\"}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "{\"uri\":\"http://h/?a=b\"}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "{\"uri\":\"http:///x\"}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "{\"uri\":\"http://h\",\"allow_http\":\"yes\"}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "{\"uri\":\"http://h\",\"token\":\"a\\nb\"}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "{\"uri\":\"http://h\",\"credential\":\":x\"}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "{\"uri\":\"http://h\",\"token\":5}", &s) == TETHER_ECONFIG);
	CHECK(settings(NULL, "[]", &s) == TETHER_ECONFIG);
}

static void test_namespaces(void)
{
	char *p = ib_rest_namespace_path("one");
	CHECK_STR(p, "one");
	free(p);
	p = ib_rest_namespace_path("a.b.c");
	CHECK_STR(p, "a%1Fb%1Fc");
	free(p);
	p = ib_rest_namespace_path("\xc3\xa9t\xc3\xa9%");
	CHECK_STR(p, "%C3%A9t%C3%A9%25");
	free(p);
	CHECK(ib_rest_namespace_path("a..b") == NULL);
	CHECK(ib_rest_namespace_path(".a") == NULL);
	CHECK(ib_rest_namespace_path("a.") == NULL);
	CHECK(ib_rest_namespace_path("") == NULL);
	json_t *lv = ib_rest_namespace_levels("a.b");
	json_t *want = J("[\"a\",\"b\"]");
	CHECK(json_equal(lv, want));
	json_decref(want);
	json_decref(lv);

	struct ib_rest_settings s;
	CHECK(settings(NULL, "{\"uri\":\"http://h\"}", &s) == 0);
	char *url;
	CHECK(ib_rest_table_url(&s, "a..b", "t", &url) == TETHER_EUSAGE && url == NULL);
	CHECK(strstr(tether_error_last(), "empty level") != NULL);
	CHECK(ib_rest_table_url(&s, "a", "", &url) == TETHER_EUSAGE);
	CHECK(ib_rest_table_url(&s, "a", "t", &url) == 0);
	CHECK_STR(url, "http://h/v1/namespaces/a/tables/t");
	free(url);
	ib_rest_settings_free(&s);
}

static void test_error_text(void)
{
	char buf[400];
	struct tt_http_response r = {.status = 409};
	const char *body = "{\"error\":{\"message\":\"Requirement failed: branch main has changed:\\nexpected id 1 != 2\","
	                   "\"type\":\"CommitFailedException\",\"code\":409}}";
	r.body = (uint8_t *)body;
	r.body_len = strlen(body);
	ib_rest_error_text(&r, buf, sizeof buf);
	CHECK_STR(buf, "CommitFailedException: Requirement failed: branch main has changed: expected id 1 != 2");
	ib_rest_error_type(&r, buf, sizeof buf);
	CHECK_STR(buf, "CommitFailedException");

	const char *html = "<html>\r\n<body>Bad Gateway</body></html>";
	r.body = (uint8_t *)html;
	r.body_len = strlen(html);
	ib_rest_error_text(&r, buf, sizeof buf);
	CHECK_STR(buf, "<html>  <body>Bad Gateway</body></html>");
	ib_rest_error_type(&r, buf, sizeof buf);
	CHECK_STR(buf, "");

	char big[2000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	r.body = (uint8_t *)big;
	r.body_len = strlen(big);
	ib_rest_error_text(&r, buf, sizeof buf);
	CHECK(strlen(buf) == 300);
	r.body = NULL;
	r.body_len = 0;
	ib_rest_error_text(&r, buf, sizeof buf);
	CHECK_STR(buf, "(no body)");
}

static void test_token(void)
{
	char *t;
	long long exp;
	const char *ok = "{\"access_token\":\"abc.def\",\"token_type\":\"Bearer\",\"expires_in\":3600}";
	CHECK(ib_rest_token_parse(ok, strlen(ok), &t, &exp) == 0);
	CHECK_STR(t, "abc.def");
	CHECK(exp == 3600);
	free(t);
	const char *noexp = "{\"access_token\":\"abc\",\"token_type\":\"bearer\"}";
	CHECK(ib_rest_token_parse(noexp, strlen(noexp), &t, &exp) == 0);
	CHECK(exp == -1);
	free(t);
	const char *bad[] = {
		"{\"access_token\":\"a b\",\"token_type\":\"Bearer\"}",        /* a space: a header could be smuggled */
		"{\"access_token\":\"a\\r\\nX: y\",\"token_type\":\"Bearer\"}",
		"{\"access_token\":\"\",\"token_type\":\"Bearer\"}",
		"{\"token_type\":\"Bearer\"}",
		"{\"access_token\":\"a\",\"token_type\":\"mac\"}",
		"{\"access_token\":\"a\",\"expires_in\":0}",
		"{\"access_token\":\"a\",\"expires_in\":\"60\"}",
		"not json",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		CHECK(ib_rest_token_parse(bad[i], strlen(bad[i]), &t, &exp) == -1);
		CHECK(t == NULL);
	}
}

static enum ib_rest_outcome outcome(const char *md, const char *reqs, const char *upds)
{
	json_t *m = J(md), *r = J(reqs), *u = J(upds);
	enum ib_rest_outcome o = ib_rest_commit_outcome(m, r, u);
	json_decref(m);
	json_decref(r);
	json_decref(u);
	return o;
}

static void test_outcome(void)
{
	const char *md = "{\"table-uuid\":\"u1\",\"current-snapshot-id\":2,"
	                 "\"refs\":{\"main\":{\"snapshot-id\":2,\"type\":\"branch\"},"
	                 "\"tether.x\":{\"snapshot-id\":1,\"type\":\"tag\"}}}";
	const char *req_ok = "[{\"type\":\"assert-table-uuid\",\"uuid\":\"u1\"},"
	                     "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"ws\",\"snapshot-id\":null}]";
	const char *upd_ws = "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"ws\",\"type\":\"branch\",\"snapshot-id\":2}]";
	/* not applied, requirements hold: send again */
	CHECK(outcome(md, req_ok, upd_ws) == IB_REST_RESEND);
	/* applied */
	CHECK(outcome(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"tether.x\",\"snapshot-id\":null}]",
	              "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"tether.x\",\"type\":\"tag\",\"snapshot-id\":1}]") ==
	      IB_REST_APPLIED);
	/* the same id under another ref type is not this commit */
	CHECK(outcome(md, "[]", "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"tether.x\",\"type\":\"branch\",\"snapshot-id\":1}]") ==
	      IB_REST_RESEND);
	/* the head moved */
	CHECK(outcome(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":1}]",
	              "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\",\"snapshot-id\":3}]") ==
	      IB_REST_MOVED);
	CHECK(outcome(md, "[{\"type\":\"assert-table-uuid\",\"uuid\":\"u2\"}]", upd_ws) == IB_REST_MOVED);
	/* removal */
	CHECK(outcome(md, "[]", "[{\"action\":\"remove-snapshot-ref\",\"ref-name\":\"gone\"}]") == IB_REST_APPLIED);
	CHECK(outcome(md, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"tether.x\",\"snapshot-id\":1}]",
	              "[{\"action\":\"remove-snapshot-ref\",\"ref-name\":\"tether.x\"}]") == IB_REST_RESEND);
	/* what cannot be judged is never resent */
	CHECK(outcome(md, "[]", "[{\"action\":\"add-snapshot\",\"snapshot\":{}}]") == IB_REST_UNKNOWN);
	CHECK(outcome(md, "[{\"type\":\"assert-current-schema-id\",\"current-schema-id\":0}]", upd_ws) == IB_REST_UNKNOWN);
	CHECK(outcome(md, "[]", "[]") == IB_REST_UNKNOWN);
	CHECK(outcome("[]", "[]", upd_ws) == IB_REST_UNKNOWN);
	/* v1 metadata without refs: main is the current snapshot */
	CHECK(outcome("{\"current-snapshot-id\":7}", "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":7}]",
	              upd_ws) == IB_REST_RESEND);
	json_t *r = J(req_ok), *u = J(upd_ws);
	CHECK_STR(ib_rest_commit_ref(r, u), "ws");
	json_decref(r);
	r = J("[]");
	CHECK_STR(ib_rest_commit_ref(r, u), "ws");
	json_decref(r);
	json_decref(u);
}

int main(void)
{
	test_settings();
	test_namespaces();
	test_error_text();
	test_token();
	test_outcome();
	CHECK_DONE();
}
