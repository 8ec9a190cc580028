/* The Azure store's authorisation (src/store/azure/sign.c, config.c):
 * SharedKey's string to sign for fixed requests, written out by hand from
 * Microsoft's description of the algorithm, and its signature, computed
 * apart from tether with Python's hmac:
 *
 *   python3 -c 'import base64, hashlib, hmac; print(base64.b64encode(hmac.new(
 *       base64.b64decode(KEY), STS.encode(), hashlib.sha256).digest()).decode())'
 *
 * and the configuration from options, connection strings and the
 * environment, with each bad input refused on one line naming where it
 * came from and never repeating a secret. */
#include "check.h"

#include "store/azure/az.h"

#include <stdlib.h>

/* Azurite's development account key, which Microsoft publishes. */
#define DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

static void test_put_string_to_sign(void)
{
	struct tt_http_header h[] = {
		{"x-ms-version", "2021-08-06"},
		{"If-None-Match", "*"},
		{"X-MS-Blob-Type", " BlockBlob "}, /* names lowercased, values trimmed */
		{"x-ms-date", "Mon, 07 Dec 2026 17:00:00 GMT"},
	};
	char *sts = az_string_to_sign("PUT", "devstoreaccount1", "/devstoreaccount1/mycontainer/a%20b/c.txt", "", h, 4,
	                              11);
	/* VERB, Content-Encoding, -Language, -Length, -MD5, -Type, Date,
	 * If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since,
	 * Range; the x-ms-* headers sorted; /ACCOUNT and the path as sent. */
	const char *want = "PUT\n"
	                   "\n"
	                   "\n"
	                   "11\n"
	                   "\n"
	                   "\n"
	                   "\n"
	                   "\n"
	                   "\n"
	                   "*\n"
	                   "\n"
	                   "\n"
	                   "x-ms-blob-type:BlockBlob\n"
	                   "x-ms-date:Mon, 07 Dec 2026 17:00:00 GMT\n"
	                   "x-ms-version:2021-08-06\n"
	                   "/devstoreaccount1/devstoreaccount1/mycontainer/a%20b/c.txt";
	CHECK_STR(sts, want);

	uint8_t key[64];
	size_t key_len = 0;
	struct az_config cfg = {0};
	CHECK(az_connection_string_parse("AccountName=devstoreaccount1;AccountKey=" DEV_KEY, "test", &cfg) == 0);
	CHECK(cfg.key_len == 64);
	if (cfg.key && cfg.key_len <= sizeof key) {
		memcpy(key, cfg.key, cfg.key_len);
		key_len = cfg.key_len;
	}
	char sig[64];
	az_sign(key, key_len, want, sig);
	CHECK_STR(sig, "XN02WmOzeA8GKPigWXbstXbeXPQK6l4cmiQfxoHHJLE=");
	az_config_free(&cfg);
	free(sts);
}

static void test_list_string_to_sign(void)
{
	/* The query: names lowercased and sorted, values decoded, no body
	 * (Content-Length empty), the Range header in its place. */
	struct tt_http_header h[] = {{"x-ms-date", "D"}, {"x-ms-version", "V"}, {"Range", "bytes=0-9"}};
	char *sts = az_string_to_sign("GET", "acct", "/c",
	                              "restype=container&Comp=list&prefix=a%2Fb%20c&include=metadata%2Cversions"
	                              "&marker=2%21x&maxresults=5",
	                              h, 3, 0);
	CHECK_STR(sts, "GET\n\n\n\n\n\n\n\n\n\n\nbytes=0-9\n"
	               "x-ms-date:D\nx-ms-version:V\n"
	               "/acct/c\ncomp:list\ninclude:metadata,versions\nmarker:2!x\nmaxresults:5\nprefix:a/b c\n"
	               "restype:container");
	free(sts);
	/* A name given twice: its values sorted and joined by ','. */
	sts = az_string_to_sign("GET", "acct", "/c/b", "b=2&a=x&b=1&empty=", NULL, 0, 0);
	CHECK_STR(sts, "GET\n\n\n\n\n\n\n\n\n\n\n\n/acct/c/b\na:x\nb:1,2\nempty:");
	free(sts);
}

static int one_line_naming(const char *what, const char *secret)
{
	const char *m = tether_error_last();
	int ok = strstr(m, what) != NULL && !strchr(m, '\n') && (!secret || !strstr(m, secret));
	if (!ok)
		fprintf(stderr, "  message: %s\n", m);
	return ok;
}

static void test_connection_strings(void)
{
	struct az_config cfg = {0};
	CHECK(az_connection_string_parse("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" DEV_KEY
	                                 ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;QueueEndpoint=http://q;",
	                                 "V", &cfg) == 0);
	CHECK_STR(cfg.account, "devstoreaccount1");
	CHECK_STR(cfg.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
	CHECK(cfg.allow_http == 1);
	az_config_free(&cfg);

	CHECK(az_connection_string_parse("AccountName=acct;SharedAccessSignature=?sv=2021&sig=abc%3D;EndpointSuffix="
	                                 "core.chinacloudapi.cn",
	                                 "V", &cfg) == 0);
	CHECK_STR(cfg.sas, "sv=2021&sig=abc%3D");
	CHECK_STR(cfg.endpoint, "https://acct.blob.core.chinacloudapi.cn");
	CHECK(cfg.allow_http == 0);
	CHECK(cfg.key == NULL);
	az_config_free(&cfg);

	static const struct {
		const char *conn, *why;
	} bad[] = {
		{"", "empty"},
		{"AccountName=a;AccountKeyhunter2", "part 2"},
		{"=x", "part 1"},
		{"AccountName=a;Colour=blue", "unknown connection string key 'Colour'"},
		{"AccountName=a;AccountKey=hunter2!!", "not base64"},
		{"AccountName=a;AccountKey=", "not base64"},
		{"DefaultEndpointsProtocol=ftp;AccountName=a", "http or https"},
		{"UseDevelopmentStorage=true", "not supported"},
		{"EndpointSuffix=core.windows.net", "neither BlobEndpoint nor AccountName"},
		{"AccountName=a;SharedAccessSignature=sv=1 sig", "not a SAS token"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&cfg, 0, sizeof cfg);
		int rc = az_connection_string_parse(bad[i].conn, "AZURE_STORAGE_CONNECTION_STRING", &cfg);
		CHECK(rc == TETHER_EUSAGE);
		CHECK(one_line_naming("AZURE_STORAGE_CONNECTION_STRING", "hunter2"));
		CHECK(strstr(tether_error_last(), bad[i].why) != NULL);
		az_config_free(&cfg);
	}
}

static void clear_env(void)
{
	static const char *const vars[] = {"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME",
	                                   "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY",
	                                   "AZURE_STORAGE_SAS_TOKEN"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
}

static void test_resolve(void)
{
	struct az_config cfg;
	clear_env();
	/* Nothing anywhere: no account. */
	CHECK(az_config_resolve(NULL, NULL, &cfg) == TETHER_EUSAGE);
	CHECK(one_line_naming("AZURE_STORAGE_ACCOUNT_NAME", NULL));

	/* The older spellings Azure's CLI reads. */
	setenv("AZURE_STORAGE_ACCOUNT", "older", 1);
	setenv("AZURE_STORAGE_KEY", DEV_KEY, 1);
	CHECK(az_config_resolve(NULL, NULL, &cfg) == 0);
	CHECK_STR(cfg.account, "older");
	CHECK(cfg.key_len == 64);
	CHECK_STR(cfg.endpoint, "https://older.blob.core.windows.net");
	az_config_free(&cfg);
	/* ... the newer ones win. */
	setenv("AZURE_STORAGE_ACCOUNT_NAME", "newer", 1);
	setenv("AZURE_STORAGE_ACCOUNT_KEY", "not base64!", 1);
	CHECK(az_config_resolve(NULL, NULL, &cfg) == TETHER_EUSAGE);
	CHECK(one_line_naming("AZURE_STORAGE_ACCOUNT_KEY", "not base64!"));
	clear_env();

	/* A bad connection string in the environment names the variable. */
	setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName=x;Junk", 1);
	CHECK(az_config_resolve(NULL, NULL, &cfg) == TETHER_EUSAGE);
	CHECK(one_line_naming("AZURE_STORAGE_CONNECTION_STRING", NULL));

	/* Options naming any credential are taken whole, the environment
	 * ignored; a single option overrides the connection string's value;
	 * endpoint_url overrides its endpoint, and plain http then needs
	 * allow_http. */
	json_t *o = json_pack("{s:s, s:s, s:s}", "connection_string",
	                      "AccountName=a1;AccountKey=" DEV_KEY ";BlobEndpoint=http://127.0.0.1:1/a1", "account_name",
	                      "a2", "endpoint_url", "http://127.0.0.1:2/a2/");
	CHECK(az_config_resolve(o, NULL, &cfg) == 0);
	CHECK_STR(cfg.account, "a2");
	CHECK_STR(cfg.endpoint, "http://127.0.0.1:2/a2");
	CHECK(cfg.allow_http == 0);
	CHECK_STR(cfg.source, ".tether/secrets.toml");
	az_config_free(&cfg);
	json_object_set_new(o, "allow_http", json_true());
	json_object_set_new(o, "timeout", json_real(2.5));
	CHECK(az_config_resolve(o, NULL, &cfg) == 0);
	CHECK(cfg.allow_http == 1);
	CHECK(cfg.timeout_ms == 2500);
	az_config_free(&cfg);
	json_object_set_new(o, "sas_token", json_string("sig=a#b"));
	CHECK(az_config_resolve(o, NULL, &cfg) == TETHER_EUSAGE);
	CHECK(one_line_naming("store option sas_token", "sig=a#b"));
	json_decref(o);
	clear_env();

	/* abfs: the account and the blob endpoint from the host; another
	 * account configured is refused. */
	CHECK(az_config_resolve(NULL, "acct.dfs.core.windows.net", &cfg) == 0);
	CHECK_STR(cfg.account, "acct");
	CHECK_STR(cfg.endpoint, "https://acct.blob.core.windows.net");
	CHECK(cfg.key == NULL && cfg.sas == NULL);
	az_config_free(&cfg);
	setenv("AZURE_STORAGE_ACCOUNT_NAME", "other", 1);
	CHECK(az_config_resolve(NULL, "acct.dfs.core.windows.net", &cfg) == TETHER_EUSAGE);
	CHECK(one_line_naming("'other'", NULL));
	clear_env();
	CHECK(az_config_resolve(NULL, "acct.example.org", &cfg) == TETHER_EUSAGE);
	CHECK(one_line_naming("not an Azure storage host", NULL));
}

int main(void)
{
	test_put_string_to_sign();
	test_list_string_to_sign();
	test_connection_strings();
	test_resolve();
	CHECK_DONE();
}
