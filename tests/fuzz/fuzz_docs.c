/* The documents a hostile clone hands tether besides tether.toml: an
 * object's manifest (.tether/objects/KEY.toml), a committed listing
 * (.tether/listings/<sha256>.jsonl) and a plan file (--from-plan). The
 * first byte picks which; the rest is the document.
 *
 * Beyond not crashing:
 *  - a manifest that parses and validates writes back canonically to text
 *    that parses and validates again to an equal document;
 *  - a listing's lines that the streaming reader accepts are each accepted
 *    by the one-line parser, with the same name, token and size; names
 *    strictly increase; every name has a display form;
 *  - a plan is accepted or refused with an error set, never half-read. */
#include "fuzz.h"

#include "core/listing_read.h"
#include "core/manifest.h"
#include "core/plan.h"
#include "core/repo.h"

#include <tether.h>
#include <tether/backend.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fuzz_manifest(const char *text, size_t len)
{
	struct tt_manifest m = {0};
	if (tt_manifest_parse("raw/x", text, len, "fuzz.toml", &m) != 0) {
		FUZZ_ASSERT(m.doc == NULL && m.key == NULL);
		FUZZ_ASSERT(tether_error_last()[0] != '\0');
		return;
	}
	/* The accessors read what validation admitted. */
	FUZZ_ASSERT(tt_manifest_kind(&m) != NULL);
	(void)tt_manifest_locator(&m);
	(void)tt_manifest_policy(&m);
	(void)tt_manifest_state(&m);
	(void)tt_manifest_pin(&m);
	(void)tt_manifest_listing(&m);
	char *canon = tt_manifest_text(&m);
	FUZZ_ASSERT(canon != NULL);
	struct tt_manifest again = {0};
	if (tt_manifest_parse("raw/x", canon, strlen(canon), "canonical.toml", &again) != 0) {
		fprintf(stderr, "canonical manifest refused: %s\n---\n%s---\n", tether_error_last(), canon);
		abort();
	}
	FUZZ_ASSERT(json_equal(m.doc, again.doc));
	tt_manifest_free(&again);
	free(canon);
	tt_manifest_free(&m);
}

static void fuzz_listing(const char *text, size_t len)
{
	struct tt_listing_reader *r = tt_listing_reader_new(text, len);
	FUZZ_ASSERT(r != NULL);
	const char *at = text, *end = text + len;
	const struct tt_listing_line *line;
	int rc;
	while ((rc = tt_listing_reader_next(r, &line)) == 1) {
		/* The line the reader just took, as the one-line parser sees it. */
		const char *nl = memchr(at, '\n', (size_t)(end - at));
		size_t n = nl ? (size_t)(nl - at) : (size_t)(end - at);
		struct tt_listing_line one = {0};
		FUZZ_ASSERT(tt_listing_parse_line(at, n, &one) == 0);
		FUZZ_ASSERT(one.path_len == line->path_len && memcmp(one.path, line->path, one.path_len) == 0);
		FUZZ_ASSERT(one.token_len == line->token_len && memcmp(one.token, line->token, one.token_len) == 0);
		FUZZ_ASSERT(one.size == line->size && one.size >= 0);
		FUZZ_ASSERT(strlen(one.path) == one.path_len);
		char *hex = NULL;
		char *shown = tt_listing_display_name(one.path, one.path_len, &hex);
		FUZZ_ASSERT(shown != NULL);
		free(shown);
		free(hex);
		tt_listing_line_free(&one);
		at = nl ? nl + 1 : end;
	}
	FUZZ_ASSERT(rc == 0 || rc == TT_LISTING_MALFORMED || rc == TT_LISTING_UNORDERED);
	if (rc != 0)
		FUZZ_ASSERT(tt_listing_reader_lineno(r) >= 1);
	tt_listing_reader_free(r);
}

static void fuzz_plan(const char *text, size_t len, unsigned which)
{
	static const char *const ops[] = {"commit", "gc", "new"};
	json_error_t err;
	json_t *plan = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!plan)
		return;
	/* The plan's own dataset when it has the shape of one, so the checks
	 * after the header are reached too. */
	struct tether_repo repo;
	memset(&repo, 0, sizeof repo);
	const char *dataset = json_string_value(json_object_get(plan, "dataset"));
	snprintf(repo.id, sizeof repo.id, "%s",
	         dataset && strlen(dataset) == 32 ? dataset : "0123456789abcdef0123456789abcdef");
	tether_error_clear();
	int rc = tt_plan_check_header(&repo, plan, ops[which % 3], "fuzz.json");
	if (rc != 0)
		FUZZ_ASSERT(tether_error_last()[0] != '\0');
	else {
		FUZZ_ASSERT(json_is_object(tt_plan_preconditions(plan)));
		FUZZ_ASSERT(json_is_array(tt_plan_actions(plan)));
		char hex[65];
		tt_plan_digest(plan, hex);
		FUZZ_ASSERT(strlen(hex) == 64);
	}
	json_decref(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	switch (data[0] % 3) {
	case 0:
		fuzz_manifest(text, len);
		break;
	case 1:
		fuzz_listing(text, len);
		break;
	default:
		fuzz_plan(text, len, data[0] / 3);
		break;
	}
	return 0;
}
