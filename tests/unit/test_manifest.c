/* Manifests: keys, validation with file-named errors, canonical text. */
#include "check.h"

#include "core/manifest.h"
#include "util/fsutil.h"

#include <tether/backend.h>

#include <stdlib.h>
#include <unistd.h>

static int parse(const char *text, struct tt_manifest *m)
{
	return tt_manifest_parse("k", text, strlen(text), "objects/k.toml", m);
}

int main(void)
{
	CHECK(tt_key_check("raw/plate1") == 0);
	CHECK(tt_key_check("a.b_c-d/E9") == 0);
	CHECK(tt_key_check("") == TETHER_EUSAGE);
	CHECK(tt_key_check("/abs") == TETHER_EUSAGE);
	CHECK(tt_key_check("trailing/") == TETHER_EUSAGE);
	CHECK(tt_key_check("a//b") == TETHER_EUSAGE);
	CHECK(tt_key_check("../escape") == TETHER_EUSAGE);
	CHECK(tt_key_check("a/.hidden") == TETHER_EUSAGE);
	CHECK(tt_key_check("sp ace") == TETHER_EUSAGE);
	CHECK(strstr(tether_error_last(), "sp ace") != NULL);
	char longkey[300];
	memset(longkey, 'a', sizeof longkey - 1);
	longkey[sizeof longkey - 1] = '\0';
	CHECK(tt_key_check(longkey) == TETHER_EUSAGE);

	struct tt_manifest m;
	CHECK(parse("kind = \"file\"\n[locator]\nuri = \"/x\"\n", &m) == 0);
	CHECK_STR(tt_manifest_kind(&m), "file");
	CHECK(tt_manifest_state(&m) == NULL);
	char *text = tt_manifest_text(&m);
	CHECK_STR(text, "kind = \"file\"\n\n[locator]\nuri = \"/x\"\n");
	free(text);
	tt_manifest_free(&m);

	/* Malformed: the error names the file and the line. */
	CHECK(parse("kind = \"file\"\n[locator\n", &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "objects/k.toml:2:") != NULL);
	CHECK(parse("kind = 3\n[locator]\n", &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "'kind' must be a string") != NULL);
	CHECK(parse("kind = \"file\"\n", &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "'locator' must be a table") != NULL);
	CHECK(parse("kind = \"file\"\nbogus = 1\n[locator]\n", &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "unknown key 'bogus'") != NULL);
	CHECK(parse("kind = \"file\"\nlisting = \"nothex\"\n[locator]\n", &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "objects/k.toml:2:1: 'listing'") != NULL);

	/* A field the kind checks: its line and column, whatever the layout. */
	CHECK(parse("kind = \"file\"\n[locator]\nuri = \"/x\"\n[state]\ntype = \"file\"\n   size = \"2\"\n"
	            "sha256 = \"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"\n",
	            &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "objects/k.toml:6:4: recorded state of kind file: size must be") != NULL);
	CHECK(parse("kind = \"file\"\nstate = { type = \"file\", size = 2.0, sha256 = \"x\" }\n[locator]\n", &m) ==
	      TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "objects/k.toml:2:") != NULL);
	CHECK(parse("kind = \"file\"\npolicy.pin = \"bogus\"\n[locator]\n", &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "objects/k.toml:2:8: policy.pin must be one of \"native\" or \"record\"") != NULL);
	/* The history walks' reader: the same document and the same refusals
	 * (positions found by a second parse, made only for a refusal), no
	 * digest. The digest of the full reader is of the bytes as read. */
	const char *good = "kind = \"file\"\n[locator]\nuri = \"/x\"\n";
	CHECK(tt_manifest_parse_nodigest("k", good, strlen(good), "objects/k.toml", &m) == 0);
	CHECK(m.digest[0] == '\0');
	CHECK_STR(json_string_value(json_object_get(tt_manifest_locator(&m), "uri")), "/x");
	tt_manifest_free(&m);
	CHECK(parse(good, &m) == 0);
	CHECK_STR(m.digest, "81ed5a3eb2a3374bbfd8a354fb9080dd44d65541ba476495b3f4ff203e7aef12");
	tt_manifest_free(&m);
	const char *bad_pin = "kind = \"file\"\npolicy.pin = \"bogus\"\n[locator]\n";
	CHECK(tt_manifest_parse_nodigest("k", bad_pin, strlen(bad_pin), "objects/k.toml", &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "objects/k.toml:2:8: policy.pin must be one of") != NULL);
	/* Layouts: absent is 0, 1 is read, a newer one refused naming both
	 * (before its keys, which this tether may not know), a bad one malformed. */
	CHECK(parse("layout = 1\nkind = \"martian\"\n[locator]\n", &m) == 0);
	CHECK(m.layout == 1);
	tt_manifest_free(&m);
	CHECK(parse("layout = 2\nkind = \"martian\"\nfuture = 1\n[locator]\n", &m) == TETHER_EREFUSED);
	CHECK(strstr(tether_error_last(), "objects/k.toml: layout 2 is newer than this tether understands (layout 1 at most)") != NULL);
	CHECK(parse("layout = \"one\"\nkind = \"martian\"\n[locator]\n", &m) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "layout must be a whole number") != NULL);
	/* A kind this build does not have: its own rules are not known here. */
	CHECK(parse("kind = \"martian\"\n[locator]\n[policy]\ncolour = \"red\"\n", &m) == 0);
	tt_manifest_free(&m);

	/* Save, load one, load all (nested keys), sorted. */
	char dir[] = "/tmp/tether-manifest-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	const char *keys[] = {"z", "a/b", "a"};
	for (int i = 0; i < 3; i++) {
		struct tt_manifest w = {.key = (char *)keys[i],
		                        .doc = json_pack("{s:s, s:{s:s}}", "kind", "file", "locator", "uri", keys[i])};
		/* "z" in layout 1, the others in layout 0 (no key) */
		CHECK(tt_manifest_save(dir, i == 0 ? 1 : 0, &w) == 0);
		CHECK(w.layout == (i == 0 ? 1 : 0));
		json_decref(w.doc);
	}
	struct tt_manifest_set set;
	CHECK(tt_manifests_load_working(dir, &set) == 0);
	CHECK(set.n == 3);
	if (set.n == 3) {
		CHECK(set.v[2].layout == 1 && json_integer_value(json_object_get(set.v[2].doc, "layout")) == 1);
		CHECK(set.v[0].layout == 0 && !json_object_get(set.v[0].doc, "layout"));
		CHECK_STR(set.v[0].key, "a");
		CHECK_STR(set.v[1].key, "a/b");
		CHECK_STR(set.v[2].key, "z");
		CHECK(tt_manifest_set_find(&set, "a/b") == &set.v[1]);
		CHECK(tt_manifest_set_find(&set, "nope") == NULL);
	}
	tt_manifest_set_free(&set);
	CHECK(tt_manifest_load_working(dir, "missing", &m) == TETHER_ENOTFOUND);
	CHECK(strstr(tether_error_last(), "'missing'") != NULL);

	char *bad = tt_path_join(dir, ".tether/objects/bad.toml");
	CHECK(tt_write_file_atomic(bad, "kind = [\n", 9) == 0);
	CHECK(tt_manifests_load_working(dir, &set) == TETHER_ECONFIG);
	CHECK(strstr(tether_error_last(), "bad.toml:") != NULL);
	free(bad);

	char *cmd = tt_strdupf("rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	free(cmd);
	CHECK_DONE();
}
