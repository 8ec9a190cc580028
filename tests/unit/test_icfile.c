/* The Icechunk file envelope: round trips and every refusal. */
#include "check.h"

#include "format/icfile.h"

#include <tether.h>

#include <stdint.h>
#include <zstd.h>

static const uint8_t magic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7, 0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};

/* icf_read fails with TETHER_EIO, a message containing `word`, and no
 * payload. */
static int refused(const void *data, size_t len, uint8_t type, size_t max, const char *word)
{
	struct icf_header h;
	uint8_t *p = (uint8_t *)1;
	size_t n = 1;
	int rc = icf_read(data, len, type, max, "repo", &h, &p, &n);
	if (rc != TETHER_EIO || p != NULL || n != 0)
		return 0;
	const char *msg = tether_error_last();
	if (strncmp(msg, "repo: ", 6) != 0 || !strstr(msg, word)) {
		fprintf(stderr, "message: %s (wanted %s)\n", msg, word);
		return 0;
	}
	return 1;
}

/* A header followed by `payload` as the raw bytes after it. */
static uint8_t *with_raw_payload(const uint8_t *file, const void *payload, size_t plen, size_t *len)
{
	uint8_t *out = malloc(ICF_HEADER_SIZE + plen);
	memcpy(out, file, ICF_HEADER_SIZE);
	memcpy(out + ICF_HEADER_SIZE, payload, plen);
	*len = ICF_HEADER_SIZE + plen;
	return out;
}

int main(void)
{
	uint8_t payload[5000];
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)(i * 7 % 251);
	uint8_t *file;
	size_t flen;
	struct icf_header h;
	uint8_t *out;
	size_t olen;

	/* Round trip, and the header byte for byte. */
	CHECK(icf_write(2, ICF_REPO, "ic-2.2.2", payload, sizeof payload, 3, &file, &flen) == 0);
	CHECK(memcmp(file, magic, 12) == 0);
	CHECK(memcmp(file + 12, "ic-2.2.2                ", 24) == 0);
	CHECK(file[36] == 2 && file[37] == ICF_REPO && file[38] == 1);
	CHECK(icf_read(file, flen, ICF_REPO, sizeof payload, "repo", &h, &out, &olen) == 0);
	CHECK(olen == sizeof payload && memcmp(out, payload, olen) == 0);
	CHECK(h.spec == 2 && h.type == ICF_REPO && h.compression == 1);
	CHECK_STR(h.impl, "ic-2.2.2");
	free(out);
	/* Any type when want_type is 0. */
	CHECK(icf_read(file, flen, 0, sizeof payload, "repo", &h, &out, &olen) == 0);
	free(out);

	/* Spec 1, an empty payload, a name cut at 24 bytes on a UTF-8
	 * boundary (the snowman is 3 bytes and would straddle it). */
	uint8_t *f1;
	size_t f1len;
	CHECK(icf_write(1, ICF_SNAPSHOT, "0123456789abcdefghijklm\xe2\x98\x83", "", 0, 1, &f1, &f1len) == 0);
	CHECK(memcmp(f1 + 12, "0123456789abcdefghijklm ", 24) == 0);
	CHECK(icf_read(f1, f1len, ICF_SNAPSHOT, 0, "snap", &h, &out, &olen) == 0);
	CHECK(olen == 0 && h.spec == 1);
	CHECK_STR(h.impl, "0123456789abcdefghijklm");
	free(out);
	free(f1);
	CHECK(icf_write(3, ICF_REPO, "x", "", 0, 1, &f1, &f1len) == TETHER_EUSAGE);

	/* A name padded with NULs and leading spaces is trimmed too. */
	uint8_t *copy = malloc(flen);
	memcpy(copy, file, flen);
	memset(copy + 12, 0, 24);
	memcpy(copy + 14, "ic-9", 4);
	copy[12] = ' ';
	CHECK(icf_read(copy, flen, ICF_REPO, sizeof payload, "repo", &h, &out, &olen) == 0);
	CHECK_STR(h.impl, "ic-9");
	free(out);

	/* Refusals, one at a time. */
	CHECK(refused(file, 38, 0, 1 << 20, "too short"));
	CHECK(refused(file, 0, 0, 1 << 20, "too short"));
	memcpy(copy, file, flen);
	copy[3] = 0xF1;
	CHECK(refused(copy, flen, 0, 1 << 20, "bad magic"));
	memcpy(copy, file, flen);
	copy[36] = 3;
	CHECK(refused(copy, flen, 0, 1 << 20, "newer Icechunk"));
	copy[36] = 0;
	CHECK(refused(copy, flen, 0, 1 << 20, "spec version 0"));
	memcpy(copy, file, flen);
	CHECK(refused(copy, flen, ICF_SNAPSHOT, 1 << 20, "file type 6 where 1"));
	copy[38] = 0;
	CHECK(refused(copy, flen, 0, 1 << 20, "compression 0"));
	copy[38] = 2;
	CHECK(refused(copy, flen, 0, 1 << 20, "compression 2"));
	/* Over the limit: one byte short is refused, the exact size is not. */
	CHECK(refused(file, flen, 0, sizeof payload - 1, "over the limit"));
	/* Truncated frame, trailing bytes, a corrupt block, not zstd at all. */
	CHECK(refused(file, flen - 1, 0, 1 << 20, "corrupt zstd frame"));
	CHECK(refused(file, ICF_HEADER_SIZE, 0, 1 << 20, "not a zstd frame"));
	uint8_t *longer = malloc(flen + 3);
	memcpy(longer, file, flen);
	memcpy(longer + flen, "abc", 3);
	CHECK(refused(longer, flen + 3, 0, 1 << 20, "3 trailing bytes"));
	/* A second whole frame is trailing bytes too. */
	uint8_t *twice = malloc(2 * flen - ICF_HEADER_SIZE);
	memcpy(twice, file, flen);
	memcpy(twice + flen, file + ICF_HEADER_SIZE, flen - ICF_HEADER_SIZE);
	CHECK(refused(twice, 2 * flen - ICF_HEADER_SIZE, 0, 1 << 20, "trailing bytes"));
	memcpy(copy, file, flen);
	for (size_t i = ICF_HEADER_SIZE + 12; i < flen - 4; i++)
		copy[i] ^= 0x5a;
	CHECK(refused(copy, flen, 0, 1 << 20, "corrupt"));
	uint8_t gzip[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0};
	size_t glen;
	uint8_t *gz = with_raw_payload(file, gzip, sizeof gzip, &glen);
	CHECK(refused(gz, glen, 0, 1 << 20, "not a zstd frame"));
	free(gz);

	/* A frame that does not say its size (a streaming encoder's):
	 * decompressed in steps, and still held to the limit. */
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
	uint8_t big[200000];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (uint8_t)(i % 13 == 0 ? i * 31 : i % 7);
	size_t bound = ZSTD_compressBound(sizeof big);
	uint8_t *zbuf = malloc(bound);
	ZSTD_inBuffer in = {big, sizeof big, 0};
	ZSTD_outBuffer ob = {zbuf, bound, 0};
	size_t zr = ZSTD_compressStream2(cctx, &ob, &in, ZSTD_e_end);
	CHECK(zr == 0);
	CHECK(ZSTD_getFrameContentSize(zbuf, ob.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
	size_t slen;
	uint8_t *stream = with_raw_payload(file, zbuf, ob.pos, &slen);
	CHECK(icf_read(stream, slen, ICF_REPO, sizeof big, "repo", &h, &out, &olen) == 0);
	CHECK(olen == sizeof big && memcmp(out, big, olen) == 0);
	free(out);
	CHECK(refused(stream, slen, ICF_REPO, sizeof big - 1, "over the limit"));
	CHECK(refused(stream, slen, ICF_REPO, 1000, "over the limit"));
	CHECK(refused(stream, slen - 2, ICF_REPO, sizeof big, "corrupt zstd frame"));
	free(stream);
	free(zbuf);
	ZSTD_freeCCtx(cctx);

	/* The file a real Icechunk (2.3.0) wrote, when the corpus has it. */
	FILE *fp = fopen(TETHER_SOURCE_ROOT "/tests/fuzz/corpus/icfile/ic-repo", "rb");
	CHECK(fp != NULL);
	if (fp) {
		uint8_t real[4096];
		size_t rl = fread(real, 1, sizeof real, fp);
		fclose(fp);
		CHECK(icf_read(real, rl, ICF_REPO, 1 << 20, "repo", &h, &out, &olen) == 0);
		CHECK(h.spec == 2 && olen > 8 && memcmp(out + 4, "Ichk", 4) == 0);
		CHECK(strncmp(h.impl, "ic-", 3) == 0);
		free(out);
	}

	free(twice);
	free(longer);
	free(copy);
	free(file);
	CHECK_DONE();
}
