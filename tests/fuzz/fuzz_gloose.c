/* A loose git object: the input is the object as stored (zlib of
 * "<type> <size>\0<content>") when its first byte is odd, else the bytes
 * after it are what the stream inflates to and are deflated here, so the
 * header parser meets hostile headers directly. The file is written under
 * the id the inflated bytes hash to and read back with tt_godb_read: a
 * read that succeeds must return exactly the content after the header. */
#include "fuzz.h"
#include "fuzz_tmpdir.h"

#include "vcs/gitodb.h"
#include "vcs/gitstream.h"

#include <nettle/sha1.h>
#include <zlib.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *dir = fuzz_tmpdir();
	const unsigned char *body = data + 1;
	size_t body_len = size - 1;
	unsigned char *stored = NULL, id[20] = { 0 };
	size_t stored_len = body_len;
	int raw = data[0] & 1;

	if (raw) {
		stored = (unsigned char *)body;
	} else {
		uLongf cap = compressBound((uLong)body_len);
		FUZZ_ASSERT((stored = malloc(cap)) != NULL);
		FUZZ_ASSERT(compress2(stored, &cap, body, (uLong)body_len, data[0] >> 1 & 9) == Z_OK);
		stored_len = cap;
		struct sha1_ctx ctx;
		sha1_init(&ctx);
		sha1_update(&ctx, body_len, body);
		sha1_digest(&ctx, 20, id);
	}
	char hex[41], rel[64];
	tt_goid_hex(id, hex);
	snprintf(rel, sizeof rel, "objects/%.2s/%s", hex, hex + 2);
	fuzz_clear();
	fuzz_write(dir, rel, stored, stored_len);

	char objects[4200];
	snprintf(objects, sizeof objects, "%s/objects", dir);
	struct tt_godb *db = NULL;
	FUZZ_ASSERT(tt_godb_open(objects, &db) == 0);
	enum tt_gobj_type type;
	unsigned char *out = NULL;
	size_t out_len = 0;
	int whole = tt_godb_read(db, id, &type, &out, &out_len);
	/* The same object streamed in pieces of 1 to 16 bytes: read to its end
	 * exactly when the whole read succeeds, with the same bytes. */
	struct tt_gstream *st = NULL;
	enum tt_gobj_type stype;
	size_t ssize = 0, have = 0, got = 1, piece = (size_t)(data[0] >> 4) + 1;
	int streamed = tt_gstream_open(db, id, &stype, &ssize, &st);
	unsigned char *sbuf = streamed ? NULL : malloc(ssize + 16);
	FUZZ_ASSERT(streamed || sbuf);
	while (!streamed && got) {
		streamed = tt_gstream_read(st, sbuf + have, piece, &got);
		have += got;
		FUZZ_ASSERT(have <= ssize);
	}
	tt_gstream_close(st);
	FUZZ_ASSERT((whole == 0) == (streamed == 0));
	if (whole == 0)
		FUZZ_ASSERT(stype == type && have == out_len && memcmp(sbuf, out, out_len) == 0);
	free(sbuf);
	if (whole == 0) {
		/* only a well-formed header gets here: the content is what follows it */
		const unsigned char *nul = memchr(body, '\0', body_len);
		FUZZ_ASSERT(!raw && nul && (size_t)(body + body_len - nul - 1) == out_len);
		FUZZ_ASSERT(memcmp(nul + 1, out, out_len) == 0 && out[out_len] == '\0');
		FUZZ_ASSERT(strncmp((const char *)body, tt_gobj_type_name(type), strlen(tt_gobj_type_name(type))) == 0);
		free(out);
	}
	tt_godb_free(db);
	if (!raw)
		free(stored);
	return 0;
}
